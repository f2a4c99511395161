"""The smoke scenario: what proves a deployment works, independent of where the agent runs.

Three turns through the real invoke path: user A tells a fresh code word in session 1; user A asks for it in a new
session 2 (every session is a new microVM: only memory can carry it) until it comes back or the wait runs out; user B
asks the same in session 3 and must get nothing of it. Then, when an MCP endpoint serves the memory tools (the gateway,
or ``make local``'s MCP server), the path external agents and MCP clients use: user A's ``recall`` over MCP finds the
code word, user B's finds nothing of it. Each step prints its timing; a failure names what to look at.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO


class SmokeError(Exception):
    """A step failed; ``hints`` say where to look."""

    def __init__(self, message: str, hints: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.hints = list(hints)


@dataclass(frozen=True)
class Reply:
    """One turn's answer, as the agent's JSON body has it."""

    status: int
    output: str
    recalled: int
    degraded: bool
    body: Any


class Invoker(Protocol):
    """Sends one turn to the agent as ``user`` in ``session_id`` (the transport knows how the user is proven)."""

    description: str
    hints: Sequence[str]

    def invoke(self, user: str, session_id: str, prompt: str) -> Reply:
        """POST one ``{"prompt": ...}`` turn; raise only for transport failures."""
        ...


@dataclass(frozen=True)
class ToolReply:
    """One MCP ``tools/call`` result: ``answer``, the tool's JSON (one text block, locally and through the gateway),
    ``text`` its ``text`` (or the raw text when it is no JSON object), ``is_error`` for ``isError`` or an answer with
    an ``error`` (the gateway gives a tool's refusal with ``isError`` false)."""

    is_error: bool
    text: str
    answer: Any

    def mentions(self, word: str) -> bool:
        """Whether ``word`` appears anywhere in the result."""
        return word in self.text or word in json.dumps(self.answer, default=str)


class McpTools(Protocol):
    """Calls the memory tools over MCP as ``user`` (the transport knows the endpoint, the tokens, the tool names)."""

    description: str
    hints: Sequence[str]

    def tool_name(self, tool: str) -> str:
        """The name the server gives ``tool`` (``memory___recall`` on the gateway)."""
        ...

    def call(self, user: str, tool: str, arguments: dict[str, Any]) -> ToolReply:
        """Call ``tool``; raise :class:`SmokeError` only when the server cannot be reached or refuses the caller."""
        ...


@dataclass(frozen=True)
class McpSkipped:
    """The target has no MCP endpoint to prove; ``line`` says why (printed, and the smoke still passes)."""

    line: str


@dataclass
class Step:
    """A finished step, for the report."""

    name: str
    seconds: float
    detail: str


@dataclass
class Result:
    """What the scenario established."""

    steps: list[Step] = field(default_factory=list)
    #: Why the MCP steps did not run (``None`` when they ran).
    mcp_skipped: str | None = None

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)


def new_session() -> str:
    """An AgentCore session id (33-256 characters)."""
    return f"smoke-{uuid.uuid4().hex}"


def _check(reply: Reply, step: str, hints: Sequence[str]) -> None:
    if reply.status != 200:
        raise SmokeError(f"{step}: the agent answered HTTP {reply.status}: {reply.body!r}"[:600], hints)
    if reply.degraded:
        raise SmokeError(
            f"{step}: the agent ran without memory (degraded: Hindsight unreachable, slow or refusing)",
            ["Is a Hindsight API task healthy (NoHealthyApiTask alarm, the ECS service's events)?", *hints],
        )


def _poll(
    found: Callable[[], bool], *, timeout_s: float, clock: Callable[[], float], sleep: Callable[[float], None]
) -> tuple[bool, int]:
    """Call ``found`` until it is true or ``timeout_s`` runs out, backing off 1 s to 10 s: (found, attempts).

    Hindsight extracts facts in the background, so a memory told a moment ago may take a while to be recallable."""
    attempts, delay = 0, 1.0
    deadline = clock() + timeout_s
    while True:
        attempts += 1
        if found():
            return True, attempts
        if clock() + delay > deadline:
            return False, attempts
        sleep(delay)
        delay = min(delay * 2, 10.0)


def run(
    invoker: Invoker,
    *,
    users: tuple[str, str],
    recall_timeout_s: float,
    mcp: McpTools | McpSkipped,
    out: TextIO,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Result:
    """Run the agent's three steps, then the two MCP steps (or print why they are skipped: ``McpSkipped``); raise
    :class:`SmokeError` at the first step that fails."""
    user_a, user_b = users
    word = f"smoke-{uuid.uuid4().hex[:10]}"
    tell = f"Please remember this for later: my code word is {word}."
    ask = "What is my code word? Answer with the code word only."
    result = Result()
    hints = list(invoker.hints)

    def tell_word() -> str:
        reply = invoker.invoke(user_a, new_session(), tell)
        _check(reply, "session 1", hints)
        return f"answered, {reply.recalled} recalled"

    def recall_word() -> str:
        session = new_session()
        last: list[Reply] = []

        def came_back() -> bool:
            reply = invoker.invoke(user_a, session, ask)
            _check(reply, "session 2", hints)
            last[:] = [reply]
            return word in reply.output

        found, attempts = _poll(came_back, timeout_s=recall_timeout_s, clock=clock, sleep=sleep)
        reply = last[0]
        if not found:
            raise SmokeError(
                f"session 2: the code word from session 1 did not come back within {recall_timeout_s:.0f} s "
                f"({attempts} attempts; last answer recalled {reply.recalled}: {reply.output[:200]!r})",
                [
                    "Did the retain reach Hindsight? The agent's log shows the adapter's retain and spool lines.",
                    "Are the Hindsight workers running (they extract the facts recall finds)?",
                    *hints,
                ],
            )
        return f"the code word came back after {attempts} attempt(s), {reply.recalled} recalled"

    def other_user() -> str:
        reply = invoker.invoke(user_b, new_session(), ask)
        _check(reply, "session 3", hints)
        if word in reply.output or reply.recalled:
            raise SmokeError(
                f"session 3: another user recalled user A's memory ({reply.recalled} recalled: {reply.output[:200]!r})",
                ["ISOLATION FAILURE: check hindsight_isolation's settings in the Hindsight tasks", *hints],
            )
        return "recalled nothing of user A"

    steps: list[tuple[str, Callable[[], str]]] = [
        ("user A, session 1: tell a code word", tell_word),
        ("user A, session 2: recall it", recall_word),
        ("user B, session 3: must not recall it", other_user),
    ]
    if not isinstance(mcp, McpSkipped):
        poll = functools.partial(_poll, timeout_s=recall_timeout_s, clock=clock, sleep=sleep)
        steps += _mcp_steps(mcp, users=users, word=word, query=ask, poll=poll)
    for number, (name, action) in enumerate(steps, start=1):
        out.write(f"[{number}/{len(steps)}] {name} ... ")
        out.flush()
        started = clock()
        detail = action()
        seconds = clock() - started
        result.steps.append(Step(name, seconds, detail))
        out.write(f"ok in {seconds:.2f} s ({detail})\n")
    if isinstance(mcp, McpSkipped):
        result.mcp_skipped = mcp.line
        out.write(f"{mcp.line}\n")
    return result


def _mcp_steps(
    mcp: McpTools,
    *,
    users: tuple[str, str],
    word: str,
    query: str,
    poll: Callable[[Callable[[], bool]], tuple[bool, int]],
) -> list[tuple[str, Callable[[], str]]]:
    """User A's ``recall`` over MCP must find the code word the agent was told; user B's must find nothing of it."""
    user_a, user_b = users
    recall = mcp.tool_name("recall")
    hints = list(mcp.hints)

    def checked(user: str, label: str) -> ToolReply:
        reply = mcp.call(user, "recall", {"query": query})
        if reply.is_error:  # an error finds nothing, which proves nothing
            raise SmokeError(f"{label}: {recall} answered an error: {reply.text[:300]!r}", hints)
        return reply

    def own() -> str:
        last: list[ToolReply] = []

        def found() -> bool:
            last[:] = [checked(user_a, "MCP, user A")]
            return last[0].mentions(word)

        ok, attempts = poll(found)
        if not ok:
            raise SmokeError(
                f"MCP, user A: {recall} did not find the code word the agent was told ({attempts} attempts; "
                f"last answer: {last[0].text[:200]!r})",
                [
                    "The agent recalled it, so the memory exists: do the MCP tools act on the agent's banks "
                    "(the same agent name, the same user id from the token)?",
                    *hints,
                ],
            )
        return f"{recall} found the code word after {attempts} attempt(s)"

    def other() -> str:
        reply = checked(user_b, "MCP, user B")
        if reply.mentions(word):
            raise SmokeError(
                f"MCP, user B: {recall} returned user A's memory: {reply.text[:200]!r}",
                ["ISOLATION FAILURE over MCP: the gateway must act for the token's user only", *hints],
            )
        return f"{recall} found nothing of user A"

    return [
        (f"user A over MCP ({recall}): recall the code word", own),
        (f"user B over MCP ({recall}): must not recall it", other),
    ]

"""The smoke scenario: what proves a deployment works, independent of where the agent runs.

Three turns through the real invoke path: user A tells a fresh code word in session 1; user A asks for it in a new
session 2 (every session is a new microVM: only memory can carry it) until it comes back or the wait runs out; user B
asks the same in session 3 and must get nothing of it. Each step prints its timing; a failure names what to look at.
"""

from __future__ import annotations

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


def run(
    invoker: Invoker,
    *,
    users: tuple[str, str],
    recall_timeout_s: float,
    out: TextIO,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Result:
    """Run the three steps; raise :class:`SmokeError` at the first that fails."""
    user_a, user_b = users
    word = f"smoke-{uuid.uuid4().hex[:10]}"
    tell = f"Please remember this for later: my code word is {word}."
    ask = "What is my code word? Answer with the code word only."
    result = Result()
    hints = list(invoker.hints)

    def step(name: str, action: Callable[[], str]) -> None:
        out.write(f"[{len(result.steps) + 1}/3] {name} ... ")
        out.flush()
        started = clock()
        detail = action()
        seconds = clock() - started
        result.steps.append(Step(name, seconds, detail))
        out.write(f"ok in {seconds:.2f} s ({detail})\n")

    def tell_word() -> str:
        reply = invoker.invoke(user_a, new_session(), tell)
        _check(reply, "session 1", hints)
        return f"answered, {reply.recalled} recalled"

    def recall_word() -> str:
        session, attempts, delay = new_session(), 0, 1.0
        deadline = clock() + recall_timeout_s
        while True:
            attempts += 1
            reply = invoker.invoke(user_a, session, ask)
            _check(reply, "session 2", hints)
            if word in reply.output:
                return f"the code word came back after {attempts} attempt(s), {reply.recalled} recalled"
            if clock() + delay > deadline:
                raise SmokeError(
                    f"session 2: the code word from session 1 did not come back within {recall_timeout_s:.0f} s "
                    f"({attempts} attempts; last answer recalled {reply.recalled}: {reply.output[:200]!r})",
                    [
                        "Did the retain reach Hindsight? The agent's log shows the adapter's retain and spool lines.",
                        "Are the Hindsight workers running (they extract the facts recall finds)?",
                        *hints,
                    ],
                )
            sleep(delay)
            delay = min(delay * 2, 10.0)

    def other_user() -> str:
        reply = invoker.invoke(user_b, new_session(), ask)
        _check(reply, "session 3", hints)
        if word in reply.output or reply.recalled:
            raise SmokeError(
                f"session 3: another user recalled user A's memory ({reply.recalled} recalled: {reply.output[:200]!r})",
                ["ISOLATION FAILURE: check hindsight_isolation's settings in the Hindsight tasks", *hints],
            )
        return "recalled nothing of user A"

    step("user A, session 1: tell a code word", tell_word)
    step("user A, session 2: recall it", recall_word)
    step("user B, session 3: must not recall it", other_user)
    return result

"""``make local``: start the local Hindsight, token issuer, agent and MCP server, then show the memory at work.

demo-user (a demo-only user: only its bank is reset, on every run; the by-hand examples use user-alex, whose
memories the demo never touches) tells the agent in session 1 that they prefer email over phone and, a turn later,
asks about something said in the same session (working memory: the session's own conversation); in session 2 (a
new runtime session id, as after an AgentCore session ends) the agent recalls the preference before
answering; in session 3 demo-user asks it to forget the preference (the ``forget`` memory tool), and
session 4 no longer recalls it. The demo then prints how to connect an MCP client to the same memory.
By default the turns go over HTTP to the agent itself (``python -m runtime_handler``, started on
loopback by ``localdev.agent`` with the deterministic echo model, verifying the caller's token);
``--adapter`` drives ``memory_adapter.HindsightRuntimeAdapter`` directly and ``--client`` the raw
``hindsight_client``. The servers keep running afterwards so you
can explore (``http://127.0.0.1:8888/docs``); stop them with ``make hindsight-stop``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import textwrap
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from localdev import agent as local_agent
from localdev import mcp_server
from localdev.agent import default_agent
from localdev.agent import default_port as default_agent_port
from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from localdev.mcp_server import default_port as default_mcp_port
from localdev.mcp_server import default_server as default_mcp_server
from localdev.supervisor import StartError, require_free_port, try_start
from localdev.token_issuer import background as issuer_background
from localdev.token_issuer import default_data_dir, ensure_running, load_or_create_key, mint_token, stop_background
from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.agentcore.project import project_problems
from memory_adapter.constants import DEFAULT_RECALL_BUDGET
from memory_adapter.exceptions import HindsightAgentCoreError
from memory_adapter.identity import format_bank_id
from memory_adapter.identity.settings import discovery_url_for
from memory_adapter.settings_fields import env_name
from memory_adapter.transport import HttpTransport

if TYPE_CHECKING:
    from memory_adapter import TurnContext

#: The demo's own user: its bank alone is reset on every run (never user-alex's, which the README's by-hand examples
#: use), so session 2 can recall only session 1 and nothing a person stored by hand is lost.
USER = "demo-user"
#: The user the by-hand examples the demo prints (and the README) call the agent as.
HAND_USER = "user-alex"
AGENT = "support"
SESSION_1_PROMPT = "Hi! Just so you know: I prefer email over phone, so please do not call me."
SESSION_1_REPLY = "Understood. I will contact you by email from now on."
SESSION_1_CODENAME = "My project codename is Bluebird."
SESSION_1_QUESTION = "What is my project codename?"
SESSION_2_PROMPT = "How should you contact me about my delivery?"
FORGET_PROMPT = "forget that I prefer email"
RECALL_WAIT_S = 30.0  # retains are processed asynchronously by the server: wait this long for them


class Memory(Protocol):
    """What the demo needs from memory: the two halves of a turn."""

    async def recall(self, session_id: str, query: str) -> str: ...

    async def retain(self, session_id: str, query: str, reply: str) -> None: ...

    async def close(self) -> None: ...


class AdapterMemory:
    """Turns through the project's memory adapter (recall before, retain after, flush at the end)."""

    def __init__(self, url: str, spool_dir: Path, token: str) -> None:
        from memory_adapter import HindsightRuntimeAdapter

        self._token = token
        self._adapter = HindsightRuntimeAdapter(
            agent_name=AGENT, hindsight_api_url=url, spool_dir=str(spool_dir), recall_timeout=5.0
        )

    def _ctx(self, session_id: str) -> TurnContext:
        from memory_adapter import TurnContext

        return TurnContext(
            runtime_session_id=session_id,
            user_id=USER,
            agent_name=AGENT,
            request_id=f"turn-{uuid.uuid4().hex}",
            credential=self._token,  # the caller's token: the server serves the demo user's bank only to it
        )

    async def recall(self, session_id: str, query: str) -> str:
        return await self._adapter.before_turn(self._ctx(session_id), query=query)

    async def retain(self, session_id: str, query: str, reply: str) -> None:
        await self._adapter.after_turn(self._ctx(session_id), result=reply, query=query)
        await self._adapter.flush(30.0)

    async def close(self) -> None:
        await self._adapter.aclose(10.0)


class ClientMemory:
    """The same turns with the raw ``hindsight_client`` (before the adapter existed, and for comparison)."""

    def __init__(self, url: str, token: str) -> None:
        from hindsight_client import Hindsight

        self._client = Hindsight(base_url=url, api_key=token, timeout=60)
        self._bank = format_bank_id(user=USER, agent=AGENT)

    async def recall(self, session_id: str, query: str) -> str:
        response = await self._client.arecall(self._bank, query)
        return "\n".join(f"- {r.text}" for r in response.results)

    async def retain(self, session_id: str, query: str, reply: str) -> None:
        await self._client.aretain(
            self._bank,
            f"User: {query}\nAssistant: {reply}",
            document_id=f"turn-{uuid.uuid4().hex}",
            metadata={"runtime_session_id": session_id},
        )

    async def close(self) -> None:
        await self._client.aclose()  # type: ignore[no-untyped-call]


def reset_bank(url: str, operator_key: str | None) -> None:
    """Forget what earlier demo runs stored for the demo's own user (never anyone else's), so session 2 can only
    recall session 1 (deleting a bank that is not there is a no-op)."""
    api = HindsightApi(HttpTransport(url), timeout=30.0, bearer=operator_key)
    api.delete_bank(format_bank_id(user=USER, agent=AGENT))


def _say(who: str, text: str) -> None:
    lines = textwrap.wrap(text, 90) or [""]
    print(f"  {who:>9} | {lines[0]}")
    for line in lines[1:]:
        print(f"  {'':>9} | {line}")


def _block(text: str) -> None:
    for line in text.splitlines():
        print(f"            | {line}")


async def _poll(fetch: Callable[[], Awaitable[str]], deadline_s: float) -> str:
    """Retains land asynchronously: ask again until memories show up (or the deadline passes)."""
    end = time.monotonic() + deadline_s
    while True:
        text = await fetch()
        if text.strip() or time.monotonic() > end:
            return text
        await asyncio.sleep(0.5)


async def run_demo(memory: Memory) -> bool:
    """The two sessions. Returns True when session 2 recalled the preference."""
    session_1, session_2 = f"session-{uuid.uuid4().hex[:8]}", f"session-{uuid.uuid4().hex[:8]}"
    print(f"\n== Session 1 ({session_1}) ==")
    _say(USER, SESSION_1_PROMPT)
    _say("agent", SESSION_1_REPLY)
    await memory.retain(session_1, SESSION_1_PROMPT, SESSION_1_REPLY)
    print("            | (turn retained in memory)")

    print(f"\n== Session 2 ({session_2}): a new session, nothing carried over but memory ==")
    _say(USER, SESSION_2_PROMPT)
    recalled = await _poll(lambda: memory.recall(session_2, SESSION_2_PROMPT), RECALL_WAIT_S)
    if not recalled.strip():
        print("            | nothing recalled: memory did not carry over (see the server log)")
        return False
    print("            | memory recalled before the agent answers:")
    _block(recalled)
    found = "email" in recalled.lower()
    _say("agent", "I'll email you about your delivery, as you prefer." if found else "(preference not recalled)")
    return found


def _post_json(url: str, body: dict[str, object], headers: dict[str, str]) -> dict[str, object]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **headers})  # noqa: S310
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - loopback http
        answer: dict[str, object] = json.load(response)
        return answer


def _agent_turn(agent_url: str, token: str, session_id: str, prompt: str) -> dict[str, object]:
    """One ``POST /invocations``, as AgentCore Runtime forwards it (bearer token, session id header)."""
    headers = {"Authorization": f"Bearer {token}", "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": session_id}
    return _post_json(f"{agent_url}/invocations", {"prompt": prompt}, headers)


def _wait_until_idle(agent_url: str, deadline_s: float) -> None:
    """/ping says HealthyBusy until the turn's retain is delivered to Hindsight (or spooled)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        with urllib.request.urlopen(f"{agent_url}/ping", timeout=5) as response:  # noqa: S310 - loopback http
            if json.load(response).get("status") == "Healthy":
                return
        time.sleep(0.1)


def _wait_until_recallable(hindsight_url: str, token: str, deadline_s: float) -> None:
    """Hindsight extracts facts asynchronously after accepting a retain: wait until recall finds them."""
    api = HindsightApi(HttpTransport(hindsight_url), timeout=60.0, bearer=token)
    bank = format_bank_id(user=USER, agent=AGENT)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        with contextlib.suppress(HindsightAgentCoreError):
            if api.recall(bank, SESSION_2_PROMPT, budget=DEFAULT_RECALL_BUDGET, max_tokens=1024):
                return
        time.sleep(0.5)


def _say_answer(answer: dict[str, object]) -> None:
    output = str(answer.get("output", ""))
    lines = output.splitlines() or [""]
    _say("agent", lines[0])
    _block("\n".join(lines[1:]))
    memory = answer.get("memory")
    print(f"            | (memory: {json.dumps(memory)})")


def run_agent_demo(agent_url: str, hindsight_url: str, token: str) -> bool:
    """The four sessions through the running agent. True when working memory, recall and forget all showed."""
    sessions = [f"session-{uuid.uuid4().hex}" for _ in range(4)]
    print(f"\n== Session 1 ({sessions[0]}) ==")
    for prompt in (SESSION_1_PROMPT, SESSION_1_CODENAME):
        _say(USER, prompt)
        _say_answer(_agent_turn(agent_url, token, sessions[0], prompt))
    _say(USER, SESSION_1_QUESTION)
    same_session = _agent_turn(agent_url, token, sessions[0], SESSION_1_QUESTION)
    _say_answer(same_session)
    print("            | (working memory: the agent was given this session's conversation)")
    _wait_until_idle(agent_url, RECALL_WAIT_S)
    print("            | (the agent retained the turns in the background; /ping is Healthy again)")
    _wait_until_recallable(hindsight_url, token, RECALL_WAIT_S)

    print(f"\n== Session 2 ({sessions[1]}): a new session, nothing carried over but memory ==")
    _say(USER, SESSION_2_PROMPT)
    recalled = _agent_turn(agent_url, token, sessions[1], SESSION_2_PROMPT)
    _say_answer(recalled)

    print(f"\n== Session 3 ({sessions[2]}): the user asks the agent to forget ==")
    _say(USER, FORGET_PROMPT)
    _say_answer(_agent_turn(agent_url, token, sessions[2], FORGET_PROMPT))

    print(f"\n== Session 4 ({sessions[3]}): the preference is gone; the rest is kept ==")
    _say(USER, SESSION_2_PROMPT)
    after = _agent_turn(agent_url, token, sessions[3], SESSION_2_PROMPT)
    _say_answer(after)
    _say(USER, SESSION_1_QUESTION)
    kept = _agent_turn(agent_url, token, sessions[3], SESSION_1_QUESTION)
    _say_answer(kept)
    _wait_until_idle(agent_url, RECALL_WAIT_S)
    return (
        "Bluebird" in str(same_session.get("output", ""))
        and "email over phone" in str(recalled.get("output", "")).lower()
        and "email" not in str(after.get("output", "")).lower()
        and "Bluebird" in str(kept.get("output", ""))
    )


def port_clashes(hindsight: LocalHindsight, *, agent_and_mcp: bool) -> list[str]:
    """Each port ``make local`` will listen on that something else holds now, one line each naming the variable that
    moves it: checked before anything starts, so a clash is reported at once rather than after Hindsight's ~20 s
    start. A port a service of ``make local`` already holds (it is reused) is no clash; port 0 means a free one."""
    config = hindsight.config
    wanted: list[tuple[int, str, str]] = []
    if not hindsight.pids():  # a running (or half-running) Hindsight of this data dir reuses or frees its own ports
        wanted += [
            (config.port, "Hindsight", env_name(LocalHindsightConfig, "port")),
            (config.pg_port, "Hindsight's PostgreSQL", env_name(LocalHindsightConfig, "pg_port")),
        ]
        if config.uses_stub:
            wanted.append((config.llm_port, "the LLM stand-in", env_name(LocalHindsightConfig, "llm_port")))
    if issuer_background.state_file(default_data_dir()).live_pid() is None:
        wanted.append((issuer_background.default_port(), "the token issuer", issuer_background.ENV_PORT))
    if agent_and_mcp:
        services = (
            (default_agent().url, default_agent_port(), "the agent", local_agent.ENV_PORT),
            (default_mcp_server().url, default_mcp_port(), "the MCP server", mcp_server.ENV_PORT),
        )
        wanted += [(port, name, setting) for url, port, name, setting in services if _port_of(url) != port]
    clashes = []
    for port, name, setting in wanted:
        try:
            if port:
                require_free_port(port, name=name, setting=setting)
        except StartError as err:
            clashes.append(str(err))
    return clashes


def _port_of(url: str | None) -> int | None:
    return urllib.parse.urlsplit(url).port if url else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localdev.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--client", action="store_true", help="use hindsight_client directly, not the agent")
    parser.add_argument("--adapter", action="store_true", help="use the memory adapter directly, not the agent")
    parser.add_argument("--agent-project", type=Path, help="run this agent project (e.g. examples/strands_agent)")
    args = parser.parse_args(argv)
    problems = project_problems(args.agent_project) if args.agent_project else []
    if problems:  # before the ~20 s start of Hindsight, not after it
        print("\n".join([f"make local cannot start AGENT={args.agent_project}:", *problems]), file=sys.stderr)
        return 1

    hindsight = LocalHindsight(LocalHindsightConfig.from_env(), log=lambda msg: print(f"  {msg}", flush=True))
    clashes = port_clashes(hindsight, agent_and_mcp=not (args.client or args.adapter))
    if clashes:
        print("\n".join(["make local cannot start: a port it needs is in use", *clashes]), file=sys.stderr)
        return 1
    print("== Starting the local services (first start loads the embedding model: ~20 s) ==")
    if try_start(hindsight.start) is None:
        return 1
    issuer_url = ensure_running()
    token = mint_token(load_or_create_key(default_data_dir()), issuer=issuer_url, user=USER, ttl=3600)
    print(f"  Hindsight:    {hindsight.url}   (API docs: {hindsight.url}/docs)")
    print(f"  Token issuer: {discovery_url_for(issuer_url)}")
    print(f"  Caller:       {USER}, with a bearer token from the local issuer")
    print(f"  Reset:        {USER}'s memories (a demo-only user; {HAND_USER}'s, used by hand, are kept)")

    print(f"  Token:        minted for {USER} by the local issuer (RS256, 1 h): {token[:32]}...")
    reset_bank(hindsight.url, hindsight.operator_key)
    if not (args.client or args.adapter):
        agent = default_agent()
        agent_url = try_start(
            lambda: agent.start(
                hindsight_url=hindsight.url,
                issuer_url=issuer_url,
                port=default_agent_port(),
                project=args.agent_project,
            )
        )
        if agent_url is None:
            return 1
        code = f"{args.agent_project}/" if args.agent_project else "python -m runtime_handler"
        print(f"  Agent:        {agent_url}   ({code}: JWT mode, echo model; log {agent.log_file})")
        mcp = default_mcp_server()
        mcp_url = try_start(
            lambda: mcp.start(hindsight_url=hindsight.url, issuer_url=issuer_url, port=default_mcp_port())
        )
        if mcp_url is None:
            return 1
        print(f"  MCP server:   {mcp_url}   (streamable HTTP, the same memory tools; log {mcp.log_file})")
        ok = run_agent_demo(agent_url, hindsight.url, token)
        _finish(hindsight, agent_url, mcp_url)
        return 0 if ok else 1
    spool = hindsight.data_dir.parent / "demo-spool"
    memory: Memory = ClientMemory(hindsight.url, token) if args.client else AdapterMemory(hindsight.url, spool, token)
    print(f"  Memory via:   {'hindsight_client (raw)' if args.client else 'memory_adapter.HindsightRuntimeAdapter'}")

    async def go() -> bool:
        try:
            return await run_demo(memory)
        finally:
            await memory.close()

    ok = asyncio.run(go())
    _finish(hindsight, None, None)
    return 0 if ok else 1


def _shown_python() -> str:
    """The interpreter to show in hints: ``.venv/bin/python`` when run from the repository's virtualenv."""
    shown = os.path.relpath(sys.executable)
    return shown if not shown.startswith("..") else sys.executable


def _finish(hindsight: LocalHindsight, agent_url: str | None, mcp_url: str | None) -> None:
    py = _shown_python()
    agent_hint = (
        f"  TOKEN=$({py} -m localdev.token_issuer mint --user {HAND_USER})\n"
        f'  curl -s {agent_url}/invocations -H "Authorization: Bearer $TOKEN" '
        f"-H 'Content-Type: application/json' -d '{{\"prompt\": \"I prefer email over phone.\"}}'\n"
        f'  curl -s {agent_url}/invocations -H "Authorization: Bearer $TOKEN" '
        f"-H 'Content-Type: application/json' -d '{{\"prompt\": \"How should you contact me?\"}}'\n"
        if agent_url
        else ""
    )
    mcp_hint = (
        f"Connect any MCP client (streamable HTTP) to the same memory:\n"
        f"  URL:    {mcp_url}\n"
        f"  Header: Authorization: Bearer $TOKEN   (a user token; TOKEN as above)\n"
        f"  Tools:  recall, reflect, remember, forget, list_recent (they act for the token's user only)\n"
        f'  e.g.    curl -s {mcp_url} -H "Authorization: Bearer $TOKEN" -H "Accept: application/json, '
        f'text/event-stream" -H "Content-Type: application/json" '
        f'-d \'{{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}\'\n'
        if mcp_url
        else ""
    )
    print(
        "\nThe services are still running. Try them:\n"
        f"  curl -s {hindsight.url}/health\n"
        f"{agent_hint}"
        f"{mcp_hint}"
        "Stop them with:\n"
        "  make local-stop      # the agent, the MCP server, Hindsight, PostgreSQL, the LLM stand-in and the issuer"
    )
    if os.environ.get("CI"):  # nobody is there to explore: leave nothing running
        default_agent().stop()
        default_mcp_server().stop()
        hindsight.stop()
        stop_background()


if __name__ == "__main__":
    raise SystemExit(main())

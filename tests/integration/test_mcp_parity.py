"""A client sees the same MCP answers from the local server and through the AgentCore Gateway.

Both paths run on the real local Hindsight and are called with the real ``mcp`` client SDK: the local MCP server
(``localdev.mcp_server``) and the gateway emulator around the real interceptor and Lambda target
(``tests/unit/gateway_emulator.py``, which answers a tool call as the gateway does: the target's JSON in one text
block). Every result, refusals included, must be equal field by field, and the parsing snippet of ``docs/mcp.md``
must run as pasted against both.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from localdev.hindsight.config import LOCAL_AGENT_NAME
from localdev.mcp_server import MCP_PATH, create_app
from localdev.token_issuer import LOCAL_CLIENT_ID, TokenIssuer
from memory_adapter.gateway import prefixed_tool_name
from memory_adapter.identity.settings import JwtSettings
from memory_adapter.identity.verifier import JwtVerifier
from memory_adapter.tools.memory_tools import MemoryTools
from memory_adapter.transport import HttpTransport
from tests.unit.gateway_emulator import gateway_app
from tests.unit.runtime_handler.serving import serve

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TARGET = "memory"


@dataclass(frozen=True)
class Route:
    """One way to the memory tools: its MCP URL and the name it gives a tool."""

    url: str
    prefix: str

    def tool(self, name: str) -> str:
        return self.prefix + name


@pytest.fixture(scope="module")
def routes(local_hindsight: Any, token_issuer: TokenIssuer) -> Iterator[tuple[Route, Route]]:
    """(the local MCP server, the emulated gateway), both on the same banks (the local agent's)."""
    local = create_app(
        hindsight_url=local_hindsight.url, discovery_url=token_issuer.discovery_url, public_url="http://127.0.0.1"
    )
    verifier = JwtVerifier(JwtSettings(discovery_url=token_issuer.discovery_url, allowed_clients=(LOCAL_CLIENT_ID,)))
    gateway, _ = gateway_app(
        verifier=verifier,
        tools=MemoryTools(HttpTransport(local_hindsight.url)),
        agent=LOCAL_AGENT_NAME,
        target_name=TARGET,
    )
    with serve(local) as local_url, serve(gateway) as gateway_url:
        yield (
            Route(local_url + MCP_PATH, ""),
            Route(gateway_url + "/mcp", prefixed_tool_name(TARGET, "")),
        )


def _calls(path: Route, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each call's ``CallToolResult`` as the client SDK parsed it (a dict of every field)."""

    async def go() -> list[dict[str, Any]]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
            streamable_http_client(path.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return [(await session.call_tool(path.tool(n), a)).model_dump() for n, a in calls]

    return anyio.run(go)


def test_every_tool_answer_is_the_same_locally_and_through_the_gateway(
    routes: tuple[Route, Route], token_issuer: TokenIssuer
) -> None:
    local, gateway = routes
    token = token_issuer.mint(f"user-parity-{time.time_ns()}")
    # GIVEN a memory the user stored over MCP
    (stored,) = _calls(local, token, [("remember", {"text": "My favourite tea is genmaicha.", "kind": "preference"})])
    assert '"error"' not in stored["content"][0]["text"]
    # WHEN the same calls go both ways (results, an empty result, and refusals)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("recall", {"query": "favourite tea"}),
        ("list_recent", {"kind": "preference"}),
        ("recall", {"query": "a thing never said"}),
        ("recall", {"query": "tea", "user_id": "user-alex"}),  # identity is no argument
        ("forget", {}),  # neither query nor ids
        ("no_such_tool", {}),
    ]
    here, there = _calls(local, token, calls), _calls(gateway, token, calls)
    # THEN the client gets identical results: one text block of JSON, no structured content, isError false
    assert here == there
    for result in here:
        assert result["structured_content"] is None
        assert result["is_error"] is False
        assert [block["type"] for block in result["content"]] == ["text"]
    assert "genmaicha" in here[0]["content"][0]["text"]
    assert '"error": "bad_arguments"' in here[3]["content"][0]["text"]


def _docs_snippet() -> str:
    """The python block of docs/mcp.md, as a reader pastes it."""
    match = re.search(r"```python\n(.*?)```", (ROOT / "docs" / "mcp.md").read_text(), re.DOTALL)
    assert match, "docs/mcp.md: no python snippet"
    return match.group(1)


def test_the_docs_parsing_snippet_runs_as_pasted_on_both_paths(
    routes: tuple[Route, Route], token_issuer: TokenIssuer, tmp_path: Path
) -> None:
    local, gateway = routes
    token = token_issuer.mint(f"user-snippet-{time.time_ns()}")
    _calls(local, token, [("remember", {"text": "My contact preference is email, never phone."})])
    script = tmp_path / "recall.py"
    script.write_text(_docs_snippet())
    outputs = []
    for path in (local, gateway):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env |= {"TOKEN": token, "MCP_URL": path.url, "MCP_TOOL": path.tool("recall")}
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert "My contact preference is email, never phone." in outputs[0]
    # A refusal is raised with its code, not parsed as a result
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"TOKEN": token, "MCP_URL": gateway.url, "MCP_TOOL": gateway.tool("no_such_tool")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode != 0
    assert "RuntimeError: bad_arguments:" in done.stderr


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("no token", "set TOKEN to a user token"),
        ("a foreign token", "refused the session: check TOKEN"),
        ("nothing listening", "cannot connect to http://127.0.0.1:"),
    ],
)
def test_the_docs_snippet_says_what_is_wrong_without_a_traceback(
    routes: tuple[Route, Route], tmp_path: Path, case: str, expected: str
) -> None:
    # GIVEN the snippet as pasted, run the way a newcomer gets it wrong: TOKEN unset, a token the server refuses, or
    # MCP_URL where nothing listens (make local not running)
    local, _ = routes
    script = tmp_path / "recall.py"
    script.write_text(_docs_snippet())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TOKEN")}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/mcp"
    env |= {
        "no token": {"MCP_URL": local.url},
        "a foreign token": {"MCP_URL": local.url, "TOKEN": "not-a-token"},
        "nothing listening": {"MCP_URL": closed, "TOKEN": "not-a-token"},
    }[case]
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    # THEN it stops with one line saying what is wrong and what to do (before: a KeyError or an exception group)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert expected in line

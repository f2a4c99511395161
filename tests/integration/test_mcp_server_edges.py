"""The local MCP server on odd JSON-RPC (raw HTTP, a verified user): batches, notifications, non-object params and
arguments, methods it does not serve, bodies the parser refuses. Never a 5xx, a notification runs no tool, and
``forget`` answers another user's memory id exactly as an id nobody uses."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
import pytest

from localdev.token_issuer import TokenIssuer

from .test_mcp_server import _answer, _session

pytestmark = pytest.mark.integration

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def _call(name: object, arguments: object, **extra: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
        **extra,
    }


ODD_BODIES: dict[str, str | bytes] = {
    "batch": json.dumps([INITIALIZE, _call("recall", {"query": "x"})]),
    "empty batch": "[]",
    "arguments a list": json.dumps(_call("recall", [1])),
    "arguments a string": json.dumps(_call("recall", "x")),
    "name a number": json.dumps(_call(5, {})),
    "name 100,000 characters": json.dumps(_call("x" * 100_000, {})),
    "params a list": json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": [1]}),
    "no params": json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call"}),
    "id an object": json.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}),
    "method not served": json.dumps({"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel", "params": {}}),
    "nested past the parser": '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":' + "[" * 50_000,
    "lone surrogate": '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"recall","arguments":'
    '{"query":"a\\ud800b"}}}',
    "not UTF-8": b'{"jsonrpc":"2.0","id":2,"method":"tools/list","x":"\xff"}',
}


@pytest.mark.parametrize("case", ODD_BODIES)
def test_odd_json_rpc_is_answered_without_a_server_error(mcp_url: str, token_issuer: TokenIssuer, case: str) -> None:
    headers = {**HEADERS, "Authorization": f"Bearer {token_issuer.mint(f'user-odd-{time.time_ns()}')}"}
    response = httpx.post(mcp_url, content=ODD_BODIES[case], headers=headers, timeout=60)
    assert response.status_code < 500, response.text[:300]
    assert "Traceback" not in response.text


def test_a_tool_call_sent_as_a_notification_runs_nothing(mcp_url: str, token_issuer: TokenIssuer) -> None:
    token = token_issuer.mint(f"user-notify-{time.time_ns()}")
    notification = {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "params": {"name": "remember", "arguments": {"text": "x"}},
    }
    headers = {**HEADERS, "Authorization": f"Bearer {token}"}
    assert httpx.post(mcp_url, json=notification, headers=headers, timeout=60).status_code == 202
    _, listed = _session(mcp_url, token, [("list_recent", {})])
    assert _answer(listed)["memories"] == []


def test_forget_answers_someone_elses_memory_id_as_an_unused_one(mcp_url: str, token_issuer: TokenIssuer) -> None:
    alex, bob = token_issuer.mint(f"user-alex-{time.time_ns()}"), token_issuer.mint(f"user-bob-{time.time_ns()}")
    _, _, listed = _session(mcp_url, alex, [("remember", {"text": "My PIN is 8812."}), ("list_recent", {})])
    alex_id = _answer(listed)["memories"][0]["id"]
    unused = str(uuid.uuid4())
    # bob without a bank yet, then bob with one: each time alex's id reads exactly as an unused one
    for _ in range(2):
        _, theirs, nobodys = _session(
            mcp_url, bob, [("forget", {"memory_ids": [alex_id]}), ("forget", {"memory_ids": [unused]})]
        )
        assert _answer(theirs) == _answer(nobodys)
        assert _answer(theirs)["forgotten"] == []
        _session(mcp_url, bob, [("remember", {"text": "My bike is blue."})])
    _, still = _session(mcp_url, alex, [("list_recent", {})])
    assert [m["id"] for m in _answer(still)["memories"]] == [alex_id]

"""The memory tools over MCP (streamable HTTP), with the official ``mcp`` client SDK, against the real local Hindsight.

User A's MCP session can never read, change or learn of user B's memories; no token, a forged, expired or
machine-to-machine token opens nothing.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from localdev.token_issuer import LOCAL_CLIENT_ID, TokenIssuer
from tests.unit.issuers import non_numeric_time_claims

pytestmark = pytest.mark.integration


def _session(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Open an MCP session with ``token``, list the tools, make ``calls``; return [tools, *results]."""

    async def go() -> list[Any]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            out: list[Any] = [[tool.name for tool in (await session.list_tools()).tools]]
            for name, arguments in calls:
                out.append(await session.call_tool(name, arguments))
            return out

    return anyio.run(go)


def _text(result: Any) -> str:
    return "\n".join(part.text for part in result.content if getattr(part, "text", None))


def _answer(result: Any) -> dict[str, Any]:
    """The tool's JSON: the one text block the AgentCore Gateway also gives (no structured content)."""
    assert result.structured_content is None
    (block,) = result.content
    answer = json.loads(block.text)
    assert isinstance(answer, dict)
    return answer


def test_a_users_mcp_session_sees_only_their_own_memories(mcp_url: str, token_issuer: TokenIssuer) -> None:
    alex, bob = f"user-alex-{time.time_ns()}", f"user-bob-{time.time_ns()}"
    alex_token, bob_token = token_issuer.mint(alex), token_issuer.mint(bob)
    # GIVEN each user remembers something through MCP
    tools, stored = _session(mcp_url, alex_token, [("remember", {"text": "My locker code is 4711.", "kind": "fact"})])
    assert tools == ["recall", "reflect", "remember", "forget", "list_recent"]
    assert stored.is_error is False
    _, bob_stored = _session(mcp_url, bob_token, [("remember", {"text": "My bike is a red Gazelle."})])
    assert _answer(bob_stored)["kind"] == "fact"

    # WHEN bob recalls, lists, reflects and tries to forget alex's memory (by description and by alex's own id)
    _, listed = _session(mcp_url, alex_token, [("list_recent", {})])
    alex_id = _answer(listed)["memories"][0]["id"]
    _, recalled, recent, reflected, by_query, by_id = _session(
        mcp_url,
        bob_token,
        [
            ("recall", {"query": "locker code"}),
            ("list_recent", {}),
            ("reflect", {"query": "What is my locker code?"}),
            ("forget", {"query": "locker code"}),
            ("forget", {"memory_ids": [alex_id]}),
        ],
    )
    # THEN bob sees only his own, cannot tell alex's exists, and changed nothing
    for result in (recalled, recent, reflected, by_query, by_id):
        assert "4711" not in _text(result)
        assert "error" not in _answer(result)
    assert _answer(by_id)["forgotten"] == []
    assert [m["text"] for m in _answer(recent)["memories"]] == ["My bike is a red Gazelle."]
    # AND alex's memory is still there, and alex can forget it
    _, still, forgotten, gone = _session(
        mcp_url,
        alex_token,
        [("recall", {"query": "locker code"}), ("forget", {"memory_ids": [alex_id]}), ("list_recent", {})],
    )
    assert "My locker code is 4711." in _text(still)
    assert _answer(forgotten)["forgotten"][0]["text"] == "My locker code is 4711."
    assert _answer(gone)["memories"] == []


def test_identity_cannot_be_passed_as_an_argument(mcp_url: str, token_issuer: TokenIssuer) -> None:
    token = token_issuer.mint(f"user-eve-{time.time_ns()}")
    _, result = _session(mcp_url, token, [("recall", {"query": "x", "user_id": "user-alex"})])
    assert result.is_error is False  # as through the gateway: the refusal is the answer's error
    assert _answer(result)["error"] == "bad_arguments"
    assert "unknown argument(s) user_id" in _answer(result)["message"]


def _forged(token_issuer: TokenIssuer) -> str:
    good = token_issuer.mint("user-alex")
    head, body, signature = good.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["sub"] = "user-bob"
    tampered = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{tampered}.{signature}"


def test_no_forged_expired_or_machine_token_gets_in(mcp_url: str, token_issuer: TokenIssuer) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    bad = {
        "no token": None,
        "forged": _forged(token_issuer),
        "expired": token_issuer.mint("user-alex", ttl=-120),
        "wrong client": token_issuer.mint("user-alex", client_id="someone-else"),
        "machine to machine": token_issuer.mint(LOCAL_CLIENT_ID),  # client credentials: sub is the client id
        "garbage": "garbage",
        **{
            case: token_issuer.mint("user-alex", extra_claims=claims)
            for case, claims in non_numeric_time_claims().items()
        },
    }
    for case, token in bad.items():
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        response = httpx.post(mcp_url, json=initialize, headers={**headers, **auth}, timeout=30)
        assert response.status_code == 401, case
        assert "4711" not in response.text
    good = httpx.post(
        mcp_url, json=initialize, headers={**headers, "Authorization": f"Bearer {token_issuer.mint('u')}"}, timeout=30
    )
    assert good.status_code == 200, good.text


def test_a_get_is_answered_at_once(mcp_url: str, token_issuer: TokenIssuer) -> None:
    # A stateless server never sends on a standalone stream: a GET that opened one hung, holding a connection
    headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {token_issuer.mint('user-alex')}"}
    response = httpx.get(mcp_url, headers=headers, timeout=15)
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == "POST"
    assert "POST" in response.json()["error"]["message"]
    assert httpx.get(mcp_url, timeout=15).status_code == 405  # and without a token: it names no one's data

"""The local MCP server reads at most ``MAX_BODY_BYTES`` of a request body, from anyone, over real HTTP.

An authenticated caller's body past the cap is answered 413 with a JSON-RPC error that names the cap, without being
read past it: at once when ``Content-Length`` declares it, as soon as the bytes pass the cap when it is chunked.
The real ``mcp`` client sees the refusal as an error naming the cap. An unauthenticated caller is still refused 401
first, its body unread. No Hindsight is needed: nothing here reaches a tool.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from localdev.mcp_server import MAX_BODY_BYTES, MCP_PATH, create_app
from localdev.token_issuer import TokenIssuer
from tests.unit.runtime_handler.serving import serve

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def mcp_url(token_issuer: TokenIssuer) -> Iterator[str]:
    app = create_app(
        hindsight_url="http://127.0.0.1:1", discovery_url=token_issuer.discovery_url, public_url="http://127.0.0.1"
    )
    with serve(app) as url:
        yield url + MCP_PATH


def _call(size: int) -> bytes:
    """A ``tools/call`` whose JSON is ``size`` bytes long."""

    def call(text: str) -> bytes:
        params = {"name": "remember", "arguments": {"text": text}}
        return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()

    encoded = call("x" * (size - len(call(""))))
    assert len(encoded) == size
    return encoded


def _refusal(response: httpx.Response) -> str:
    assert response.status_code == 413, response.text
    payload = response.json()
    assert payload["jsonrpc"] == "2.0"
    assert payload["error"]["code"] == -32600
    message: str = payload["error"]["message"]
    return message


def test_a_declared_body_over_the_cap_is_refused_at_once_with_the_cap_named(
    mcp_url: str, token_issuer: TokenIssuer
) -> None:
    # GIVEN an authenticated caller announcing a body one byte over the cap, and sending none of it
    headers = {**HEADERS, "Authorization": f"Bearer {token_issuer.mint('alice')}"}
    host, port = mcp_url.removeprefix("http://").split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = [f"POST {MCP_PATH} HTTP/1.1", f"Host: {host}", f"Content-Length: {MAX_BODY_BYTES + 1}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        # WHEN the server answers (it could only wait for the body if it meant to read it)
        reply = http.client.HTTPResponse(sock)
        reply.begin()
        body = reply.read()
    # THEN 413 with a JSON-RPC error that says what the cap is and what to do
    assert reply.status == 413, body
    message = json.loads(body)["error"]["message"]
    assert f"larger than {MAX_BODY_BYTES} bytes" in message
    assert "send less" in message


def test_a_chunked_body_is_refused_once_it_passes_the_cap(mcp_url: str, token_issuer: TokenIssuer) -> None:
    # GIVEN an authenticated caller streaming a body without a length, well past the cap
    def chunks() -> Iterator[bytes]:
        for _ in range(64):
            yield b" " * (64 * 1024)

    headers = {**HEADERS, "Authorization": f"Bearer {token_issuer.mint('alice')}"}
    response = httpx.post(mcp_url, content=chunks(), headers=headers, timeout=30)
    # THEN it is refused 413 with the cap named
    assert f"larger than {MAX_BODY_BYTES} bytes" in _refusal(response)


def test_a_body_at_the_cap_is_read(mcp_url: str, token_issuer: TokenIssuer) -> None:
    # GIVEN an authenticated caller sending exactly the cap (a tool call the server parses)
    headers = {**HEADERS, "Authorization": f"Bearer {token_issuer.mint('alice')}"}
    response = httpx.post(mcp_url, content=_call(MAX_BODY_BYTES), headers=headers, timeout=30)
    # THEN the request reaches MCP (the tool's schema refuses the text, in a tool result: not a 413)
    assert response.status_code == 200, response.text
    assert response.json()["id"] == 1


def test_an_unauthenticated_body_is_refused_401_first(mcp_url: str) -> None:
    response = httpx.post(mcp_url, content=_call(MAX_BODY_BYTES + 1), headers=HEADERS, timeout=30)
    assert response.status_code == 401


def test_the_mcp_client_sees_the_refusal_with_the_cap(mcp_url: str, token_issuer: TokenIssuer) -> None:
    # GIVEN the real MCP client, authenticated, calling a tool with an argument past the cap
    async def go() -> tuple[str, list[str]]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token_issuer.mint('alice')}"}, timeout=60) as http,
            streamable_http_client(mcp_url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            with pytest.raises(MCPError) as caught:
                await session.call_tool("remember", {"text": "x" * (MAX_BODY_BYTES + 1)})
            return str(caught.value), [tool.name for tool in (await session.list_tools()).tools]

    refusal, tools = anyio.run(go)
    # THEN the call fails with the server's message naming the cap, and the session stays usable
    assert f"larger than {MAX_BODY_BYTES} bytes" in refusal
    assert "remember" in tools

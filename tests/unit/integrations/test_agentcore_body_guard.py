"""The agent's body guard refuses a body whose declared length is over its cap at once, reading none of it."""

from __future__ import annotations

import json

from starlette.types import Message, Receive, Scope, Send

from memory_adapter.agentcore.app import BodyGuard


async def _never_called(scope: Scope, receive: Receive, send: Send) -> None:
    raise AssertionError("the app must not see an oversized body")


async def test_a_declared_body_over_the_cap_is_refused_unread() -> None:
    asked = 0
    sent: list[Message] = []

    async def receive() -> Message:
        nonlocal asked
        asked += 1
        return {"type": "http.request", "body": b"{}", "more_body": True}

    async def send(message: Message) -> None:
        sent.append(message)

    headers = [(b"content-type", b"application/json"), (b"content-length", b"1000000000")]
    scope = {"type": "http", "method": "POST", "path": "/invocations", "headers": headers, "query_string": b""}
    await BodyGuard(_never_called, max_bytes=1000)(scope, receive, send)
    assert (sent[0]["status"], asked) == (400, 0)
    assert json.loads(sent[1]["body"])["code"] == "payload_too_large"

"""The request guard as ASGI middleware around a recording app (pure: no server; the live server is in
tests/integration/isolation/test_bad_input.py)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from hindsight_isolation import route
from hindsight_isolation.guard import INTERNAL_ERROR, RequestGuard, bank_operation_id
from hindsight_isolation.route import RequestKind, classify
from tests.unit.hindsight_isolation.asgi import read_body

BANK = "user:alice:agent:support"


@dataclass
class Recorder:
    """An ASGI app that reads the whole body, remembers what it saw, and answers ``status``."""

    status: int = 200
    answer: bytes = b'{"ok": true}'
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await read_body(receive)
        self.calls.append({"scope": scope, "body": body, "kind": route.current()})
        await send({"type": "http.response.start", "status": self.status, "headers": []})
        await send({"type": "http.response.body", "body": self.answer, "more_body": False})


async def _call(
    guard: RequestGuard,
    path: str,
    body: bytes = b"",
    *,
    method: str = "POST",
    headers: list[tuple[bytes, bytes]] | None = None,
    query: bytes = b"",
    chunk: int = 0,
) -> tuple[int, bytes]:
    pieces = [body[i : i + chunk] for i in range(0, len(body), chunk)] if chunk else [body]
    messages: list[Message] = [
        {"type": "http.request", "body": p, "more_body": i < len(pieces) - 1} for i, p in enumerate(pieces)
    ]
    messages.append({"type": "http.disconnect"})
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "query_string": query, "headers": headers or []}
    await guard(scope, receive, send)
    if not sent:
        return 0, b""
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


JSON = [(b"content-type", b"application/json")]


@pytest.mark.parametrize(
    ("method", "path", "kind"),
    [
        ("POST", f"/v1/default/banks/{BANK}/memories", RequestKind.RETAIN),
        ("POST", f"/v1/default/banks/{BANK}/memories/", RequestKind.RETAIN),
        ("POST", f"/prefix/v1/default/banks/{BANK}/memories", RequestKind.RETAIN),
        ("POST", f"/v1/default/banks/{BANK}/memories/recall", RequestKind.RECALL),
        ("GET", f"/v1/default/banks/{BANK}/memories/recall", RequestKind.OTHER),
        ("GET", f"/v1/default/banks/{BANK}/memories", RequestKind.OTHER),
        ("POST", f"/v1/default/banks/{BANK}/transfer/import", RequestKind.TRANSFER),
        ("POST", f"/v1/default/banks/{BANK}/clone", RequestKind.TRANSFER),
        ("POST", f"/v1/default/banks/{BANK}/document-transfer", RequestKind.TRANSFER),
        ("POST", f"/v1/default/banks/{BANK}/document-transfer/export", RequestKind.OTHER),
        ("POST", f"/v1/default/banks/{BANK}/transfer/export", RequestKind.OTHER),
        ("POST", "/mcp/", RequestKind.MCP),
        ("GET", f"/mcp/{BANK}/", RequestKind.MCP),
        ("POST", "/mcpx", RequestKind.OTHER),
    ],
)
def test_requests_are_classified(method: str, path: str, kind: RequestKind) -> None:
    assert classify(method, path) is kind


async def test_bad_input_is_refused_before_the_app() -> None:
    app = Recorder()
    guard = RequestGuard(app, integer_parameters=frozenset({"offset"}))
    for path, body, query in (
        ("/v1/default/banks/b/documents/a\x00b", b"", b""),
        ("/v1/default/banks/b/memories/list", b"", b"offset=" + str(2**64).encode()),
        ("/v1/default/banks/b/memories/recall", b'{"query": "\\ud800"}', b""),
        ("/v1/default/banks/b/memories/recall", b'{"query": ' + b"[" * 5000 + b"]" * 5000 + b"}", b""),
    ):
        status, answer = await _call(guard, path, body, headers=JSON, query=query)
        assert status == 400
        detail = json.loads(answer)["detail"]
        assert detail
        assert "Traceback" not in detail
    assert app.calls == []


async def test_mcp_gets_a_json_rpc_error() -> None:
    guard = RequestGuard(Recorder())
    status, answer = await _call(guard, "/mcp/", b'{"jsonrpc": "2.0", "id": 1, "params": {"q": "\\u0000"}}')
    assert status == 400
    error = json.loads(answer)
    assert error["jsonrpc"] == "2.0"
    assert "NUL" in error["error"]["message"]


async def test_good_requests_reach_the_app_unchanged_and_labelled() -> None:
    app = Recorder()
    guard = RequestGuard(app)
    body = json.dumps({"query": "Wo wohnt Zoë? 👋", "tags": ["a"], "budget": 2.5}).encode()
    status, answer = await _call(guard, f"/v1/default/banks/{BANK}/memories/recall", body, headers=JSON, chunk=7)
    assert (status, answer) == (200, b'{"ok": true}')
    assert app.calls[0]["body"] == body
    assert app.calls[0]["kind"] is RequestKind.RECALL
    assert route.current() is None  # the label does not outlive the request


async def test_a_body_that_is_not_json_passes_unless_it_claims_to_be() -> None:
    app = Recorder()
    guard = RequestGuard(app)
    status, _ = await _call(guard, "/x", b"\x00\x01 binary", headers=[(b"content-type", b"application/octet-stream")])
    assert status == 200
    assert app.calls[0]["body"] == b"\x00\x01 binary"
    status, answer = await _call(guard, "/x", b"{oops", headers=JSON)
    assert status == 400
    assert "not valid JSON" in json.loads(answer)["detail"]
    status, _ = await _call(guard, "/x", b"{oops")  # no content type: FastAPI would parse it as JSON
    assert status == 400


async def test_retain_operation_ids_are_private_to_their_bank() -> None:
    app = Recorder()
    guard = RequestGuard(app)
    chosen = str(uuid.uuid4())
    body = json.dumps({"items": [{"content": "x"}], "async": True, "operation_id": chosen}).encode()
    for bank in (BANK, BANK, "user:bob:agent:support"):
        await _call(guard, f"/v1/default/banks/{bank}/memories", body, headers=[*JSON, (b"content-length", b"1")])
    sent = [json.loads(call["body"])["operation_id"] for call in app.calls]
    assert sent[0] == sent[1] == bank_operation_id(chosen, BANK) != chosen  # a re-sent retain finds its operation
    assert sent[2] != sent[0]  # the same id on another bank is another operation
    lengths = [dict(call["scope"]["headers"])[b"content-length"] for call in app.calls]
    assert lengths == [str(len(call["body"])).encode() for call in app.calls]
    # not a UUID: passed on as it is (the route answers 422)
    assert bank_operation_id("not-a-uuid", BANK) == "not-a-uuid"


def _multipart(parts: list[tuple[str, str | None, bytes]], boundary: str = "b0undary") -> tuple[bytes, bytes]:
    out = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return out, f"multipart/form-data; boundary={boundary}".encode()


async def test_multipart_fields_are_checked_and_files_pass_as_they_are() -> None:
    app = Recorder()
    guard = RequestGuard(app)
    binary = bytes(range(256)) * 5000  # NUL bytes and all, over a megabyte: spooled to disk and replayed
    body, content_type = _multipart(
        [("files", "notes.bin", binary), ("request", None, b'{"files_metadata": [{"document_id": "d"}]}')]
    )
    status, _ = await _call(
        guard, f"/v1/default/banks/{BANK}/files/retain", body, headers=[(b"content-type", content_type)], chunk=65_000
    )
    assert status == 200
    assert app.calls[0]["body"] == body

    bad_parts: list[list[tuple[str, str | None, bytes]]] = [
        [("files", "a.txt", b"x"), ("request", None, b'{"files_metadata": [{"document_id": "a\\u0000b"}]}')],
        [("files", "a\x00.txt", b"x"), ("request", None, b"{}")],
        [("request", None, b'{"x": ' + b"[" * 3000 + b"]" * 3000 + b"}")],
    ]
    for parts in bad_parts:
        body, content_type = _multipart(parts)
        status, answer = await _call(guard, "/x", body, headers=[(b"content-type", content_type)])
        assert status == 400, parts
        assert "form field" in json.loads(answer)["detail"]
    assert len(app.calls) == 1


async def test_a_500_never_carries_the_exception_text() -> None:
    guard = RequestGuard(Recorder(status=500, answer=b'{"detail": "invalid byte sequence for encoding \\"UTF8\\""}'))
    status, answer = await _call(guard, "/v1/default/banks/b/stats", method="GET")
    assert status == 500
    assert json.loads(answer) == INTERNAL_ERROR
    # other errors are the app's own (404 not found, 503 health with its JSON, ...)
    guard = RequestGuard(Recorder(status=503, answer=b'{"status": "unhealthy"}'))
    assert await _call(guard, "/health", method="GET") == (503, b'{"status": "unhealthy"}')


async def test_a_client_gone_mid_body_reaches_nothing() -> None:
    app = Recorder()
    guard = RequestGuard(app)
    sent: list[Message] = []
    messages: list[Message] = [
        {"type": "http.request", "body": b'{"a": ', "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> Message:
        return messages.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    await guard({"type": "http", "method": "POST", "path": "/x", "headers": JSON}, receive, send)
    assert (app.calls, sent) == ([], [])


async def test_other_scopes_pass_through() -> None:
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["type"])

    async def receive() -> Message:
        return {"type": "lifespan.startup"}

    async def send(message: Message) -> None:
        return None

    await RequestGuard(app)({"type": "lifespan"}, receive, send)
    assert seen == ["lifespan"]

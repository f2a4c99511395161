"""The request guard reads no body it does not have to: a caller that does not authenticate is refused with its body
unread, and a body over the cap is refused at once (declared) or as soon as it passes the cap (chunked). Pure ASGI
around a recording app; the live server is in tests/integration/isolation/test_body_limit.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.types import Message, Receive, Scope, Send

from hindsight_isolation import guard
from hindsight_isolation.authn import UnauthenticatedError
from hindsight_isolation.guard import RequestGuard
from hindsight_isolation.principal import Kind, Principal
from tests.unit.hindsight_isolation.asgi import read_body

LIMIT = 100
RETAIN = "/v1/default/banks/user:alice:agent:support/memories"
KEYS = {"operator": Principal(Kind.OPERATOR), "alice": Principal(Kind.USER, tenant=None, user="alice")}


async def _authenticate(credential: str | None) -> Principal:
    if credential in KEYS:
        return KEYS[credential]
    raise UnauthenticatedError("test: unknown credential")


@pytest.fixture(autouse=True)
def configured() -> Iterator[None]:
    guard.configure(max_body_bytes=LIMIT, authenticate=_authenticate)
    yield
    guard.configure(max_body_bytes=None, authenticate=None)


class App:
    """Reads the whole body and answers 200; remembers the bodies it read."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await read_body(receive)
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})


async def _call(
    app: App, *, credential: str | None, chunks: list[bytes], headers: list[tuple[bytes, bytes]]
) -> tuple[int, str, int]:
    """Status, body and how many body chunks the guard asked for."""
    pending: list[Message] = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)
    ]
    asked = 0
    sent: list[Message] = []

    async def receive() -> Message:
        nonlocal asked
        asked += 1
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    auth = [(b"authorization", f"Bearer {credential}".encode())] if credential else []
    scope = {"type": "http", "method": "POST", "path": RETAIN, "query_string": b"", "headers": headers + auth}
    await RequestGuard(app)(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:]).decode(), asked


def _declared(length: int) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json"), (b"content-length", str(length).encode())]


CHUNKED = [(b"content-type", b"application/json"), (b"transfer-encoding", b"chunked")]


@pytest.mark.parametrize("credential", [None, "forged"])
async def test_a_caller_that_does_not_authenticate_is_refused_with_its_body_unread(credential: str | None) -> None:
    app = App()
    status, body, asked = await _call(app, credential=credential, chunks=[b"{}"], headers=_declared(10**9))
    assert (status, asked, app.bodies) == (401, 0, [])
    assert body == '{"detail": "Authentication failed: unauthorized"}'


@pytest.mark.parametrize("encoding", [b"gzip, chunked", b"identity, chunked", b"chunked ", b"gzip"])
async def test_any_transfer_encoding_is_a_body_that_must_authenticate_first(encoding: bytes) -> None:
    """uvicorn's HTTP parser (httptools) reads ``gzip, chunked`` as a chunked body: unless every transfer encoding
    counts as a body, an anonymous caller could make the guard read and parse one (up to the cap)."""
    app = App()
    headers = [(b"content-type", b"application/json"), (b"transfer-encoding", encoding)]
    status, body, asked = await _call(app, credential=None, chunks=[b"{not json"], headers=headers)
    assert (status, asked, app.bodies) == (401, 0, [])
    assert body == '{"detail": "Authentication failed: unauthorized"}'


async def test_a_declared_body_over_the_cap_is_refused_before_it_is_read() -> None:
    app = App()
    status, body, asked = await _call(app, credential="alice", chunks=[b"{}"], headers=_declared(10**9))
    assert (status, asked, app.bodies) == (413, 0, [])
    assert f"larger than {LIMIT} bytes" in body
    assert "HINDSIGHT_API_TENANT_MAX_BODY_MIB" in body


@pytest.mark.parametrize("multipart", [False, True])
async def test_a_chunked_body_is_read_only_until_it_passes_the_cap(multipart: bool) -> None:
    app = App()
    headers = [(b"content-type", b"multipart/form-data; boundary=xyz")] if multipart else CHUNKED[:1]
    start = b'--xyz\r\nContent-Disposition: form-data; name="files"; filename="a.txt"\r\n\r\n' if multipart else b""
    whole = start.ljust(400, b"x")
    chunks = [whole[i : i + 40] for i in range(0, 400, 40)]  # the cap passed in the third chunk
    status, body, asked = await _call(
        app, credential="alice", chunks=chunks, headers=[*headers, (b"transfer-encoding", b"chunked")]
    )
    assert (status, asked, app.bodies) == (413, 3, [])
    assert f"larger than {LIMIT} bytes" in body


async def test_a_body_within_the_cap_reaches_the_app() -> None:
    app = App()
    payload = b'{"items": [{"content": "short"}]}'
    status, _, _ = await _call(app, credential="alice", chunks=[payload], headers=_declared(len(payload)))
    assert (status, app.bodies) == (200, [payload])
    status, _, _ = await _call(app, credential="alice", chunks=[payload[:10], payload[10:]], headers=CHUNKED)
    assert (status, app.bodies[-1]) == (200, payload)


async def test_the_operator_has_no_cap() -> None:
    app = App()
    payload = b'{"items": [{"content": "' + b"x" * (3 * LIMIT) + b'"}]}'
    status, _, _ = await _call(app, credential="operator", chunks=[payload], headers=_declared(len(payload)))
    assert (status, app.bodies) == (200, [payload])


async def test_a_request_without_a_body_is_left_to_hindsight_whoever_sends_it() -> None:
    app = App()
    status, _, asked = await _call(app, credential=None, chunks=[b""], headers=[])
    assert (status, app.bodies) == (200, [b""])
    assert asked == 1

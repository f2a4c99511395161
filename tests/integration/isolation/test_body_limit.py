"""The live server reads no body it does not have to: a caller that does not authenticate is answered with its body
unsent, a body over the cap gets 413 (at once when declared, as soon as it passes the cap when chunked), and a normal
retain still works. Raw sockets: the client declares a huge body, sends a few bytes and waits for the answer; a server
that waited for the body would never answer (the socket's timeout then fails the test)."""

from __future__ import annotations

import json
import select
import socket
import uuid
from urllib.parse import urlsplit

import httpx
import pytest

from hindsight_isolation.settings import IsolationSettings
from memory_adapter.identity import format_bank_id
from tests.integration.isolation.support import Server

pytestmark = pytest.mark.integration

GIGABYTE = 10**9
#: The deployed cap (the shared server runs with the default).
CAP = IsolationSettings().max_body_mib * 2**20
#: Only a hang guard: the answer comes as soon as the headers are in.
HANG_S = 60


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    assert parts.scheme == "http", url
    sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=HANG_S)
    return sock


def _status_and_body(sock: socket.socket) -> tuple[int, dict[str, object]]:
    """Read one response (Content-Length framed, as the guard's are)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the connection without answering: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(v) for k, _, v in (line.partition(":") for line in lines[1:]) if k.lower() == "content-length")
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-answer"
        rest += chunk
    return int(lines[0].split()[1]), json.loads(rest[:length])


def _head(path: str, host: str, token: str | None, framing: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}", "Content-Type: application/json", framing]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@pytest.fixture(scope="module")
def alice(iso: Server) -> tuple[str, str]:
    user = f"alice-body-{uuid.uuid4().hex[:8]}"
    return iso.mint(user, ttl=3600), format_bank_id(user=user, agent="support")


@pytest.mark.parametrize("anonymous", [True, False], ids=["no-token", "forged-token"])
def test_a_caller_that_does_not_authenticate_is_answered_with_its_body_unsent(
    iso: Server, alice: tuple[str, str], anonymous: bool
) -> None:
    _, bank = alice
    with _connect(iso.url) as sock:
        token = None if anonymous else "not-a-token-" + "x" * 40
        sock.sendall(_head(f"/v1/default/banks/{bank}/memories", "localhost", token, f"Content-Length: {GIGABYTE}"))
        sock.sendall(b'{"items": [')  # 11 of a billion bytes: the rest is never sent
        status, body = _status_and_body(sock)
    assert status == 401
    hindsight = httpx.get(f"{iso.url}/v1/default/banks", headers={"Authorization": "Bearer x"}, timeout=HANG_S)
    assert (hindsight.status_code, hindsight.json()) == (401, body)  # the same answer as Hindsight's own 401


@pytest.mark.parametrize("framing", ["gzip, chunked", "identity, chunked"])
def test_a_body_under_any_transfer_encoding_is_answered_unread_without_a_token(
    iso: Server, alice: tuple[str, str], framing: str
) -> None:
    # GIVEN a transfer encoding the HTTP server reads as chunked, though it is not just "chunked"
    _, bank = alice
    with _connect(iso.url) as sock:
        sock.sendall(
            _head(f"/v1/default/banks/{bank}/memories/recall", "localhost", None, f"Transfer-Encoding: {framing}")
        )
        # WHEN an anonymous caller sends a body that is not JSON (and does not end)
        sock.sendall(b"9\r\n{not json\r\n")
        status, body = _status_and_body(sock)
    # THEN Hindsight's 401, the body unread (a read body would have been answered 400 "not valid JSON")
    assert (status, body) == (401, {"detail": "Authentication failed: unauthorized"})


def test_a_declared_body_over_the_cap_is_refused_before_it_is_sent(iso: Server, alice: tuple[str, str]) -> None:
    token, bank = alice
    with _connect(iso.url) as sock:
        sock.sendall(_head(f"/v1/default/banks/{bank}/memories", "localhost", token, f"Content-Length: {GIGABYTE}"))
        sock.sendall(b'{"items": [')
        status, body = _status_and_body(sock)
    assert status == 413
    assert f"larger than {CAP} bytes" in str(body["detail"])
    assert "HINDSIGHT_API_TENANT_MAX_BODY_MIB" in str(body["detail"])


def test_a_chunked_body_is_refused_once_it_passes_the_cap(iso: Server, alice: tuple[str, str]) -> None:
    token, bank = alice
    piece = 2**20
    chunk = f"{piece:x}\r\n".encode() + b"x" * piece + b"\r\n"
    sent = 0
    with _connect(iso.url) as sock:
        sock.sendall(_head(f"/v1/default/banks/{bank}/memories", "localhost", token, "Transfer-Encoding: chunked"))
        while sent < 4 * CAP and not select.select([sock], [], [], 0)[0]:  # the body never ends: we stop
            sock.sendall(chunk)  # sending when the answer is there (or at 4 caps: a server waiting for the end
            sent += piece  # of the body would then never answer)
        status, body = _status_and_body(sock)
    assert status == 413, body
    assert "HINDSIGHT_API_TENANT_MAX_BODY_MIB" in str(body["detail"])


def test_a_normal_retain_still_works(iso: Server, alice: tuple[str, str]) -> None:
    token, bank = alice
    api = iso.api(token)
    response = api.retain(bank, "Alice sends small bodies. " * 2000, document_id="body-limit")
    assert response.status_code == 200, response.text[:300]

"""The stdlib HTTP transport against a real loopback HTTP server (pytest-httpserver) and raw sockets."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator

import pytest
from werkzeug import Request, Response

from memory_adapter import TurnContext
from memory_adapter._hindsight_api import checked, is_transient_status
from memory_adapter.exceptions import HindsightRequestError, HindsightUnavailableError
from memory_adapter.hindsight_routes import bank_path
from memory_adapter.transport import HttpRequest, HttpTransport


def test_bank_path_encodes_slashes_but_keeps_scheme_characters():
    assert bank_path("user:a.b@c-d_e~:agent:x", "/memories") == "/v1/default/banks/user:a.b@c-d_e~:agent:x/memories"
    assert bank_path("a/b c", "") == "/v1/default/banks/a%2Fb%20c"


@pytest.mark.parametrize(("status", "transient"), [(408, True), (429, True), (500, True), (503, True), (400, False)])
def test_transient_statuses(status, transient):
    assert is_transient_status(status) is transient


def test_json_request_and_bearer_header(httpserver):
    def handler(request: Request) -> Response:
        body = {"auth": request.headers.get("Authorization"), "echo": json.loads(request.data)}
        return Response(json.dumps(body), content_type="application/json")

    httpserver.expect_request("/prefix/v1/default/banks/b/memories/recall", method="POST").respond_with_handler(handler)
    transport = HttpTransport(httpserver.url_for("/prefix"))
    first = transport.send(
        HttpRequest("POST", bank_path("b", "/memories/recall"), body={"q": "é"}, bearer="tok", timeout=5)
    )
    second = transport.send(HttpRequest("POST", bank_path("b", "/memories/recall"), body={"q": 2}, timeout=5))
    assert first.status == 200
    assert first.body == {"auth": "Bearer tok", "echo": {"q": "é"}}
    assert second.body["auth"] is None
    transport.close()


def test_status_mapping(httpserver):
    httpserver.expect_request("/a").respond_with_json({"detail": "busy"}, status=503, headers={"Retry-After": "2"})
    httpserver.expect_request("/b").respond_with_json({"detail": "nope"}, status=403)
    transport = HttpTransport(httpserver.url_for("/"))
    busy = transport.send(HttpRequest("GET", "/a", timeout=5))
    assert busy.retry_after == 2.0
    with pytest.raises(HindsightUnavailableError) as unavailable:
        checked(busy)
    assert unavailable.value.retry_after == 2.0
    with pytest.raises(HindsightRequestError) as refused:
        checked(transport.send(HttpRequest("GET", "/b", timeout=5)))
    assert refused.value.status == 403


def test_non_json_and_empty_bodies(httpserver):
    httpserver.expect_request("/html").respond_with_data("<html>", status=502)
    httpserver.expect_request("/empty").respond_with_data("", status=204)
    transport = HttpTransport(httpserver.url_for("/"))
    assert transport.send(HttpRequest("GET", "/html", timeout=5)).body is None
    assert transport.send(HttpRequest("GET", "/empty", timeout=5)).status == 204


@pytest.fixture
def silent_listener() -> Iterator[str]:
    """Accepts connections and never answers (a hung Hindsight)."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_hung_server_times_out(silent_listener):
    with pytest.raises(HindsightUnavailableError, match="did not answer"):
        HttpTransport(silent_listener).send(HttpRequest("GET", "/health", timeout=0.2))


def test_refused_connection():
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    with pytest.raises(HindsightUnavailableError, match="cannot reach"):
        HttpTransport(f"http://127.0.0.1:{port}").send(HttpRequest("GET", "/health", timeout=1))


def test_server_closing_an_idle_keep_alive_connection_is_retried_transparently():
    """A server that answers one request per connection and then closes it without saying so."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        for _ in range(2):
            conn, _ = server.accept()
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    transport = HttpTransport(f"http://127.0.0.1:{port}")
    assert transport.send(HttpRequest("GET", "/x", timeout=2)).status == 200
    assert transport.send(HttpRequest("GET", "/x", timeout=2)).status == 200
    thread.join(2)
    server.close()


async def test_adapter_against_a_hung_socket_stays_within_the_deadline(silent_listener, tmp_path):
    from memory_adapter import HindsightRuntimeAdapter

    adapter = HindsightRuntimeAdapter(
        "bot", hindsight_api_url=silent_listener, recall_timeout=0.2, spool_dir=str(tmp_path), auto_replay=False
    )
    recollection = await adapter.recall_for_turn(TurnContext("s", "u", "bot"), "hello")
    assert (recollection.degraded, recollection.reason) == (True, "timeout")
    await adapter.aclose(timeout=0)


def test_a_validation_refusal_names_the_fields_and_never_carries_the_input():
    # FastAPI's 422 echoes the refused input (a memory's text, a turn) in its detail; the message becomes a dead
    # letter's reason and a log line at ERROR, so it says where and what is wrong, never the value
    from memory_adapter.transport import HttpResponse

    detail = [
        {"type": "string_type", "loc": ["body", "items", 0, "content"], "msg": "Input should be a valid string",
         "input": ["My PIN is 4711 and my password is hunter2"]},
        {"type": "missing", "loc": ["body", "items", 1, "content"], "msg": "Field required", "input": {"x": "hunter2"}},
    ]  # fmt: skip
    with pytest.raises(HindsightRequestError) as refused:
        checked(HttpResponse(422, {"detail": detail}))
    message = str(refused.value)
    assert "hunter2" not in message
    assert "4711" not in message
    assert "body.items.0.content: Input should be a valid string" in message
    assert "body.items.1.content: Field required" in message

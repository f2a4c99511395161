"""HTTPS to a Hindsight whose certificate comes from a private CA (made here, as ACM Private CA would issue one):
without ``HINDSIGHT_CA_BUNDLE`` every client refuses it with a clear error; with the bundle (a path or the PEM)
the same real clients (the adapter's transport and ``hindsight_client``) connect."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memory_adapter._hindsight_api import checked
from memory_adapter.exceptions import ConfigurationError, HindsightUnavailableError
from memory_adapter.transport import HttpRequest, HttpTransport
from tests.unit.private_ca import make_private_ca

LISTING = {"items": [], "total": 0, "limit": 100, "offset": 0}


@dataclass
class PrivateCaServer:
    url: str
    ca_pem: str
    ca_file: Path


class _Handler(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        data = json.dumps(LISTING).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture(scope="module")
def private_ca_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateCaServer]:
    """An HTTPS server on 127.0.0.1 whose certificate a CA made here signed (no trust store knows that CA)."""
    ca = make_private_ca(tmp_path_factory.mktemp("private-ca"))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(ca.server_cert, ca.server_key)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield PrivateCaServer(f"https://127.0.0.1:{server.server_address[1]}", ca.ca_pem, ca.ca_file)
    finally:
        server.shutdown()
        server.server_close()


def _get(url: str) -> Any:
    transport = HttpTransport(url)
    try:
        return checked(transport.send(HttpRequest("GET", "/v1/default/banks/b/memories/list", timeout=5))).body
    finally:
        transport.close()


def test_without_the_bundle_the_private_certificate_is_refused_with_a_clear_error(private_ca_server, monkeypatch):
    monkeypatch.delenv("HINDSIGHT_CA_BUNDLE", raising=False)
    with pytest.raises(HindsightUnavailableError, match=r"TLS certificate is not trusted .*set HINDSIGHT_CA_BUNDLE"):
        _get(private_ca_server.url)


@pytest.mark.parametrize("given", ["path", "pem"])
def test_with_the_bundle_the_transport_connects(private_ca_server, monkeypatch, given):
    bundle = str(private_ca_server.ca_file) if given == "path" else private_ca_server.ca_pem
    monkeypatch.setenv("HINDSIGHT_CA_BUNDLE", bundle)
    assert _get(private_ca_server.url) == LISTING


def test_a_bundle_that_cannot_be_used_is_a_clear_configuration_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HINDSIGHT_CA_BUNDLE", str(tmp_path / "missing.pem"))
    with pytest.raises(ConfigurationError, match=r"HINDSIGHT_CA_BUNDLE=.*cannot be read"):
        _get("https://127.0.0.1:9")
    (tmp_path / "not.pem").write_text("hello")
    monkeypatch.setenv("HINDSIGHT_CA_BUNDLE", str(tmp_path / "not.pem"))
    with pytest.raises(ConfigurationError, match="holds no PEM certificate"):
        _get("https://127.0.0.1:9")

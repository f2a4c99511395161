"""Fixtures shared by the unit tests: test identity providers (see ``tests/unit/issuers.py``)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from tests.unit.issuers import KEY, IssuerHandler, LoopbackIssuer, UnitIssuer, jwk_of


@pytest.fixture
def unit_issuer(httpserver: HTTPServer) -> UnitIssuer:
    issuer = UnitIssuer(server=httpserver, key=KEY)

    def jwks(_request: Any) -> Any:
        from werkzeug.wrappers import Response

        issuer.jwks_hits.append(time.monotonic())
        return Response(json.dumps({"keys": [jwk_of(issuer.key, issuer.kid)]}), content_type="application/json")

    httpserver.expect_request("/pool/.well-known/openid-configuration").respond_with_json(
        {"issuer": issuer.issuer, "jwks_uri": issuer.issuer + "/jwks.json"}
    )
    httpserver.expect_request("/pool/jwks.json").respond_with_handler(jwks)
    return issuer


@pytest.fixture(scope="session")
def loopback_issuer() -> Iterator[LoopbackIssuer]:
    class Handler(IssuerHandler):
        pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    issuer = LoopbackIssuer(server=None, key=KEY, base=f"http://127.0.0.1:{server.server_port}")  # type: ignore[arg-type]
    Handler.issuer = issuer
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield issuer
    server.shutdown()
    server.server_close()

"""Fixtures several integration suites share (the session's Hindsight and issuer are in ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from localdev.token_issuer import TokenIssuer
from tests.unit.runtime_handler.serving import serve


@pytest.fixture(scope="module")
def mcp_url(local_hindsight: Any, token_issuer: TokenIssuer) -> Iterator[str]:
    """The real local MCP server app (the one ``make local`` runs), on the session's Hindsight and issuer."""
    from localdev.mcp_server import MCP_PATH, create_app

    app = create_app(
        hindsight_url=local_hindsight.url, discovery_url=token_issuer.discovery_url, public_url="http://127.0.0.1"
    )
    with serve(app) as url:
        yield url + MCP_PATH

"""Fixtures of the isolation tests: the shared local Hindsight (single-tenant, isolation on by default) and, for the
multi-tenant and agent-credential tests, a dedicated one configured with a tenant claim and an agent key."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from localdev.token_issuer import TENANT_CLAIM, TokenIssuer
from tests.integration.isolation.support import Server

AGENT_NAME = "support"
AGENT_TENANT = "acme"


@pytest.fixture(scope="session")
def iso(local_hindsight: Any, token_issuer: TokenIssuer) -> Server:
    """The shared local Hindsight (runs the isolation extension by default, trusting ``token_issuer``)."""
    if not getattr(local_hindsight, "operator_key", None):
        pytest.fail("the shared local Hindsight has no operator key: it is not running the isolation extension")
    return Server(
        url=local_hindsight.url,
        operator_key=local_hindsight.operator_key,
        mint=token_issuer.mint,
        server_log=getattr(local_hindsight, "server_log", None),
        extra={"issuer": token_issuer},
    )


@pytest.fixture(scope="session")
def tenant_iso(token_issuer: TokenIssuer) -> Iterator[Server]:
    """A dedicated Hindsight whose tokens carry a tenant claim, with a per-deployment agent key for (acme, support)."""
    config = LocalHindsightConfig.ephemeral(
        issuer_discovery_url=token_issuer.discovery_url,
        jwt_tenant_claim=TENANT_CLAIM,
        agent_name=AGENT_NAME,
        agent_tenant=AGENT_TENANT,
    )
    hindsight = LocalHindsight(config)
    hindsight.start()
    hindsight.stop_when_gone(delete=True)  # even if this session is killed, nothing is left running
    assert hindsight.operator_key is not None
    assert hindsight.agent_key is not None
    try:
        yield Server(
            url=hindsight.url,
            operator_key=hindsight.operator_key,
            mint=token_issuer.mint,
            server_log=hindsight.server_log,
            agent_key=hindsight.agent_key,
            agent_name=AGENT_NAME,
            agent_tenant=AGENT_TENANT,
            extra={"issuer": token_issuer},
        )
    finally:
        hindsight.stop()
        shutil.rmtree(hindsight.data_dir, ignore_errors=True)

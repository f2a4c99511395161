"""Fixtures of the isolation tests: the shared local Hindsight (single-tenant, isolation on by default, configured as
deployed: transfer imports off) and, for the multi-tenant, agent-credential and transfer tests, a dedicated one
configured with a tenant claim, an agent key and transfer imports on (an operator's maintenance window)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from hindsight_isolation.settings import ENV_ENABLE_DOCUMENT_IMPORT_API
from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from localdev.token_issuer import TENANT_CLAIM, TokenIssuer
from tests.integration.isolation.support import Server
from tests.integration.isolation.sweep import Victim, make_victim

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
def victim(iso: Server) -> Victim:
    """Bob's bank on the shared server with one of everything (real ids to attack with)."""
    return make_victim(iso)


@pytest.fixture(scope="session")
def tenant_iso(token_issuer: TokenIssuer) -> Iterator[Server]:
    """A dedicated Hindsight whose tokens carry a tenant claim, with a per-deployment agent key for (acme, support).

    Transfer imports are on here, as during an operator's maintenance window, so the restore, clone and import
    hooks are reachable (the shared server has them off, as deployed). One server for both needs: a third would
    cost another ~30 s of start-up per session.
    """
    config = LocalHindsightConfig.ephemeral(
        issuer_discovery_url=token_issuer.discovery_url,
        jwt_tenant_claim=TENANT_CLAIM,
        agent_name=AGENT_NAME,
        agent_tenant=AGENT_TENANT,
        extra_env={ENV_ENABLE_DOCUMENT_IMPORT_API: "true"},
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

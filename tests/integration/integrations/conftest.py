"""Helpers for the framework integrations against the real local Hindsight: the wiring as an agent builds it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from localdev.token_issuer import LOCAL_CLIENT_ID, TokenIssuer
from memory_adapter.adapter import HindsightRuntimeAdapter
from memory_adapter.agentcore import AgentCoreMemory, MemoryTurn
from memory_adapter.identity.caller import Caller

AGENT = "support"


def wiring_env(hindsight_url: str, issuer: TokenIssuer, spool: Path, **extra: str) -> dict[str, str]:
    """A JWT-mode agent's environment (what the stack or ``localdev.agent`` sets), with quick retries."""
    return {
        "AGENT_NAME": AGENT,
        "HINDSIGHT_API_URL": hindsight_url,
        "AUTH_MODE": "jwt",
        "JWT_DISCOVERY_URL": issuer.discovery_url,
        "JWT_ALLOWED_CLIENTS": LOCAL_CLIENT_ID,
        "HINDSIGHT_ADAPTER_SPOOL_DIR": str(spool),
        "HINDSIGHT_ADAPTER_MAX_RETRIES": "1",
        "HINDSIGHT_ADAPTER_RETRY_BASE_DELAY": "0.05",
        "HINDSIGHT_ADAPTER_TIMEOUT": "3",
        **extra,
    }


def session_id(label: str) -> str:
    return f"{label}-{time.time_ns()}-0123456789abcdef0123456789"


def turn_for(issuer: TokenIssuer, user: str, session: str) -> MemoryTurn:
    """The turn ``AgentCoreMemory.authenticate`` builds for a verified token of ``user`` (tests skip the HTTP)."""
    token = issuer.mint(user)
    return MemoryTurn(Caller.of(user=user, agent=AGENT, credential=token), session, f"req-{time.time_ns()}")


def adapter_of(memory: AgentCoreMemory) -> HindsightRuntimeAdapter:
    """The wiring's default memory: the real adapter (for flush, pending and spooled counts)."""
    assert isinstance(memory.memory, HindsightRuntimeAdapter)
    return memory.memory


@pytest.fixture
def make_memory(local_hindsight: Any, token_issuer: TokenIssuer, tmp_path: Path) -> Callable[..., AgentCoreMemory]:
    """``make_memory(url=None, **env)``: an ``AgentCoreMemory`` on the real Hindsight (or on ``url``)."""

    def make(url: str | None = None, **env: str) -> AgentCoreMemory:
        spool = tmp_path / f"spool-{time.time_ns()}"
        return AgentCoreMemory.from_env(wiring_env(url or local_hindsight.url, token_issuer, spool, **env))

    return make

"""The credentials a local Hindsight accepts besides users' tokens: generated once, kept in its data dir (0600)."""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from localdev.hindsight.config import LocalHindsightConfig

__all__ = ["AGENT_KEY_FILE", "OPERATOR_KEY_FILE", "ServerKeys", "load_or_create_key"]

OPERATOR_KEY_FILE = "operator-key"
AGENT_KEY_FILE = "agent-key"


@dataclass(frozen=True, kw_only=True)
class ServerKeys:
    """The operator key (every bank) and the per-deployment agent key (one agent's banks), or None."""

    operator_key: str | None = None
    agent_key: str | None = None
    agent_name: str | None = None  # the agent whose banks ``agent_key`` opens
    agent_tenant: str | None = None  # the tenant in those banks' ids; None: no tenant; "*": any tenant

    @classmethod
    def load(cls, config: LocalHindsightConfig, data_dir: Path, *, operator_key: str | None = None) -> ServerKeys:
        """The keys ``config`` calls for, read from ``data_dir`` (created there on first use).

        A given ``operator_key`` is used instead of the stored one. Without isolation there is no agent key, and an
        operator key only when one is given.
        """
        if operator_key is None and config.isolation:
            operator_key = load_or_create_key(data_dir / OPERATOR_KEY_FILE)
        agent_name = config.agent_name if config.isolation else None
        return cls(
            operator_key=operator_key,
            agent_key=load_or_create_key(data_dir / AGENT_KEY_FILE) if agent_name is not None else None,
            agent_name=agent_name,
            agent_tenant=config.agent_tenant if agent_name else None,
        )


def load_or_create_key(path: Path) -> str:
    """The key kept at ``path``; a new random one (written with mode 0600) when there is none yet."""
    with contextlib.suppress(OSError):
        key = path.read_text().strip()
        if key:
            return key
    key = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(key)
    return key

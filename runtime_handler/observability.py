"""Powertools Logger (JSON) and Metrics (CloudWatch EMF) for the agent.

Every log line of a turn carries ``session_id``, ``request_id`` and ``user_ref``: a short hash of (tenant, user), so
one user's turns can be correlated without writing user ids (personal data) to the logs. Keys are appended with the
context-local API, so concurrent turns on the worker loop do not mix their keys. Metrics are flushed at the end of
every invocation (AgentCore is not Lambda: the Lambda decorators do not apply).
"""

from __future__ import annotations

import hashlib
import logging
import os
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit

from memory_adapter.agentcore.hooks import InvocationHooks
from memory_adapter.constants import METRICS_NAMESPACE
from memory_adapter.identity.errors import RejectReason

if TYPE_CHECKING:
    from memory_adapter.agentcore.credentials import KeyUnavailableError
    from memory_adapter.agentcore.errors import AuthError, PayloadError
    from memory_adapter.agentcore.request import RequestFacts
    from memory_adapter.identity.caller import Caller

__all__ = ["DEFAULT_SERVICE", "Observability", "TurnMetrics", "user_ref"]

DEFAULT_SERVICE = "agentcore-memory-agent"


def user_ref(user: str | None, tenant: str | None) -> str | None:
    """A stable, non-reversible reference to a user for log correlation (``None`` for anonymous callers)."""
    if user is None:
        return None
    digest = hashlib.sha256(f"{tenant or ''}\x1f{user}".encode("utf-8", "surrogatepass")).hexdigest()
    return digest[:16]


class Observability:
    """The agent's logger and metrics, configured once at start-up from the standard Powertools variables."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self.logger = Logger(service=env.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE)
        self.metrics = Metrics(
            service=env.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE,
            namespace=env.get("POWERTOOLS_METRICS_NAMESPACE") or METRICS_NAMESPACE,
        )
        # Our modules and the adapter log through the stdlib; give them the same JSON format.
        for name in ("runtime_handler", "memory_adapter"):
            logging.getLogger(name)
        copy_config_to_registered_loggers(source_logger=self.logger, include={"runtime_handler", "memory_adapter"})

    def begin(self, *, session_id: str, request_id: str | None) -> None:
        """Start a turn's log context (context-local: concurrent turns keep their own keys)."""
        self.logger.thread_safe_clear_keys()
        self.logger.thread_safe_append_keys(session_id=session_id, request_id=request_id)

    def identify(self, *, user: str | None, tenant: str | None, source: str) -> None:
        self.logger.thread_safe_append_keys(user_ref=user_ref(user, tenant), auth_source=source)

    def count(self, name: str, value: float = 1) -> None:
        self.metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)

    def millis(self, name: str, value: float) -> None:
        self.metrics.add_metric(name=name, unit=MetricUnit.Milliseconds, value=value)

    def flush(self) -> None:
        """Publish this invocation's metrics; never raises (observability must not fail a turn)."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.metrics.flush_metrics()
        except Exception:
            self.logger.exception("metrics flush failed")


class TurnMetrics(InvocationHooks):
    """The memory wiring's reports as this agent's log context and metrics: ``AuthFailures`` (and
    ``JwksUnavailable``), ``BadRequests``, ``MemoryKeyUnavailable``. Refusals are flushed at once: no turn follows."""

    def __init__(self, observability: Observability, *, auth_source: str) -> None:
        self.obs = observability
        self.auth_source = auth_source

    def started(self, request: RequestFacts) -> None:
        self.obs.begin(session_id=request.session_id, request_id=request.request_id)

    def identified(self, caller: Caller | None) -> None:
        if caller is None:
            self.obs.identify(user=None, tenant=None, source="anonymous")
        else:
            self.obs.identify(user=caller.user, tenant=caller.tenant, source=self.auth_source)

    def rejected(self, error: AuthError) -> None:
        self.obs.count("AuthFailures")
        if error.reason == RejectReason.KEYS_UNAVAILABLE.value:
            self.obs.count("JwksUnavailable")
        self.obs.flush()

    def invalid(self, error: PayloadError) -> None:
        self.obs.count("BadRequests")
        self.obs.flush()

    def key_unavailable(self, error: KeyUnavailableError) -> None:
        self.obs.count("MemoryKeyUnavailable")

"""The per-deployment Hindsight key an IAM-mode agent presents as its turns' credential (JWT-mode agents forward the
caller's token instead).

From ``HINDSIGHT_API_KEY_SECRET_ARN`` through Powertools parameters (``aws-lambda-powertools``, imported on the
first read; cached, so rotation is picked up within ``max_age``) or, for local runs, ``HINDSIGHT_API_KEY``. The server
limits this credential to the banks of this deployment's (tenant, agent); see docs/agent.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory_adapter.exceptions import HindsightAgentCoreError

__all__ = ["AgentKey", "KeyUnavailableError"]

SECRET_MAX_AGE_S = 300


class KeyUnavailableError(HindsightAgentCoreError):
    """The configured Hindsight key could not be read (Secrets Manager unreachable, denied, deleted)."""


class AgentKey:
    """Returns the deployment's Hindsight key, ``None`` when none is configured. Blocking: call it off the loop."""

    def __init__(
        self,
        *,
        static_key: str | None = None,
        secret_arn: str | None = None,
        fetch: Callable[[str], Any] | None = None,
    ) -> None:
        self._static = static_key
        self._arn = secret_arn
        self._fetch = fetch

    @property
    def configured(self) -> bool:
        return bool(self._static or self._arn)

    def get(self) -> str | None:
        if self._static:
            return self._static
        if not self._arn:
            return None
        try:
            value = self._fetcher()(self._arn)
        except Exception as exc:
            raise KeyUnavailableError(f"could not read the Hindsight key secret: {type(exc).__name__}") from exc
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        if not isinstance(value, str) or not value.strip():
            raise KeyUnavailableError("the Hindsight key secret is empty or not text")
        return value.strip()

    def _fetcher(self) -> Callable[[str], Any]:
        if self._fetch is None:
            from aws_lambda_powertools.utilities.parameters import SecretsProvider  # lazy: pulls in boto3

            # This key's own provider (and boto3 client, made from the environment of its first use), not
            # Powertools' process-wide default: a client made earlier for other settings must not read this key.
            provider = SecretsProvider()

            def fetch(arn: str) -> Any:
                return provider.get(arn, max_age=SECRET_MAX_AGE_S)

            self._fetch = fetch
        return self._fetch

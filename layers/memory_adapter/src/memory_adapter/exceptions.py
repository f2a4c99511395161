"""Exceptions raised by the memory adapter.

The two prior-art names (``HindsightAgentCoreError``, ``BankResolutionError``) are kept so code written for
``hindsight-agentcore`` catches the same errors after switching the import.
"""

from __future__ import annotations


class HindsightAgentCoreError(Exception):
    """Base class of every error the memory adapter raises."""


class BankResolutionError(HindsightAgentCoreError):
    """The turn's identity cannot be turned into a bank id (missing, blank or invalid part): fail closed."""


class ConfigurationError(HindsightAgentCoreError):
    """The adapter is misconfigured, e.g. no Hindsight URL is set anywhere."""


class HindsightUnavailableError(HindsightAgentCoreError):
    """Hindsight could not be reached or answered with a transient failure (timeout, refused, 429, 5xx): retry later."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class HindsightRequestError(HindsightAgentCoreError):
    """Hindsight refused a request for good (4xx other than 408/425/429): retrying the same request cannot help."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"Hindsight answered HTTP {status}: {message}")
        self.status = status


class SpoolError(HindsightAgentCoreError):
    """The durable spool could not store or read a retain."""

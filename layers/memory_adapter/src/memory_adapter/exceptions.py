"""Exceptions raised by the memory adapter (identity failures: their own branch, :mod:`memory_adapter.identity.errors`).

``HindsightAgentCoreError`` is the prior art's base name, kept so code written for ``hindsight-agentcore`` catches
the same errors after switching the import; ``BankResolutionError`` (also a prior-art name) now lives with the rest
of the identity errors and is still importable from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_adapter.identity.errors import BankResolutionError

__all__ = [
    "BankResolutionError",
    "ConfigurationError",
    "HindsightAgentCoreError",
    "HindsightRequestError",
    "HindsightUnavailableError",
    "MalformedMessageError",
    "RecordTooLargeError",
    "SpoolError",
]


class HindsightAgentCoreError(Exception):
    """Base class of every error the memory adapter raises."""


class ConfigurationError(HindsightAgentCoreError):
    """The configuration is unusable; ``problems`` lists every reason (the message lists them too)."""

    def __init__(self, problems: str | Sequence[str], *, subject: str = "memory adapter") -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__(f"invalid {subject} configuration:\n  - " + "\n  - ".join(self.problems))


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


class RecordTooLargeError(SpoolError):
    """A retain is larger than the spool accepts (a queue message limit), even compressed: it cannot be spooled."""

    def __init__(self, size: int, limit: int, *, what: str = "retain record") -> None:
        super().__init__(f"{what} of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class MalformedMessageError(SpoolError):
    """A queued message is not a spooled retain (unknown encoding, not JSON, missing fields): it never will be."""


def __getattr__(name: str) -> Any:
    # BankResolutionError derives from HindsightAgentCoreError, so it cannot be imported at the top of this module.
    if name == "BankResolutionError":
        from memory_adapter.identity.errors import BankResolutionError

        return BankResolutionError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The root of the package's one exception tree, and the errors of reaching Hindsight and of spooling.

::

    HindsightAgentCoreError              everything the package raises (the prior art's base name)
    ├── ConfigurationError               unusable settings; .problems lists every one
    ├── HindsightUnavailableError        retry later (no answer, 408/425/429/5xx)
    │   └── HindsightOverloadedError     shed: the server would not have answered in time (not a failure)
    ├── HindsightRequestError            refused for good (other 4xx); .status
    ├── SpoolError                       ── RecordTooLargeError, MalformedMessageError
    ├── IdentityError                    memory_adapter.identity.errors (tokens, JWT settings, bank ids)
    ├── ToolError                        memory_adapter.tools.errors (what a memory tool answers)
    ├── AdminError                       memory_adapter.admin.errors (administration actions)
    └── RetryLaterError                  memory_adapter.queue_replay (leave a message on the queue)

The branches import this module, never the reverse (``BankResolutionError``, a prior-art name, is in
:mod:`memory_adapter.identity.errors` and :mod:`memory_adapter.errors`).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ConfigurationError",
    "HindsightAgentCoreError",
    "HindsightOverloadedError",
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
    """Hindsight could not be reached or answered with a transient failure (timeout, refused, 429, 5xx): retry later.

    ``status``: the HTTP status Hindsight answered, or ``None`` when no answer came (which a caller retrying only some
    statuses tells apart)."""

    def __init__(self, message: str, *, retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class HindsightOverloadedError(HindsightUnavailableError):
    """Hindsight shed the request: it would not have answered within the deadline the request stated, so it answered
    at once without starting the work (``memory_adapter.recall_deadline``). Hindsight is up: not a failure of it."""


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

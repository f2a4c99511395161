"""Errors of the memory administration tools: one base, one class per way an action can fail."""

from __future__ import annotations

from typing import Any, ClassVar

from memory_adapter.exceptions import HindsightAgentCoreError

__all__ = [
    "AdminError",
    "BatchFailedError",
    "ConfirmationError",
    "ErasureIncompleteError",
    "ExportTimeoutError",
    "InvalidRequestError",
    "VerificationError",
]


class AdminError(HindsightAgentCoreError):
    """Base class of every administration error; its message says what is wrong and what to do."""

    #: What the audit line says of an action that raised it.
    audit_outcome: ClassVar[str] = "refused"


class InvalidRequestError(AdminError):
    """The request itself is unusable (unknown action, missing or malformed argument): nothing was done."""


class ConfirmationError(AdminError):
    """A destructive action was not confirmed, or not with what the preview showed: nothing was deleted."""


class VerificationError(AdminError):
    """A deletion ran but something is still there afterwards; the message names what."""


class ExportTimeoutError(AdminError):
    """Hindsight's export of a bank did not finish within the wait (retrying would wait as long again)."""


class BatchFailedError(AdminError):
    """A job over many banks (backup, expiry) failed for every bank it tried; ``result`` (the backup's manifest,
    written anyway, or the expiry's report) lists each failure under ``failed``."""

    audit_outcome: ClassVar[str] = "failed"

    def __init__(self, message: str, result: dict[str, Any]) -> None:
        super().__init__(message)
        self.result = result


class ErasureIncompleteError(VerificationError):
    """A ``forget-user`` that left a bank of the user (its delete failed) or anything else of theirs reachable;
    ``result`` is the erasure receipt, written anyway (``outcome: partial``, the banks under ``failed``)."""

    audit_outcome: ClassVar[str] = "partial"

    def __init__(self, message: str, result: dict[str, Any]) -> None:
        super().__init__(message)
        self.result = result

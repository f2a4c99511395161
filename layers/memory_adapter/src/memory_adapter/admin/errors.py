"""Errors of the memory administration tools: one base, one class per way an action can fail."""

from __future__ import annotations

from memory_adapter.exceptions import HindsightAgentCoreError

__all__ = ["AdminError", "ConfirmationError", "InvalidRequestError", "VerificationError"]


class AdminError(HindsightAgentCoreError):
    """Base class of every administration error; its message says what is wrong and what to do."""


class InvalidRequestError(AdminError):
    """The request itself is unusable (unknown action, missing or malformed argument): nothing was done."""


class ConfirmationError(AdminError):
    """A destructive action was not confirmed, or not with what the preview showed: nothing was deleted."""


class VerificationError(AdminError):
    """A deletion ran but something is still there afterwards; the message names what."""

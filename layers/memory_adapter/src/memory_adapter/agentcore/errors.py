"""The wiring's typed errors: an agent maps them to its answers (401 for :class:`AuthError`, 400 for
:class:`PayloadError`); :meth:`~memory_adapter.agentcore.AgentCoreMemory.entrypoint` does it for you."""

from __future__ import annotations

from memory_adapter.exceptions import HindsightAgentCoreError

__all__ = ["AuthError", "PayloadError"]


class AuthError(HindsightAgentCoreError):
    """No verified identity (answer 401 with a fixed message; ``reason`` goes to the log only)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class PayloadError(HindsightAgentCoreError):
    """The request body is not a valid turn (answered 400 with ``message``, which is safe to show, and ``code``)."""

    def __init__(self, message: str, *, code: str = "bad_request") -> None:
        super().__init__(message)
        self.message = message
        self.code = code

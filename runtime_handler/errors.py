"""Typed errors that travel up to ``main.py``, which alone maps them to HTTP answers (400, 401, 502)."""

from __future__ import annotations

__all__ = ["AgentError", "AuthError", "ModelError", "PayloadError"]


class AgentError(Exception):
    """Base class of the errors the agent answers deliberately."""


class PayloadError(AgentError):
    """The request body is not a valid turn (answered 400 with ``message``, which is safe to show)."""

    def __init__(self, message: str, *, code: str = "bad_request") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class AuthError(AgentError):
    """No verified identity (answered 401 with a fixed message; ``reason`` goes to the log only)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class ModelError(AgentError):
    """The model could not answer (answered 502)."""

"""Typed errors that travel up to ``main.py``, which alone maps them to HTTP answers (400, 401, 502).

:class:`AuthError` is the memory wiring's (:mod:`memory_adapter.agentcore.errors`), raised by the identity check
every agent shares.
"""

from __future__ import annotations

from memory_adapter.agentcore.errors import AuthError

__all__ = ["AgentError", "AuthError", "ModelError", "PayloadError"]


class AgentError(Exception):
    """Base class of the agent's own errors it answers deliberately (besides the wiring's :class:`AuthError`)."""


class PayloadError(AgentError):
    """The request body is not a valid turn (answered 400 with ``message``, which is safe to show)."""

    def __init__(self, message: str, *, code: str = "bad_request") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class ModelError(AgentError):
    """The model could not answer (answered 502)."""

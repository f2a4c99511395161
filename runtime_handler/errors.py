"""Typed errors of a turn. The wiring's :class:`AuthError` (401) and :class:`PayloadError` (400) are
:mod:`memory_adapter.agentcore.errors`', answered by ``AgentCoreMemory.entrypoint``; ``main.py`` answers the agent's
own :class:`ModelError` (502).
"""

from __future__ import annotations

__all__ = ["AgentError", "ModelError"]


class AgentError(Exception):
    """Base class of the agent's own errors it answers deliberately (besides the wiring's)."""


class ModelError(AgentError):
    """The model could not answer (answered 502)."""

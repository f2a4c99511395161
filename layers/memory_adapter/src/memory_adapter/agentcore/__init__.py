"""The memory wiring of an AgentCore Runtime agent, shared by the reference agent and any agent you bring.

==================  ========================================================================================
Module              Job
==================  ========================================================================================
``settings``        :class:`AgentMemorySettings`: ``AGENT_NAME``, ``AUTH_MODE``, ``JWT_*``, ``HINDSIGHT_*`` ...
``identity``        :class:`RequestAuthenticator`: request headers -> verified ``Caller`` (JWT or IAM user id)
``credentials``     :class:`AgentKey`: the IAM-mode agent's Hindsight key (Secrets Manager, cached)
``keys``            :class:`MirroredKeysVerifier`: signing keys from the stack's SSM mirror
``busy``            :class:`RetainWatcher`: ``/ping`` ``HealthyBusy`` while a retain is pending
``request``         :class:`RequestFacts`: the headers parsed once, session and request ids (one duplicates rule)
``payload``         :class:`TurnRequest`: the ``{"prompt", "stream"}`` payload rule and the body limit
``app``             the body guard and the 401/400 answers (Starlette); ``serve`` on ``PORT``/``HOST``
``answers``         the reference agent's turn body and its 409/502/500 answers, for any agent to give the same
``hooks``           :class:`InvocationHooks`: what the wiring reports about each invocation (an agent's metrics)
``memory``          :class:`AgentCoreMemory` (all of the above for one process) and :class:`MemoryTurn`
``errors``          :class:`AuthError`, :class:`PayloadError`
``project``         :func:`project_problems`: what an agent project you bring must look like (bundled or run locally)
==================  ========================================================================================

Names are exported lazily: ``import memory_adapter.agentcore`` loads nothing, and ``settings`` needs only the
standard library (the CDK app builds its settings to write the agent's environment).

Example:
    >>> from memory_adapter.agentcore import AgentCoreMemory
    >>> memory = AgentCoreMemory.from_env()
    >>> app = memory.create_app()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_adapter._lazy import lazy_getattr

_EXPORTS: dict[str, str] = {
    "AgentCoreMemory": "memory_adapter.agentcore.memory",
    "MemoryTurn": "memory_adapter.agentcore.memory",
    "MEMORY_TURN_KEY": "memory_adapter.agentcore.memory",
    "TurnMemory": "memory_adapter.agentcore.memory",
    "AgentMemorySettings": "memory_adapter.agentcore.settings",
    "IdentitySource": "memory_adapter.agentcore.settings",
    "SettingsError": "memory_adapter.agentcore.settings",
    "RequestAuthenticator": "memory_adapter.agentcore.identity",
    "AgentKey": "memory_adapter.agentcore.credentials",
    "KeyUnavailableError": "memory_adapter.agentcore.credentials",
    "RetainWatcher": "memory_adapter.agentcore.busy",
    "AuthError": "memory_adapter.agentcore.errors",
    "PayloadError": "memory_adapter.agentcore.errors",
    "InvocationHooks": "memory_adapter.agentcore.hooks",
    "RequestFacts": "memory_adapter.agentcore.request",
    "TurnRequest": "memory_adapter.agentcore.payload",
}

__all__ = [
    "MEMORY_TURN_KEY",
    "AgentCoreMemory",
    "AgentKey",
    "AgentMemorySettings",
    "AuthError",
    "IdentitySource",
    "InvocationHooks",
    "KeyUnavailableError",
    "MemoryTurn",
    "PayloadError",
    "RequestAuthenticator",
    "RequestFacts",
    "RetainWatcher",
    "SettingsError",
    "TurnMemory",
    "TurnRequest",
]

if TYPE_CHECKING:
    from memory_adapter.agentcore.busy import RetainWatcher
    from memory_adapter.agentcore.credentials import AgentKey, KeyUnavailableError
    from memory_adapter.agentcore.errors import AuthError, PayloadError
    from memory_adapter.agentcore.hooks import InvocationHooks
    from memory_adapter.agentcore.identity import RequestAuthenticator
    from memory_adapter.agentcore.memory import MEMORY_TURN_KEY, AgentCoreMemory, MemoryTurn, TurnMemory
    from memory_adapter.agentcore.payload import TurnRequest
    from memory_adapter.agentcore.request import RequestFacts
    from memory_adapter.agentcore.settings import AgentMemorySettings, IdentitySource, SettingsError

__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return __all__

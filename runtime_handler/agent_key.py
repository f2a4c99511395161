"""The IAM-mode agent's Hindsight key: :mod:`memory_adapter.agentcore.credentials`, shared by every agent (the names
stay importable from here)."""

from __future__ import annotations

from memory_adapter.agentcore.credentials import AgentKey, KeyUnavailableError

__all__ = ["AgentKey", "KeyUnavailableError"]

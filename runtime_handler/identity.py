"""Who is calling: the memory wiring's :mod:`memory_adapter.agentcore.identity`, which every agent shares (the names
stay importable from here)."""

from __future__ import annotations

from memory_adapter.agentcore.identity import USER_ID_HEADER, RequestAuthenticator, TokenVerifier

__all__ = ["USER_ID_HEADER", "RequestAuthenticator", "TokenVerifier"]

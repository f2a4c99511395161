"""The verifier of a runtime whose signing keys are mirrored into SSM: :mod:`memory_adapter.agentcore.keys`, shared
by every agent (the name stays importable from here)."""

from __future__ import annotations

from memory_adapter.agentcore.keys import MirroredKeysVerifier

__all__ = ["MirroredKeysVerifier"]

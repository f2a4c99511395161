"""The one error the local Hindsight raises."""

from __future__ import annotations

from localdev.supervisor import StartError

__all__ = ["HindsightStartError"]


class HindsightStartError(StartError):
    """The local Hindsight did not become healthy; the message carries the log tail and a hint."""

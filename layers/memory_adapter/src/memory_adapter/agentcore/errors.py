"""The wiring's typed errors: an agent maps them to its answers (401 for :class:`AuthError`)."""

from __future__ import annotations

__all__ = ["AuthError"]


class AuthError(Exception):
    """No verified identity (answer 401 with a fixed message; ``reason`` goes to the log only)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail

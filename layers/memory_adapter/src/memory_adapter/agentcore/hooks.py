"""What the wiring reports about each invocation, for an agent's own logs and metrics.

:class:`~memory_adapter.agentcore.AgentCoreMemory` authenticates, refuses and degrades by itself (and logs each with
its reason); an agent that also counts them (the reference agent's CloudWatch metrics, its per-turn log context)
passes an :class:`InvocationHooks` whose methods it overrides. Every method here does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec

if TYPE_CHECKING:
    from memory_adapter.agentcore.credentials import KeyUnavailableError
    from memory_adapter.agentcore.errors import AuthError, PayloadError
    from memory_adapter.agentcore.request import RequestFacts
    from memory_adapter.identity.caller import Caller

__all__ = ["InvocationHooks"]

_log = logging.getLogger("memory_adapter.agentcore")
_P = ParamSpec("_P")


class InvocationHooks:
    """Called on the SDK's worker loop, in this order, for each ``/invocations`` request (:meth:`rejected` also by
    the body guard, before the body is read). A hook that raises is logged and ignored: it never fails a turn."""

    def started(self, request: RequestFacts) -> None:
        """The request's session and request ids are known (before identity): e.g. start its log context."""

    def identified(self, caller: Caller | None) -> None:
        """Identity is verified: ``caller`` (``None``: an allowed anonymous caller, who gets no memory)."""

    def rejected(self, error: AuthError) -> None:
        """An identity failure, answered with the uniform 401 (``error.reason`` is never sent)."""

    def invalid(self, error: PayloadError) -> None:
        """A malformed session header or payload, answered 400 with ``error.message``."""

    def key_unavailable(self, error: KeyUnavailableError) -> None:
        """The IAM agent key could not be read: the turn goes on without memory (degraded)."""


def notify(hook: Callable[_P, None], *args: _P.args, **kwargs: _P.kwargs) -> None:
    """Call one hook; a failing hook is logged, never raised."""
    try:
        hook(*args, **kwargs)
    except Exception:
        _log.exception("invocation hook %s failed", getattr(hook, "__name__", hook))

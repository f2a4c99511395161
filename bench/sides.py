"""The contenders, built the same way for every measurement.

- ``ours``: ``memory_adapter.HindsightRuntimeAdapter`` (this project), defaults unless a measurement says otherwise.
- ``prior``: ``hindsight_agentcore.HindsightRuntimeAdapter`` 0.1.3 (installed only in ``.venv-bench``), imported
  dynamically so the project's type checker never needs it.
- ``raw``: ``hindsight_client.Hindsight.arecall`` with the same request the adapters send (the floor).

Both adapters get the same URL and credential, and the same prior-art API (``before_turn`` / ``after_turn``), so a
difference in a figure is a difference in the adapter.
"""

from __future__ import annotations

import asyncio
import importlib
import uuid
from pathlib import Path
from typing import Any

from bench.env import AGENT

__all__ = [
    "PRIOR_ART_DEFAULT_TIMEOUT_S",
    "contexts",
    "make_ours",
    "make_prior",
    "make_raw",
    "prior_art_module",
    "prior_pending",
]

PRIOR_ART_DEFAULT_TIMEOUT_S = 15.0


def prior_art_module() -> Any:
    """``hindsight_agentcore`` (the prior art); only ``.venv-bench`` has it."""
    try:
        return importlib.import_module("hindsight_agentcore")
    except ModuleNotFoundError as exc:  # pragma: no cover - environment problem
        raise SystemExit("hindsight-agentcore is not installed: run `make bench` (it builds .venv-bench)") from exc


def make_ours(url: str, api_key: str | None, spool_dir: Path, **overrides: Any) -> Any:
    """Our adapter with its defaults (recall deadline 2 s, breaker 3 failures / 30 s) unless overridden."""
    from memory_adapter import HindsightRuntimeAdapter

    return HindsightRuntimeAdapter(
        agent_name=AGENT, hindsight_api_url=url, api_key=api_key, spool_dir=str(spool_dir), **overrides
    )


def make_prior(url: str, api_key: str | None, *, timeout: float = PRIOR_ART_DEFAULT_TIMEOUT_S) -> Any:
    """The prior-art adapter. ``timeout`` is its only latency control (``configure(timeout=)``, default 15 s)."""
    prior = prior_art_module()
    prior.configure(hindsight_api_url=url, api_key=api_key, timeout=timeout)
    return prior.HindsightRuntimeAdapter(agent_name=AGENT)


def make_raw(url: str, api_key: str | None) -> Any:
    """The raw client (``hindsight_client``), the floor every adapter adds to."""
    from hindsight_client import Hindsight

    return Hindsight(base_url=url, api_key=api_key, timeout=30.0)


def contexts(user: str, session: str | None = None, request_id: bool = True) -> tuple[Any, Any]:
    """The same turn identity as (ours, prior) ``TurnContext`` objects; a fresh request id unless told otherwise."""
    from memory_adapter import TurnContext

    prior = prior_art_module()
    sid = session or f"bench-session-{uuid.uuid4().hex}"
    rid = str(uuid.uuid4()) if request_id else None
    ours = TurnContext(runtime_session_id=sid, user_id=user, agent_name=AGENT, request_id=rid)
    theirs = prior.TurnContext(runtime_session_id=sid, user_id=user, agent_name=AGENT, request_id=rid)
    return ours, theirs


async def prior_pending(adapter: Any, wait_s: float) -> None:
    """Wait for the prior art's fire-and-forget retain tasks (it has no flush; this reads its private task set)."""
    pending = list(getattr(adapter, "_pending", ()))
    if pending:
        await asyncio.wait(pending, timeout=wait_s)

"""One turn, told as a one-way pipeline: payload -> identity -> recall -> model -> retain -> answer.

Each step uses only what earlier steps returned; nothing here reads headers, environment variables or globals.
Memory failures never fail the turn: they mark it ``degraded``. The retain is scheduled last and its receipt is
returned, so the caller (``main.py``) can keep the session busy until it is delivered without making the answer wait.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from runtime_handler.errors import PayloadError
from runtime_handler.identity import Caller
from runtime_handler.memory import (
    MEMORY_UNAVAILABLE,
    NOTHING_RECALLED,
    Memory,
    MemoryScope,
    Recollection,
    RetainReceipt,
)
from runtime_handler.model import Model

__all__ = ["TurnDeps", "TurnMeta", "TurnRequest", "TurnResult", "parse_turn", "run_turn", "stream_turn"]

logger = logging.getLogger(__name__)

_ALLOWED_KEYS = frozenset({"prompt", "stream"})


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """A validated payload: a non-blank prompt of bounded size, and whether to stream the answer."""

    prompt: str
    stream: bool = False


@dataclass(frozen=True, slots=True)
class TurnMeta:
    """Request facts from the runtime (never from the payload)."""

    session_id: str
    request_id: str | None


@dataclass(frozen=True, slots=True)
class TurnResult:
    output: str
    session_id: str
    recalled: int
    degraded: bool
    retain: RetainReceipt | None = None

    def body(self) -> dict[str, Any]:
        """The JSON answer of the invocation."""
        return {
            "output": self.output,
            "session_id": self.session_id,
            "memory": {"recalled": self.recalled, "degraded": self.degraded},
        }


@dataclass(frozen=True, slots=True)
class TurnDeps:
    """What a turn needs. ``memory_unavailable`` marks memory as down for this turn (e.g. its key is unreadable)."""

    memory: Memory | None
    model: Model
    agent_name: str
    recall_timeout_s: float
    memory_unavailable: bool = False
    retain_schedule_timeout_s: float = 2.0


def parse_turn(payload: object, *, max_prompt_chars: int) -> TurnRequest:
    """Validate the invocation payload; raise :class:`PayloadError` with a message safe to show the caller."""
    if not isinstance(payload, dict):
        raise PayloadError("the request body must be a JSON object")
    unknown = sorted(str(key)[:40] for key in payload if key not in _ALLOWED_KEYS)
    if unknown:
        raise PayloadError(f"unknown field(s): {', '.join(unknown[:5])}; allowed: prompt, stream")
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        raise PayloadError("'prompt' is required and must be a string")
    if not prompt.strip():
        raise PayloadError("'prompt' must not be blank")
    if len(prompt) > max_prompt_chars:
        raise PayloadError(f"'prompt' is longer than {max_prompt_chars} characters", code="payload_too_large")
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:
        raise PayloadError("'prompt' is not valid Unicode text (lone surrogate)") from None
    if "\x00" in prompt:
        raise PayloadError("'prompt' must not contain NUL characters")
    stream = payload.get("stream", False)
    if not isinstance(stream, bool):
        raise PayloadError("'stream' must be true or false")
    return TurnRequest(prompt=prompt, stream=stream)


def _scope(caller: Caller, meta: TurnMeta, deps: TurnDeps) -> MemoryScope | None:
    if caller.user is None or deps.memory is None:
        return None  # anonymous caller, or memory down for this turn
    return MemoryScope(
        session_id=meta.session_id,
        user=caller.user,
        agent=deps.agent_name,
        tenant=caller.tenant,
        request_id=meta.request_id,
        credential=caller.credential,
    )


async def _recall(deps: TurnDeps, scope: MemoryScope | None, prompt: str) -> Recollection:
    memory, timeout_s = deps.memory, deps.recall_timeout_s
    if deps.memory_unavailable and scope is None:
        return MEMORY_UNAVAILABLE
    if memory is None or scope is None:
        return NOTHING_RECALLED
    try:
        return await asyncio.wait_for(memory.recall(scope, prompt), timeout_s)
    except TimeoutError:
        logger.warning("recall exceeded its %.2f s deadline; answering without memory", timeout_s)
    except Exception:
        logger.exception("recall failed; answering without memory")
    return MEMORY_UNAVAILABLE


async def _retain(
    memory: Memory | None, scope: MemoryScope | None, prompt: str, output: str, timeout_s: float
) -> tuple[RetainReceipt | None, bool]:
    """Schedule the retain; returns (receipt, failed_to_schedule)."""
    if memory is None or scope is None or not output.strip():
        return None, False
    try:
        return await asyncio.wait_for(memory.retain(scope, prompt, output), timeout_s), False
    except Exception:  # includes TimeoutError
        logger.exception("could not schedule the retain of this turn")
        return None, True


async def run_turn(request: TurnRequest, caller: Caller, meta: TurnMeta, deps: TurnDeps) -> TurnResult:
    """Recall, answer, schedule the retain; the answer never waits for the retain to be delivered."""
    scope = _scope(caller, meta, deps)
    recollection = await _recall(deps, scope, request.prompt)
    output = await deps.model.reply(request.prompt, recollection.text)
    receipt, retain_failed = await _retain(deps.memory, scope, request.prompt, output, deps.retain_schedule_timeout_s)
    return TurnResult(
        output=output,
        session_id=meta.session_id,
        recalled=recollection.count,
        degraded=recollection.degraded or retain_failed,
        retain=receipt,
    )


async def stream_turn(
    request: TurnRequest,
    caller: Caller,
    meta: TurnMeta,
    deps: TurnDeps,
    on_retain: Callable[[RetainReceipt], None],
) -> AsyncIterator[dict[str, Any]]:
    """The same turn as server-sent events: ``{"type": "delta", "text"}`` pieces, then ``{"type": "done", ...}``."""
    scope = _scope(caller, meta, deps)
    recollection = await _recall(deps, scope, request.prompt)
    pieces: list[str] = []
    async for piece in deps.model.stream(request.prompt, recollection.text):
        pieces.append(piece)
        yield {"type": "delta", "text": piece}
    output = "".join(pieces)
    receipt, retain_failed = await _retain(deps.memory, scope, request.prompt, output, deps.retain_schedule_timeout_s)
    if receipt is not None:
        on_retain(receipt)
    result = TurnResult(
        output=output,
        session_id=meta.session_id,
        recalled=recollection.count,
        degraded=recollection.degraded or retain_failed,
    )
    yield {"type": "done", **result.body()}

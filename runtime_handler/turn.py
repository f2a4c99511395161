"""One turn, told as a one-way pipeline: verified caller (with its bank) -> recall and the session's conversation ->
model (with the memory tools, bound to the caller) -> retain and remember the exchange -> answer.

Each step uses only what earlier steps returned; nothing here reads headers, environment variables or globals. The
session's own conversation comes from :class:`~runtime_handler.working_memory.WorkingMemory` (per session and
caller), long-term memory through :class:`Memory`, which ``memory_adapter.HindsightRuntimeAdapter`` satisfies as
it is: the caller ``main.py`` verified is handed to it unchanged. Memory failures never fail the turn: they mark it
``degraded``. The retain is scheduled last and its handle is returned, so the caller (``main.py``) can keep the
session busy until it is delivered without making the answer wait.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory_adapter.adapter import Recollection
from memory_adapter.agentcore.memory import TurnMemory
from memory_adapter.delivery import RetainHandle
from memory_adapter.identity.caller import Caller
from memory_adapter.recall_query import recall_query
from runtime_handler.errors import PayloadError
from runtime_handler.model import Model, ModelTurn
from runtime_handler.tools import TurnTools
from runtime_handler.working_memory import Exchange, WorkingMemory

if TYPE_CHECKING:
    from memory_adapter.tools.memory_tools import ToolRunner

__all__ = ["Memory", "TurnDeps", "TurnMeta", "TurnRequest", "TurnResult", "parse_turn", "run_turn", "stream_turn"]

logger = logging.getLogger(__name__)

NOTHING_RECALLED = Recollection(text="", count=0, degraded=False)
MEMORY_UNAVAILABLE = Recollection(text="", count=0, degraded=True, reason="unavailable")


#: Long-term memory as the turn sees it: the memory wiring's protocol (``HindsightRuntimeAdapter`` is one).
Memory = TurnMemory

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
    retain: RetainHandle | None = None
    tools: tuple[str, ...] = ()

    def body(self) -> dict[str, Any]:
        """The JSON answer of the invocation (``memory.tools``: the memory tools the model called, when it did)."""
        memory: dict[str, Any] = {"recalled": self.recalled, "degraded": self.degraded}
        if self.tools:
            memory["tools"] = list(self.tools)
        return {"output": self.output, "session_id": self.session_id, "memory": memory}


@dataclass(frozen=True, slots=True)
class TurnDeps:
    """What a turn needs. ``memory_unavailable`` marks memory as down for this turn (e.g. its key is unreadable);
    ``working`` keeps the session's conversation (``None``: none is kept); ``tools`` are the memory tools offered to
    the model (``None``: none)."""

    memory: Memory | None
    model: Model
    recall_timeout_s: float
    memory_unavailable: bool = False
    working: WorkingMemory | None = None
    tools: ToolRunner | None = None


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


async def _recall(deps: TurnDeps, caller: Caller | None, prompt: str) -> Recollection:
    memory, timeout_s = deps.memory, deps.recall_timeout_s
    if memory is None or caller is None:  # memory down for this turn, or an anonymous caller
        return MEMORY_UNAVAILABLE if deps.memory_unavailable and caller is not None else NOTHING_RECALLED
    try:
        return await asyncio.wait_for(memory.recall_for_turn(caller, prompt), timeout_s)
    except TimeoutError:
        logger.warning("recall exceeded its %.2f s deadline; answering without memory", timeout_s)
    except Exception:
        logger.exception("recall failed; answering without memory")
    return MEMORY_UNAVAILABLE


def _retain(
    deps: TurnDeps, caller: Caller | None, meta: TurnMeta, prompt: str, output: str
) -> tuple[RetainHandle | None, bool]:
    """Schedule the retain; returns (handle, failed_to_schedule)."""
    if deps.memory is None or caller is None or not output.strip():
        return None, False
    try:
        handle = deps.memory.retain_for_turn(
            caller, result=output, query=prompt, session_id=meta.session_id, request_id=meta.request_id
        )
    except Exception:
        logger.exception("could not schedule the retain of this turn")
        return None, True
    return handle, False


async def _model_turn(
    deps: TurnDeps, caller: Caller | None, meta: TurnMeta, prompt: str
) -> tuple[ModelTurn, Recollection, TurnTools | None]:
    """What the model is given (the prompt, the session's conversation, the recalled memories, the tools bound to
    the caller), the recall, and the tools (to see what they did)."""
    history = deps.working.history(caller, meta.session_id) if deps.working is not None else ()
    # A follow-up ("what did I decide about it?") is recalled with the message before it (measured: BENCHMARKS.md).
    recollection = await _recall(deps, caller, recall_query(prompt, [exchange.user for exchange in history]))
    tools = TurnTools(deps.tools, caller) if deps.tools is not None and caller is not None else None
    return ModelTurn(prompt=prompt, memories=recollection.text, history=history, tools=tools), recollection, tools


def _after_answer(
    deps: TurnDeps, caller: Caller | None, meta: TurnMeta, prompt: str, output: str, tools: TurnTools | None
) -> tuple[RetainHandle | None, bool]:
    """Keep the exchange in working memory and schedule its retain, unless the turn wrote memory itself: a turn
    that forgot drops the matching exchanges and is not kept (its answer lists what was forgotten), and a turn that
    remembered or forgot is not retained (the tool already wrote what should stay). A turn that only read memory is
    retained with :data:`~memory_adapter.tools.turn.ANSWERED_FROM_MEMORY` as its answer: the memories it quotes are
    stored already (:meth:`~memory_adapter.tools.turn.TurnTools.retained_answer`, the rule every agent shares)."""
    if deps.working is not None:
        if tools is not None and tools.forgot:
            deps.working.drop(caller, meta.session_id, tools.forgotten)
        elif output.strip():
            deps.working.add(caller, meta.session_id, Exchange(prompt, output))
    answer = tools.retained_answer(output) if tools is not None else output
    if answer is None:
        return None, False
    return _retain(deps, caller, meta, prompt, answer)


def _tool_names(tools: TurnTools | None) -> tuple[str, ...]:
    return tuple(call.name for call in tools.calls) if tools is not None else ()


async def run_turn(request: TurnRequest, caller: Caller | None, meta: TurnMeta, deps: TurnDeps) -> TurnResult:
    """Recall, answer, schedule the retain; the answer never waits for the retain to be delivered.

    ``caller`` is ``None`` for an anonymous turn (no memory at all, no working memory).
    """
    model_turn, recollection, tools = await _model_turn(deps, caller, meta, request.prompt)
    output = await deps.model.reply(model_turn)
    handle, retain_failed = _after_answer(deps, caller, meta, request.prompt, output, tools)
    return TurnResult(
        output=output,
        session_id=meta.session_id,
        recalled=recollection.count,
        degraded=recollection.degraded or retain_failed,
        retain=handle,
        tools=_tool_names(tools),
    )


async def stream_turn(
    request: TurnRequest,
    caller: Caller | None,
    meta: TurnMeta,
    deps: TurnDeps,
    on_retain: Callable[[RetainHandle], None],
) -> AsyncIterator[dict[str, Any]]:
    """The same turn as server-sent events: ``{"type": "delta", "text"}`` pieces, then ``{"type": "done", ...}``."""
    model_turn, recollection, tools = await _model_turn(deps, caller, meta, request.prompt)
    pieces: list[str] = []
    async for piece in deps.model.stream(model_turn):
        pieces.append(piece)
        yield {"type": "delta", "text": piece}
    output = "".join(pieces)
    handle, retain_failed = _after_answer(deps, caller, meta, request.prompt, output, tools)
    if handle is not None:
        on_retain(handle)
    result = TurnResult(
        output=output,
        session_id=meta.session_id,
        recalled=recollection.count,
        degraded=recollection.degraded or retain_failed,
        tools=_tool_names(tools),
    )
    yield {"type": "done", **result.body()}

"""One turn, told as a one-way pipeline: verified turn (caller, bank, credential) -> recall and the session's
conversation -> model (with the memory tools, bound to the caller) -> retain and remember the exchange -> answer.

Each step uses only what earlier steps returned; nothing here reads headers, environment variables or globals.
Identity, recall (under its deadline) and retain (with ``/ping`` busy until it is delivered) are the memory wiring's,
:class:`~memory_adapter.agentcore.AgentCoreMemory`, the same an agent you bring uses; the session's own conversation
comes from :class:`~runtime_handler.working_memory.WorkingMemory` (per session and caller). Memory failures never
fail the turn: they mark it ``degraded``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from memory_adapter.agentcore.answers import answer
from memory_adapter.agentcore.memory import MemoryTurn
from memory_adapter.agentcore.payload import TurnRequest
from memory_adapter.agentcore.request import RequestFacts
from memory_adapter.integrations.run_state import RETAIN_FAILED
from memory_adapter.recall_query import recall_query
from runtime_handler.model import Model, ModelTurn
from runtime_handler.tools import TurnTools
from runtime_handler.working_memory import Exchange, WorkingMemory

if TYPE_CHECKING:
    from memory_adapter.adapter import Recollection
    from memory_adapter.identity.caller import Caller
    from memory_adapter.retains import RetainHandle
    from memory_adapter.tools.memory_tools import ToolRunner

__all__ = ["TurnDeps", "TurnResult", "TurnWiring", "run_turn", "stream_turn"]


class TurnWiring(Protocol):
    """What a turn needs from the memory wiring (:class:`~memory_adapter.agentcore.AgentCoreMemory` is one)."""

    async def recall(self, turn: MemoryTurn | None, query: str) -> Recollection:
        """The turn's memories under the recall deadline; never raises (degrades)."""
        ...

    def retain(self, turn: MemoryTurn | None, *, query: str, result: str) -> RetainHandle | None:
        """Schedule the retain (``/ping`` busy until delivered); ``None`` when nothing was scheduled."""
        ...


@dataclass(frozen=True, slots=True)
class TurnResult:
    output: str
    session_id: str
    recalled: int
    degraded: bool
    retain: RetainHandle | None = None
    tools: tuple[str, ...] = ()
    reason: str | None = None

    def body(self) -> dict[str, Any]:
        """The JSON answer of the invocation (``memory.tools``: the memory tools the model called, when it did;
        ``memory.reason``: why it degraded, when it did)."""
        memory: dict[str, Any] = {"recalled": self.recalled, "degraded": self.degraded}
        if self.degraded and self.reason:
            memory["reason"] = self.reason
        if self.tools:
            memory["tools"] = list(self.tools)
        return answer(self.output, self.session_id, memory)


@dataclass(frozen=True, slots=True)
class TurnDeps:
    """What a turn needs: the memory wiring, the model, the session's conversation (``working``; ``None``: none is
    kept) and the memory tools offered to the model (``tools``; ``None``: none)."""

    memory: TurnWiring
    model: Model
    working: WorkingMemory | None = None
    tools: ToolRunner | None = None


def _caller(turn: MemoryTurn | None) -> Caller | None:
    return turn.caller if turn is not None else None


async def _model_turn(
    deps: TurnDeps, request: RequestFacts, turn: MemoryTurn | None, prompt: str
) -> tuple[ModelTurn, Recollection, TurnTools | None]:
    """What the model is given (the prompt, the session's conversation, the recalled memories, the tools bound to
    the caller), the recall, and the tools (to see what they did)."""
    caller = _caller(turn)
    history = deps.working.history(caller, request.session_id) if deps.working is not None else ()
    # A follow-up ("what did I decide about it?") is recalled with the message before it (measured: BENCHMARKS.md).
    recollection = await deps.memory.recall(turn, recall_query(prompt, [exchange.user for exchange in history]))
    tools = None
    if deps.tools is not None and turn is not None and not turn.memory_unavailable:
        tools = TurnTools(deps.tools, turn.caller)
    return ModelTurn(prompt=prompt, memories=recollection.text, history=history, tools=tools), recollection, tools


def _after_answer(
    deps: TurnDeps, request: RequestFacts, turn: MemoryTurn | None, prompt: str, output: str, tools: TurnTools | None
) -> tuple[RetainHandle | None, bool]:
    """Keep the exchange in working memory and schedule its retain, unless the turn wrote memory itself: a turn
    that forgot drops the matching exchanges and is not kept (its answer lists what was forgotten), and a turn that
    remembered or forgot is not retained (the tool already wrote what should stay). A turn that only read memory is
    retained with :data:`~memory_adapter.tools.turn.ANSWERED_FROM_MEMORY` as its answer: the memories it quotes are
    stored already (:meth:`~memory_adapter.tools.turn.TurnTools.retained_answer`, the rule every agent shares).
    Returns (handle, failed_to_schedule)."""
    caller = _caller(turn)
    if deps.working is not None:
        if tools is not None and tools.forgot:
            deps.working.drop(caller, request.session_id, tools.forgotten)
        elif output.strip():
            deps.working.add(caller, request.session_id, Exchange(prompt, output))
    answer = tools.retained_answer(output) if tools is not None else output
    if turn is None or turn.memory_unavailable or answer is None or not answer.strip():
        return None, False
    handle = deps.memory.retain(turn, query=prompt, result=answer)
    return handle, handle is None


def _reason(recollection: Recollection, retain_failed: bool) -> str | None:
    """Why the turn degraded: the recall's reason (``shed``, ``timeout``, ...), else ``retain_failed``."""
    if recollection.degraded:
        return recollection.reason
    return RETAIN_FAILED if retain_failed else None


def _tool_names(tools: TurnTools | None) -> tuple[str, ...]:
    return tuple(call.name for call in tools.calls) if tools is not None else ()


async def run_turn(ask: TurnRequest, request: RequestFacts, turn: MemoryTurn | None, deps: TurnDeps) -> TurnResult:
    """Recall, answer, schedule the retain; the answer never waits for the retain to be delivered.

    ``turn`` is ``None`` for an anonymous caller (no memory at all, no working memory).
    """
    model_turn, recollection, tools = await _model_turn(deps, request, turn, ask.prompt)
    output = await deps.model.reply(model_turn)
    handle, retain_failed = _after_answer(deps, request, turn, ask.prompt, output, tools)
    return TurnResult(
        output=output,
        session_id=request.session_id,
        recalled=recollection.count,
        degraded=recollection.degraded or retain_failed,
        retain=handle,
        tools=_tool_names(tools),
        reason=_reason(recollection, retain_failed),
    )


async def stream_turn(
    ask: TurnRequest, request: RequestFacts, turn: MemoryTurn | None, deps: TurnDeps
) -> AsyncIterator[dict[str, Any]]:
    """The same turn as server-sent events: ``{"type": "delta", "text"}`` pieces, then ``{"type": "done", ...}``."""
    model_turn, recollection, tools = await _model_turn(deps, request, turn, ask.prompt)
    pieces: list[str] = []
    async for piece in deps.model.stream(model_turn):
        pieces.append(piece)
        yield {"type": "delta", "text": piece}
    output = "".join(pieces)
    _, retain_failed = _after_answer(deps, request, turn, ask.prompt, output, tools)
    result = TurnResult(
        output=output,
        session_id=request.session_id,
        recalled=recollection.count,
        degraded=recollection.degraded or retain_failed,
        tools=_tool_names(tools),
        reason=_reason(recollection, retain_failed),
    )
    yield {"type": "done", **result.body()}

"""Strands Agents: the reference agent's memory for a Strands ``Agent`` (the ``[strands]`` extra).

* :class:`HindsightMemoryHooks`, a ``HookProvider``: on ``BeforeInvocationEvent`` it recalls the caller's memories
  for the new user message and adds them to the system prompt for this invocation only, as the inert data block of
  :func:`memory_adapter.formatting.format_memories_as_data` (sanitised, delimited, marked as data, not instructions:
  the reference agent's prompt-safety rules); on ``AfterInvocationEvent`` it restores the system prompt and retains
  the exchange in the background (``/ping`` busy until it is delivered or spooled). The memories never enter
  ``agent.messages``, so they are not carried into later turns nor retained again.
* :func:`memory_tools`: the memory tools (``recall``, ``reflect``, ``remember``, ``forget``, ``list_recent``: the
  reference agent's implementation, :mod:`memory_adapter.tools`) as Strands tools, each call for the verified caller.
  An invocation in which ``remember`` or ``forget`` succeeded is not retained again, and one that only read memory is
  retained as ``(answered from memory)``: the reference agent's rule.
* :class:`EchoModel`: a deterministic Strands model provider for local runs and tests.

The caller is the :class:`~memory_adapter.agentcore.MemoryTurn` passed in ``invocation_state`` (server-side: the model
never sees or sets it). Without one there is no memory: nothing is recalled or retained, tools refuse.

Example:
    >>> hooks = HindsightMemoryHooks(memory)                    # memory: memory_adapter.agentcore.AgentCoreMemory
    >>> agent = Agent(model=BedrockModel(model_id=...), hooks=[hooks], callback_handler=None)  # nothing to stdout
    >>> state = turn.state()                                    # turn: AgentCoreMemory.authenticate(context)
    >>> result = await agent.invoke_async(prompt, invocation_state=state)
    >>> memory_report(state).body()                             # {"recalled": 2, "degraded": False[, "tools": [...]]}
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from memory_adapter.integrations import missing_extra

try:
    from strands.hooks import AfterInvocationEvent, BeforeInvocationEvent, HookProvider, HookRegistry
    from strands.models.model import Model
    from strands.types.content import Messages, SystemContentBlock
    from strands.types.events import ToolResultEvent
    from strands.types.tools import AgentTool, ToolGenerator, ToolUse
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise missing_extra("strands", "Strands Agents", "strands") from exc

from memory_adapter.integrations import run_state
from memory_adapter.integrations.echo import recalled_memories
from memory_adapter.integrations.run_state import MemoryReport, memory_report
from memory_adapter.integrations.tools import NO_VERIFIED_CALLER, TURN_TOOLS_KEY, start_turn_tools, turn_tools
from memory_adapter.tools.echo import echo_answer, echo_tool_answer, echo_tool_call
from memory_adapter.tools.specs import TOOL_SPECS, ToolSpec
from memory_adapter.tools.turn import TurnTools

if TYPE_CHECKING:
    from pydantic import BaseModel
    from strands.types.streaming import StreamEvent
    from strands.types.tools import ToolChoice
    from strands.types.tools import ToolSpec as StrandsToolSpec

    from memory_adapter.agentcore.memory import AgentCoreMemory, MemoryTurn

__all__ = ["EchoModel", "HindsightMemoryHooks", "memory_report", "memory_tools"]

_PENDING_KEY = "memory_adapter.strands.pending"
_RETAINED_STOP_REASONS = frozenset({"end_turn", "stop_sequence"})

_T = TypeVar("_T", bound="BaseModel")


@dataclass(slots=True)
class _Pending:
    turn: MemoryTurn
    query: str
    report: MemoryReport
    injected: bool = False
    saved_prompt: list[SystemContentBlock] | None = field(default=None)


class HindsightMemoryHooks(HookProvider):
    """Recall before each invocation, retain after it (see the module docstring). Stateless between invocations, so
    one instance can serve many agents; a Strands ``Agent`` runs one invocation at a time."""

    def __init__(self, memory: AgentCoreMemory) -> None:
        self._memory = memory

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeInvocationEvent, self.before_invocation)
        registry.add_callback(AfterInvocationEvent, self.after_invocation)

    async def before_invocation(self, event: BeforeInvocationEvent) -> None:
        """Recall for the new user message and put the memories into this invocation's system prompt."""
        state = event.invocation_state
        report = run_state.start_report(state)
        turn = run_state.find_turn(state)
        query = _last_user_text(event.messages or [])
        if turn is None or not query:
            return
        pending = _Pending(turn=turn, query=query, report=report)
        state[_PENDING_KEY] = pending
        start_turn_tools(state, self._memory)  # this invocation's memory tool calls, for the retain rule
        recollection = await self._memory.recall(turn, query)
        report.recall_done(recollection.count, recollection.degraded, recollection.reason)
        if recollection.text:
            agent = event.agent
            pending.saved_prompt = agent.system_prompt_content
            pending.injected = True
            agent.system_prompt = [*(pending.saved_prompt or []), {"text": recollection.text}]

    async def after_invocation(self, event: AfterInvocationEvent) -> None:
        """Restore the system prompt; retain the exchange if the invocation answered."""
        pending = event.invocation_state.pop(_PENDING_KEY, None)
        tools = event.invocation_state.pop(TURN_TOOLS_KEY, None)
        if not isinstance(pending, _Pending):
            return
        if pending.injected:
            event.agent.system_prompt = pending.saved_prompt
        if isinstance(tools, TurnTools):
            pending.report.tools = [call.name for call in tools.calls]
        result = event.result
        if result is None or result.stop_reason not in _RETAINED_STOP_REASONS:
            return
        answer: str | None = str(result).strip()
        if isinstance(tools, TurnTools) and answer:
            answer = tools.retained_answer(answer)  # None: the invocation wrote memory itself
        if answer and self._memory.retain(pending.turn, query=pending.query, result=answer) is None:
            pending.report.retain_failed()


def memory_tools(memory: AgentCoreMemory) -> list[Any]:
    """The memory tools as Strands tools (``AgentTool`` objects, typed to fit ``Agent(tools=...)``); each call runs for
    the verified turn in ``invocation_state``."""
    return [_MemoryTool(spec, memory) for spec in TOOL_SPECS]


class _MemoryTool(AgentTool):
    """One memory tool. Its arguments are the model's; the caller comes only from ``invocation_state``."""

    def __init__(self, spec: ToolSpec, memory: AgentCoreMemory) -> None:
        super().__init__()
        self._spec = spec
        self._memory = memory

    @property
    def tool_name(self) -> str:
        return self._spec.name

    @property
    def tool_spec(self) -> StrandsToolSpec:
        return {
            "name": self._spec.name,
            "description": self._spec.description,
            "inputSchema": {"json": dict(self._spec.input_schema)},
        }

    @property
    def tool_type(self) -> str:
        return "memory"

    async def stream(self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any) -> ToolGenerator:
        tools = turn_tools(invocation_state, self._memory)
        status: Literal["success", "error"] = "error"
        if tools is None:
            text = NO_VERIFIED_CALLER
        else:
            result = await tools.call(self._spec.name, tool_use.get("input"))
            text, status = result.text, ("error" if result.is_error else "success")
        yield ToolResultEvent({"toolUseId": tool_use["toolUseId"], "status": status, "content": [{"text": text}]})


class EchoModel(Model):
    """A deterministic Strands model provider (no network), with the reference agent's echo rules
    (:mod:`memory_adapter.tools.echo`): it answers ``You said: ...`` with what the user said earlier in the
    conversation and the memories recalled into its system prompt, and calls a memory tool when the prompt asks for
    it (``forget ...``, ``remember ...``, ``recall ...``) and the tool is offered."""

    def __init__(self) -> None:
        self.config: dict[str, Any] = {"model_id": "echo"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return dict(self.config)

    def structured_output(
        self, output_model: type[_T], prompt: Messages, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncGenerator[dict[str, _T | Any], None]:
        raise NotImplementedError("the echo model has no structured output")

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[StrandsToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        **kwargs: Any,
    ) -> AsyncIterable[StreamEvent]:
        prompt = _last_user_text(messages)
        tool_result = _tool_result(messages)
        if tool_result is not None:
            async for event in _text_events(echo_tool_answer(prompt, tool_result)):
                yield event
            return
        call = echo_tool_call(prompt)
        if call is not None and call[0] in {spec["name"] for spec in tool_specs or []}:
            name, arguments = call
            yield {"messageStart": {"role": "assistant"}}
            start = {"toolUse": {"name": name, "toolUseId": f"tooluse_{uuid.uuid4().hex[:24]}"}}
            yield {"contentBlockStart": {"start": start}}  # type: ignore[typeddict-item]
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(arguments)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        earlier = _user_texts(messages[:-1])
        async for event in _text_events(
            echo_answer(prompt, memories=recalled_memories(system_prompt), earlier=earlier)
        ):
            yield event


async def _text_events(text: str) -> AsyncGenerator[StreamEvent, None]:
    yield {"messageStart": {"role": "assistant"}}
    yield {"contentBlockStart": {"start": {}}}
    yield {"contentBlockDelta": {"delta": {"text": text}}}
    yield {"contentBlockStop": {}}
    yield {"messageStop": {"stopReason": "end_turn"}}


def _user_texts(messages: Sequence[Any]) -> list[str]:
    """What the user said in ``messages`` (text messages only: tool results are not the user speaking)."""
    texts = []
    for message in messages:
        if message.get("role") == "user":
            text = "\n".join(b["text"] for b in message.get("content", []) if isinstance(b.get("text"), str)).strip()
            if text:
                texts.append(text)
    return texts


def _last_user_text(messages: Sequence[Any]) -> str:
    """The text of the last user message that has any (the prompt, also while a tool result follows it)."""
    texts = _user_texts(messages)
    return texts[-1] if texts else ""


def _tool_result(messages: Messages) -> str | None:
    """The text of the tool result the last message carries, if it carries one (the echo model reports it)."""
    last = messages[-1] if messages else None
    if not last or last.get("role") != "user":
        return None
    for block in last.get("content", []):
        result = block.get("toolResult")
        if result:
            return "".join(part.get("text", "") for part in result.get("content", []))
    return None

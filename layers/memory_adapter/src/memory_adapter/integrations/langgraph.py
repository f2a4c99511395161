"""LangGraph: the reference agent's memory for a LangGraph agent (the ``[langgraph]`` extra).

Pre/post-model hooks, not a ``BaseStore``. LangGraph's store is a key-value document store whose namespaces the
graph's code chooses (``store.put(("memories", user_id), key, value)``, ``store.get(...)``); Hindsight extracts facts
from retained conversations asynchronously and has no keys to get or put, so a store adapter would break the store's
contract (a ``put`` that a ``get`` cannot return) and would take the user from a namespace argument instead of the
verified caller. The hooks are what LangGraph documents for shaping what the model sees:

* :meth:`HindsightMemoryHooks.pre_model_hook` recalls the caller's memories for the latest human message and returns
  ``{"llm_input_messages": [<memories as a system message>, *messages]}``: the model sees them, the graph state (and
  any checkpointer) does not, so they are never carried into later turns nor retained again. The block is
  :func:`memory_adapter.formatting.format_memories_as_data` (sanitised, delimited, marked as data, not instructions:
  the reference agent's prompt-safety rules). A recall happens once per human message, not once per model call.
* :meth:`HindsightMemoryHooks.post_model_hook` retains the exchange in the background once the model gave its final
  answer (an AI message without tool calls), with ``/ping`` busy until it is delivered or spooled.

Both plug into ``create_react_agent(pre_model_hook=..., post_model_hook=...)`` and into any ``StateGraph`` as nodes
before and after the model node (see :meth:`HindsightMemoryHooks.model_input` for a model node of your own). The
caller is the :class:`~memory_adapter.agentcore.MemoryTurn` in the run's ``context`` (``graph.ainvoke(input,
context=turn.state())``): server-side, never from the model or the input. Without one there is no memory.
:func:`memory_tools` adapts the memory tools (:mod:`memory_adapter.tools`, the reference agent's implementation) to
LangChain tools, with the reference agent's retain rule (a run in which ``remember`` or ``forget`` succeeded is not
retained again); :class:`EchoChatModel` is a deterministic chat model
for local runs and tests.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memory_adapter.integrations import missing_extra

try:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import BaseTool, StructuredTool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.runtime import get_runtime
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise missing_extra("langgraph", "LangGraph", "langgraph") from exc

from memory_adapter.integrations import run_state
from memory_adapter.integrations.echo import recalled_memories
from memory_adapter.integrations.run_state import MEMORY_REPORT_KEY, MemoryReport, memory_report
from memory_adapter.integrations.tools import NO_VERIFIED_CALLER, turn_tools
from memory_adapter.tools.echo import echo_answer, echo_tool_answer, echo_tool_call
from memory_adapter.tools.specs import TOOL_SPECS, ToolSpec
from memory_adapter.tools.turn import answer_to_retain

if TYPE_CHECKING:
    from langchain_core.callbacks import CallbackManagerForLLMRun
    from langchain_core.language_models import LanguageModelInput
    from langchain_core.runnables import Runnable

    from memory_adapter.adapter import Recollection
    from memory_adapter.agentcore.memory import AgentCoreMemory, MemoryTurn

__all__ = [
    "EchoChatModel",
    "HindsightMemoryHooks",
    "memory_report",
    "memory_tools",
]

_RECALL_CACHE_SIZE = 256


class HindsightMemoryHooks:
    """Recall before the model, retain after its final answer (see the module docstring). One instance can serve
    every run of a graph: per-run facts live in the run's context, recalls are cached per (bank, human message)."""

    def __init__(self, memory: AgentCoreMemory) -> None:
        self._memory = memory
        self._recalls: OrderedDict[tuple[str, str], Recollection] = OrderedDict()

    async def pre_model_hook(self, state: Any) -> dict[str, Any]:
        """A node before the model: ``{"llm_input_messages": ...}`` with the memories in front (state unchanged)."""
        return {"llm_input_messages": await self.model_input(state["messages"], _run_context())}

    async def post_model_hook(self, state: Any) -> dict[str, Any]:
        """A node after the model: retain once the last message is the final answer; changes no state."""
        self.retain_answer(state["messages"], _run_context())
        return {}

    async def model_input(self, messages: Sequence[AnyMessage], context: object) -> list[AnyMessage]:
        """``messages`` with the caller's memories for the latest human message in front, as a system message."""
        turn = run_state.find_turn(context)
        human = _last_human(messages)
        if turn is None or human is None or not _text(human):
            return list(messages)
        recollection = await self._recall(turn, human)
        report = memory_report(context) if _reported(context) else run_state.start_report(context)
        report.recall_done(recollection.count, recollection.degraded, recollection.reason)
        if not recollection.text:
            return list(messages)
        return [SystemMessage(content=recollection.text), *messages]

    def retain_answer(self, messages: Sequence[AnyMessage], context: object) -> None:
        """Retain (latest human message, final answer) when the last message is an AI answer without tool calls."""
        turn = run_state.find_turn(context)
        last = messages[-1] if messages else None
        human = _last_human(messages)
        if turn is None or human is None or not isinstance(last, AIMessage) or last.tool_calls:
            return
        calls = _tool_calls_since(messages, human)
        memory_report(context).tools = [name for name, _ in calls]
        answer = answer_to_retain(calls, _text(last))  # None: the run wrote memory
        if answer and self._memory.retain(turn, query=_text(human), result=answer) is None:
            memory_report(context).retain_failed()

    async def _recall(self, turn: MemoryTurn, human: BaseMessage) -> Recollection:
        key = (turn.caller.bank_id, human.id or _text(human))
        cached = self._recalls.get(key)
        if cached is not None:
            self._recalls.move_to_end(key)
            return cached
        recollection = await self._memory.recall(turn, _text(human))
        if not recollection.degraded:  # a failed recall is tried again on the next model call
            self._recalls[key] = recollection
            while len(self._recalls) > _RECALL_CACHE_SIZE:
                self._recalls.popitem(last=False)
        return recollection


def memory_tools(memory: AgentCoreMemory) -> list[BaseTool]:
    """The memory tools as LangChain tools; each call runs for the verified turn in the run's ``context``.

    Each tool answers with the tool's text and, as the message's artifact, ``{"ok": <succeeded>}``: the post-model
    hook reads it for the retain rule.
    """
    return [_tool(spec, memory) for spec in TOOL_SPECS]


def _tool(spec: ToolSpec, memory: AgentCoreMemory) -> BaseTool:
    async def run(**arguments: Any) -> tuple[str, dict[str, bool]]:
        tools = turn_tools(_run_context(), memory)
        if tools is None:
            return NO_VERIFIED_CALLER, {"ok": False}
        result = await tools.call(spec.name, arguments)
        return result.text, {"ok": not result.is_error}

    return StructuredTool.from_function(
        coroutine=run,
        name=spec.name,
        description=spec.description,
        args_schema=dict(spec.input_schema),
        response_format="content_and_artifact",
    )


def _run_context() -> object:
    """The context of the graph run this node or tool executes in (``None`` outside a run: no memory)."""
    try:
        runtime = get_runtime()
    except Exception:  # outside a graph run there is no config to read it from
        return None
    return runtime.context if runtime is not None else None


class EchoChatModel(BaseChatModel):
    """A deterministic LangChain chat model (no network), with the reference agent's echo rules
    (:mod:`memory_adapter.tools.echo`): it answers ``You said: ...`` with what the user said earlier in the
    conversation and the memories recalled into its system messages, and calls a memory tool when the prompt asks for
    it and the tool is bound."""

    @property
    def _llm_type(self) -> str:
        return "memory-adapter-echo"

    def bind_tools(
        self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        names = [convert_to_openai_tool(tool)["function"]["name"] for tool in tools]
        return self.bind(tool_names=names, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1] if messages else None
        humans = [_text(m) for m in messages if isinstance(m, HumanMessage)]
        prompt = humans[-1] if humans else ""
        call = echo_tool_call(prompt)
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=echo_tool_answer(prompt, _text(last)))
        elif call is not None and call[0] in (kwargs.get("tool_names") or ()):
            tool_call = {"name": call[0], "args": call[1], "id": f"call_{uuid.uuid4().hex[:24]}"}
            reply = AIMessage(content="", tool_calls=[tool_call])
        else:
            system = "\n".join(_text(m) for m in messages if isinstance(m, SystemMessage))
            reply = AIMessage(content=echo_answer(prompt, memories=recalled_memories(system), earlier=humans[:-1]))
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _reported(context: object) -> bool:
    """Whether this run already has a report (the pre-model hook runs before every model call of a run)."""
    return isinstance(context, Mapping) and isinstance(context.get(MEMORY_REPORT_KEY), MemoryReport)


def _tool_calls_since(messages: Sequence[BaseMessage], human: BaseMessage) -> list[tuple[str, bool]]:
    """(tool name, succeeded) of the memory tools that ran after ``human`` (this run's), from their messages."""
    start = next((i for i in range(len(messages) - 1, -1, -1) if messages[i] is human), 0)
    calls = []
    for message in messages[start:]:
        if isinstance(message, ToolMessage) and message.name:
            artifact = message.artifact if isinstance(message.artifact, Mapping) else {}
            calls.append((message.name, bool(artifact.get("ok", message.status != "error"))))
    return calls


def _last_human(messages: Sequence[BaseMessage]) -> BaseMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)


def _text(message: BaseMessage) -> str:
    """A message's text (string content, or its text parts)."""
    content = message.content
    if isinstance(content, str):
        return content.strip()
    parts = [p if isinstance(p, str) else p.get("text", "") for p in content if isinstance(p, str | dict)]
    return "\n".join(str(p) for p in parts).strip()

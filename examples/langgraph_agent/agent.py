"""A LangGraph agent with durable memory on self-hosted Hindsight: the LangGraph example of docs/own-agent.md.

Deploy it instead of the reference agent with one setting (``-c agent.project=examples/langgraph_agent``), or run
it locally (``make local AGENT=examples/langgraph_agent``). AgentCore Runtime runs ``python agent.py`` from the bundle
root.

The memory wiring is the reference agent's (``memory_adapter.agentcore``): the caller comes from a verified JWT (or,
on IAM runtimes, the runtime user-id header), never from the payload or the model; the memories are recalled before
the model runs (the pre-model hook, once per user message) and the exchange retained after the final answer (the
post-model hook), with ``/ping`` busy until the retain is delivered; the model can use the memory tools (``forget ...``
really forgets). This file is only the agent: a ``StateGraph`` (recall -> model -> tools -> ... -> retain), a
checkpointer thread per (session, caller) (that caller's working memory), the tools, and the model.

Environment: the reference agent's (``AGENT_NAME``, ``HINDSIGHT_API_URL``, ``AUTH_MODE``, ``JWT_*``, ...; the stack
sets them), plus ``MODEL_ID`` (the Bedrock model) or ``MODEL_PROVIDER=echo`` (the deterministic local stand-in).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from memory_adapter.agentcore import AgentCoreMemory, MemoryTurn, RequestFacts, SettingsError
from memory_adapter.agentcore.answers import BUSY, MODEL_UNAVAILABLE, answer
from memory_adapter.agentcore.app import serve
from memory_adapter.integrations.langgraph import EchoChatModel, HindsightMemoryHooks, memory_report, memory_tools

SYSTEM_PROMPT = "You are a helpful assistant. Answer the user's message concisely."
#: Conversations this process keeps (one AgentCore session is one process: its callers are few).
MAX_CONVERSATIONS = 64
logger = logging.getLogger("langgraph_agent")


def _model() -> BaseChatModel:
    if os.environ.get("MODEL_PROVIDER") == "echo":
        return EchoChatModel()
    from langchain_aws import ChatBedrockConverse  # boto3 and the runtime's role; MODEL_ID is set by the stack

    bedrock: BaseChatModel = ChatBedrockConverse(model=os.environ["MODEL_ID"])
    return bedrock


class State(MessagesState):
    #: What the model sees: the conversation with the recalled memories in front (set by the pre-model hook). It is
    #: not kept: the checkpointer stores ``messages`` only, so memories never enter the conversation.
    llm_input_messages: list[AnyMessage]


try:
    memory = AgentCoreMemory.from_env()
except SettingsError as exc:  # every problem at once, before anything is served
    sys.exit(str(exc))
app = memory.create_app()


def _build_graph() -> Any:
    """recall (the memory hooks) -> model -> tools -> ... -> retain, one checkpointer thread per conversation."""
    hooks = HindsightMemoryHooks(memory)
    tools = memory_tools(memory)  # recall, reflect, remember, forget, list_recent: for the verified caller only
    model = _model().bind_tools(tools)

    async def call_model(state: State) -> dict[str, Any]:
        system = [{"role": "system", "content": SYSTEM_PROMPT}]
        return {"messages": [await model.ainvoke([*system, *state["llm_input_messages"]])]}

    def after_model(state: State) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else "retain"

    graph = StateGraph(State)
    graph.add_node("recall", hooks.pre_model_hook)  # memories for the latest user message (recalled once per message)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_node("retain", hooks.post_model_hook)  # the exchange, once the model gave its final answer
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "model")
    graph.add_conditional_edges("model", after_model, ["tools", "retain"])
    graph.add_edge("tools", "recall")
    graph.add_edge("retain", END)
    return graph.compile(checkpointer=checkpointer)


checkpointer = InMemorySaver()  # each thread is one caller's conversation in one session (working memory)
graph = _build_graph()
_threads: OrderedDict[str, asyncio.Lock] = OrderedDict()


def thread_for(turn: MemoryTurn | None) -> tuple[str, asyncio.Lock]:
    """The conversation of this caller in this session: a second user presenting the same session id never sees it,
    and an anonymous caller gets a fresh one every time."""
    thread = f"{turn.session_id}/{turn.caller.bank_id}" if turn is not None else f"anonymous/{uuid.uuid4()}"
    lock = _threads.get(thread)
    if lock is None:
        if len(_threads) >= MAX_CONVERSATIONS:
            oldest, _ = _threads.popitem(last=False)
            checkpointer.delete_thread(oldest)
        lock = _threads[thread] = asyncio.Lock()
    return thread, lock


@memory.entrypoint
async def invoke(payload: Any, turn: MemoryTurn | None, request: RequestFacts) -> Any:
    """One turn on the caller's thread, answered in the reference agent's words (``memory_adapter.agentcore.answers``:
    its body, or server-sent events with ``"stream": true``): 400 for a bad payload (``memory.read_turn``), 409 while
    the thread's lock is held by the caller's previous request, 502 when the graph fails."""
    ask = memory.read_turn(payload)
    state = turn.state() if turn is not None else {}
    thread, lock = thread_for(turn)
    if lock.locked():
        return BUSY.response()
    if ask.stream:
        return _stream(ask.prompt, state, thread, lock, request)
    async with lock:
        try:
            result = await graph.ainvoke(_input(ask.prompt), _config(thread), context=state)
        except Exception:
            logger.exception("the agent failed")
            return MODEL_UNAVAILABLE.response()
    return _answer(_text(result["messages"][-1]), state, request)


async def _stream(
    prompt: str, state: dict[str, Any], thread: str, lock: asyncio.Lock, request: RequestFacts
) -> AsyncIterator[Any]:
    """The reference agent's events: ``{"type": "delta", "text"}`` pieces of the final answer, then
    ``{"type": "done", ...}`` (the answer's body) or ``{"type": "error", "error", "code"}``."""
    if lock.locked():
        yield BUSY.event()
        return
    async with lock:
        try:
            async for chunk, meta in graph.astream(
                _input(prompt), _config(thread), context=state, stream_mode="messages"
            ):
                if meta.get("langgraph_node") == "model" and isinstance(chunk, AIMessage | AIMessageChunk):
                    text = _text(chunk)
                    if text and not chunk.tool_calls:
                        yield {"type": "delta", "text": text}
            final = (await graph.aget_state(_config(thread))).values["messages"][-1]
        except Exception:
            logger.exception("the agent failed mid-stream")
            yield MODEL_UNAVAILABLE.event()
            return
    yield {"type": "done", **_answer(_text(final), state, request)}


def _input(prompt: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(prompt)]}


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def _text(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)


def _answer(output: str, state: dict[str, Any], request: RequestFacts) -> dict[str, Any]:
    return answer(output.strip(), request.session_id, memory_report(state).body())


if __name__ == "__main__":
    serve(app)

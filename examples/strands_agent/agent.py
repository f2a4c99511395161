"""A Strands agent with durable memory on self-hosted Hindsight: the example of docs/own-agent.md.

Deploy it instead of the reference agent with one setting (``-c agent.project=examples/strands_agent``), or run it
locally (``make local AGENT=examples/strands_agent``). AgentCore Runtime runs ``python agent.py`` from the bundle root.

The memory wiring is the reference agent's (``memory_adapter.agentcore``): the caller comes from a verified JWT (or,
on IAM runtimes, the runtime user-id header), never from the payload or the model; recall runs before each invocation
and the retain after it, with ``/ping`` busy until the retain is delivered; the model can use the memory tools
(``forget ...`` really forgets). This file is only the agent: a Strands ``Agent`` per (session, caller) (its
conversation is that caller's working memory), the hooks, the tools, and the model.

Environment: the reference agent's (``AGENT_NAME``, ``HINDSIGHT_API_URL``, ``AUTH_MODE``, ``JWT_*``, ...; the stack
sets them), plus ``MODEL_ID`` (the Bedrock model) or ``MODEL_PROVIDER=echo`` (the deterministic local stand-in).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

from strands import Agent
from strands.models.model import Model
from strands.types.exceptions import ConcurrencyException

from memory_adapter.agentcore import AgentCoreMemory, MemoryTurn, RequestFacts, SettingsError
from memory_adapter.agentcore.answers import BUSY, MODEL_UNAVAILABLE, answer
from memory_adapter.agentcore.app import serve
from memory_adapter.integrations.strands import EchoModel, HindsightMemoryHooks, memory_report, memory_tools

SYSTEM_PROMPT = "You are a helpful assistant. Answer the user's message concisely."
#: Conversations this process keeps (one AgentCore session is one process: its callers are few).
MAX_CONVERSATIONS = 64
logger = logging.getLogger("strands_agent")


def _model() -> Model:
    if os.environ.get("MODEL_PROVIDER") == "echo":
        return EchoModel()
    from strands.models import BedrockModel  # boto3 and the runtime's role; MODEL_ID is set by the stack

    return BedrockModel(model_id=os.environ["MODEL_ID"])


try:
    memory = AgentCoreMemory.from_env()
except SettingsError as exc:  # every problem at once, before anything is served
    sys.exit(str(exc))
app = memory.create_app()
hooks = HindsightMemoryHooks(memory)
tools = memory_tools(memory)  # recall, reflect, remember, forget, list_recent: for the verified caller only
_conversations: dict[tuple[str, str], Agent] = {}


def agent_for(turn: MemoryTurn | None) -> Agent:
    """The conversation of this caller in this session (its working memory): a second user presenting the same
    session id never sees it, and an anonymous caller gets a fresh one every time."""
    if turn is None:
        return _new_agent()
    key = (turn.session_id, turn.caller.bank_id)
    agent = _conversations.get(key)
    if agent is None:
        if len(_conversations) >= MAX_CONVERSATIONS:
            _conversations.pop(next(iter(_conversations)))
        agent = _conversations[key] = _new_agent()
    return agent


def _new_agent() -> Agent:
    return Agent(model=_model(), system_prompt=SYSTEM_PROMPT, hooks=[hooks], tools=tools, callback_handler=None)


@memory.entrypoint
async def invoke(payload: Any, turn: MemoryTurn | None, request: RequestFacts) -> Any:
    """One turn of the caller's agent, answered in the reference agent's words (``memory_adapter.agentcore.answers``:
    its body, or server-sent events with ``"stream": true``): 400 for a bad payload (``memory.read_turn``), 409 while
    the agent still answers the caller's previous request (Strands refuses a concurrent invocation), 502 when the model
    fails."""
    ask = memory.read_turn(payload)
    state = turn.state() if turn is not None else {}
    agent = agent_for(turn)
    if ask.stream:
        return _stream(agent, ask.prompt, state, request)
    try:
        result = await agent.invoke_async(ask.prompt, invocation_state=state)
    except ConcurrencyException:
        return BUSY.response()
    except Exception:
        logger.exception("the agent failed")
        return MODEL_UNAVAILABLE.response()
    return _answer(str(result), state, request)


async def _stream(agent: Agent, prompt: str, state: dict[str, Any], request: RequestFacts) -> AsyncIterator[Any]:
    """The reference agent's events: ``{"type": "delta", "text"}`` pieces, then ``{"type": "done", ...}`` (the answer's
    body) or ``{"type": "error", "error", "code"}``."""
    result: Any = None
    try:
        async for event in agent.stream_async(prompt, invocation_state=state):
            text = event.get("data") if isinstance(event, dict) else None
            if isinstance(text, str) and text:
                yield {"type": "delta", "text": text}
            elif isinstance(event, dict) and "result" in event:
                result = event["result"]
    except ConcurrencyException:
        yield BUSY.event()
        return
    except Exception:
        logger.exception("the agent failed mid-stream")
        yield MODEL_UNAVAILABLE.event()
        return
    yield {"type": "done", **_answer(str(result), state, request)}


def _answer(output: str, state: dict[str, Any], request: RequestFacts) -> dict[str, Any]:
    return answer(output.strip(), request.session_id, memory_report(state).body())


if __name__ == "__main__":
    serve(app)

"""The model behind a small interface: Amazon Bedrock (Converse) or a deterministic local stand-in.

A turn hands the model a :class:`ModelTurn`: the prompt, the session's conversation so far (working memory, as
conversation messages: Converse ``messages`` for Bedrock), what was recalled from long-term memory, and the memory
tools it may call (Converse tool use: ``toolConfig``, at most ``max_tool_rounds`` rounds of tool calls per turn).

Recalled memories are data, not instructions: they reach the model in the system prompt as the memory wiring
formatted them, the same block an agent you bring gets (:func:`memory_adapter.formatting.format_memories_as_data`:
``<recalled_memories>`` delimiters with a data-not-instructions notice, copies of the delimiters removed, times to the
minute), so a memory cannot close the block and speak as the system (stored prompt injection across sessions).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from memory_adapter.integrations.echo import recalled_memories
from memory_adapter.tools.echo import echo_answer, echo_tool_answer, echo_tool_call
from runtime_handler.errors import ModelError
from runtime_handler.settings import DEFAULT_TOOL_ROUNDS
from runtime_handler.working_memory import Exchange

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient

    from memory_adapter.tools.memory_tools import ToolResult
    from memory_adapter.tools.specs import ToolSpec

__all__ = [
    "BedrockModel",
    "EchoModel",
    "Model",
    "ModelTurn",
    "Toolbox",
    "converse_messages",
    "system_prompt",
]

BASE_SYSTEM_PROMPT = "You are a helpful assistant. Answer the user's message concisely."


class Toolbox(Protocol):
    """The tools a turn offers the model (``runtime_handler.tools.TurnTools``: bound to the verified caller)."""

    @property
    def specs(self) -> Sequence[ToolSpec]: ...

    async def call(self, name: str, arguments: Any) -> ToolResult:
        """Run one tool; never raises (failures are results with ``error`` set)."""
        ...


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """Everything the model is given for one turn.

    Attributes:
        prompt: The user's message.
        memories: What was recalled from long-term memory, as the wiring's formatter delimited it (``""``: nothing).
        history: The session's earlier exchanges, oldest first (working memory).
        tools: The memory tools the model may call (``None``: none).
    """

    prompt: str
    memories: str = ""
    history: tuple[Exchange, ...] = ()
    tools: Toolbox | None = None


class Model(Protocol):
    """What the turn needs from a model."""

    async def reply(self, turn: ModelTurn) -> str:
        """The full answer to ``turn.prompt``, given the conversation and the recalled memories."""
        ...

    def stream(self, turn: ModelTurn) -> AsyncIterator[str]:
        """The answer in pieces, for SSE."""
        ...


def system_prompt(memories: str) -> str:
    """The base prompt, then the recalled-memory block as the wiring formatted it (already delimited and inert)."""
    return f"{BASE_SYSTEM_PROMPT}\n\n{memories.strip()}" if memories.strip() else BASE_SYSTEM_PROMPT


def converse_messages(turn: ModelTurn) -> list[dict[str, Any]]:
    """The conversation as Converse ``messages``: each earlier exchange as a user and an assistant message (the
    roles alternate, as Converse requires), then the prompt."""
    messages: list[dict[str, Any]] = []
    for exchange in turn.history:
        messages.append({"role": "user", "content": [{"text": exchange.user}]})
        messages.append({"role": "assistant", "content": [{"text": exchange.assistant}]})
    messages.append({"role": "user", "content": [{"text": turn.prompt}]})
    return messages


class EchoModel:
    """Deterministic stand-in for local runs and tests: echoes the prompt and shows what it was given (what the user
    said earlier in this session, and what was recalled from earlier sessions). With tools, a prompt that starts with
    a memory command (:func:`echo_tool_call`) calls that tool, as a model would, and the answer is its result."""

    async def reply(self, turn: ModelTurn) -> str:
        return await self._answer(turn)

    async def stream(self, turn: ModelTurn) -> AsyncIterator[str]:
        for line in (await self._answer(turn)).splitlines(keepends=True):
            yield line

    @staticmethod
    async def _answer(turn: ModelTurn) -> str:
        call = echo_tool_call(turn.prompt) if turn.tools is not None else None
        if call is not None and turn.tools is not None:
            result = await turn.tools.call(*call)
            return echo_tool_answer(turn.prompt, result.text)
        memories = recalled_memories(system_prompt(turn.memories))
        return echo_answer(turn.prompt, memories=memories, earlier=[exchange.user for exchange in turn.history])


_Round = tuple[list[dict[str, Any]], str]
"""One Converse answer: the assistant message's content blocks and the stop reason."""


class BedrockModel:
    """Amazon Bedrock through the Converse API. boto3 is imported on first use, off the cold-start path.

    With tools, each round that ends in ``tool_use`` runs the requested tools (through the turn's
    :class:`Toolbox`, which acts for the verified caller only) and sends their results back; after
    ``max_tool_rounds`` such rounds the answer is what the model said so far.
    """

    def __init__(
        self,
        model_id: str,
        *,
        max_tokens: int = 1024,
        max_tool_rounds: int = DEFAULT_TOOL_ROUNDS,
        client: BedrockRuntimeClient | None = None,
    ) -> None:
        self._model_id = model_id
        self._max_tokens = max_tokens
        self._max_tool_rounds = max_tool_rounds
        self._client = client
        self._lock = threading.Lock()
        self._producers: set[asyncio.Future[None]] = set()

    def _bedrock(self) -> BedrockRuntimeClient:
        with self._lock:
            if self._client is None:
                import boto3  # lazy: ~170 ms of import not paid before the first model call

                self._client = boto3.client("bedrock-runtime")
            return self._client

    def _request(self, turn: ModelTurn) -> dict[str, Any]:
        request: dict[str, Any] = {
            "modelId": self._model_id,
            "system": [{"text": system_prompt(turn.memories)}],
            "messages": converse_messages(turn),
            "inferenceConfig": {"maxTokens": self._max_tokens},
        }
        if turn.tools is not None and self._max_tool_rounds > 0:
            request["toolConfig"] = {"tools": [spec.converse() for spec in turn.tools.specs]}
        return request

    def _converse(self, request: dict[str, Any]) -> _Round:
        response = self._bedrock().converse(**request)
        content = cast("list[dict[str, Any]]", response["output"]["message"]["content"])
        return list(content), str(response.get("stopReason", "end_turn"))

    def _converse_stream(self, request: dict[str, Any], on_text: Callable[[str], None]) -> _Round:
        response = self._bedrock().converse_stream(**request)
        blocks: dict[int, dict[str, Any]] = {}
        tool_inputs: dict[int, list[str]] = {}
        stop = "end_turn"
        for event in response["stream"]:
            if "contentBlockStart" in event:
                start = event["contentBlockStart"]
                tool = start.get("start", {}).get("toolUse")
                if tool is not None:
                    index = start.get("contentBlockIndex", 0)
                    blocks[index] = {"toolUse": {"toolUseId": tool["toolUseId"], "name": tool["name"]}}
                    tool_inputs[index] = []
            elif "contentBlockDelta" in event:
                delta_event = event["contentBlockDelta"]
                index = delta_event.get("contentBlockIndex", 0)
                delta = delta_event.get("delta", {})
                if delta.get("text"):
                    blocks.setdefault(index, {"text": ""})
                    blocks[index]["text"] = blocks[index].get("text", "") + delta["text"]
                    on_text(delta["text"])
                elif "toolUse" in delta:
                    tool_inputs.setdefault(index, []).append(delta["toolUse"].get("input", ""))
            elif "messageStop" in event:
                stop = str(event["messageStop"].get("stopReason", "end_turn"))
        for index, parts in tool_inputs.items():
            raw = "".join(parts)
            try:
                blocks[index]["toolUse"]["input"] = json.loads(raw) if raw.strip() else {}
            except ValueError:
                blocks[index]["toolUse"]["input"] = {"_unparsable": raw[:200]}
        return [blocks[i] for i in sorted(blocks)], stop

    async def _run_tools(self, turn: ModelTurn, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The toolResult blocks answering every toolUse block of ``content``."""
        assert turn.tools is not None
        results = []
        for block in content:
            use = block.get("toolUse")
            if not isinstance(use, dict):
                continue
            result = await turn.tools.call(str(use.get("name", "")), use.get("input"))
            results.append(
                {
                    "toolResult": {
                        "toolUseId": use.get("toolUseId", ""),
                        "content": [{"json": dict(result.data)}],
                        "status": "error" if result.is_error else "success",
                    }
                }
            )
        return results

    async def _rounds(self, turn: ModelTurn, one_round: Callable[[dict[str, Any]], Any]) -> str:
        """Converse rounds until the model stops asking for tools (at most ``max_tool_rounds`` tool rounds)."""
        request = self._request(turn)
        said: list[str] = []
        for round_number in range(self._max_tool_rounds + 1):
            try:
                content, stop = await one_round(request)
            except ModelError:
                raise
            except Exception as exc:  # botocore raises many unrelated types; all mean "no answer"
                raise ModelError(f"Bedrock Converse failed: {type(exc).__name__}") from exc
            said.append("".join(str(block.get("text", "")) for block in content))
            wants_tools = stop == "tool_use" and any("toolUse" in block for block in content)
            if not wants_tools or turn.tools is None or round_number == self._max_tool_rounds:
                return "".join(said)
            request["messages"] += [
                {"role": "assistant", "content": content},
                {"role": "user", "content": await self._run_tools(turn, content)},
            ]
        return "".join(said)  # pragma: no cover (the loop always returns)

    async def reply(self, turn: ModelTurn) -> str:
        async def one_round(request: dict[str, Any]) -> _Round:
            return await asyncio.to_thread(self._converse, request)

        return await self._rounds(turn, one_round)

    async def stream(self, turn: ModelTurn) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        async def one_round(request: dict[str, Any]) -> _Round:
            done: asyncio.Future[_Round] = loop.create_future()

            def relay(text: str) -> None:
                loop.call_soon_threadsafe(queue.put_nowait, ("text", text))

            def produce() -> None:
                try:
                    result = self._converse_stream(request, relay)
                    loop.call_soon_threadsafe(_settle, done, result, None)
                except Exception as exc:
                    loop.call_soon_threadsafe(_settle, done, None, exc)

            # The producer thread drains the Bedrock event stream even if the consumer stops early; it never raises.
            producer = asyncio.ensure_future(asyncio.to_thread(produce))
            self._producers.add(producer)
            producer.add_done_callback(self._producers.discard)
            return await done

        async def run() -> None:
            try:
                await self._rounds(turn, one_round)
                queue.put_nowait(("end", None))
            except Exception as exc:
                queue.put_nowait(("error", exc))

        runner = asyncio.ensure_future(run())
        self._producers.add(runner)
        runner.add_done_callback(self._producers.discard)
        while True:
            kind, value = await queue.get()
            if kind == "text":
                yield str(value)
            elif kind == "error":
                if isinstance(value, ModelError):
                    raise value
                raise ModelError(f"Bedrock ConverseStream failed: {type(value).__name__}") from value
            else:
                return


def _settle(future: asyncio.Future[_Round], result: _Round | None, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        assert result is not None
        future.set_result(result)

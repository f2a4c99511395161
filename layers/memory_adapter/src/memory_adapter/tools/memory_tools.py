"""The memory tools (recall, reflect, remember, forget, list_recent), implemented once, acting for a verified caller.

The agent (Bedrock tool use), the local MCP server and the AgentCore Gateway's Lambda target all call
:meth:`MemoryTools.call` with the :class:`~memory_adapter.identity.Caller` they verified and the model's arguments.
The bank is the caller's, and the request carries the caller's own credential, so Hindsight's isolation extension
serves that user's bank and nothing else, whatever the arguments say (no schema has an identity parameter).

Forgetting, on Hindsight 1.1.0 (which has no "delete one memory" route):

* a source document (one retained turn, or one ``remember``) whose every remaining fact is being forgotten is
  **deleted** (``DELETE /documents/{id}``): its text, its chunks, its facts and the observations derived from them go,
  for good;
* a fact whose document still holds other facts is **invalidated** (``PATCH /memories/{id}``,
  ``state=invalidated``): Hindsight moves it out of recall, consolidation and the graph and re-derives the
  observations built on it; it stays in Hindsight's curation archive (an operator can delete it) and the source
  turn's text stays with the facts that were kept.

Before it searches, ``forget`` waits (``settle_s``, default 5 s) for the caller's retains still being processed, so a
statement made a moment ago is found too. Blocking calls over :class:`~memory_adapter.transport.Transport` (the
standard library's ``http.client``); callers on an event loop run them in a thread.

Example:
    >>> tools = MemoryTools(HttpTransport("http://127.0.0.1:8888"))
    >>> result = tools.call(caller, "forget", {"query": "that I prefer email"})
    >>> result.text
    'Forgot 1 memory: "I prefer email over phone." (deleted with its source).'
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from memory_adapter._hindsight_api import ABSENT_STATUSES, HindsightApi, memories_from, memory_from
from memory_adapter._recall import ranked_recall
from memory_adapter.constants import DEFAULT_RECALL_BUDGET, DEFAULT_RECALL_CANDIDATE_TOKENS, DEFAULT_RECALL_MAX_TOKENS
from memory_adapter.exceptions import HindsightRequestError, HindsightUnavailableError
from memory_adapter.formatting import RecalledMemory, sanitize_text
from memory_adapter.identity.caller import Caller
from memory_adapter.kinds import KIND_METADATA_KEY, MemoryKind, kind_tag
from memory_adapter.observability import short_hash
from memory_adapter.tools.errors import ToolError, ToolInputError, ToolRefusedError, ToolUnavailableError
from memory_adapter.tools.forgetting import identified, plan_removal, select
from memory_adapter.tools.matching import significant_words
from memory_adapter.tools.specs import FORGET, LIST_RECENT, RECALL, REFLECT, REMEMBER, parse_arguments
from memory_adapter.transport import Transport

if TYPE_CHECKING:
    from memory_adapter.config import HindsightAgentCoreConfig

__all__ = ["Forgotten", "MemoryTools", "ToolResult", "ToolRunner"]

logger = logging.getLogger("memory_adapter.tools")

TOOL_CONTEXT: Final = "memory-tool"
_FORGET_REASON: Final = "forgotten at the user's request"
_PENDING: Final = ("pending", "processing")
_LIST_PAGE: Final = 200


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call produced: ``data`` (JSON, for Converse ``json`` blocks and :meth:`answer`) and ``text`` (the
    same, said in a sentence or a list). ``error`` names the failure (``ToolError.code``)."""

    name: str
    data: Mapping[str, Any]
    text: str
    error: str | None = None

    @property
    def is_error(self) -> bool:
        return self.error is not None

    def answer(self) -> dict[str, Any]:
        """What an MCP client gets, as JSON in one text block, on every path: ``data`` with ``text`` added
        (``{"memories": [...], "text": "..."}``; a failure: ``{"error": "<code>", "message": "...", "text": ...}``).

        The gateway's Lambda target returns it and the AgentCore Gateway hands a Lambda's answer to the client as
        one text block holding its JSON, without ``structuredContent``; the local MCP server answers the same, so a
        client parses one shape whichever server it talks to.
        """
        return {**self.data, "text": self.text}


class ToolRunner(Protocol):
    """Runs a memory tool for a verified caller and never raises: :class:`MemoryTools` (straight to Hindsight) or
    :class:`~memory_adapter.tools.gateway_client.GatewayTools` (through the AgentCore Gateway)."""

    def call(self, caller: Caller, name: str, arguments: object) -> ToolResult:
        """The tool's result (``error`` set on failure)."""
        ...


@dataclass(frozen=True, slots=True)
class Forgotten:
    """One forgotten memory: its id and text, and ``how`` (``deleted`` with its source, or ``invalidated``)."""

    id: str
    text: str
    how: str


def _public(memory: RecalledMemory) -> dict[str, Any]:
    """What the model is shown of a memory (the text sanitized)."""
    return {
        "id": memory.id,
        "text": sanitize_text(memory.text),
        "type": memory.type,
        "kind": memory.kind,
        "mentioned_at": memory.mentioned_at,
    }


class MemoryTools:
    """The tools, over one transport. Thread-safe (the transport keeps one connection per thread).

    Args:
        transport: How to reach Hindsight (:class:`~memory_adapter.transport.HttpTransport`, or
            :class:`memory_adapter.testing.FakeHindsight` in unit tests).
        timeout: Seconds per Hindsight request (a ``remember`` waits for extraction: give it room).
        recall_budget: Hindsight's search depth for ``recall`` and ``forget``.
        recall_max_tokens: Most tokens of memories one ``recall`` returns.
        recall_candidate_tokens: Tokens of candidates ``recall`` re-ranks, as the agent's recall does
            (:func:`memory_adapter._recall.ranked_recall`).
        settle_s: How long ``forget`` waits for the caller's retains still being processed.
        sleep: The wait between polls (tests pass a fake).
    """

    def __init__(
        self,
        transport: Transport,
        *,
        timeout: float = 20.0,
        recall_budget: str = DEFAULT_RECALL_BUDGET,
        recall_max_tokens: int = DEFAULT_RECALL_MAX_TOKENS,
        recall_candidate_tokens: int = DEFAULT_RECALL_CANDIDATE_TOKENS,
        settle_s: float = 5.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._api = HindsightApi(transport, timeout=timeout)
        self._budget = recall_budget
        self._max_tokens = recall_max_tokens
        self._candidate_tokens = recall_candidate_tokens
        self._settle_s = settle_s
        self._sleep = sleep
        self._tools: dict[str, Callable[[Caller, dict[str, Any]], ToolResult]] = {
            RECALL: self._recall,
            REFLECT: self._reflect,
            REMEMBER: self._remember,
            FORGET: self._forget,
            LIST_RECENT: self._list_recent,
        }

    @classmethod
    def for_settings(cls, settings: HindsightAgentCoreConfig) -> MemoryTools:
        """The tools over their own connections to the adapter's Hindsight (``settings``: its URL, timeout and recall
        budget), as every agent builds them."""
        from memory_adapter.transport import HttpTransport

        return cls(
            HttpTransport(settings.hindsight_api_url),
            timeout=settings.timeout,
            recall_budget=settings.recall_budget,
            recall_max_tokens=settings.recall_max_tokens,
            recall_candidate_tokens=settings.recall_candidate_tokens,
        )

    def call(self, caller: Caller, name: str, arguments: object) -> ToolResult:
        """Run tool ``name`` for ``caller``; never raises: failures come back as a result with ``error`` set and a
        message that says what is wrong and what to do."""
        try:
            values = parse_arguments(name, arguments)
            if not caller.credential:
                raise ToolRefusedError("no credential for the memory server: the caller's token is required")
            result = self._tools[name](caller, values)
        except ToolError as exc:
            logger.info("memory tool refused", extra={"tool": str(name)[:64], "code": exc.code})
            return ToolResult(str(name)[:64], {"error": exc.code, "message": str(exc)}, str(exc), exc.code)
        except Exception:  # a bug must not become a 500 or leak a trace to the model
            logger.exception("memory tool failed", extra={"tool": name})
            message = "the memory tool failed unexpectedly; nothing more is known"
            return ToolResult(name, {"error": "internal", "message": message}, message, "internal")
        logger.info("memory tool ran", extra={"tool": name, "bank": short_hash(caller.bank_id)})
        return result

    # -- the tools -------------------------------------------------------------------------------------------------

    def _recall(self, caller: Caller, args: dict[str, Any]) -> ToolResult:
        found: list[RecalledMemory] = []
        with self._hindsight(missing_ok=True):
            found = ranked_recall(
                self._api,
                caller.bank_id,
                args["query"],
                budget=self._budget,
                max_tokens=self._max_tokens,
                candidate_tokens=self._candidate_tokens,
                bearer=caller.credential,
            )
        facts = identified(found)[: args.get("max_results", 5)]
        memories = [_public(fact) for fact in facts]
        if not memories:
            return ToolResult(RECALL, {"memories": []}, "No memories matched.")
        lines = [f"- {m['text']} (id {m['id']})" for m in memories]
        return ToolResult(RECALL, {"memories": memories}, f"{len(memories)} memories:\n" + "\n".join(lines))

    def _reflect(self, caller: Caller, args: dict[str, Any]) -> ToolResult:
        text = None
        with self._hindsight(missing_ok=True):
            text = self._api.reflect(
                caller.bank_id,
                args["query"],
                budget=self._budget,
                max_tokens=self._max_tokens,
                bearer=caller.credential,
            )
        answer = sanitize_text(text) if text is not None else "I have no memories about that."
        return ToolResult(REFLECT, {"answer": answer}, answer)

    def _remember(self, caller: Caller, args: dict[str, Any]) -> ToolResult:
        kind = MemoryKind(args.get("kind", MemoryKind.FACT.value))
        metadata = {"channel": TOOL_CONTEXT, "agent_name": caller.agent, "user_id": caller.user}
        if caller.tenant:
            metadata["tenant_id"] = caller.tenant
        tags = [f"user:{caller.user}", f"agent:{caller.agent}", kind_tag(kind), f"source:{TOOL_CONTEXT}"]
        if caller.tenant:
            tags.insert(0, f"tenant:{caller.tenant}")
        document_id = f"memory-{uuid.uuid4()}"
        item = {
            "content": args["text"],
            "context": TOOL_CONTEXT,
            "document_id": document_id,
            "metadata": {**metadata, KIND_METADATA_KEY: kind.value},
            "tags": tags,
        }
        with self._hindsight():
            self._api.retain(caller.bank_id, [item], wait=True, bearer=caller.credential)
        text = sanitize_text(args["text"])
        data = {"remembered": text, "kind": kind.value, "document_id": document_id}
        return ToolResult(REMEMBER, data, f'Remembered ({kind.value}): "{text}".')

    def _list_recent(self, caller: Caller, args: dict[str, Any]) -> ToolResult:
        params: dict[str, Any] = {"limit": args.get("limit", 10)}
        if "kind" in args:
            params |= {"tags": kind_tag(args["kind"]), "tags_match": "any_strict"}
        items = self._list(caller, params)
        memories = [_public(fact) for fact in items]
        if not memories:
            return ToolResult(LIST_RECENT, {"memories": []}, "No memories yet.")
        lines = [f"- {m['text']} [{m['kind']}] ({m['mentioned_at'] or 'undated'}, id {m['id']})" for m in memories]
        return ToolResult(LIST_RECENT, {"memories": memories}, f"{len(memories)} recent memories:\n" + "\n".join(lines))

    def _forget(self, caller: Caller, args: dict[str, Any]) -> ToolResult:
        pending = self._settle(caller)
        if "memory_ids" in args:
            chosen = [fact for fact in (self._get(caller, i) for i in args["memory_ids"]) if fact is not None]
        else:
            query: str = args["query"]
            if not significant_words(query):
                raise ToolInputError("forget: say what to forget (the description has no significant word)")
            chosen = select(query, self._search(caller, query))
        forgotten = self._remove(caller, chosen)
        data: dict[str, Any] = {
            "forgotten": [{"id": f.id, "text": sanitize_text(f.text), "how": f.how} for f in forgotten]
        }
        if pending:
            data["still_processing"] = pending
        return ToolResult(FORGET, data, _forget_text(forgotten, pending, args))

    # -- forgetting ------------------------------------------------------------------------------------------------

    def _settle(self, caller: Caller) -> int:
        """Wait (bounded) until none of the caller's retains is still being processed; return how many still are."""
        deadline = time.monotonic() + self._settle_s
        while True:
            operations: list[dict[str, Any]] = []
            with self._hindsight(missing_ok=True):
                operations = self._api.operations(caller.bank_id, limit=50, bearer=caller.credential)
            pending = sum(1 for op in operations if op.get("status") in _PENDING)
            if not pending or time.monotonic() >= deadline:
                return pending
            self._sleep(0.25)

    def _remove(self, caller: Caller, chosen: Sequence[RecalledMemory]) -> list[Forgotten]:
        """Remove ``chosen`` as :func:`~memory_adapter.tools.forgetting.plan_removal` plans: delete the documents
        every remaining fact of which is chosen, invalidate the other chosen facts."""
        plan = plan_removal(
            chosen,
            lookup=lambda memory_id: self._get(caller, memory_id),
            live_facts=lambda document_id: self._list(caller, {"document_id": document_id, "limit": _LIST_PAGE}),
        )
        forgotten: list[Forgotten] = []
        for document_id, group in plan.delete.items():
            with self._hindsight(missing_ok=True):
                if self._api.delete_document(caller.bank_id, document_id, bearer=caller.credential) is not None:
                    forgotten += [Forgotten(str(fact.id), fact.text, "deleted") for fact in group]
        for fact in plan.invalidate:
            with self._hindsight(missing_ok=True):
                bearer = caller.credential
                memory_id = str(fact.id)  # every chosen memory has one (identified)
                if self._api.invalidate_memory(
                    caller.bank_id, memory_id, _FORGET_REASON, bearer=bearer, missing_ok=True
                ):
                    forgotten.append(Forgotten(memory_id, fact.text, "invalidated"))
        return forgotten

    # -- reading ---------------------------------------------------------------------------------------------------

    def _search(self, caller: Caller, query: str) -> list[RecalledMemory]:
        results: list[RecalledMemory] = []
        with self._hindsight(missing_ok=True):
            results = self._api.recall(
                caller.bank_id, query, budget=self._budget, max_tokens=self._max_tokens, bearer=caller.credential
            )
        return identified(results)

    def _list(self, caller: Caller, params: Mapping[str, Any]) -> list[RecalledMemory]:
        items: list[Any] = []
        with self._hindsight(missing_ok=True):
            items = self._api.list_memories(caller.bank_id, params, bearer=caller.credential)
        return identified(memories_from(items))

    def _get(self, caller: Caller, memory_id: str) -> RecalledMemory | None:
        body = None
        with self._hindsight(missing_ok=True):
            body = self._api.memory(caller.bank_id, memory_id, bearer=caller.credential)
        found = identified([memory_from(body)])
        return found[0] if found else None

    @staticmethod
    @contextlib.contextmanager
    def _hindsight(*, missing_ok: bool = False) -> Iterator[None]:
        """Hindsight's errors as the tools' own; with ``missing_ok`` a "not there" refusal (an unknown bank or id,
        a query Hindsight cannot search) leaves the block's default in place instead of failing the tool."""
        try:
            yield
        except HindsightUnavailableError as exc:
            raise ToolUnavailableError("the memory server is unavailable; try again in a moment") from exc
        except HindsightRequestError as exc:
            if exc.status in (401, 403):
                raise ToolRefusedError("the memory server refused this caller's credential") from exc
            if not (missing_ok and exc.status in ABSENT_STATUSES):
                raise ToolInputError(f"the memory server could not do that (HTTP {exc.status})") from exc


def _forget_text(forgotten: Sequence[Forgotten], pending: int, args: Mapping[str, Any]) -> str:
    if not forgotten:
        what = f"matched {args['query']!r}" if "query" in args else "has those ids"
        text = f"Nothing was forgotten: no memory of yours {what}."
    else:
        noun = "memory" if len(forgotten) == 1 else "memories"
        lines = [
            f'- "{sanitize_text(f.text)}" ('
            + ("deleted with its source" if f.how == "deleted" else "invalidated: no longer recalled")
            + ")"
            for f in forgotten
        ]
        text = f"Forgot {len(forgotten)} {noun}:\n" + "\n".join(lines)
    if pending:
        text += f"\n({pending} recent statement(s) were still being processed; ask again in a minute to forget them.)"
    return text

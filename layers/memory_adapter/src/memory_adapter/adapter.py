"""``HindsightRuntimeAdapter``: durable memory for AgentCore Runtime agents, a drop-in superset of hindsight-agentcore.

Per turn: :meth:`~HindsightRuntimeAdapter.recall_for_turn` (or the prior-art :meth:`before_turn`) recalls under a
deadline and behind a circuit breaker; the agent runs; :meth:`~HindsightRuntimeAdapter.retain_for_turn` (or
:meth:`after_turn`) hands the turn to background delivery and returns a handle at once. A turn is identified by the
:class:`~memory_adapter.identity.Caller` an agent verified (bank id and credential included), or by the prior art's
:class:`TurnContext`, which becomes the same ``Caller``. Nothing here is bound to an
event loop: recalls run on a small thread pool and retains on daemon threads, so the adapter works the same from one
long-lived loop or from a fresh ``asyncio.run`` per turn, and a retain queued in a loop that has ended is still
delivered (or spooled at interpreter exit).

Example:
    >>> adapter = HindsightRuntimeAdapter(agent_name="support", hindsight_api_url="http://127.0.0.1:8888")
    >>> caller = Caller.of(user=verified.user, agent="support", tenant=verified.tenant, credential=bearer)
    >>> memory = await adapter.recall_for_turn(caller, prompt)          # Recollection(text, count, degraded)
    >>> answer = await my_model(prompt, memory.text)
    >>> handle = adapter.retain_for_turn(caller, result=answer, query=prompt, session_id=sid, request_id=rid)
    >>> await handle                                                    # RetainOutcome.DELIVERED / SPOOLED
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import dataclasses
import functools
import hashlib
import json
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, overload

from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.breaker import BreakerState, CircuitBreaker
from memory_adapter.budget import dialogue_text, fit_to_budget
from memory_adapter.config import SETTING_NAMES, HindsightAgentCoreConfig, get_config, resolve_settings
from memory_adapter.context import (
    BankResolver,
    TurnContext,
    default_bank_resolver,
    turn_metadata,
    turn_tags,
    turn_time,
)
from memory_adapter.delivery import ReplayResult, RetainDelivery, RetainHandle, RetainOutcome, RetryPolicy
from memory_adapter.exceptions import ConfigurationError, HindsightRequestError, HindsightUnavailableError
from memory_adapter.formatting import (
    MemoryFormatter,
    RecalledMemory,
    ReflectAnswer,
    format_memories_as_data,
    storable_text,
)
from memory_adapter.identity.caller import Caller
from memory_adapter.kinds import KIND_METADATA_KEY, kind_tag
from memory_adapter.observability import Metric, MetricsSink, Observer, logger, short_hash
from memory_adapter.policies import RecallPolicy, RetentionPolicy
from memory_adapter.spool import DirectorySpool, RetainRecord, Spool
from memory_adapter.transport import HttpTransport, Transport

if TYPE_CHECKING:
    from hindsight_client import Hindsight

__all__ = ["HindsightRuntimeAdapter", "RecallPolicy", "Recollection", "RetentionPolicy", "logger"]

_OPERATION_NAMESPACE: Final = uuid.UUID("5b0f7f3e-8d0c-4f43-9a77-6d2f1c0e9b11")
_AUTO_REPLAY_INTERVAL_S: Final = 5.0
_RECALL_THREADS: Final = 8


@dataclass(frozen=True, slots=True)
class Recollection:
    """The result of one recall, for the prompt and for observability.

    Attributes:
        text: Formatted memory block for the prompt (``""`` when nothing was recalled).
        count: Number of memories recalled.
        degraded: True when memory was skipped because of a failure (Hindsight down, slow, refusing, breaker open,
            unresolvable bank): the turn ran without memory it might have had.
        reason: Why it degraded (``breaker_open``, ``timeout``, ``unavailable``, ``rejected``, ``bank_resolution``,
            ``error``), else ``None``.
        latency_ms: Time the recall took, as the turn saw it.
        memories: The recalled memories (text unsanitised; use ``text`` for prompts). In reflect mode, one
            :class:`~memory_adapter.formatting.ReflectAnswer`: the answer exactly as Hindsight returned it.
    """

    text: str
    count: int
    degraded: bool
    reason: str | None = None
    latency_ms: float = 0.0
    memories: tuple[RecalledMemory, ...] = ()


@dataclass
class _Runtime:
    """Everything created on first use (threads, connections), torn down by ``aclose``."""

    api: HindsightApi
    breaker: CircuitBreaker
    delivery: RetainDelivery
    recall_pool: concurrent.futures.ThreadPoolExecutor
    exit_hook: Callable[[], None]
    probe_gate: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    """Held from handing a probe job to the pool until that job ends: at most one job queued or running."""


class HindsightRuntimeAdapter:
    """Durable memory adapter for Amazon Bedrock AgentCore Runtime agents.

    The prior-art parameters come first with the same meaning; every other parameter is keyword-only and defaults
    to ``configure()``, then its environment variable (see :mod:`memory_adapter.config`), then its default.

    Args:
        agent_name: Default agent name for contexts without one.
        hindsight_api_url: Hindsight URL (else ``configure()``, else ``HINDSIGHT_API_URL``; none at all raises
            :class:`~memory_adapter.exceptions.ConfigurationError`).
        api_key: Bearer credential for turns without their own ``credential``.
        bank_resolver: Maps a :class:`TurnContext` to a bank id (default :func:`default_bank_resolver`).
        recall_policy: Recall or reflect, budget, max tokens.
        retention_policy: Context label, extra tags and metadata, whether to store the user message.
        verbose: Log every operation at INFO (identities hashed).
        recall_timeout: Recall deadline in seconds (default 2.0).
        breaker_failure_threshold: Consecutive failures that open the circuit breaker (default 3).
        breaker_reset_timeout: Seconds before an open breaker is probed (default 30).
        max_retries: Retries per retain on transient errors before spooling (default 3).
        retry_base_delay: First retry delay, doubled per retry, fully jittered (default 0.2 s).
        retry_max_delay: Cap of one retry delay (default 5 s).
        timeout: Seconds per retain attempt and other non-recall calls (default 15).
        retain_async: ``after_turn`` returns at once (default) or waits until delivered/spooled.
        tags: Tags added to every retained memory.
        spool_dir: Directory of the default spool.
        spool_queue_url: An SQS queue as the spool instead (:class:`~memory_adapter.sqs_spool.SqsSpool`): it
            outlives the host, and its consumer replays it (no ``auto_replay`` from here).
        retain_workers: Concurrent delivery threads (default 4).
        exit_flush_timeout: Seconds the exit hook waits for pending retains before spooling them (default 5).
        auto_replay: Replay the spool in the background once Hindsight answers again (default True).
        spool: A custom :class:`~memory_adapter.spool.Spool` backend (overrides ``spool_dir``).
        formatter: Replaces :func:`~memory_adapter.formatting.format_memories_as_data`.
        metrics: A Powertools ``Metrics`` (or anything with ``add_metric(name=, unit=, value=)``).
        transport: A custom :class:`~memory_adapter.transport.Transport`: the seam for tests
            (:class:`memory_adapter.testing.FakeHindsight`).
        settings: Settings already resolved (e.g. by an agent, with its own): used as they are, so none of the
            setting arguments above may be given too.
    """

    def __init__(
        self,
        agent_name: str | None = None,
        *,
        hindsight_api_url: str | None = None,
        api_key: str | None = None,
        bank_resolver: BankResolver | None = None,
        recall_policy: RecallPolicy | None = None,
        retention_policy: RetentionPolicy | None = None,
        verbose: bool | None = None,
        recall_timeout: float | None = None,
        breaker_failure_threshold: int | None = None,
        breaker_reset_timeout: float | None = None,
        max_retries: int | None = None,
        retry_base_delay: float | None = None,
        retry_max_delay: float | None = None,
        timeout: float | None = None,
        retain_async: bool | None = None,
        tags: Sequence[str] | None = None,
        spool_dir: str | None = None,
        spool_queue_url: str | None = None,
        retain_workers: int | None = None,
        exit_flush_timeout: float | None = None,
        auto_replay: bool | None = None,
        spool: Spool | None = None,
        formatter: MemoryFormatter | None = None,
        metrics: MetricsSink | None = None,
        transport: Transport | None = None,
        settings: HindsightAgentCoreConfig | None = None,
    ) -> None:
        given = {name: value for name, value in locals().items() if name in SETTING_NAMES and value is not None}
        if settings is not None and given:
            raise ConfigurationError(f"settings= is already resolved; do not also pass {', '.join(sorted(given))}")
        self.settings = settings if settings is not None else resolve_settings(given, config=get_config())
        s = self.settings
        self._agent_name = agent_name
        self._bank_resolver: BankResolver = bank_resolver or default_bank_resolver
        self._recall_policy = recall_policy or RecallPolicy(budget=s.recall_budget, max_tokens=s.recall_max_tokens)
        self._retention_policy = retention_policy or RetentionPolicy()
        self._formatter: MemoryFormatter = formatter or format_memories_as_data
        self._observer = Observer(metrics, verbose=s.verbose)
        self._spool: Spool = spool if spool is not None else _default_spool(s)
        # A queue has its own consumer (the replay function); this process may only send to it.
        self._auto_replay = s.auto_replay and (spool is not None or not s.spool_queue_url)
        self._custom_transport = transport
        self._lock = threading.Lock()
        self._rt: _Runtime | None = None
        self._last_auto_replay = float("-inf")

    # ------------------------------------------------------------------ runtime (lazy)

    def _runtime(self) -> _Runtime:
        rt = self._rt
        if rt is not None:
            return rt
        with self._lock:
            if self._rt is None:
                self._rt = self._build_runtime()
            return self._rt

    def _build_runtime(self) -> _Runtime:
        s = self.settings
        transport = self._custom_transport or HttpTransport(s.hindsight_api_url)
        breaker = CircuitBreaker(
            failure_threshold=s.breaker_failure_threshold,
            reset_timeout=s.breaker_reset_timeout,
            slow_threshold=s.breaker_slow_threshold,
            slow_window=s.breaker_slow_window,
            slow_ratio=s.breaker_slow_ratio,
            slow_reset_timeout=s.breaker_slow_reset_timeout,
            on_change=self._breaker_changed,
        )
        delivery = RetainDelivery(
            transport=transport,
            breaker=breaker,
            spool=self._spool,
            observer=self._observer,
            retry=RetryPolicy(s.max_retries, s.retry_base_delay, s.retry_max_delay),
            timeout=s.timeout,
            workers=s.retain_workers,
            default_credential=s.api_key,
            on_short_circuit=self._maybe_probe,
            on_delivered=self._maybe_auto_replay,
            auto_replay=self._auto_replay,
        )
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=_RECALL_THREADS, thread_name_prefix="memory-recall")
        exit_flush_timeout = s.exit_flush_timeout

        def exit_hook() -> None:
            # Holds the delivery, not the adapter: retains queued by an adapter nobody references any more are
            # still flushed or spooled when the interpreter exits.
            delivery.shutdown(exit_flush_timeout)

        atexit.register(exit_hook)
        return _Runtime(HindsightApi(transport, timeout=s.timeout), breaker, delivery, pool, exit_hook)

    # ------------------------------------------------------------------ prior-art API

    async def before_turn(self, context: TurnContext, *, query: str) -> str:
        """Recall memories for the turn and return them formatted for the prompt (``""`` on any failure).

        A blank query returns ``""`` without calling Hindsight. See :meth:`recall_for_turn` for the details.
        """
        return (await self.recall_for_turn(context, query=query)).text

    async def after_turn(self, context: TurnContext, *, result: str, query: str | None = None) -> None:
        """Retain the turn; returns at once unless ``retain_async`` is False (then waits until delivered/spooled).

        Failures never reach the caller. Use :meth:`retain_for_turn` to get a handle on the delivery.
        """
        handle = self.retain_for_turn(context, result=result, query=query)
        if not self.settings.retain_async:
            await handle

    async def run_turn(
        self,
        context: TurnContext,
        payload: dict[str, Any],
        *,
        agent_callable: Callable[[dict[str, Any], str], Awaitable[dict[str, Any]]],
        query_key: str = "prompt",
        result_key: str = "output",
    ) -> dict[str, Any]:
        """Recall, run ``await agent_callable(payload, memory_context)``, retain its ``result_key`` output.

        Returns the callable's dict unchanged.
        """
        context = self._with_default_agent(context)
        query = str(payload.get(query_key, ""))
        memory_context = await self.before_turn(context, query=query)
        result = await agent_callable(payload, memory_context)
        output = result.get(result_key, "")
        if output:
            await self.after_turn(context, result=str(output), query=query)
        return result

    # ------------------------------------------------------------------ richer API

    async def recall_for_turn(self, context: TurnContext | Caller, query: str) -> Recollection:
        """Recall from the bank of ``context`` (a :class:`Caller`, or a :class:`TurnContext`) under
        ``recall_timeout`` and behind the circuit breaker; never raises.

        While the breaker is open this returns a degraded, empty :class:`Recollection` at once (no network), and at
        most one background probe checks whether Hindsight is back.
        """
        started = time.perf_counter()
        if not isinstance(query, str) or not query.strip():
            return Recollection("", 0, False)
        try:
            caller = self._caller(context)
        except Exception:
            self._observer.event(logging.WARNING, "memory bank resolution failed", event="recall.bank_resolution")
            return self._degraded("bank_resolution", started)
        bank_id = caller.bank_id
        rt = self._runtime()
        if not rt.breaker.allow():
            self._maybe_probe()
            return self._degraded("breaker_open", started, bank_id)
        bearer = caller.credential or self.settings.api_key
        try:
            future = rt.recall_pool.submit(self._recall_blocking, rt.api, bank_id, query, bearer)
            memories = await asyncio.wait_for(asyncio.wrap_future(future), timeout=self.settings.recall_timeout)
        except TimeoutError:
            rt.breaker.record_miss()
            return self._degraded("timeout", started, bank_id)
        except HindsightUnavailableError as exc:
            rt.breaker.record_error(exc)
            return self._degraded("unavailable", started, bank_id)
        except HindsightRequestError as exc:
            rt.breaker.record_success()
            return self._degraded("rejected", started, bank_id, status=exc.status)
        except Exception:
            logger.warning("memory recall failed", exc_info=True)
            return self._degraded("error", started, bank_id)
        rt.breaker.record_success()
        return self._recalled(memories, started, bank_id)

    @overload
    def retain_for_turn(
        self, context: TurnContext, *, result: str, query: str | None = None, occurred_at: datetime | None = None
    ) -> RetainHandle: ...

    @overload
    def retain_for_turn(
        self,
        context: Caller,
        *,
        result: str,
        query: str | None = None,
        session_id: str,
        request_id: str | None = None,
        occurred_at: datetime | None = None,
    ) -> RetainHandle: ...

    def retain_for_turn(
        self,
        context: TurnContext | Caller,
        *,
        result: str,
        query: str | None = None,
        session_id: str | None = None,
        request_id: str | None = None,
        occurred_at: datetime | None = None,
    ) -> RetainHandle:
        """Queue the turn for background delivery and return its :class:`RetainHandle` at once.

        With a :class:`Caller`, ``session_id`` and ``request_id`` are the turn's (a :class:`TurnContext` carries its
        own). The document id is the ``request_id`` (else a new UUID), so no turn overwrites another. The
        ``operation_id`` is derived from the bank and the memory item, so re-delivering the same turn (retries,
        replays, a redelivered request) creates no new work on the server. ``occurred_at`` is when the turn took
        place (default: now): Hindsight dates the turn's facts by it, so "when did I ..." can be answered and
        imported history keeps its dates; it survives spooling and replay.

        Raises:
            ValueError: Only for an ``occurred_at`` without a timezone or more than a day ahead (a caller's bug:
                refused loudly rather than stored with a wrong date). Hindsight failures never raise.
        """
        stamp = turn_time(occurred_at)
        if not isinstance(result, str) or not result.strip():
            return RetainHandle.resolved(RetainOutcome.SKIPPED)
        try:
            caller = self._caller(context)
            if isinstance(context, TurnContext):
                session_id, request_id = context.runtime_session_id, context.request_id
            if session_id is None:
                raise TypeError("retain_for_turn(caller, ...) needs the turn's session_id")
        except Exception:
            self._observer.event(logging.WARNING, "memory retain skipped: no bank", event="retain.bank_resolution")
            return RetainHandle.resolved(RetainOutcome.SKIPPED)
        # Only the inputs are queued here: a delivery thread builds the record (see RetainDelivery.submit).
        build = functools.partial(self._queued_record, caller, session_id, request_id, result, query, stamp)
        return self._runtime().delivery.submit(build)

    async def stream_turn(
        self,
        context: TurnContext,
        payload: dict[str, Any],
        *,
        agent_stream: Callable[[dict[str, Any], str], AsyncIterator[Any]],
        query_key: str = "prompt",
        text_of: Callable[[Any], str] | None = None,
        retain_partial: bool = False,
    ) -> AsyncIterator[Any]:
        """Streaming :meth:`run_turn`: recall, relay every chunk of ``agent_stream(payload, memory_context)``, and
        retain the whole output once, when the stream ends.

        Args:
            agent_stream: Returns an async iterator of chunks (e.g. an async generator function).
            text_of: Extracts the text of a chunk (default: the chunk itself if it is a ``str``, else ``""``).
            retain_partial: Also retain what was produced when the stream fails or the consumer stops early
                (default: only a stream that ran to its end is retained).

        Example:
            >>> async for chunk in adapter.stream_turn(ctx, payload, agent_stream=my_streaming_agent):
            ...     yield chunk
        """
        context = self._with_default_agent(context)
        query = str(payload.get(query_key, ""))
        memory_context = await self.before_turn(context, query=query)
        extract = text_of or (lambda chunk: chunk if isinstance(chunk, str) else "")
        parts: list[str] = []
        completed = False
        try:
            async for chunk in agent_stream(payload, memory_context):
                parts.append(extract(chunk))
                yield chunk
            completed = True
        finally:
            if completed or retain_partial:
                handle = self.retain_for_turn(context, result="".join(parts), query=query)
                if completed and not self.settings.retain_async:
                    await handle

    async def flush(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 (prior-art style API)
        """Wait until every queued retain is delivered, spooled or rejected; ``False`` if ``timeout`` s passed first."""
        rt = self._rt
        if rt is None:
            return True
        pending = rt.delivery.pending
        if not pending:
            return True
        _, not_done = await asyncio.wait([asyncio.wrap_future(f) for f in pending], timeout=timeout)
        for waiter in not_done:
            # Detach the waiter from this loop (which may close before the delivery ends); the delivery itself
            # cannot be cancelled (its future is already running).
            waiter.cancel()
        return not not_done

    async def aclose(self, timeout: float | None = None) -> None:  # noqa: ASYNC109 (bounded drain)
        """Wait up to ``timeout`` s (default ``exit_flush_timeout``) for pending retains, spool the rest, release
        threads and connections. The adapter stays usable: it starts again on the next call."""
        with self._lock:
            rt, self._rt = self._rt, None
        if rt is None:
            return
        wait = self.settings.exit_flush_timeout if timeout is None else timeout
        await asyncio.to_thread(rt.delivery.shutdown, wait)
        atexit.unregister(rt.exit_hook)
        rt.recall_pool.shutdown(wait=False, cancel_futures=True)
        rt.api.transport.close()

    async def replay(
        self, limit: int | None = None, *, dead_letters: bool = False, credential: str | None = None
    ) -> ReplayResult:
        """Re-deliver spooled retains now (oldest first); idempotent, so nothing is ever stored twice.

        Args:
            limit: Most records to replay (``None``: all).
            dead_letters: Replay the dead letters (retains Hindsight refused) instead.
            credential: Bearer to send instead of each record's own (e.g. an operator credential).
        """
        rt = self._runtime()

        def run() -> ReplayResult:
            if not rt.breaker.allow():
                self._probe_blocking(rt)
            result = rt.delivery.replay(limit, dead_letters=dead_letters, credential=credential, wait=True)
            assert result is not None  # wait=True always returns a result
            return result

        return await asyncio.to_thread(run)

    def start(self) -> None:
        """At start-up: drain in the background what the local spool holds; never blocks, never raises.

        Retains an earlier process spooled (an outage, a restart) would otherwise wait for the next turn's traffic.
        A no-op without ``auto_replay`` or with a queue as the spool (the queue's consumer replays it). Hindsight
        still down: the replay stops at its first failure and the records stay spooled for the next chance.
        """
        if not self._auto_replay:
            return
        try:
            self._runtime().delivery.request_replay()
        except Exception:  # start-up must not fail because of memory
            logger.warning("memory spool replay at start-up failed", exc_info=True)

    @property
    def spool(self) -> Spool:
        """Where undelivered retains wait (the queue deployed, the local directory otherwise)."""
        return self._spool

    @property
    def pending_retains(self) -> int:
        """Retains queued or in flight (not yet delivered, spooled or rejected)."""
        rt = self._rt
        return len(rt.delivery.pending) if rt is not None else 0

    @property
    def spooled_retains(self) -> int:
        """Retains waiting in the spool."""
        rt = self._runtime()
        return rt.delivery.spool_count()

    @property
    def breaker_state(self) -> BreakerState:
        """The circuit breaker's state (``closed`` until first use)."""
        rt = self._rt
        return rt.breaker.state if rt is not None else BreakerState.CLOSED

    def make_client(self, credential: str | None = None) -> Hindsight:
        """A new ``hindsight_client.Hindsight`` for operations beyond a turn (imports it: ~1 s the first time).

        The caller owns the client (its aiohttp session is bound to the event loop that first uses it).
        """
        from hindsight_client import Hindsight

        from memory_adapter.tls import ca_bundle_file

        client = Hindsight(
            base_url=self.settings.hindsight_api_url,
            api_key=credential or self.settings.api_key,
            timeout=self.settings.timeout,
            user_agent="memory-adapter/0.1",
        )
        bundle = ca_bundle_file()
        if bundle is not None:  # read when its aiohttp session is created, on first use (it trusts only the bundle)
            client._api_client.configuration.ssl_ca_cert = bundle
        return client

    async def __aenter__(self) -> HindsightRuntimeAdapter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ internals

    def _with_default_agent(self, context: TurnContext) -> TurnContext:
        if not context.agent_name and self._agent_name:
            return dataclasses.replace(context, agent_name=self._agent_name)
        return context

    def _caller(self, context: TurnContext | Caller) -> Caller:
        """The turn's caller: as given, or the prior art's context resolved once (raises when it names no bank)."""
        if isinstance(context, Caller):
            return context
        return self._with_default_agent(context).caller(self._bank_resolver)

    def _record(
        self,
        caller: Caller,
        session_id: str,
        request_id: str | None,
        result: str,
        query: str | None,
        occurred_at: datetime,
    ) -> RetainRecord:
        policy = self._retention_policy
        content = result
        if policy.include_user_message and query and query.strip():
            content = dialogue_text(query, result)  # every line names its speaker, whatever chunk it lands in
        item: dict[str, Any] = {
            "content": storable_text(content),
            "context": policy.context_label,
            "metadata": {
                **turn_metadata(
                    session_id=session_id,
                    user=caller.user,
                    agent=caller.agent,
                    tenant=caller.tenant,
                    request_id=request_id,
                ),
                KIND_METADATA_KEY: str(policy.kind),
                **policy.extra_metadata,
            },
            "document_id": request_id or str(uuid.uuid4()),
            "tags": [
                *turn_tags(session_id=session_id, user=caller.user, agent=caller.agent, tenant=caller.tenant),
                kind_tag(policy.kind),
                *self.settings.tags,
                *policy.extra_tags,
            ],
        }
        digest = hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
        item["timestamp"] = occurred_at.isoformat()
        return RetainRecord(
            operation_id=str(uuid.uuid5(_OPERATION_NAMESPACE, f"{caller.bank_id}\n{digest}")),
            bank_id=caller.bank_id,
            item=item,
            credential=caller.credential,
            agent_key=caller.agent_key,
        )

    def _queued_record(
        self,
        caller: Caller,
        session_id: str,
        request_id: str | None,
        result: str,
        query: str | None,
        occurred_at: datetime,
    ) -> RetainRecord:
        """Runs on a delivery thread: the turn's record, and the log line that it is queued."""
        record = self._record(caller, session_id, request_id, result, query, occurred_at)
        self._observer.event(
            logging.INFO, "memory retain queued", event="retain.queued", bank=short_hash(caller.bank_id)
        )
        return record

    def _recall_blocking(self, api: HindsightApi, bank_id: str, query: str, bearer: str | None) -> list[Any]:
        """Runs on a recall thread. Socket timeout slightly beyond the deadline: the caller gives up first."""
        policy = self._recall_policy
        budget = policy.budget or self.settings.recall_budget
        max_tokens = policy.max_tokens or self.settings.recall_max_tokens
        timeout = self.settings.recall_timeout + 0.5
        if policy.mode == "reflect":
            text = api.reflect(bank_id, query, budget=budget, max_tokens=max_tokens, bearer=bearer, timeout=timeout)
            return [ReflectAnswer(text=text)] if text is not None else []
        results = api.recall(bank_id, query, budget=budget, max_tokens=max_tokens, bearer=bearer, timeout=timeout)
        return [_memory(r) for r in results]

    def _recalled(self, memories: Sequence[RecalledMemory], started: float, bank_id: str) -> Recollection:
        # Hindsight's max_tokens counts the memories' text only; the block the model reads (delimiters, notice,
        # tags, dates) must stay within the budget too.
        max_tokens = self._recall_policy.max_tokens or self.settings.recall_max_tokens
        memories = fit_to_budget(memories, self._formatter, max_tokens)
        latency = (time.perf_counter() - started) * 1000
        text = self._formatter(memories) if memories else ""
        self._observer.latency(Metric.RECALL_LATENCY, latency)
        self._observer.count(Metric.RECALL_HITS, len(memories))
        self._maybe_auto_replay()  # Hindsight answers: a spool left by an earlier outage or process can drain
        self._observer.event(
            logging.INFO,
            "memory recalled",
            event="recall.ok",
            bank=short_hash(bank_id),
            hits=len(memories),
            latency_ms=round(latency, 1),
        )
        return Recollection(text, len(memories), False, None, latency, tuple(memories))

    def _degraded(self, reason: str, started: float, bank_id: str | None = None, **fields: Any) -> Recollection:
        latency = (time.perf_counter() - started) * 1000
        self._observer.count(Metric.DEGRADED_TURNS)
        level = logging.INFO if reason == "breaker_open" else logging.WARNING
        bank = short_hash(bank_id) if bank_id else None
        self._observer.event(
            level, "memory recall skipped", event="recall.degraded", reason=reason, bank=bank, **fields
        )
        return Recollection("", 0, True, reason, latency)

    def _probe_blocking(self, rt: _Runtime) -> bool:
        """GET /health: any answer below 500 means Hindsight is back (closes the breaker)."""
        try:
            up = rt.api.healthy(timeout=self.settings.recall_timeout)
        except HindsightUnavailableError as exc:
            rt.breaker.record_error(exc)
            return False
        if not up:
            rt.breaker.record_failure()
            return False
        rt.breaker.record_success()
        return True

    def _maybe_probe(self) -> None:
        """Called on the turn path while the breaker is open: two reads, and at most one job handed to the pool.

        Claiming the probe (a lock and the half-open transition, whose callbacks emit a metric and a log line) and
        the probe itself run in :meth:`_probe_job` on a recall thread, so no turn pays for them.
        """
        rt = self._rt
        if rt is None or not rt.breaker.probe_due() or not rt.probe_gate.acquire(blocking=False):
            return
        try:
            rt.recall_pool.submit(self._probe_job, rt)
        except RuntimeError:  # pool shut down by aclose: no probe, the breaker stays open
            rt.probe_gate.release()

    def _probe_job(self, rt: _Runtime) -> None:
        """Runs on a recall thread: claim the probe (only one caller wins) and probe, unless the adapter closed."""
        try:
            if self._rt is rt and rt.breaker.begin_probe():
                try:
                    self._probe_blocking(rt)
                except Exception:  # an unexpected error must not leave the breaker half-open for good
                    logger.warning("memory probe failed", exc_info=True)
                    rt.breaker.record_failure()
        finally:
            rt.probe_gate.release()

    def _breaker_changed(self, old: BreakerState, new: BreakerState) -> None:
        self._observer.count(Metric.BREAKER_STATE, new.metric_value)
        if new is BreakerState.OPEN and old is BreakerState.CLOSED:
            self._observer.count(Metric.BREAKER_OPENED)
        level = logging.WARNING if new is BreakerState.OPEN else logging.INFO
        self._observer.event(level, f"memory circuit breaker {new}", event="breaker.state", state=str(new))
        if new is BreakerState.CLOSED:
            self._maybe_auto_replay(force=True)

    def _maybe_auto_replay(self, force: bool = False) -> None:
        """Start a background replay when the spool holds something (checked at most every few seconds)."""
        rt = self._rt
        if rt is None or not self._auto_replay:
            return
        now = time.monotonic()
        if not force and now - self._last_auto_replay < _AUTO_REPLAY_INTERVAL_S:
            return
        self._last_auto_replay = now
        if rt.delivery.spool_count() == 0:
            return
        rt.delivery.request_replay()


def _default_spool(settings: HindsightAgentCoreConfig) -> Spool:
    """The queue when one is configured (deployed; the local directory while it cannot be reached), else the local
    directory."""
    if settings.spool_queue_url:
        from memory_adapter.fallback_spool import FallbackSpool
        from memory_adapter.sqs_spool import SqsSpool  # standard library only; boto3 waits for the first send

        # While the queue cannot be reached, a turn waits on local disk rather than being dropped.
        return FallbackSpool(SqsSpool(settings.spool_queue_url), DirectorySpool(settings.spool_dir))
    return DirectorySpool(settings.spool_dir)


def _memory(raw: dict[str, Any]) -> RecalledMemory:
    def opt(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) and value else None

    return RecalledMemory(
        text=raw["text"],
        type=opt("type"),
        mentioned_at=opt("mentioned_at"),
        id=opt("id"),
        document_id=opt("document_id"),
    )

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
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, overload

from memory_adapter._recall import Recaller, Recollection, degraded
from memory_adapter._runtime import AdapterRuntime, default_spool
from memory_adapter._turn_record import turn_record
from memory_adapter.breaker import BreakerState
from memory_adapter.config import SETTING_NAMES, HindsightAgentCoreConfig, get_config, resolve_settings
from memory_adapter.context import BankResolver, TurnContext, default_bank_resolver, turn_time
from memory_adapter.exceptions import ConfigurationError
from memory_adapter.formatting import MemoryFormatter, format_memories_as_data
from memory_adapter.identity.caller import Caller
from memory_adapter.observability import MetricsSink, Observer, logger, short_hash
from memory_adapter.policies import RecallPolicy, RetentionPolicy
from memory_adapter.retains import ReplayResult, RetainHandle, RetainOutcome
from memory_adapter.spool import RetainRecord, Spool
from memory_adapter.transport import Transport

__all__ = ["HindsightRuntimeAdapter", "RecallPolicy", "Recollection", "RetentionPolicy", "logger"]


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
        recall_candidate_tokens: Tokens of candidates asked of Hindsight and re-ranked by the adapter
            (:mod:`memory_adapter.rerank`; default 4000; at most the block's budget: Hindsight's order).
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
        recall_candidate_tokens: int | None = None,
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
        # The turn's record, built on a delivery thread (an attribute: tests watch where it runs).
        self._record = functools.partial(turn_record, policy=retention_policy or RetentionPolicy(), tags=s.tags)
        self._observer = Observer(metrics, verbose=s.verbose)
        policy = recall_policy or RecallPolicy(budget=s.recall_budget, max_tokens=s.recall_max_tokens)
        self._recaller = Recaller(
            reflect=policy.mode == "reflect",
            budget=policy.budget or s.recall_budget,
            max_tokens=policy.max_tokens or s.recall_max_tokens,
            candidate_tokens=s.recall_candidate_tokens,
            deadline=s.recall_timeout,
            formatter=formatter or format_memories_as_data,
            observer=self._observer,
        )
        self._spool: Spool = spool if spool is not None else default_spool(s)
        # A queue has its own consumer (the replay function); this process may only send to it.
        self._auto_replay = s.auto_replay and (spool is not None or not s.spool_queue_url)
        self._custom_transport = transport
        self._lock = threading.Lock()
        self._rt: AdapterRuntime | None = None

    # ------------------------------------------------------------------ runtime (lazy)

    def _runtime(self) -> AdapterRuntime:
        rt = self._rt
        if rt is not None:
            return rt
        with self._lock:
            if self._rt is None:
                self._rt = AdapterRuntime(
                    self.settings,
                    spool=self._spool,
                    observer=self._observer,
                    auto_replay=self._auto_replay,
                    transport=self._custom_transport,
                )
            return self._rt

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
            return degraded("bank_resolution", started, self._observer)
        bearer = caller.credential or self.settings.api_key
        return await self._recaller.recall(self._runtime(), caller.bank_id, query, bearer, started)

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
        build = functools.partial(self._record, caller, session_id, request_id, result, query, stamp)
        return self._runtime().delivery.submit(functools.partial(self._queued_record, build, caller.bank_id))

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
        await asyncio.to_thread(rt.close, wait)

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
                rt.probe_blocking()
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

    def _queued_record(self, build: Callable[[], RetainRecord], bank_id: str) -> RetainRecord:
        """Runs on a delivery thread: the turn's record (``build``), and the log line that it is queued."""
        record = build()
        self._observer.event(logging.INFO, "memory retain queued", event="retain.queued", bank=short_hash(bank_id))
        return record

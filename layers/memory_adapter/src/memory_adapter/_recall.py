"""One recall for the adapter: under its deadline and behind the circuit breaker, on a recall thread, and the
:class:`Recollection` a turn gets back (never an exception).

Private: :class:`Recollection` is public as ``memory_adapter.Recollection`` (and ``memory_adapter.adapter``).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.budget import estimate_tokens, fit_to_budget
from memory_adapter.currency import current_first, follow_up_queries, with_later
from memory_adapter.exceptions import HindsightOverloadedError, HindsightRequestError, HindsightUnavailableError
from memory_adapter.formatting import MemoryFormatter, RecalledMemory, ReflectAnswer
from memory_adapter.observability import Metric, Observer, logger, short_hash
from memory_adapter.recall_deadline import RECALL_MARGIN_S, recall_socket_timeout_s
from memory_adapter.rerank import rerank

if TYPE_CHECKING:
    from memory_adapter._runtime import AdapterRuntime

__all__ = [
    "MAX_SHED_WINDOW_S",
    "Recaller",
    "Recollection",
    "ShedWindows",
    "degraded",
    "ranked_recall",
    "recall_blocking",
    "recalled",
    "within_text_tokens",
]


@dataclass(frozen=True, slots=True)
class Recollection:
    """The result of one recall, for the prompt and for observability.

    Attributes:
        text: Formatted memory block for the prompt (``""`` when nothing was recalled).
        count: Number of memories recalled.
        degraded: True when memory was skipped because of a failure (Hindsight down, slow, refusing, breaker open,
            unresolvable bank): the turn ran without memory it might have had.
        reason: Why it degraded (``breaker_open``, ``shed``, ``timeout``, ``unavailable``, ``rejected``,
            ``bank_resolution``, ``error``), else ``None``. ``shed``: Hindsight answered at once that it could not
            serve the recall within its deadline (overloaded), or did so for this bank within its ``Retry-After``
            (skipped without asking); not a failure, the breaker does not count it.
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


#: Longest a shed's ``Retry-After`` keeps a bank's recalls local (a server's hint beyond this is not trusted).
MAX_SHED_WINDOW_S = 30.0
#: Banks remembered in a shed window at most (expired ones are dropped first).
_MAX_WINDOWS = 1024
#: Sheds in a row (no recall served between) double the server's window up to this many times (64x).
MAX_SHED_DOUBLINGS = 6
#: How far a shed window is spread around the (doubled) window the server sends: uniformly from ``1 - SHED_JITTER`` to
#: ``1 + SHED_JITTER`` times it, so on average a process asks again when the server said, but not all at once.
SHED_JITTER = 0.5


@dataclass(slots=True)
class ShedWindows:
    """Per bank, until when a shed's ``Retry-After`` holds: a recall of that bank in the window degrades at once
    (reason ``shed``) without a round trip the server already said it would refuse.

    Per bank first: a process serving several users (local runs) must not stop the others' recalls for one user's
    shed. But a shed says the *server* is overloaded, so in the same window the process as a whole sends one recall
    at a time (``in_flight``): the others skip at once instead of each paying a round trip to a server whose event
    loop is starved, and the first recall served closes the window for all. On AgentCore each session has its own
    microVM, so this is one user's next turns only.

    Each shed in a row, with no recall served between, doubles the server's window (up to
    :data:`MAX_SHED_DOUBLINGS`), as clients back off from a throttling AWS API: the server's expected wait is right
    for a burst that passes, but while overload lasts, asking again after tens of milliseconds only feeds it (the
    closed-loop bench with the plain window: twice the round trips, served turns' p50 1.9x at 32 sessions).

    Each window is jittered (``jitter``, :data:`SHED_JITTER`): a process's sessions shed in the same burst were told
    the same window, and would all ask again the moment it ends, the burst again. Spread uniformly around the
    server's window (not below it only, "equal jitter", nor from zero, "full jitter"), the average wait stays what
    the server expects, so the spread costs a shed turn nothing on average and the server no extra requests."""

    until: dict[str, float] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    overloaded_until: float = 0.0
    in_flight: int = 0
    streak: int = 0
    jitter: float = SHED_JITTER
    uniform: Callable[[], float] = random.random

    def holds(self, bank_id: str) -> bool:
        """Whether ``bank_id``'s recall is to be skipped now."""
        now = self.clock()
        return self.until.get(bank_id, 0.0) > now or (self.overloaded_until > now and self.in_flight > 0)

    def hold(self, bank_id: str, retry_after: float | None) -> None:
        """Start a window of ``retry_after`` seconds, doubled for each shed before it in a row (none without one)."""
        if retry_after is None or retry_after <= 0:
            return
        spread = 1.0 + self.jitter * (2.0 * self.uniform() - 1.0)
        window = retry_after * 2 ** min(self.streak, MAX_SHED_DOUBLINGS) * spread
        self.streak += 1
        now = self.clock()
        if len(self.until) >= _MAX_WINDOWS:
            for bank in [b for b, t in self.until.items() if t <= now]:
                del self.until[bank]
            if len(self.until) >= _MAX_WINDOWS:
                self.until.pop(next(iter(self.until)))
        self.until[bank_id] = now + min(window, MAX_SHED_WINDOW_S)
        self.overloaded_until = max(self.overloaded_until, self.until[bank_id])

    def served(self) -> None:
        """A recall was served: the server is not refusing this process now."""
        self.overloaded_until = 0.0
        self.streak = 0


@dataclass(frozen=True, slots=True)
class Recaller:
    """An adapter's recall: its mode, budget, deadline and formatter, fixed when the adapter is made."""

    reflect: bool
    budget: str
    max_tokens: int
    deadline: float
    formatter: MemoryFormatter
    observer: Observer
    windows: ShedWindows = field(default_factory=ShedWindows)
    #: Tokens of candidates asked of Hindsight and re-ranked here (:mod:`memory_adapter.rerank`); 0: Hindsight's order.
    candidate_tokens: int = 0

    async def recall(
        self, rt: AdapterRuntime, bank_id: str, query: str, bearer: str | None, started: float
    ) -> Recollection:
        """Recall from ``bank_id`` within ``deadline`` s; while the breaker is open, a degraded recollection at once
        (no network) and at most one background probe."""
        if self.windows.holds(bank_id):
            self.observer.count(Metric.RECALL_SHED)
            return degraded("shed", started, self.observer, bank_id, local=True)
        if not rt.breaker.allow():
            rt.maybe_probe()
            return degraded("breaker_open", started, self.observer, bank_id)
        self.windows.in_flight += 1
        on_thread: list[float] = []  # when the recall thread took the recall up and when it had the answer
        try:
            deadline_at = time.perf_counter() + self.deadline
            future = rt.recall_pool.submit(
                _timed,
                on_thread,
                rt.api,
                bank_id,
                query,
                reflect=self.reflect,
                budget=self.budget,
                max_tokens=self.max_tokens,
                candidate_tokens=self.candidate_tokens,
                bearer=bearer,
                timeout=recall_socket_timeout_s(self.deadline),  # the turn gives up first, never the socket
                deadline_at=deadline_at,
            )
            memories = await asyncio.wait_for(asyncio.wrap_future(future), timeout=self.deadline)
        except TimeoutError:
            rt.breaker.record_miss()
            return degraded("timeout", started, self.observer, bank_id)
        except HindsightOverloadedError as exc:
            # Hindsight is up and said at once it could not answer in time: no memory for this turn, nothing for
            # the breaker (which stays for a server that is gone or hung); this bank asks again after Retry-After.
            self.windows.hold(bank_id, exc.retry_after)
            self.observer.count(Metric.RECALL_SHED)
            # on_thread_ms: the request's round trip as the recall thread saw it; the rest of latency_ms is this
            # process handing the recall to a thread and the answer back to the turn (where a shed's time goes)
            on_thread_ms = round((on_thread[-1] - on_thread[0]) * 1000, 1) if len(on_thread) == 2 else None
            return degraded("shed", started, self.observer, bank_id, on_thread_ms=on_thread_ms)
        except HindsightUnavailableError as exc:
            rt.breaker.record_error(exc)
            return degraded("unavailable", started, self.observer, bank_id)
        except HindsightRequestError as exc:
            rt.breaker.record_success()
            return degraded("rejected", started, self.observer, bank_id, status=exc.status)
        except Exception:
            logger.warning("memory recall failed", exc_info=True)
            return degraded("error", started, self.observer, bank_id)
        finally:
            self.windows.in_flight -= 1
        self.windows.served()
        rt.breaker.record_success()
        recollection = recalled(
            memories, started, bank_id, formatter=self.formatter, max_tokens=self.max_tokens, observer=self.observer
        )
        rt.maybe_auto_replay()  # Hindsight answers: a spool left by an earlier outage or process can drain
        return recollection


def _timed(on_thread: list[float], *args: Any, **kwargs: Any) -> list[RecalledMemory]:
    """:func:`recall_blocking` on a recall thread, noting in ``on_thread`` when it started and ended there."""
    on_thread.append(time.perf_counter())
    try:
        return recall_blocking(*args, **kwargs)
    finally:
        on_thread.append(time.perf_counter())


def recall_blocking(
    api: HindsightApi,
    bank_id: str,
    query: str,
    *,
    reflect: bool,
    budget: str,
    max_tokens: int,
    bearer: str | None,
    timeout: float,
    deadline_at: float | None = None,
    candidate_tokens: int = 0,
) -> list[RecalledMemory]:
    """Runs on a recall thread: the memories (or, with ``reflect``, the one answer) Hindsight returns.

    ``deadline_at`` (``time.perf_counter()`` seconds): when the turn stops waiting; what is left of it when the
    request leaves is sent with a recall, so an overloaded server sheds it at once instead of serving it too late.
    ``candidate_tokens``: the re-ranking's candidates (:func:`ranked_recall`).
    """
    if reflect:
        text = api.reflect(bank_id, query, budget=budget, max_tokens=max_tokens, bearer=bearer, timeout=timeout)
        return [ReflectAnswer(text=text)] if text is not None else []
    started = time.monotonic()

    def left_ms() -> float | None:
        return None if deadline_at is None else (deadline_at - time.perf_counter()) * 1000

    memories = ranked_recall(
        api,
        bank_id,
        query,
        budget=budget,
        max_tokens=max_tokens,
        candidate_tokens=candidate_tokens,
        bearer=bearer,
        timeout=timeout,
        deadline_ms=left_ms(),
    )
    # Later statements of a relation said in other words (memory_adapter.currency), searched while at most half of
    # the deadline is spent; best effort: the first search's memories are the turn's either way.
    deadline = timeout - RECALL_MARGIN_S
    for follow_up in follow_up_queries(memories):
        left = deadline - (time.monotonic() - started)
        if left < deadline / 2:
            break
        try:
            more = api.recall(
                bank_id,
                follow_up,
                budget=budget,
                max_tokens=max_tokens,
                bearer=bearer,
                timeout=left,
                deadline_ms=left_ms(),
            )
        except (HindsightUnavailableError, HindsightRequestError):
            break
        memories = with_later(memories, more)
    return memories


def ranked_recall(
    api: HindsightApi,
    bank_id: str,
    query: str,
    *,
    budget: str,
    max_tokens: int,
    candidate_tokens: int,
    bearer: str | None,
    timeout: float | None = None,
    deadline_ms: float | None = None,
) -> list[RecalledMemory]:
    """Hindsight's memories for ``query`` in the adapter's order, within ``max_tokens`` of text: every recall that
    answers a user (the agent's turn, the memory tools' ``recall``) ranks with it, so they agree.

    ``candidate_tokens`` above ``max_tokens``: that many tokens of candidates are asked for, re-ranked
    (:func:`~memory_adapter.rerank.rerank`) and cut back to ``max_tokens``; otherwise Hindsight's own answer."""
    wide = candidate_tokens > max_tokens
    memories = api.recall(
        bank_id,
        query,
        budget=budget,
        max_tokens=candidate_tokens if wide else max_tokens,
        bearer=bearer,
        timeout=timeout,
        deadline_ms=deadline_ms,
    )
    return within_text_tokens(rerank(query, memories), max_tokens) if wide else memories


def within_text_tokens(memories: Sequence[RecalledMemory], max_tokens: int) -> list[RecalledMemory]:
    """The longest prefix of ``memories`` whose texts together fit ``max_tokens`` (estimated), applied after the
    adapter's re-ranking. Like Hindsight's ``max_tokens`` it counts the texts only; unlike Hindsight's fill, which
    also keeps a later memory that still fits, it stops at the first that does not (the order is the ranking)."""
    kept: list[RecalledMemory] = []
    used = 0
    for memory in memories:
        used += estimate_tokens(memory.text)
        if used > max_tokens and kept:
            break
        kept.append(memory)
    return kept


def recalled(
    memories: Sequence[RecalledMemory],
    started: float,
    bank_id: str,
    *,
    formatter: MemoryFormatter,
    max_tokens: int,
    observer: Observer,
) -> Recollection:
    """The turn's recollection of ``memories``, counted and logged."""
    # Hindsight's max_tokens counts the memories' text only; the block the model reads (delimiters, notice,
    # tags, dates) must stay within the budget too.
    # A memory a later statement superseded follows it, marked (memory_adapter.currency), before the budget cut.
    memories = fit_to_budget(current_first(memories), formatter, max_tokens)
    latency = (time.perf_counter() - started) * 1000
    text = formatter(memories) if memories else ""
    observer.latency(Metric.RECALL_LATENCY, latency)
    observer.count(Metric.RECALL_HITS, len(memories))
    observer.event(
        logging.INFO,
        "memory recalled",
        event="recall.ok",
        bank=short_hash(bank_id),
        hits=len(memories),
        latency_ms=round(latency, 1),
    )
    return Recollection(text, len(memories), False, None, latency, tuple(memories))


def degraded(
    reason: str, started: float, observer: Observer, bank_id: str | None = None, **fields: Any
) -> Recollection:
    """An empty, degraded recollection (the turn runs without memory), counted and logged."""
    latency = (time.perf_counter() - started) * 1000
    observer.count(Metric.DEGRADED_TURNS)
    level = logging.INFO if reason == "breaker_open" else logging.WARNING
    bank = short_hash(bank_id) if bank_id else None
    observer.event(
        level,
        "memory recall skipped",
        event="recall.degraded",
        reason=reason,
        bank=bank,
        latency_ms=round(latency, 1),
        **fields,
    )
    return Recollection("", 0, True, reason, latency)

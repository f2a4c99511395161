"""Background delivery of retains: never on the turn's path, never lost, never duplicated.

Each retain is handed, as the inputs of its :class:`RetainRecord`, to daemon threads that build the record (the
turn's thread only queues it) and belong to no event loop (a retain queued inside one ``asyncio.run`` call is still
delivered after that loop has ended). A thread sends it as a server-side async retain with its ``operation_id``;
transient failures are retried ``max_retries`` times with exponential backoff and full jitter (honouring
``Retry-After``), then the record goes to the spool. While the circuit breaker is open records go straight to the
spool. Definitive refusals (4xx) go to the spool's dead letters. :meth:`RetainDelivery.replay` re-delivers spooled
records; the ``operation_id`` (and the stable document id) make a re-delivery of something Hindsight already has a
no-op, so every turn ends up in the bank exactly once.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import queue
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from memory_adapter._hindsight_api import post_retain
from memory_adapter.breaker import CircuitBreaker
from memory_adapter.exceptions import HindsightRequestError, HindsightUnavailableError, RecordTooLargeError, SpoolError
from memory_adapter.observability import Metric, Observer, short_hash
from memory_adapter.policies import RetryPolicy
from memory_adapter.retains import ReplayResult, RetainHandle, RetainOutcome
from memory_adapter.spool import RetainRecord, Spool
from memory_adapter.transport import Transport

__all__ = ["RetainDelivery"]


class _Job:
    """One accepted retain: its record is built on first use (by a delivery thread, else by shutdown), exactly once,
    so a record without a request id keeps the one document id it drew."""

    __slots__ = ("_build", "_lock", "_on_built", "_record", "future")

    def __init__(
        self, build: Callable[[], RetainRecord], future: Future[RetainOutcome], *, on_built: Callable[[], None]
    ) -> None:
        self._build = build
        self._on_built = on_built
        self._record: RetainRecord | None = None
        self._lock = threading.Lock()
        self.future = future

    def record(self) -> RetainRecord:
        """The record (built now when nobody has yet; raises what the build raised)."""
        record = self._record
        if record is None:
            with self._lock:
                if self._record is None:
                    self._record = self._build()
                    self._on_built()
                record = self._record
        return record


_STOP = object()
_BREAKER_OPEN = "circuit breaker open"


class RetainDelivery:
    """Delivers :class:`RetainRecord` objects on daemon threads with retries, breaker, spool and replay.

    Args:
        transport: The HTTP transport.
        breaker: Shared with recalls, so a failing Hindsight is detected by whichever call sees it first.
        spool: Where undeliverable records go (``None``: they are dropped and logged).
        observer: Metrics and logs.
        retry: Retry policy.
        timeout: Seconds per delivery attempt.
        workers: Concurrent delivery threads.
        default_credential: Bearer used for records without their own credential (never written to the spool).
        on_short_circuit: Called when the open breaker stops a delivery (the adapter starts a probe).
        on_delivered: Called after each delivery (the adapter may start an automatic replay).
        prepare_bank: Called with the bank id and bearer before each attempt (the adapter applies the bank's mission,
            :class:`~memory_adapter.bank_missions.BankMissions`; it must not raise).
        auto_replay: Request a replay when something is spooled while the breaker is closed again (a retain that
            was spooled during an outage but written just after recovery would otherwise wait for the next event).
    """

    def __init__(
        self,
        *,
        transport: Transport,
        breaker: CircuitBreaker,
        spool: Spool | None,
        observer: Observer,
        retry: RetryPolicy,
        timeout: float,
        workers: int,
        default_credential: str | None,
        on_short_circuit: Callable[[], None] = lambda: None,
        on_delivered: Callable[[], None] = lambda: None,
        prepare_bank: Callable[[str, str | None], None] = lambda _bank, _bearer: None,
        auto_replay: bool = False,
        rng: random.Random | None = None,
    ) -> None:
        self._transport = transport
        self._breaker = breaker
        self._spool = spool
        self._obs = observer
        self._retry = retry
        self._timeout = timeout
        self._workers = workers
        self._default_credential = default_credential
        self._on_short_circuit = on_short_circuit
        self._on_delivered = on_delivered
        self._prepare_bank = prepare_bank
        self._rng = rng or random.Random()  # noqa: S311 (retry jitter, not cryptography)
        # SimpleQueue: a put is one C call, no Python-level lock or condition on the turn's thread.
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._jobs: dict[int, _Job] = {}
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._replay_lock = threading.Lock()
        self._replay_requested = threading.Event()
        self._auto_replay = auto_replay

    # -- submission -------------------------------------------------------------------------------------------

    def submit(self, build: Callable[[], RetainRecord]) -> RetainHandle:
        """Queue the retain that ``build()`` makes and return its handle. Never blocks, never raises.

        This runs on the turn's thread, so it only queues: a delivery thread calls ``build`` (the document id, the
        idempotency digest, the metadata) and counts the retain as queued. From here the retain is pending
        (:attr:`pending`, so ``/ping`` reports busy) and is delivered, spooled or, at exit, spooled by
        :meth:`shutdown`.
        """
        future: concurrent.futures.Future[RetainOutcome] = concurrent.futures.Future()
        # Running from the start: cancelling an awaiting caller (a wait_for timeout, a finished event loop) must
        # never cancel the delivery itself.
        future.set_running_or_notify_cancel()
        job = _Job(build, future, on_built=self._queued)
        with self._lock:
            self._jobs[id(job)] = job
            self._start_workers()
            self._queue.put(job)
        future.add_done_callback(lambda _f: self._forget(job))  # runs before any waiter of the handle wakes
        return RetainHandle(future, record=job.record)

    def _record_of(self, job: _Job) -> RetainRecord | None:
        """Build the job's record off the turn (counted as queued then); ``None``, resolved as dropped, if it fails."""
        try:
            record = job.record()
        except Exception:  # a bug or an unserialisable policy value: nothing to deliver or spool
            logging.getLogger("memory_adapter").exception("memory retain lost: its record could not be built")
            self._obs.count(Metric.RETAIN_FAILED)
            self._resolve(job, RetainOutcome.DROPPED)
            return None
        return record

    def _queued(self) -> None:
        self._obs.count(Metric.RETAIN_QUEUED)

    def _forget(self, job: _Job) -> None:
        with self._lock:
            self._jobs.pop(id(job), None)

    def _start_workers(self) -> None:
        if self._threads:
            return
        self._stop.clear()
        for n in range(self._workers):
            thread = threading.Thread(target=self._work, args=(self._queue,), name=f"memory-retain-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)

    @property
    def pending(self) -> list[concurrent.futures.Future[RetainOutcome]]:
        """Futures of retains not yet delivered, spooled or rejected."""
        with self._lock:
            return [job.future for job in self._jobs.values()]

    # -- worker -----------------------------------------------------------------------------------------------

    def _work(self, jobs: queue.SimpleQueue[Any]) -> None:
        while True:
            job = jobs.get()
            if job is _STOP:
                return
            if job.future.done():
                continue
            record = self._record_of(job)
            if record is None:
                continue
            try:
                outcome = self._deliver_with_retries(job, record)
            except Exception:  # defensive: a bug here must not kill the worker or lose the record
                logging.getLogger("memory_adapter").exception("memory retain worker failed")
                outcome = self._to_spool(record, "internal error")
            self._resolve(job, outcome)

    @staticmethod
    def _resolve(job: _Job, outcome: RetainOutcome) -> bool:
        """Set the outcome once (atomic inside the future); ``False`` when another thread already did."""
        try:
            job.future.set_result(outcome)
        except concurrent.futures.InvalidStateError:
            return False
        return True

    def _deliver_with_retries(self, job: _Job, record: RetainRecord) -> RetainOutcome:
        for retry in range(self._retry.max_retries + 1):
            if job.future.done() or self._stop.is_set():
                return RetainOutcome.SPOOLED if job.future.done() else self._to_spool(record, "adapter closing")
            if not self._breaker.allow():
                self._on_short_circuit()
                return self._to_spool(record, _BREAKER_OPEN)
            try:
                self._send(record)
            except HindsightRequestError as exc:
                return self._reject(record, exc)
            except HindsightUnavailableError as exc:
                record.last_error = str(exc)
                if retry == self._retry.max_retries:
                    break
                self._obs.count(Metric.RETAIN_RETRIED)
                if self._stop.wait(self._retry.delay(retry, exc.retry_after, self._rng)):
                    continue
            else:
                self._delivered(record)  # metrics and logs before the handle resolves
                if not self._resolve(job, RetainOutcome.DELIVERED):
                    self._unspool(record)  # spooled meanwhile by a shutdown: the spooled copy is redundant
                return RetainOutcome.DELIVERED
        return self._to_spool(record, record.last_error or "undeliverable")

    def _send(self, record: RetainRecord, credential: str | None = None) -> None:
        """One delivery attempt; updates the breaker; raises the mapped error."""
        record.attempts += 1
        bearer = credential or record.credential or self._default_credential
        self._prepare_bank(record.bank_id, bearer)
        try:
            post_retain(self._transport, record, bearer=bearer, timeout=self._timeout)
        except HindsightUnavailableError as exc:
            self._breaker.record_error(exc)
            raise
        except HindsightRequestError:
            self._breaker.record_success()  # the server is up; it refused this request
            raise
        self._breaker.record_success()

    def _delivered(self, record: RetainRecord) -> None:
        self._obs.count(Metric.RETAIN_DELIVERED)
        self._obs.event(
            logging.INFO,
            "memory retain delivered",
            event="retain.delivered",
            bank=short_hash(record.bank_id),
            attempts=record.attempts,
        )
        self._on_delivered()

    def _failed(self, record: RetainRecord, message: str, *, event: str, **fields: Any) -> None:
        """A retain that will not reach Hindsight from here: counted as failed, logged as an error with its bank."""
        self._obs.count(Metric.RETAIN_FAILED)
        self._obs.event(logging.ERROR, message, event=event, bank=short_hash(record.bank_id), **fields)

    def _reject(self, record: RetainRecord, exc: HindsightRequestError) -> RetainOutcome:
        self._failed(record, "memory retain rejected by Hindsight", event="retain.rejected", status=exc.status)
        if self._spool is not None:
            try:
                self._spool.dead_letter(record, f"HTTP {exc.status}")
            except SpoolError:
                logging.getLogger("memory_adapter").exception("memory spool: cannot store a dead letter")
        return RetainOutcome.REJECTED

    def _to_spool(self, record: RetainRecord, reason: str) -> RetainOutcome:
        record.last_error = reason
        if self._spool is None:
            self._failed(record, "memory retain lost: no spool", event="retain.dropped")
            return RetainOutcome.DROPPED
        try:
            self._spool.put(record)
        except RecordTooLargeError as exc:
            # Counted and logged on its own: the one loss a durable spool cannot prevent (docs/operating.md).
            message = "memory retain lost: too large for the spool"
            self._failed(record, message, event="retain.too_large", size=exc.size, limit=exc.limit)
            self._obs.count(Metric.RETAIN_TOO_LARGE)
            return RetainOutcome.DROPPED
        except SpoolError as exc:
            self._failed(record, "memory retain lost: spool write failed", event="retain.dropped", error=str(exc))
            return RetainOutcome.DROPPED
        self._obs.count(Metric.RETAIN_SPOOLED)
        if self._auto_replay and self._breaker.allow():
            self.request_replay()
        # While the breaker is open this is the expected path (its opening was logged once as a warning).
        self._obs.event(
            logging.INFO if reason == _BREAKER_OPEN else logging.WARNING,
            "memory retain spooled",
            event="retain.spooled",
            bank=short_hash(record.bank_id),
            reason=reason,
        )
        return RetainOutcome.SPOOLED

    def _unspool(self, record: RetainRecord) -> None:
        if self._spool is not None:
            with contextlib.suppress(SpoolError):
                self._spool.remove(record)

    # -- replay -----------------------------------------------------------------------------------------------

    def replay(
        self, limit: int | None = None, *, dead_letters: bool = False, credential: str | None = None, wait: bool = True
    ) -> ReplayResult | None:
        """Re-deliver spooled records, oldest first (blocking; run it off the event loop).

        Stops early when Hindsight fails again (the rest stays spooled). Refused records move to dead letters.

        Args:
            limit: Most records to replay (``None``: all).
            dead_letters: Replay the dead letters instead (e.g. after fixing what made Hindsight refuse them).
            credential: Bearer to use instead of each record's own (e.g. an operator credential when the users'
                tokens have expired).
            wait: When another replay is running, wait for it (``True``) or return ``None`` at once.
        """
        if self._spool is None:
            return ReplayResult(0, 0, 0)
        if not self._replay_lock.acquire(blocking=wait):
            return None
        try:
            return self._replay_locked(self._spool, limit, dead_letters, credential)
        finally:
            self._replay_lock.release()

    def request_replay(self) -> None:
        """Replay the spool in the background; never blocks. Requests made while a replay runs are not lost: the
        running replay makes another pass for them."""
        if self._spool is None:
            return
        self._replay_requested.set()
        if not self._replay_lock.acquire(blocking=False):
            return  # the running replay sees the request when its pass ends
        threading.Thread(target=self._replay_loop, name="memory-replay", daemon=True).start()

    def _replay_loop(self) -> None:
        """Runs with ``_replay_lock`` held (taken by :meth:`request_replay`); one pass per request."""
        assert self._spool is not None
        try:
            while self._replay_requested.is_set():
                self._replay_requested.clear()
                try:
                    self._replay_locked(self._spool, None, False, None)
                except Exception:
                    logging.getLogger("memory_adapter").exception("memory spool replay failed")
                    return
        finally:
            self._replay_lock.release()
        if self._replay_requested.is_set():  # requested between the last pass and the release
            self.request_replay()

    def _replay_locked(
        self, spool: Spool, limit: int | None, dead_letters: bool, credential: str | None
    ) -> ReplayResult:
        delivered = rejected = 0
        for record in spool.items(limit, dead=dead_letters):
            if not self._breaker.allow():
                self._on_short_circuit()
                break
            try:
                self._send(record, credential)
            except HindsightUnavailableError:
                break
            except HindsightRequestError as exc:
                rejected += 1
                if not dead_letters:
                    self._reject(record, exc)
                continue
            spool.remove(record)
            delivered += 1
            self._obs.count(Metric.RETAIN_REPLAYED)
        remaining = spool.count(dead=dead_letters)
        if delivered or rejected:
            self._obs.event(
                logging.WARNING,
                "memory spool replayed",
                event="spool.replayed",
                delivered=delivered,
                rejected=rejected,
                remaining=remaining,
            )
        return ReplayResult(delivered, rejected, remaining)

    def spool_count(self) -> int:
        """Records waiting in the spool (0 without a spool or when it cannot be read)."""
        if self._spool is None:
            return 0
        try:
            return self._spool.count()
        except SpoolError:
            return 0

    # -- shutdown ---------------------------------------------------------------------------------------------

    def shutdown(self, timeout: float) -> int:
        """Wait up to ``timeout`` s for pending retains, spool the rest, stop the workers; return how many spooled.

        The adapter can be used again afterwards: workers restart on the next retain.
        """
        pending = self.pending
        if pending:
            concurrent.futures.wait(pending, timeout=timeout)
        self._stop.set()
        spooled = 0
        with self._lock:
            leftovers = [job for job in self._jobs.values() if not job.future.done()]
        for job in leftovers:
            record = self._record_of(job)
            if record is None:
                continue
            outcome = self._to_spool(record, "adapter closing")
            if self._resolve(job, outcome):
                spooled += outcome is RetainOutcome.SPOOLED
        with self._lock:
            threads, self._threads = self._threads, []
            old_queue, self._queue = self._queue, queue.SimpleQueue()
        for _ in threads:
            old_queue.put(_STOP)  # a thread stuck in a hung request reads its marker when the request times out
        deadline = time.monotonic() + 0.5
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return spooled

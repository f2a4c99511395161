"""What an adapter starts on first use, and stops on ``aclose``: the Hindsight API, the circuit breaker with its
health probe, background delivery with automatic replay, and the recall threads.

Private to :class:`~memory_adapter.adapter.HindsightRuntimeAdapter`.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import logging
import threading
import time
from typing import Final

from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.bank_missions import BankMissions
from memory_adapter.breaker import BreakerState, CircuitBreaker
from memory_adapter.config import HindsightAgentCoreConfig
from memory_adapter.delivery import RetainDelivery
from memory_adapter.exceptions import HindsightUnavailableError
from memory_adapter.missions import Missions
from memory_adapter.observability import Metric, Observer, logger
from memory_adapter.policies import RetryPolicy
from memory_adapter.spool import DirectorySpool, Spool
from memory_adapter.transport import HttpTransport, Transport

__all__ = ["RECALL_THREADS", "AdapterRuntime", "default_spool"]

_AUTO_REPLAY_INTERVAL_S: Final = 5.0
#: Recalls in flight at once per adapter (each on its own thread, with its own keep-alive connection).
RECALL_THREADS: Final = 8


def default_spool(settings: HindsightAgentCoreConfig) -> Spool:
    """The queue when one is configured (deployed; the local directory while it cannot be reached), else the local
    directory."""
    if settings.spool_queue_url:
        from memory_adapter.fallback_spool import FallbackSpool
        from memory_adapter.sqs_spool import SqsSpool  # standard library only; boto3 waits for the first send

        # While the queue cannot be reached, a turn waits on local disk rather than being dropped.
        return FallbackSpool(SqsSpool(settings.spool_queue_url), DirectorySpool(settings.spool_dir))
    return DirectorySpool(settings.spool_dir)


class AdapterRuntime:
    """Threads and connections of one adapter, from first use until :meth:`close`.

    Args:
        settings: The adapter's resolved settings.
        spool: Where undelivered retains wait.
        observer: The adapter's metrics and logs.
        auto_replay: Replay the spool in the background once Hindsight answers again.
        transport: A custom transport (tests), else HTTP to ``settings.hindsight_api_url``.
    """

    def __init__(
        self,
        settings: HindsightAgentCoreConfig,
        *,
        spool: Spool,
        observer: Observer,
        auto_replay: bool,
        transport: Transport | None,
    ) -> None:
        s = settings
        self._settings = s
        self._observer = observer
        self._auto_replay = auto_replay
        self._closed = False
        self._last_auto_replay = float("-inf")
        # Held from handing a probe job to the pool until that job ends: at most one job queued or running.
        self._probe_gate = threading.Lock()
        transport = transport or HttpTransport(s.hindsight_api_url)
        self.api = HindsightApi(transport, timeout=s.timeout)
        self.breaker = CircuitBreaker(
            failure_threshold=s.breaker_failure_threshold,
            reset_timeout=s.breaker_reset_timeout,
            slow_threshold=s.breaker_slow_threshold,
            slow_window=s.breaker_slow_window,
            slow_ratio=s.breaker_slow_ratio,
            slow_reset_timeout=s.breaker_slow_reset_timeout,
            on_change=self._breaker_changed,
        )
        self.delivery = RetainDelivery(
            transport=transport,
            breaker=self.breaker,
            spool=spool,
            observer=observer,
            retry=RetryPolicy(s.max_retries, s.retry_base_delay, s.retry_max_delay),
            timeout=s.timeout,
            workers=s.retain_workers,
            default_credential=s.api_key,
            on_short_circuit=self.maybe_probe,
            on_delivered=self.maybe_auto_replay,
            prepare_bank=BankMissions(api=self.api, missions=Missions.from_json(s.missions), observer=observer).prepare,
            auto_replay=auto_replay,
        )
        self.recall_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=RECALL_THREADS, thread_name_prefix="memory-recall"
        )
        delivery, exit_flush_timeout = self.delivery, s.exit_flush_timeout

        def exit_hook() -> None:
            # Holds the delivery, not the adapter: retains queued by an adapter nobody references any more are
            # still flushed or spooled when the interpreter exits.
            delivery.shutdown(exit_flush_timeout)

        self._exit_hook = exit_hook
        atexit.register(exit_hook)

    def close(self, timeout: float) -> None:
        """Blocking: wait up to ``timeout`` s for pending retains, spool the rest, release threads and connections."""
        self._closed = True
        self.delivery.shutdown(timeout)
        atexit.unregister(self._exit_hook)
        self.recall_pool.shutdown(wait=False, cancel_futures=True)
        self.api.transport.close()

    # ------------------------------------------------------------------ probe

    def probe_blocking(self) -> bool:
        """GET /health: any answer below 500 means Hindsight is back (closes the breaker)."""
        try:
            up = self.api.healthy(timeout=self._settings.recall_timeout)
        except HindsightUnavailableError as exc:
            self.breaker.record_error(exc)
            return False
        if not up:
            self.breaker.record_failure()
            return False
        self.breaker.record_success()
        return True

    def maybe_probe(self) -> None:
        """Called on the turn path while the breaker is open: two reads, and at most one job handed to the pool.

        Claiming the probe (a lock and the half-open transition, whose callbacks emit a metric and a log line) and
        the probe itself run in :meth:`_probe_job` on a recall thread, so no turn pays for them.
        """
        if self._closed or not self.breaker.probe_due() or not self._probe_gate.acquire(blocking=False):
            return
        try:
            self.recall_pool.submit(self._probe_job)
        except RuntimeError:  # pool shut down by close: no probe, the breaker stays open
            self._probe_gate.release()

    def _probe_job(self) -> None:
        """Runs on a recall thread: claim the probe (only one caller wins) and probe, unless the adapter closed."""
        try:
            if not self._closed and self.breaker.begin_probe():
                try:
                    self.probe_blocking()
                except Exception:  # an unexpected error must not leave the breaker half-open for good
                    logger.warning("memory probe failed", exc_info=True)
                    self.breaker.record_failure()
        finally:
            self._probe_gate.release()

    def _breaker_changed(self, old: BreakerState, new: BreakerState) -> None:
        self._observer.count(Metric.BREAKER_STATE, new.metric_value)
        if new is BreakerState.OPEN and old is BreakerState.CLOSED:
            self._observer.count(Metric.BREAKER_OPENED)
        level = logging.WARNING if new is BreakerState.OPEN else logging.INFO
        self._observer.event(level, f"memory circuit breaker {new}", event="breaker.state", state=str(new))
        if new is BreakerState.CLOSED:
            self.maybe_auto_replay(force=True)

    # ------------------------------------------------------------------ replay

    def maybe_auto_replay(self, force: bool = False) -> None:
        """Start a background replay when the spool holds something (checked at most every few seconds)."""
        if self._closed or not self._auto_replay:
            return
        now = time.monotonic()
        if not force and now - self._last_auto_replay < _AUTO_REPLAY_INTERVAL_S:
            return
        self._last_auto_replay = now
        if self.delivery.spool_count() == 0:
            return
        self.delivery.request_replay()

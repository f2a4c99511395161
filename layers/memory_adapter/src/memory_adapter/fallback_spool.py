"""A queue spool that keeps what it cannot send on local disk, and sends it once the queue answers again.

Deployed, a turn Hindsight could not take goes to SQS (:class:`~memory_adapter.sqs_spool.SqsSpool`), which outlives
the microVM. If SQS itself cannot be reached for longer than the send budget (a VPC endpoint or DNS failure, an
expired role session), dropping the turn would lose an accepted memory. :class:`FallbackSpool` writes it to a
:class:`~memory_adapter.spool.DirectorySpool` instead, and a background thread moves the local backlog to the queue
as soon as a send succeeds. The microVM's disk lives only as long as the session, so whoever serves ``/ping``
follows :meth:`FallbackSpool.on_backlog` and stays ``HealthyBusy`` while anything is held locally (AgentCore does
not reclaim a busy session before its maximum lifetime).

Only :meth:`put` falls back; the consumer side (:meth:`items`, :meth:`remove`, :meth:`count`) is the queue's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from memory_adapter.exceptions import RecordTooLargeError, SpoolError
from memory_adapter.observability import short_hash
from memory_adapter.spool import RetainRecord, Spool

__all__ = ["FallbackSpool"]

_log = logging.getLogger("memory_adapter")
#: Records moved to the queue per pass of the drain thread.
_DRAIN_BATCH = 10


class FallbackSpool:
    """:class:`Spool` on ``primary`` (the queue), with ``fallback`` (local disk) for records it cannot take.

    Args:
        primary: The durable spool (an :class:`~memory_adapter.sqs_spool.SqsSpool`).
        fallback: Where a record goes while ``primary`` fails (a :class:`~memory_adapter.spool.DirectorySpool`).
        retry_s: First wait of the drain thread after a failed move, doubled up to ``max_retry_s``.
        max_retry_s: Longest wait between two attempts to move the backlog.
    """

    def __init__(
        self,
        primary: Spool,
        fallback: Spool,
        *,
        retry_s: float = 2.0,
        max_retry_s: float = 60.0,
    ) -> None:
        self.primary = primary
        self.fallback = fallback
        self._retry_s = retry_s
        self._max_retry_s = max_retry_s
        self._lock = threading.Lock()
        self._notify_lock = threading.Lock()
        self._wake = threading.Event()
        self._drainer: threading.Thread | None = None
        self._listeners: list[Callable[[bool], None]] = []
        self._holding = False

    def __repr__(self) -> str:
        return f"FallbackSpool({self.primary!r}, fallback={self.fallback!r})"

    # -- who needs to know that records wait on local disk

    def on_backlog(self, listener: Callable[[bool], None]) -> None:
        """Call ``listener(True)`` when records start waiting on local disk, ``listener(False)`` once all are sent.

        Records an earlier process of this host left behind count too (checked now, and moved in the background).
        """
        self._listeners.append(listener)
        if self._count_local() > 0:
            self._backlog_grew()
        self._notify()

    @property
    def holding(self) -> bool:
        """Whether records wait on local disk for the queue."""
        return self._holding

    # -- Spool

    def put(self, record: RetainRecord) -> None:
        """Send ``record`` to the queue, or keep it on local disk while the queue cannot take it.

        Raises :class:`RecordTooLargeError` (no spool can hold it) or :class:`SpoolError` when the local disk fails
        too: then the delivery reports the loss.
        """
        try:
            self.primary.put(record)
        except RecordTooLargeError:
            raise
        except SpoolError as exc:
            self.fallback.put(record)
            _log.warning(
                "retain queue unreachable; the turn is kept on local disk and sent when the queue answers",
                extra={"event": "retain.spooled_locally", "bank": short_hash(record.bank_id), "error": str(exc)},
            )
            self._backlog_grew()
            return
        if self._holding:
            self._wake.set()  # the queue answers again: move the backlog now rather than after the backoff

    def items(self, limit: int | None = None, *, dead: bool = False) -> list[RetainRecord]:
        return self.primary.items(limit, dead=dead)

    def remove(self, record: RetainRecord) -> None:
        self.primary.remove(record)

    def dead_letter(self, record: RetainRecord, reason: str) -> None:
        """The queue's dead letter; on local disk (``dead/``, for an operator) when the queue cannot be reached."""
        try:
            self.primary.dead_letter(record, reason)
        except SpoolError:
            self.fallback.dead_letter(record, reason)

    def count(self, *, dead: bool = False) -> int:
        return self.primary.count(dead=dead)

    # -- the backlog

    def drain(self) -> int:
        """Move what waits on local disk to the queue now (blocking); the number of records that remain."""
        while True:
            batch = self.fallback.items(_DRAIN_BATCH)
            if not batch:
                return 0
            for record in batch:
                try:
                    self.primary.put(record)
                except RecordTooLargeError as exc:  # pragma: no cover - it went local only after a different failure
                    self.fallback.dead_letter(record, f"too large for the queue ({exc.size} bytes)")
                    continue
                except SpoolError:
                    return self._count_local()
                self.fallback.remove(record)
                _log.info(
                    "retain kept on local disk sent to the queue",
                    extra={"event": "retain.local_sent", "bank": short_hash(record.bank_id)},
                )

    def _count_local(self) -> int:
        try:
            return self.fallback.count()
        except SpoolError:
            return 0

    def _backlog_grew(self) -> None:
        with self._lock:
            changed = not self._holding
            self._holding = True
            if self._drainer is None or not self._drainer.is_alive():
                self._drainer = threading.Thread(target=self._drain_loop, name="memory-spool-drain", daemon=True)
                self._drainer.start()
        if changed:
            self._notify()

    def _drain_loop(self) -> None:
        wait = self._retry_s
        while True:
            try:
                left = self.drain()
            except SpoolError:  # the local disk failed: what it holds cannot be read; keep trying
                left = self._count_local() or 1
            if left == 0:
                with self._lock:
                    # A put may have added a record after the last listing: look once more under the lock.
                    if self._count_local() == 0:
                        self._holding = False
                        self._drainer = None
                        break
                continue
            self._wake.wait(wait)
            self._wake.clear()
            wait = min(wait * 2, self._max_retry_s)
        _log.info("retain backlog on local disk sent to the queue", extra={"event": "retain.local_drained"})
        self._notify()

    def _notify(self) -> None:
        # Listeners get the state as it is when they are called, so notifications racing each other still leave
        # every listener with the latest one.
        with self._notify_lock:
            holding = self._holding
            for listener in list(self._listeners):
                try:
                    listener(holding)
                except Exception:  # a listener must not stop the drain
                    _log.exception("memory spool: backlog listener failed")

    def wait_drained(self, timeout_s: float) -> bool:
        """Block until nothing waits on local disk (True) or ``timeout_s`` passes (False)."""
        deadline = time.monotonic() + timeout_s
        while self._holding:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

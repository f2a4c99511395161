"""``/ping`` answers ``HealthyBusy`` while a turn's retain is still on its way to Hindsight.

AgentCore reclaims an idle session (``Healthy`` with nothing in flight); a retain handed to the memory adapter's
background delivery must not be cut off with it. Each retain therefore becomes an AgentCore async task
(``app.add_async_task``), completed once the turn is safe: delivered, or durably spooled (deployed: queued in SQS).
The handle always resolves (the adapter's retries and the spool's calls are bounded), so a session is never held for
good; a retain still on its way after ``wait_s`` is logged and stays busy. The answer never waits for any of this.
A turn the queue could not take waits on the microVM's disk (:class:`~memory_adapter.fallback_spool.FallbackSpool`):
:meth:`RetainWatcher.attach` (with the spool) keeps the session busy until it is sent.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from memory_adapter.retains import RetainHandle

__all__ = ["AsyncTaskTracker", "RetainWatcher"]

_log = logging.getLogger("memory_adapter.agentcore")


class AsyncTaskTracker(Protocol):
    """What the watcher needs from ``bedrock_agentcore.runtime.BedrockAgentCoreApp``."""

    def add_async_task(self, name: str, metadata: dict[str, Any] | None = None) -> int: ...

    def complete_async_task(self, task_id: int) -> bool: ...


class RetainWatcher:
    """Keeps the app ``HealthyBusy`` for each watched retain. Call :meth:`watch` on the loop the turn runs on."""

    def __init__(self, *, wait_s: float, app: AsyncTaskTracker | None = None, logger: Any = None) -> None:
        self.wait_s = wait_s
        self.app = app
        self._logger = logger or _log
        self._watchers: set[asyncio.Future[None]] = set()
        self._backlog_task: int | None = None
        self._backlog_lock = threading.Lock()

    def attach(self, app: AsyncTaskTracker, *, spool: object = None) -> None:
        """Report through ``app``'s ``/ping`` from now on: pending retains, and ``spool``'s local backlog."""
        self.app = app
        self.follow_backlog(spool)

    def follow_backlog(self, spool: object) -> None:
        """Also busy while ``spool`` holds turns on local disk (they die with the microVM); no-op for other spools."""
        register: Callable[[Callable[[bool], None]], None] | None = getattr(spool, "on_backlog", None)
        if register is not None:
            register(self._backlog_changed)

    def _backlog_changed(self, holding: bool) -> None:
        # Called from the spool's drain thread; the app's task registry is thread-safe.
        app = self.app
        if app is None:
            return
        with self._backlog_lock:
            if holding and self._backlog_task is None:
                self._backlog_task = app.add_async_task("memory_local_backlog")
                self._logger.warning("retains wait on local disk for the retain queue; /ping stays HealthyBusy")
            elif not holding and self._backlog_task is not None:
                app.complete_async_task(self._backlog_task)
                self._backlog_task = None

    def watch(self, handle: RetainHandle) -> None:
        """Busy until ``handle`` resolves (logged if it takes longer than ``wait_s``); a no-op without an app."""
        app = self.app
        if app is None:
            return
        task_id = app.add_async_task("memory_retain")

        async def delivered() -> None:
            await handle  # cancelling this wait never cancels the delivery

        async def watch() -> None:
            try:
                try:
                    await asyncio.wait_for(delivered(), self.wait_s)
                except TimeoutError:
                    self._logger.warning(
                        "retain not yet delivered or spooled; /ping stays HealthyBusy until it is",
                        extra={"waited_s": self.wait_s},
                    )
                    await delivered()
            except Exception:
                self._logger.exception("retain delivery failed")
            finally:
                app.complete_async_task(task_id)

        watcher = asyncio.ensure_future(watch())
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)

"""Start/stop plumbing shared by the localdev servers: context-manager support, background and foreground serving.

Standard library only (``localdev.faults`` and ``localdev.llm_stub`` stay dependency-free).
"""

from __future__ import annotations

import signal
import threading
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import Generic, Self, TypeVar

_Server = TypeVar("_Server", bound=ThreadingHTTPServer)


class Lifecycle:
    """``start()``/``stop()`` plus ``with``: entering starts, leaving always stops (subclasses override both)."""

    def start(self) -> Self:
        return self

    def stop(self) -> None:
        """Release what ``start()`` (or the constructor) took."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class BackgroundHTTPServer(Lifecycle, Generic[_Server]):
    """An HTTP server bound at construction and served from a daemon thread.

    ``start()`` is idempotent; ``stop()`` shuts the loop down (waiting up to ``join_timeout_s`` seconds for the
    thread) and releases the port, whether or not it was started.
    """

    def __init__(self, server: _Server, *, name: str, join_timeout_s: float = 5.0) -> None:
        self.server = server
        self._name = name
        self._join_timeout_s = join_timeout_s
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port the server is bound to (the OS picked it when asked for 0)."""
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        """``http://<host>:<port>``, with no trailing slash."""
        host = self.server.server_address[0]
        return f"http://{host if isinstance(host, str) else host.decode()}:{self.port}"

    @property
    def serving(self) -> bool:
        """True between ``start()`` and ``stop()``."""
        return self._thread is not None

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(target=self.server.serve_forever, name=self._name, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join(timeout=self._join_timeout_s)
            self._thread = None
        self.server.server_close()


def serve_in_foreground(server: ThreadingHTTPServer) -> None:
    """Serve until SIGTERM or Ctrl-C, then release the port: the ``serve`` commands of the CLIs.

    ``shutdown()`` blocks until the serving loop ends, so SIGTERM calls it from another thread.
    """
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()

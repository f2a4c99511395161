"""Servers that fail in the three ways a remote Hindsight fails, for resilience tests and benchmarks.

- :class:`HungServer` accepts TCP connections and never answers (a wedged server, a black-holed
  load balancer): only the caller's own deadline ends the wait.
- :class:`RefusedPort` reserves a port with nothing listening: connections are refused at once.
- :class:`FailingServer` answers HTTP 503 to every request (an overloaded or unhealthy upstream).

Each has ``.url`` (``http://127.0.0.1:<port>``), ``start()``/``stop()`` and context-manager support.
Standard library only.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

from localdev._serving import BackgroundHTTPServer, Lifecycle

__all__ = ["FailingServer", "HungServer", "RefusedPort"]


class _ReservedPort(Lifecycle):
    """A TCP port bound on ``host`` (the OS picks it), so nothing else takes it, and its URL."""

    def __init__(self, host: str) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind((host, 0))
        self.host = host
        self.port = int(self._socket.getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        self._socket.close()


class HungServer(_ReservedPort):
    """A TCP listener that accepts every connection, reads nothing and never answers."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__(host)
        self._socket.listen(128)
        self._held: list[socket.socket] = []
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(target=self._accept_forever, name="hung-server", daemon=True)
            self._thread.start()
        return self

    def _accept_forever(self) -> None:
        self._socket.settimeout(0.2)
        while not self._stopped.is_set():
            try:
                conn, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._held.append(conn)  # keep it open: the client waits for a reply that never comes

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None
        for conn in self._held:
            conn.close()
        self._held.clear()
        super().stop()


class RefusedPort(_ReservedPort):
    """A port that refuses connections: bound (so nothing else takes it) but never listening."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__(host)


class _FailingHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _FailingHTTPServer

    def log_message(self, format: str, *args: object) -> None:
        """Silent: tests count requests through ``FailingServer.request_count``."""

    def _fail(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.server.count()
        body = json.dumps({"detail": "service unavailable (local fault server)"}).encode()
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _fail


class _FailingHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], status: int) -> None:
        super().__init__(address, _FailingHandler)
        self.status = status
        self.requests = 0
        self._lock = threading.Lock()

    def count(self) -> None:
        with self._lock:
            self.requests += 1


class FailingServer(BackgroundHTTPServer[_FailingHTTPServer]):
    """An HTTP server answering every request with ``status`` (503 by default)."""

    def __init__(self, host: str = "127.0.0.1", status: int = 503) -> None:
        super().__init__(_FailingHTTPServer((host, 0), status), name="failing-server", join_timeout_s=2)

    @property
    def request_count(self) -> int:
        return self.server.requests

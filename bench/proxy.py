"""A TCP proxy in front of Hindsight that can take the service down and bring it back on the same port.

Why: the outage benchmark needs Hindsight to vanish for exactly 30 seconds and return at the same URL, without the
~15 s restart of the real server blurring the window. While down, the listener is closed and every open connection
is cut, so clients see what they see when a server process dies: connection refused.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from types import TracebackType
from typing import Self

__all__ = ["OutageProxy"]

_CHUNK = 65536


class OutageProxy:
    """Forwards ``127.0.0.1:<port>`` to ``upstream_host:upstream_port``; :meth:`down` / :meth:`up` toggle it."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = int(probe.getsockname()[1])
        probe.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def is_up(self) -> bool:
        return self._listener is not None

    def up(self) -> None:
        """Listen again on the same port."""
        if self._listener is not None:
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self._listener = listener
        self._thread = threading.Thread(target=self._accept, args=(listener,), name="outage-proxy", daemon=True)
        self._thread.start()

    def down(self) -> None:
        """Stop listening (new connections are refused) and cut every open connection."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None
        with self._lock:
            conns, self._conns = self._conns, set()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self, listener: socket.socket) -> None:
        listener.settimeout(0.1)
        while self._listener is listener:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._upstream, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        try:
            while True:
                readable, _, _ = select.select([a, b], [], [], 1.0)
                for sock in readable:
                    data = sock.recv(_CHUNK)
                    if not data:
                        return
                    peers[sock].sendall(data)
        except (OSError, ValueError):
            return
        finally:
            with self._lock:
                self._conns.discard(a)
                self._conns.discard(b)
            for sock in (a, b):
                with contextlib.suppress(OSError):
                    sock.close()

    def __enter__(self) -> Self:
        self.up()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.down()

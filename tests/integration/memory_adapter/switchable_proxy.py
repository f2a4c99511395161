"""A TCP proxy in front of the real Hindsight that can fail the three ways a server fails, and recover, on one URL.

The fault fixtures (``refused_url``, ``hung_url``, ``failing_url``) are separate URLs; recovering *the same adapter*
(breaker probe, automatic replay) needs one URL whose behaviour changes. Modes: ``up`` (forward), ``refused``
(connections are cut at once), ``hung`` (accepted, never answered), ``failing`` (HTTP 503). Switching modes cuts
every open connection, as a restarting server would.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import urllib.parse
from types import TracebackType
from typing import Self

_FAILING = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


class SwitchableProxy:
    """Forwards ``http://127.0.0.1:<port>`` to ``upstream`` while ``mode == "up"``."""

    def __init__(self, upstream: str) -> None:
        parts = urllib.parse.urlsplit(upstream)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._mode = "up"
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        self._cut()
        self._listener.close()

    def set_mode(self, mode: str) -> None:
        """Switch to ``up``, ``refused``, ``hung`` or ``failing``; open connections are cut."""
        assert mode in ("up", "refused", "hung", "failing")
        with self._lock:
            self._mode = mode
        self._cut()

    def _cut(self) -> None:
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                continue
            with self._lock:
                mode = self._mode
            if mode == "refused":
                client.close()
            elif mode == "hung":
                self._track(client)
            else:
                self._track(client)
                threading.Thread(target=self._serve, args=(client, mode), daemon=True).start()

    def _serve(self, client: socket.socket, mode: str) -> None:
        if mode == "failing":
            with contextlib.suppress(OSError):
                client.recv(65536)
                client.sendall(_FAILING)
            client.close()
            return
        try:
            upstream = socket.create_connection(self._upstream, timeout=5)
        except OSError:
            client.close()
            return
        self._track(upstream)
        pair = {client: upstream, upstream: client}
        try:
            while not self._stop.is_set():
                readable, _, _ = select.select(list(pair), [], [], 0.2)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    pair[sock].sendall(data)
        except (OSError, ValueError):
            return
        finally:
            client.close()
            upstream.close()

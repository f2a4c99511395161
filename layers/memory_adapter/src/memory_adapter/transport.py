"""The HTTP transport under :mod:`memory_adapter._hindsight_api` (which owns the routes, bodies and status mapping).

Why not ``hindsight_client`` here: importing it costs ~1 s (it builds ~200 pydantic models) and its aiohttp session
is bound to the event loop that first used it, which breaks code that calls ``asyncio.run`` per turn. This transport
uses the standard library's ``http.client`` (~30 ms to import) with one keep-alive connection per thread, sends
exactly the JSON ``hindsight_client`` 1.1.0 sends for these endpoints, and is called from the adapter's own worker
threads, so it belongs to no event loop. ``hindsight_client``'s models are the schema the wire is held to, in a
test (``tests/integration/memory_adapter/test_wire_schema.py``).

A request that got no HTTP answer (connect/read failure, timeout, untrusted certificate) raises
:class:`HindsightUnavailableError`; what an answer's status means is :func:`memory_adapter._hindsight_api.checked`'s.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import urllib.parse
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from memory_adapter.constants import CA_BUNDLE_ENV
from memory_adapter.exceptions import ConfigurationError, HindsightUnavailableError

if TYPE_CHECKING:
    import ssl

__all__ = ["HttpRequest", "HttpResponse", "HttpTransport", "Transport"]

_USER_AGENT: Final = "memory-adapter/0.1 (hindsight-agentcore compatible)"


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One JSON request to Hindsight, as every :class:`Transport` takes it (one value, as httpx's ``Request``):
    method, path (below the base URL), JSON body, the bearer credential, the timeout in seconds and extra headers."""

    method: str
    path: str
    _: KW_ONLY
    body: Any = None
    bearer: str | None = field(default=None, repr=False)
    timeout: float
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """A parsed response: status, JSON body (``None`` when empty or not JSON), ``Retry-After`` seconds, and the bytes
    as they came (what a file download reads)."""

    status: int
    body: Any
    retry_after: float | None = None
    content: bytes = field(default=b"", repr=False)


class Transport(Protocol):
    """Blocking JSON-over-HTTP calls to Hindsight. Called from worker threads, never from an event loop."""

    def send(self, request: HttpRequest) -> HttpResponse:
        """Send one request; raise :class:`HindsightUnavailableError` when no HTTP response arrived in time."""
        ...

    def close(self) -> None:
        """Close pooled connections."""
        ...


class HttpTransport:
    """``http.client`` with one keep-alive connection per calling thread.

    Args:
        base_url: ``http://host:port[/prefix]`` or ``https://...``.
    """

    def __init__(self, base_url: str) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(f"invalid Hindsight URL: {base_url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")
        self._host_header = parts.netloc.rpartition("@")[2]
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: set[http.client.HTTPConnection] = set()
        self._context: ssl.SSLContext | None = None

    def _connection(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection (``reused`` tells whether it carried a request before)."""
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
                return conn, True
            with self._lock:
                self._connections.add(conn)  # closed by close() or a drop: http.client reconnects on use
            return conn, False
        if self._https:
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=self._tls())
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        self._local.conn = conn
        with self._lock:
            self._connections.add(conn)
        return conn, False

    def _tls(self) -> ssl.SSLContext:
        """The client context (default trust store plus ``HINDSIGHT_CA_BUNDLE``), built once per transport."""
        with self._lock:
            if self._context is None:
                from memory_adapter.tls import ssl_context

                self._context = ssl_context()
            return self._context

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._lock:
            self._connections.discard(conn)

    def send(self, request: HttpRequest) -> HttpResponse:
        """Send one request. A keep-alive connection the server closed meanwhile is re-opened once, transparently."""
        timeout = request.timeout
        payload = None if request.body is None else json.dumps(request.body, ensure_ascii=False).encode("utf-8")
        sent = {**request.headers, "Host": self._host_header, "Accept": "application/json", "User-Agent": _USER_AGENT}
        if payload is not None:
            sent["Content-Type"] = "application/json"
        if request.bearer:
            sent["Authorization"] = f"Bearer {request.bearer}"
        for _ in range(2):
            conn, reused = self._connection(timeout)
            try:
                conn.request(request.method, self._prefix + request.path, body=payload, headers=sent)
                response = conn.getresponse()
                raw = response.read()
            except TimeoutError as exc:
                self._drop(conn)
                raise HindsightUnavailableError(f"Hindsight did not answer within {timeout:g} s") from exc
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                self._drop(conn)
                if reused:
                    continue  # stale keep-alive connection: one fresh attempt
                raise HindsightUnavailableError(f"Hindsight closed the connection: {type(exc).__name__}") from exc
            except (OSError, http.client.HTTPException) as exc:
                self._drop(conn)
                if getattr(exc, "verify_message", None):  # ssl.SSLCertVerificationError
                    raise HindsightUnavailableError(
                        f"Hindsight's TLS certificate is not trusted ({exc.verify_message}): set {CA_BUNDLE_ENV} "  # type: ignore[union-attr]
                        "to its CA's PEM (cdk.json hindsight.ca_bundle)"
                    ) from exc
                raise HindsightUnavailableError(f"cannot reach Hindsight: {type(exc).__name__}: {exc}") from exc
            if response.will_close:
                self._drop(conn)
            retry_after = _retry_after(response.getheader("Retry-After"))
            return HttpResponse(response.status, _parse_json(raw), retry_after, content=raw)
        raise HindsightUnavailableError("Hindsight closed the connection twice")  # pragma: no cover

    def close(self) -> None:
        """Close every pooled connection (threads open new ones on their next request)."""
        with self._lock:
            connections, self._connections = self._connections, set()
        for conn in connections:
            with contextlib.suppress(Exception):
                conn.close()


def _parse_json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _retry_after(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        return None
    return seconds if 0 <= seconds < 3600 else None

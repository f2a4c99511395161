"""An LLM with a real model's latency: a proxy in front of the LLM stand-in that holds every chat completion.

Deployed, Hindsight's worker waits seconds on Bedrock for each fact extraction and spends little CPU meanwhile, so
its throughput is bounded by how many retains it runs at once (``HINDSIGHT_API_WORKER_MAX_SLOTS``), not by its
CPU. The stand-in answers in milliseconds; this proxy adds ``delay_s`` to each ``/chat/completions`` call (and
nothing to embeddings) so the write path can be measured in that regime.
"""

from __future__ import annotations

import http.client
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from localdev._serving import BackgroundHTTPServer

__all__ = ["SlowLLM"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    upstream: urllib.parse.SplitResult
    delay_s: float


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if self.path.endswith("/chat/completions"):
            time.sleep(self.server.delay_s)
        upstream = self.server.upstream
        conn = http.client.HTTPConnection(upstream.hostname or "127.0.0.1", upstream.port or 80, timeout=120)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
            conn.request("POST", upstream.path.rstrip("/") + self.path.removeprefix("/v1"), body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
        self.send_response(response.status)
        self.send_header("Content-Type", response.getheader("Content-Type") or "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class SlowLLM(BackgroundHTTPServer[_Server]):
    """``with SlowLLM(upstream, delay_s=1.5) as llm: ... llm.base_url`` (an OpenAI-compatible ``/v1`` base URL)."""

    def __init__(self, upstream_base_url: str, *, delay_s: float) -> None:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.upstream = urllib.parse.urlsplit(upstream_base_url)
        server.delay_s = delay_s
        super().__init__(server, name="slow-llm")

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

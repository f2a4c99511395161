"""A deterministic OpenAI-compatible stand-in for Hindsight's LLM (and, optionally, its embeddings).

Hindsight calls an LLM to extract facts on retain, to consolidate facts into observations, and to
drive the reflect agent. Tests must be able to assert exactly what gets recalled, so this server
answers every request the same way every time, derived only from what it was sent:

- **fact extraction** (a user message ending with ``Content:\n<text>``): what a real extractor keeps, the
  *user's* statements, one ``world`` fact each, with entities, speakers and relative dates resolved and the bank's
  retain mission honoured (:mod:`localdev.stub_extraction` says exactly how);
- **consolidation** (a schema with ``creates``): ``{"creates": [], "updates": [], "deletes": []}``, so
  recall returns exactly the extracted facts;
- **reflect** (tool calls): a retrieval tool first (``recall``, or whatever ``tool_choice`` forces),
  then ``done`` carrying an answer that quotes the memories the tools returned;
- any other structured request: the smallest instance of the JSON schema it was given; plain text
  requests (the start-up ``Say 'ok'`` check included) get ``ok``.

``/v1/embeddings`` serves *hashed* embeddings (bag of hashed words, L2-normalised): fast and
deterministic but blind to paraphrases, for unit-level use only. The real local Hindsight uses
all-MiniLM-L6-v2 instead (see ``localdev.hindsight``). ``/rerank`` answers Bedrock's Rerank API
(``localdev.rerank_stub``), for the deployed reranker's path.

This module is the server; what it answers is :mod:`localdev.stub_answers` (and fact extraction
:mod:`localdev.stub_extraction`). Standard library only, so it runs in any interpreter: in a thread
(``LLMStub().start()``) or as its own process (``python -m localdev.llm_stub --port 8999``).
"""

from __future__ import annotations

import argparse
import json
import threading
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from localdev._serving import BackgroundHTTPServer, serve_in_foreground
from localdev.rerank_stub import rerank_response
from localdev.stub_answers import chat_completion, classify, embeddings_response
from localdev.stub_extraction import JSON

__all__ = ["LLMStub", "main"]

_REQUEST_LOG_SIZE = 200


class _Handler(BaseHTTPRequestHandler):
    server: _StubServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet by default: the request log (``/_stub/requests``) is the useful record."""

    def _reply(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            self._reply(200, {"object": "list", "data": [{"id": "stub", "object": "model", "owned_by": "localdev"}]})
        elif path in ("/health", ""):
            self._reply(200, {"status": "ok"})
        elif path == "/_stub/requests":
            self._reply(200, list(self.server.request_log))
        else:
            self._reply(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._reply(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        if not isinstance(body, dict):
            self._reply(400, {"error": {"message": "body must be an object", "type": "invalid_request_error"}})
            return
        if path.endswith("/chat/completions"):
            response = chat_completion(body)
            self.server.record("chat", classify(body), body, response)
            self._reply(200, response)
        elif path.endswith("/embeddings"):
            response = embeddings_response(body)
            self.server.record("embeddings", "embeddings", {"count": len(response["data"])}, None)
            self._reply(200, response)
        elif path == "/rerank":  # Bedrock's Rerank (localdev.rerank_stub)
            response = rerank_response(body)
            self.server.record("rerank", "rerank", body, response)
            self._reply(200, response)
        else:
            self._reply(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})


class _StubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.request_log: deque[JSON] = deque(maxlen=_REQUEST_LOG_SIZE)
        self._lock = threading.Lock()

    def record(self, endpoint: str, kind: str, body: Any, response: Any) -> None:
        with self._lock:
            self.request_log.append({"endpoint": endpoint, "kind": kind, "request": body, "response": response})


class LLMStub(BackgroundHTTPServer[_StubServer]):
    """The stand-in served from a background thread.

    >>> with LLMStub() as stub:
    ...     base_url = stub.base_url  # "http://127.0.0.1:<port>/v1", for HINDSIGHT_API_LLM_BASE_URL
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(_StubServer((host, port)), name="llm-stub")

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ending in ``/v1``."""
        return f"{self.url}/v1"

    @property
    def requests(self) -> list[JSON]:
        """The most recent requests served (oldest first), with their kind and response."""
        return list(self.server.request_log)

    def requests_of(self, kind: str) -> Iterator[JSON]:
        return (r for r in self.requests if r["kind"] == kind)


def main(argv: list[str] | None = None) -> int:
    """Serve the stand-in in the foreground until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m localdev.llm_stub", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on start)")
    args = parser.parse_args(argv)
    server = _StubServer((args.host, args.port))
    print(f"llm stub listening on http://{args.host}:{server.server_address[1]}/v1", flush=True)
    serve_in_foreground(server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

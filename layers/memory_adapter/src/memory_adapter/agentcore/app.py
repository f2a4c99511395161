"""The ASGI pieces of an AgentCore app with memory: a body guard in front of ``/invocations`` and the 401 answer.

Shared by the reference agent and :meth:`memory_adapter.agentcore.AgentCoreMemory.create_app`, so an agent you
bring answers oversized or malformed bodies and unverified callers exactly as the reference agent does.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["UNAUTHORIZED", "BodyGuard", "Gate", "body_problem", "error_response", "serve", "unauthorized_response"]

#: Checks an ``/invocations`` request (its ASGI scope: the raw headers) before its body is read: the answer to send
#: instead (the uniform 401), or ``None`` to go on. So an unauthenticated caller learns nothing from the body checks
#: either. A gate may record what it verified in the scope, for the handler (one verification per request).
Gate = Callable[[Scope], Awaitable[ASGIApp | None]]

UNAUTHORIZED = {"error": "unauthorized", "code": "unauthorized"}


def error_response(status: int, error: str, code: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """A small JSON error body ``{"error", "code"}``."""
    return JSONResponse({"error": error, "code": code}, status_code=status, headers=headers)


def body_problem(body: bytes) -> str | None:
    """Why ``body`` is no JSON text, in words that say which (``None``: it is one): not UTF-8, or not JSON."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"the request body is not UTF-8 text (at byte offset {exc.start}): send JSON encoded as UTF-8"
    try:
        json.loads(text)
    except RecursionError:
        return "the request body is nested too deeply: send a JSON object"
    except json.JSONDecodeError as exc:
        return f"the request body is not JSON ({exc.msg}): send a JSON object"
    except ValueError:  # an integer literal longer than int() reads (its text advises a call of the interpreter's)
        return f"the request body holds a number of more than {sys.get_int_max_str_digits()} digits: send a JSON object"
    return None


def serve(app: Any) -> None:
    """Serve ``app`` (a ``BedrockAgentCoreApp``) on port ``PORT`` (default 8080) of address ``HOST`` (default: the
    SDK's, ``0.0.0.0`` in a container as the Runtime contract requires, else ``127.0.0.1``), until stopped."""
    app.run(port=int(os.environ.get("PORT") or 8080), host=os.environ.get("HOST") or None)


def unauthorized_response(*, bearer: bool) -> JSONResponse:
    """The 401 every identity failure gets (the reason is logged, never sent); ``bearer``: a JWT-mode agent."""
    return JSONResponse(UNAUTHORIZED, status_code=401, headers={"WWW-Authenticate": "Bearer"} if bearer else None)


def _declared_length(scope: Scope) -> int:
    """The request's ``Content-Length`` (0 when absent or chunked: the body is then counted as it is read)."""
    for key, value in scope.get("headers", []):
        if key.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0  # the HTTP server refuses a malformed Content-Length before the app sees it
    return 0


class BodyGuard:
    """Reads an ``/invocations`` body up to ``max_bytes`` and checks it is JSON, before the SDK sees it.

    Without it an oversized body is buffered whole, and a deeply nested one makes the SDK's ``request.json()`` raise
    ``RecursionError``, which it answers with a 500. Both get a 400 here instead, but only after ``gate`` (the
    caller's identity, when given) let the request through: an unauthenticated oversized request gets the 401.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int, gate: Gate | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != "/invocations" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        if self.gate is not None:
            refusal = await self.gate(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        if _declared_length(scope) > self.max_bytes:  # refused at once: none of it is read
            await self._too_large(scope, receive, send)
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
        problem = body_problem(bytes(body))
        if problem is not None:
            await error_response(400, problem, "bad_request")(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        await error_response(400, f"request body larger than {self.max_bytes} bytes", "payload_too_large")(
            scope, receive, send
        )

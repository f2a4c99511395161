"""The request guard: an ASGI middleware in front of all of Hindsight (REST, MCP, health), before authentication.

For every HTTP request it

0. reads no body it does not have to: a request that carries one must authenticate first (401 at once, body unread:
   every route that takes a body is authenticated), and a body larger than the configured cap
   (``HINDSIGHT_API_TENANT_MAX_BODY_MIB``; the operator key has none) is answered 413, at once when its
   ``Content-Length`` says so, as soon as it passes the cap when it is chunked;
1. refuses input Hindsight cannot take (:mod:`hindsight_isolation.bad_input`) with a 400 that says what is wrong,
   whoever sends it: path, query string, headers, JSON bodies, form fields (multipart and url-encoded);
2. labels the request with its kind (:mod:`hindsight_isolation.route`) for the validator, which sees no route
   (nor body: a bank-config update of mission keys only is labelled a mission update here, and the directive name
   a body sets is handed on, so the validator can refuse a duplicate);
3. makes a caller-chosen retain ``operation_id`` private to its bank (:func:`bank_operation_id`): Hindsight keeps
   one id space for every bank and answers 409 to an id another bank used, which tells whether that id exists;
4. replaces the body of any 500 with a fixed message (Hindsight puts the exception's text, a database driver's
   included, in the body; the log keeps it);
5. passes recalls through admission control (:mod:`hindsight_isolation.admission`): an authenticated recall that
   would miss the deadline its caller states is answered 503 at once (one that does not authenticate is left to
   Hindsight's 401).

Pure ASGI (no Starlette ``BaseHTTPMiddleware``: no extra task per request, and disconnects still reach the app).
Installed by :class:`hindsight_isolation.http.RequestGuardExtension`.
"""

from __future__ import annotations

import json
import logging
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from typing import IO, Any

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hindsight_isolation import admission, bad_input, events, fading, route, usage
from hindsight_isolation.audit import log_unauthenticated
from hindsight_isolation.authn import UnauthenticatedError
from hindsight_isolation.principal import Kind, Principal
from hindsight_isolation.route import RequestKind
from hindsight_isolation.settings import tenant_env
from memory_adapter.constants import MEMORY_ACTOR_HEADER

__all__ = ["INTERNAL_ERROR", "Authenticate", "RequestGuard", "bank_operation_id", "configure"]

logger = logging.getLogger("hindsight_isolation")

#: The body every 500 gets instead of Hindsight's (which carries the exception's text).
INTERNAL_ERROR = {"detail": "internal server error (the server log has the details)"}
#: Multipart bodies are spooled to disk beyond this, like Starlette's own uploads.
_SPOOL_IN_MEMORY = 1024 * 1024
#: Form fields longer than Starlette accepts (1 MiB) are refused by Starlette: no need to look at more.
_MAX_FIELD = 1024 * 1024 + 1
_CHUNK = 64 * 1024
#: Hindsight's own 401 text (``AuthenticationError("unauthorized")``, the tenant extension's refusal): one answer.
_UNAUTHORIZED = "Authentication failed: unauthorized"
_JSON_TYPES = ("application/json", "+json")


class _ClientGoneError(Exception):
    """The client disconnected while its body was being read."""


class _TooLargeError(Exception):
    """The body passed the cap while it was being read."""


#: The tenant extension's authentication of a bearer credential (raises :class:`UnauthenticatedError`).
Authenticate = Callable[[str | None], Awaitable[Principal]]

_authenticate: Authenticate | None = None
_max_body: int | None = None


def configure(*, max_body_bytes: int | None, authenticate: Authenticate | None) -> None:
    """Set the body cap and who may send a body (called once by the tenant extension at start-up).

    ``authenticate`` ``None``: bodies are read without authentication (tests of the guard alone).
    """
    global _authenticate, _max_body
    _authenticate, _max_body = authenticate, max_body_bytes


def bank_operation_id(operation_id: str, bank_id: str) -> str:
    """The id Hindsight stores for a caller's ``operation_id`` on ``bank_id``: a UUID no other bank can reach.

    Deterministic, so a re-sent retain (same id, same bank) still finds its first operation; name-based (UUIDv5,
    the caller's id as namespace), so no caller can aim at another bank's id. Not a UUID: returned unchanged (the
    route answers 422).
    """
    try:
        namespace = uuid.UUID(operation_id)
    except ValueError:
        return operation_id
    return str(uuid.uuid5(namespace, bank_id))


class RequestGuard:
    """Wraps the whole Hindsight ASGI app.

    Args:
        app: The app to guard.
        integer_parameters: Query parameter names that are integers (from the app's OpenAPI document).
    """

    def __init__(self, app: ASGIApp, *, integer_parameters: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.integer_parameters = integer_parameters

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        kind = route.classify(scope.get("method", ""), scope.get("path", ""))
        limit = _max_body
        try:
            bad_input.check_path(scope.get("path", ""))
            bad_input.check_query(scope.get("query_string", b""), self.integer_parameters)
            bad_input.check_route_query(scope.get("path", ""), scope.get("query_string", b""))
            bad_input.check_headers(scope.get("headers", []))
            answered, limit = await _admitted_body(scope, send, kind)
            if answered:
                return
            scope, receive, kind, named = await self._checked_body(scope, receive, kind, limit)
            clock = usage.clock_from_header(_header(scope, fading.CLOCK_HEADER.encode()) or None)
        except bad_input.BadInputError as exc:
            await _refuse(scope, send, kind, str(exc))
            return
        except _TooLargeError:
            await _too_large(scope, send, kind, limit)
            return
        except _ClientGoneError:
            return
        actor = _header(scope, MEMORY_ACTOR_HEADER.encode())
        with (
            route.labelled(kind),
            route.directive_named(named),
            fading.clocked(clock),
            events.watching_deletes(_decode(actor) if actor else None) as watch,
        ):
            try:
                await admission.serve(kind, self.app, scope, receive, _hiding_internal_errors(scope, send))
            finally:
                await events.report_deletes(watch)  # what this request's deletes removed (memory events)

    async def _checked_body(
        self, scope: Scope, receive: Receive, kind: RequestKind, limit: int | None
    ) -> tuple[Scope, Receive, RequestKind, tuple[str, str | None] | None]:
        """Read (up to ``limit`` bytes) and check the body; return the scope, a ``receive`` that replays it, the
        kind (refined by it) and the directive name it sets (:func:`route.naming_directive`)."""
        content_type, options = parse_options_header(_header(scope, b"content-type"))
        if content_type == b"multipart/form-data" and options.get(b"boundary"):
            spool = await _read_multipart(receive, options[b"boundary"], limit)
            return scope, _replay_file(spool, receive), kind, None
        body = await _read_all(receive, limit)
        if not body:
            return scope, _replay(body, receive), kind, None
        if content_type == b"application/x-www-form-urlencoded":
            bad_input.check_form_fields(_urlencoded_fields(body))
            return scope, _replay(body, receive), kind, None
        try:
            parsed = bad_input.parse_json(body)
        except bad_input.NotJsonError:
            if not content_type or content_type.decode("latin-1").endswith(_JSON_TYPES):
                raise
            return scope, _replay(body, receive), kind, None  # not JSON, not declared JSON: the route reads it as is
        mcp = kind is RequestKind.MCP  # JSON-RPC ids may be any JSON number: 64 bits there
        bad_input.check_json(parsed, int_max=bad_input.INT64_MAX if mcp else bad_input.INT32_MAX)
        if not mcp:
            bad_input.check_route_body(scope.get("method", ""), scope.get("path", ""), parsed)
        named = route.naming_directive(kind, scope.get("method", ""), scope.get("path", ""), parsed)
        kind = route.refine(kind, scope.get("method", ""), scope.get("path", ""), parsed)
        bank_id = route.retain_bank(scope.get("path", "")) if kind is RequestKind.RETAIN else None
        if bank_id is not None and isinstance(parsed, dict) and isinstance(parsed.get("operation_id"), str):
            private = bank_operation_id(parsed["operation_id"], bank_id)
            if private != parsed["operation_id"]:
                parsed["operation_id"] = private
                body = json.dumps(parsed, ensure_ascii=False, allow_nan=False).encode("utf-8")
                scope = _with_content_length(scope, len(body))
        return scope, _replay(body, receive), kind, named


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value)
    return None


def _declared_length(scope: Scope) -> int | None:
    """The body's length as the request declares it: ``Content-Length``, ``None`` under any ``Transfer-Encoding``
    (unknown: the HTTP server reads a body framed by ``gzip, chunked`` or two such headers as chunked too), else 0."""
    if _header(scope, b"transfer-encoding") is not None:
        return None
    raw = _header(scope, b"content-length")
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0  # the HTTP server refuses a malformed Content-Length before the app sees it


async def _admitted_body(scope: Scope, send: Send, kind: RequestKind) -> tuple[bool, int | None]:
    """Whether the request was answered (401, 413) with its body unread; else the cap on its body (``None``: none)."""
    declared = _declared_length(scope)
    if declared == 0:
        return False, _max_body
    limit = _max_body
    if _authenticate is not None:
        try:
            principal = await _authenticate(admission.credential(scope))
        except UnauthenticatedError as exc:
            log_unauthenticated(f"{exc.reason} (body not read)", transport="guard")
            await _send_json(send, 401, _payload(kind, _UNAUTHORIZED, mcp_error=False))
            return True, None
        if principal.kind is Kind.OPERATOR:
            limit = None  # restores and imports of whole banks: the operator's, trusted with the server itself
    if declared is not None and limit is not None and declared > limit:
        await _too_large(scope, send, kind, limit)
        return True, limit
    return False, limit


async def _too_large(scope: Scope, send: Send, kind: RequestKind, limit: int | None) -> None:
    setting = tenant_env("max_body_mib")
    message = (
        f"the request body is larger than {limit} bytes ({(limit or 0) / 2**20:g} MiB), the most this server reads "
        f"from anyone but the operator ({setting}); send less"
    )
    logger.info(
        "hindsight_isolation refused a large body status=413 method=%s path=%r limit=%s",
        scope.get("method"),
        str(scope.get("path", ""))[:200],
        limit,
    )
    await _send_json(send, 413, _payload(kind, message))


def _with_content_length(scope: Scope, length: int) -> Scope:
    dropped = (b"content-length", b"transfer-encoding")
    headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() not in dropped]
    headers.append((b"content-length", str(length).encode("ascii")))
    return {**scope, "headers": headers}


async def _read_all(receive: Receive, limit: int | None) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGoneError
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if limit is not None and size > limit:
            raise _TooLargeError
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app ``body`` once, then whatever the client sends next (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


def _replay_file(spool: IO[bytes], receive: Receive) -> Receive:
    """Like :func:`_replay`, from a spooled body, in chunks."""
    size = spool.seek(0, 2)
    spool.seek(0)
    done = False

    async def replayed() -> Message:
        nonlocal done
        if done:
            return await receive()
        chunk = spool.read(_CHUNK)
        more = spool.tell() < size
        if not more:
            done = True
            spool.close()
        return {"type": "http.request", "body": chunk, "more_body": more}

    return replayed


def _urlencoded_fields(body: bytes) -> list[tuple[str, str]]:
    from urllib.parse import parse_qsl

    return parse_qsl(body.decode("latin-1"), keep_blank_values=True)


def _decode(raw: bytes | bytearray) -> str:
    """As Starlette decodes form fields and file names: UTF-8, else Latin-1."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


async def _read_multipart(receive: Receive, boundary: bytes, limit: int | None) -> IO[bytes]:
    """Spool a multipart body while parsing it; check every field and file name (not file contents)."""
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY)  # noqa: SIM115 (closed on replay)
    fields: list[tuple[str, str]] = []
    header_name, header_value = bytearray(), bytearray()
    part: dict[str, Any] = {}

    def on_part_begin() -> None:
        part.clear()
        part.update(disposition=b"", data=bytearray())

    def on_header_field(data: bytes, start: int, end: int) -> None:
        header_name.extend(data[start:end])

    def on_header_value(data: bytes, start: int, end: int) -> None:
        header_value.extend(data[start:end])

    def on_header_end() -> None:
        if header_name.lower() == b"content-disposition":
            part["disposition"] = bytes(header_value)
        header_name.clear()
        header_value.clear()

    def on_part_data(data: bytes, start: int, end: int) -> None:
        buffer: bytearray = part["data"]
        if "filename" not in part and len(buffer) < _MAX_FIELD:
            buffer.extend(data[start : min(end, start + _MAX_FIELD - len(buffer))])

    def on_headers_finished() -> None:
        _, options = parse_options_header(part["disposition"])
        part["name"] = _decode(options.get(b"name", b""))
        if b"filename" in options:
            part["filename"] = _decode(options[b"filename"])

    def on_part_end() -> None:
        if "filename" in part:
            fields.append((part["name"], part["filename"]))  # a file: its name is checked, not its bytes
        else:
            fields.append((part["name"], _decode(part["data"])))

    parser = MultipartParser(
        boundary,
        {
            "on_part_begin": on_part_begin,
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_headers_finished": on_headers_finished,
            "on_part_data": on_part_data,
            "on_part_end": on_part_end,
        },
    )
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _ClientGoneError
            chunk = message.get("body", b"")
            if limit is not None and spool.tell() + len(chunk) > limit:
                raise _TooLargeError
            spool.write(chunk)
            parser.write(chunk)
            if not message.get("more_body", False):
                break
        parser.finalize()
        bad_input.check_form_fields(fields)
    except (bad_input.BadInputError, _ClientGoneError, _TooLargeError):
        spool.close()
        raise
    except Exception:  # the parser's own errors: Starlette, which uses the same parser, would refuse it too
        spool.close()
        raise bad_input.BadInputError(
            "the multipart body is malformed: send multipart/form-data with its boundary"
        ) from None
    return spool


async def _refuse(scope: Scope, send: Send, kind: RequestKind, message: str) -> None:
    """400 with the message (:func:`_payload`)."""
    logger.info(
        "hindsight_isolation refused bad input status=400 method=%s path=%r reason=%r",
        scope.get("method"),
        str(scope.get("path", ""))[:200],
        message[:300],
    )
    await _send_json(send, 400, _payload(kind, message))


def _payload(kind: RequestKind, message: str, *, mcp_error: bool = True) -> dict[str, Any]:
    """``{"detail": ...}``, or for MCP a JSON-RPC error (what an MCP client reads; ``mcp_error`` off: Hindsight's
    MCP 401 body, ``{"error": ...}``)."""
    if kind is not RequestKind.MCP:
        return {"detail": message}
    if not mcp_error:
        return {"error": message}
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}


async def _send_json(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii"))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _hiding_internal_errors(scope: Scope, send: Send) -> Send:
    """A ``send`` that answers every 500 with :data:`INTERNAL_ERROR` and drops the app's own 500 body."""
    hiding = False

    async def guarded(message: Message) -> None:
        nonlocal hiding
        if message["type"] == "http.response.start" and message.get("status") == 500:
            hiding = True
            logger.warning(
                "hindsight_isolation replaced the body of a 500 method=%s path=%r",
                scope.get("method"),
                str(scope.get("path", ""))[:200],
            )
            await _send_json(send, 500, INTERNAL_ERROR)
            return
        if hiding and message["type"] == "http.response.body":
            return
        await send(message)

    return guarded

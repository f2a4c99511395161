"""The memory tools as served by the AgentCore Gateway (or any MCP server offering them), called for a verified caller.

An agent whose model calls the memory tools can run them here instead of against Hindsight directly: each call is an
MCP ``tools/call`` over streamable HTTP to the gateway's MCP URL, with the **caller's own bearer token** (token
passthrough). The gateway's authorizer, its interceptor and its target then verify that token and act for that user
only, exactly as for any other MCP client; this class adds no identity of its own (a caller without a token is
refused before anything is sent). Same interface and answers as :class:`~memory_adapter.tools.MemoryTools`
(:meth:`GatewayTools.call` never raises); standard library only.

The gateway names a Lambda target's tools ``<target>___<tool>`` (``target``); the local MCP server names them plainly
(``target=None``). Arguments are checked here first (:func:`~memory_adapter.tools.specs.parse_arguments`), so a bad
call costs no round trip; the target checks them again.

Example:
    >>> tools = GatewayTools("https://abc.gateway.bedrock-agentcore.us-east-1.amazonaws.com/mcp", target="memory")
    >>> tools.call(caller, "recall", {"query": "contact preference"}).text
    '1 memories:\\n- Prefers email over phone (id ...)'
"""

from __future__ import annotations

import http.client
import itertools
import json
import logging
import re
import ssl
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from memory_adapter.gateway import prefixed_tool_name
from memory_adapter.identity.caller import Caller
from memory_adapter.tools.errors import ToolError, ToolInputError, ToolRefusedError, ToolUnavailableError
from memory_adapter.tools.memory_tools import ToolResult
from memory_adapter.tools.specs import parse_arguments

__all__ = ["MCP_PROTOCOL_VERSION", "GatewayTools"]

logger = logging.getLogger("memory_adapter.tools.gateway")

#: The MCP revision this client speaks (the gateway supports it; stateless ``tools/call`` needs no session).
MCP_PROTOCOL_VERSION: Final = "2025-03-26"
_MAX_RESPONSE_BYTES: Final = 1024 * 1024
_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "::1"})
_INVALID_PARAMS: Final = -32602


@dataclass(frozen=True, slots=True)
class _Reply:
    status: int
    content_type: str
    body: bytes


class GatewayTools:
    """The memory tools over MCP, each call with the caller's own token.

    Args:
        url: The MCP endpoint (``https://<id>.gateway.bedrock-agentcore.<region>.amazonaws.com/mcp``), or a callable
            returning it (e.g. read from the SSM parameter the stack publishes; called for every tool call, so cache
            it there). ``http`` is accepted for loopback addresses only (local runs).
        target: The gateway target's name (the ``<target>___`` prefix of every tool); ``None`` for servers whose
            tools are named plainly.
        timeout: Seconds for one call (above the gateway target's own timeout).
    """

    def __init__(self, url: str | Callable[[], str], *, target: str | None = None, timeout: float = 35.0) -> None:
        self._url = url
        self._target = target
        self._timeout = timeout
        self._ids = itertools.count(1)

    def call(self, caller: Caller, name: str, arguments: object) -> ToolResult:
        """Run tool ``name`` for ``caller`` through the gateway; never raises (failures come back as a result with
        ``error`` set and a message that says what is wrong and what to do)."""
        shown = str(name)[:64]
        try:
            values = parse_arguments(name, arguments)
            if not caller.credential:
                raise ToolRefusedError("no credential for the memory gateway: the caller's token is required")
            return self._call(caller.credential, name, values)
        except ToolError as exc:
            logger.info("memory gateway tool refused", extra={"tool": shown, "code": exc.code})
            return ToolResult(shown, {"error": exc.code, "message": str(exc)}, str(exc), exc.code)
        except Exception:  # a bug must not become a 500 or leak a trace to the model
            logger.exception("memory gateway tool failed", extra={"tool": shown})
            message = "the memory tool failed unexpectedly; nothing more is known"
            return ToolResult(shown, {"error": "internal", "message": message}, message, "internal")

    # -- one call ----------------------------------------------------------------------------------------------

    def _call(self, token: str, name: str, values: Mapping[str, Any]) -> ToolResult:
        request_id = next(self._ids)
        tool = prefixed_tool_name(self._target, name) if self._target else name
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": dict(values)},
        }
        reply = self._post(self._endpoint(), json.dumps(body, ensure_ascii=False).encode("utf-8"), token)
        if reply.status in (401, 403):
            raise ToolRefusedError("the memory gateway refused the caller's token")
        if not 200 <= reply.status < 300:
            raise ToolUnavailableError(f"the memory gateway answered HTTP {reply.status}; try again later")
        message = _message(reply, request_id)
        error = message.get("error")
        if isinstance(error, Mapping):
            detail = str(error.get("message") or "no detail")[:300]
            if error.get("code") == _INVALID_PARAMS:
                raise ToolInputError(f"{name}: {detail}")
            if "unauthorized" in detail.lower():
                raise ToolRefusedError("the memory gateway refused the caller's token")
            raise ToolUnavailableError(f"the memory gateway could not run {name}: {detail}")
        result = message.get("result")
        if not isinstance(result, Mapping):
            raise ToolUnavailableError("the memory gateway's answer holds no result; try again later")
        return _tool_result(name, result)

    def _endpoint(self) -> urllib.parse.SplitResult:
        try:
            url = self._url() if callable(self._url) else self._url
        except Exception as exc:
            raise ToolUnavailableError(f"the memory gateway's address could not be read: {type(exc).__name__}") from exc
        parts = urllib.parse.urlsplit(str(url).strip())
        secure = parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOOPBACK)
        if not secure or not parts.hostname:
            raise ToolUnavailableError("the memory gateway URL must be an https URL (http only on this machine)")
        return parts

    def _post(self, url: urllib.parse.SplitResult, payload: bytes, token: str) -> _Reply:
        conn: http.client.HTTPConnection
        if url.scheme == "https":
            conn = http.client.HTTPSConnection(
                url.hostname or "", url.port, timeout=self._timeout, context=ssl.create_default_context()
            )
        else:
            conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=self._timeout)
        headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MCP_PROTOCOL_VERSION,
        }
        try:
            conn.request(
                "POST", (url.path or "/") + (f"?{url.query}" if url.query else ""), body=payload, headers=headers
            )
            response = conn.getresponse()  # redirects are not followed: the token goes to this URL only
            body = response.read(_MAX_RESPONSE_BYTES + 1)
            return _Reply(response.status, response.getheader("Content-Type") or "", body)
        except TimeoutError as exc:
            raise ToolUnavailableError(f"the memory gateway did not answer within {self._timeout:g} s") from exc
        except (OSError, http.client.HTTPException) as exc:
            raise ToolUnavailableError(f"cannot reach the memory gateway: {type(exc).__name__}") from exc
        finally:
            conn.close()


_SSE_LINE_END: Final = re.compile(r"\r\n|\r|\n")


def _message(reply: _Reply, request_id: int) -> Mapping[str, Any]:
    """The JSON-RPC response to ``request_id``, from a JSON body or a server-sent event stream."""
    if len(reply.body) > _MAX_RESPONSE_BYTES:
        raise ToolUnavailableError("the memory gateway's answer is too large")
    text = reply.body.decode("utf-8", errors="replace")
    if reply.content_type.split(";")[0].strip().lower() == "text/event-stream":
        # SSE ends lines at CR and LF only: str.splitlines() also splits inside JSON strings (U+2028, U+0085, ...)
        lines = _SSE_LINE_END.split(text)
        candidates = [line[5:].strip() for line in lines if line.startswith("data:")]
    else:
        candidates = [text]
    for candidate in candidates:
        try:
            message = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(message, Mapping) and message.get("id") == request_id:
            return message
    raise ToolUnavailableError("the memory gateway's answer is not an MCP response; try again later")


def _tool_result(name: str, result: Mapping[str, Any]) -> ToolResult:
    """A ``tools/call`` result as a :class:`ToolResult`. The gateway and the local MCP server both send the tool's
    answer (:meth:`ToolResult.answer`, ``{...data, "text": ...}``) as JSON in one text block; anything else (the
    gateway's own failure, ``isError``) is a failure with its text."""
    texts = [
        part["text"]
        for part in result.get("content") or ()
        if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str)
    ]
    data: Any = None
    if len(texts) == 1:
        try:
            data = json.loads(texts[0])
        except ValueError:
            data = None
    data = dict(data) if isinstance(data, Mapping) else {}
    text = data.pop("text", None)
    if not isinstance(text, str) or not text:
        text = "\n".join(texts) or str(data.get("message") or "")
    error = data.get("error") if isinstance(data.get("error"), str) else None
    if error is None and result.get("isError") is True:
        error = "tool_error"
    return ToolResult(name, data, text, error)

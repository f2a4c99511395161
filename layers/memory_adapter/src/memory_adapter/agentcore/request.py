"""What the runtime says about a request (never the payload): its raw headers, session id and request id."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["REQUEST_ID_HEADER", "SESSION_HEADER", "InvalidSessionError", "RequestMeta", "raw_headers", "request_meta"]

SESSION_HEADER = "x-amzn-bedrock-agentcore-runtime-session-id"
REQUEST_ID_HEADER = "x-amzn-bedrock-agentcore-runtime-request-id"
_OPAQUE_ID = re.compile(r"[\x21-\x7e]{1,256}")


class InvalidSessionError(ValueError):
    """The session id header is present but not a valid session id (answer 400)."""


@dataclass(frozen=True, slots=True)
class RequestMeta:
    """Request facts from the runtime (never from the payload)."""

    session_id: str
    request_id: str | None


def raw_headers(context: Any) -> list[tuple[str, str]] | None:
    """Every raw header of the SDK's request context (repeated ones included), or ``None`` without a request.

    The raw request is read because the SDK filters ``X-Amzn-Bedrock-AgentCore-Runtime-User-Id`` out of
    ``context.request_headers``.
    """
    request = getattr(context, "request", None)
    if request is None:
        return None
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]


def request_meta(headers: Iterable[tuple[str, str]]) -> RequestMeta:
    """The session and request ids; made up when absent (local calls without a runtime in front).

    Raises :class:`InvalidSessionError` for a session header that is not 1-256 printable ASCII characters.
    """
    values = {name.lower(): value for name, value in headers}
    session = values.get(SESSION_HEADER, "")
    if not _OPAQUE_ID.fullmatch(session):
        if session:
            raise InvalidSessionError("the session id header is not a valid session id")
        session = str(uuid.uuid4())
    request_id = values.get(REQUEST_ID_HEADER, "")
    if not _OPAQUE_ID.fullmatch(request_id):
        request_id = str(uuid.uuid4())
    return RequestMeta(session_id=session, request_id=request_id)

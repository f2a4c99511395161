"""What the runtime says about a request (never the payload): its headers, parsed once, and its session and request ids.

One rule for repeated headers, whoever reads them: a header counts only when it was sent once
(:meth:`Headers.single`). A repeated identity header is refused (401, :mod:`~memory_adapter.agentcore.identity`), a
repeated session id is invalid (400, like a malformed one), a repeated request id is replaced by a fresh one (like a
malformed one): a proxy that appended its own value must not choose whose memory or which session a turn uses.

One rule for their bytes: a value is read as UTF-8 (:meth:`Headers.of_raw`; ASCII reads the same either way), the
encoding a token's claims have, so a user id sent in the IAM user-id header names the same bank as the same id in a
verified token. HTTP servers hand values over as Latin-1 text, which would turn ``José`` into ``JosÃ©``: another
user's bank. A value that is not UTF-8 counts as unreadable, like a repeated one (identity: 401; session id: 400).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memory_adapter.exceptions import HindsightAgentCoreError

__all__ = [
    "REQUEST_ID_HEADER",
    "SESSION_HEADER",
    "DuplicateHeaderError",
    "Headers",
    "InvalidSessionError",
    "RequestFacts",
    "UndecodableHeaderError",
]

SESSION_HEADER = "x-amzn-bedrock-agentcore-runtime-session-id"
REQUEST_ID_HEADER = "x-amzn-bedrock-agentcore-runtime-request-id"
_OPAQUE_ID = re.compile(r"[\x21-\x7e]{1,256}")


class InvalidSessionError(HindsightAgentCoreError, ValueError):
    """The session id header is present but not one valid session id (answer 400)."""


class DuplicateHeaderError(HindsightAgentCoreError, ValueError):
    """A header that must be sent once was sent several times."""

    def __init__(self, name: str, count: int) -> None:
        super().__init__(f"{name} sent {count} times")
        self.name = name


class UndecodableHeaderError(HindsightAgentCoreError, ValueError):
    """A header's value is not UTF-8 (its bytes name nothing this side can match with a token's claims)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} is not UTF-8: send its value as UTF-8 bytes")
        self.name = name


class Headers:
    """Every raw header of a request by lower-case name, repeated ones included (parsed once per request)."""

    __slots__ = ("_undecodable", "_values")

    def __init__(self, raw: Iterable[tuple[str, str]], *, undecodable: Iterable[str] = ()) -> None:
        self._values: dict[str, list[str]] = {}
        for name, value in raw:
            self._values.setdefault(name.lower(), []).append(value)
        self._undecodable = frozenset(undecodable)

    @classmethod
    def of(cls, headers: Headers | Iterable[tuple[str, str]]) -> Headers:
        """``headers`` as :class:`Headers` (parsed now unless they already are)."""
        return headers if isinstance(headers, Headers) else cls(headers)

    @classmethod
    def of_raw(cls, raw: Iterable[tuple[bytes, bytes]]) -> Headers:
        """The headers as the HTTP server received them (ASGI ``scope["headers"]``, Starlette's ``headers.raw``):
        values read as UTF-8; one that is not is kept but unreadable (:meth:`single` raises)."""
        decoded: list[tuple[str, str]] = []
        undecodable: list[str] = []
        for name_bytes, value_bytes in raw:
            name = name_bytes.decode("latin-1").lower()
            try:
                value = value_bytes.decode("utf-8")
            except UnicodeDecodeError:
                undecodable.append(name)
                value = value_bytes.decode("latin-1")
            decoded.append((name, value))
        return cls(decoded, undecodable=undecodable)

    def single(self, name: str) -> str | None:
        """The value of ``name`` (any case), ``None`` when absent; raise :class:`DuplicateHeaderError` when repeated
        and :class:`UndecodableHeaderError` when it is not UTF-8."""
        values = self._values.get(name.lower())
        if not values:
            return None
        if len(values) > 1:
            raise DuplicateHeaderError(name.lower(), len(values))
        if name.lower() in self._undecodable:
            raise UndecodableHeaderError(name.lower())
        return values[0]


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """The one description of a request the wiring and the agent share: from the runtime, never from the payload.

    Attributes:
        session_id: The runtime session (made up when absent: local calls without a runtime in front).
        request_id: The runtime request id (made up when absent or malformed): the retained turn's document id.
        headers: The raw headers, parsed once (identity reads them from here).
    """

    session_id: str
    request_id: str
    headers: Headers = field(default_factory=lambda: Headers(()), repr=False, compare=False)

    @classmethod
    def of(cls, headers: Headers | Iterable[tuple[str, str]]) -> RequestFacts:
        """The facts of a request with these raw headers.

        Raises :class:`InvalidSessionError` for a session header that is not sent once as 1-256 printable ASCII
        characters.
        """
        parsed = Headers.of(headers)
        try:
            session = parsed.single(SESSION_HEADER) or ""
        except DuplicateHeaderError:
            raise InvalidSessionError("the session id header is sent more than once") from None
        except UndecodableHeaderError:
            raise InvalidSessionError("the session id header is not a valid session id") from None
        if not _OPAQUE_ID.fullmatch(session):
            if session:
                raise InvalidSessionError("the session id header is not a valid session id")
            session = str(uuid.uuid4())
        try:
            request_id = parsed.single(REQUEST_ID_HEADER) or ""
        except (DuplicateHeaderError, UndecodableHeaderError):
            request_id = ""
        if not _OPAQUE_ID.fullmatch(request_id):
            request_id = str(uuid.uuid4())
        return cls(session_id=session, request_id=request_id, headers=parsed)

    @classmethod
    def of_context(cls, context: Any) -> RequestFacts | None:
        """The facts of the SDK's request ``context``; ``None`` when it carries no request.

        The raw request is read because the SDK filters ``X-Amzn-Bedrock-AgentCore-Runtime-User-Id`` out of
        ``context.request_headers``.
        """
        request = getattr(context, "request", None)
        if request is None:
            return None
        return cls.of(Headers.of_raw(request.headers.raw))

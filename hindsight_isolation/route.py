"""What kind of request is being served, told by the request guard to the validator (which sees no HTTP request).

The validator slot receives a bank id and an operation name, never the route. Four rules need the route: a bank
restore, clone or document import (whose hooks look like a plain bank creation) is the operator's; a token in its
post-expiry grace window may only send a retain; a request that writes a bank's settings (its config, missions,
disposition or profile, on any route) is the operator's; and a bank-config update that sets nothing but the bank's
missions (:data:`memory_adapter.missions.MISSION_KEYS`) is the operator's or the agent key's, never a user token's
(the hooks see no body, so the guard, which reads it, tells the kinds apart with :func:`refine`).

The guard (:mod:`hindsight_isolation.guard`), which wraps every HTTP request, classifies the request with
:func:`classify` (and :func:`refine`) and holds the answer in a context variable for the length of the request;
:func:`current` reads it (``None`` outside any guarded request: the validator then refuses everything
but the server's own background work). Because every hook of a SETTINGS or MISSION request refuses a caller it is
not for, the first hook Hindsight runs refuses it, before anything looks the bank up: the answer is the same for the
caller's own bank, another user's and one that does not exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import StrEnum
from typing import Any

from memory_adapter import hindsight_routes as routes
from memory_adapter.missions import EXTRACTION_MODES, MAX_MISSION_CHARS, MISSION_KEYS

__all__ = [
    "RequestKind",
    "classify",
    "current",
    "directive_named",
    "directive_naming",
    "labelled",
    "naming_directive",
    "recall_bank",
    "refine",
    "retain_bank",
]


class RequestKind(StrEnum):
    """The routes isolation treats specially; everything else is OTHER."""

    RETAIN = "retain"  # POST /v1/default/banks/{bank_id}/memories: all a grace-window token may send
    TRANSFER = "transfer"  # bank restore, bank clone, document import: they write archive rows as they are
    MCP = "mcp"  # /mcp and below: tools are filtered per caller (filter_mcp_tools) and each call is checked
    SETTINGS = "settings"  # writes a bank's settings (config, missions, disposition, profile): the operator's
    MISSION = "mission"  # PATCH /v1/default/banks/{bank_id}/config setting only MISSION_KEYS: operator or agent key
    RECALL = "recall"  # POST /v1/default/banks/{bank_id}/memories/recall: a caller's recall (fading applies)
    OTHER = "other"


#: Matched against the decoded path, as Starlette routes it (:func:`memory_adapter.hindsight_routes.bank_route`: the
#: routes the client wire sends, spelled once).
_TRANSFER = routes.bank_route(routes.TRANSFER_IMPORT, routes.CLONE, routes.DOCUMENT_TRANSFER)
_RETAIN = routes.bank_route(routes.MEMORIES)
_CONFIG = routes.bank_route(routes.CONFIG)
#: The bank itself (PUT creates or updates it, PATCH updates it: name, missions, disposition, any config field).
_BANK = routes.bank_route()
#: A bank template import (config, mental models and directives in one request).
_TEMPLATE_IMPORT = routes.bank_route(routes.TEMPLATE_IMPORT)
_RECALL = routes.bank_route(routes.RECALL)
_MCP_PREFIX = "/mcp"
#: A directive's creation (no id) or update (its id): the name its body sets is checked against the bank's others.
_DIRECTIVE = routes.bank_route(routes.DIRECTIVES, item="directive_id")

_current: ContextVar[RequestKind | None] = ContextVar("hindsight_isolation_request_kind", default=None)
_directive: ContextVar[tuple[str, str | None] | None] = ContextVar("hindsight_isolation_directive", default=None)


def classify(method: str, path: str) -> RequestKind:
    """The kind of an HTTP request, from its method and decoded path."""
    if path == _MCP_PREFIX or path.startswith(_MCP_PREFIX + "/"):
        return RequestKind.MCP
    if method == "POST":
        if _TRANSFER.search(path):
            return RequestKind.TRANSFER
        if _RETAIN.search(path):
            return RequestKind.RETAIN
        if _RECALL.search(path):
            return RequestKind.RECALL
        if _TEMPLATE_IMPORT.search(path):
            return RequestKind.SETTINGS
    if method in ("PATCH", "DELETE") and _CONFIG.search(path):
        return RequestKind.SETTINGS
    if method in ("PUT", "PATCH") and _BANK.search(path):
        return RequestKind.SETTINGS  # unless its body sets nothing (refine): PUT {} creates the bank, no more
    return RequestKind.OTHER


def refine(kind: RequestKind, method: str, path: str, body: Any) -> RequestKind:
    """``kind`` told apart by the request's JSON body.

    * a bank creation or update (``PUT``/``PATCH .../banks/{bank_id}``) whose body is an object that sets nothing
      (every field null or absent) writes no setting: OTHER;
    * a config update of mission keys only is a MISSION: exactly the field names (not Hindsight's
      ``HINDSIGHT_API_*`` spellings of them), at least one, nothing else in the body, and values a mission may have
      (text of at most ``MAX_MISSION_CHARS``, which rides in every extraction prompt, or null; an extraction mode a
      mission may pick).

    Anything else stays what it was, an operator's request.
    """
    if kind is not RequestKind.SETTINGS or not isinstance(body, dict):
        return kind
    if method in ("PUT", "PATCH") and _BANK.search(path):
        return RequestKind.OTHER if all(value is None for value in body.values()) else kind
    if method != "PATCH" or not _CONFIG.search(path):
        return kind
    updates = body.get("updates")
    if set(body) != {"updates"} or not isinstance(updates, dict) or not updates:
        return kind
    if not set(updates) <= set(MISSION_KEYS) or not all(_mission_value(k, v) for k, v in updates.items()):
        return kind
    return RequestKind.MISSION


def _mission_value(key: str, value: Any) -> bool:
    if value is None:
        return True
    if key == "retain_extraction_mode":
        return value in EXTRACTION_MODES
    return isinstance(value, str) and len(value) <= MAX_MISSION_CHARS


def retain_bank(path: str) -> str | None:
    """The bank id of a retain request's path (``None`` for any other path)."""
    found = _RETAIN.search(path)
    return found.group("bank_id") if found else None


def recall_bank(path: str) -> str | None:
    """The bank id of a recall request's path (``None`` for any other path)."""
    found = _RECALL.search(path)
    return found.group("bank_id") if found else None


def naming_directive(kind: RequestKind, method: str, path: str, body: Any) -> tuple[str, str | None] | None:
    """The directive name a request's JSON body sets, and the id of the directive it updates (``None``: a new one):
    ``POST .../directives``, ``PATCH .../directives/{directive_id}``, or MCP's ``create_directive`` tool.

    Hindsight 1.1.0 keeps two directives of one name, and then every export of the bank's template fails (a 500):
    the validator refuses the second name (it sees no body, so the guard tells it)."""
    if not isinstance(body, dict):
        return None
    if kind is RequestKind.MCP:
        params = body.get("params")
        if (
            body.get("method") != "tools/call"
            or not isinstance(params, dict)
            or params.get("name") != "create_directive"
        ):
            return None
        arguments = params.get("arguments")
        name = arguments.get("name") if isinstance(arguments, dict) else None
        return (name, None) if isinstance(name, str) else None
    found = _DIRECTIVE.search(path)
    name = body.get("name")
    if found is None or not isinstance(name, str):
        return None
    directive_id = found.group("directive_id")
    if (method, directive_id is None) not in (("POST", True), ("PATCH", False)):
        return None
    return name, directive_id


@contextmanager
def directive_named(named: tuple[str, str | None] | None) -> Iterator[None]:
    """Serve the enclosed request as one that sets this directive name (:func:`naming_directive`)."""
    token = _directive.set(named)
    try:
        yield
    finally:
        _directive.reset(token)


def directive_naming() -> tuple[str, str | None] | None:
    """The directive name (and id updated) the request being served sets, or ``None``."""
    return _directive.get()


def current() -> RequestKind | None:
    """The kind of the request being served, or ``None`` outside a guarded request."""
    return _current.get()


@contextmanager
def labelled(kind: RequestKind) -> Iterator[None]:
    """Serve the enclosed code as a request of ``kind`` (work it spawns inherits the label)."""
    token = _current.set(kind)
    try:
        yield
    finally:
        _current.reset(token)

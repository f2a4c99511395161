"""Hindsight 1.1.0's routes, spelled once.

The client wire (:class:`memory_adapter._hindsight_api.HindsightApi`) builds every path it sends from these; the
unit-test fake (:mod:`memory_adapter.testing`) and the server extension's route table (:mod:`hindsight_isolation.route`,
which must not import the client wire) match paths with the same names, and the benchmarks' raw-HTTP baselines take
their paths here too. Standard library only.

Example:
    >>> bank_path("alice::support", RECALL)
    '/v1/default/banks/alice%3A%3Asupport/memories/recall'
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Final

__all__ = [
    "BANKS",
    "BANK_REQUEST",
    "CLONE",
    "CONFIG",
    "DELETE",
    "DELIVERIES",
    "DIRECTIVES",
    "DOCUMENTS",
    "DOCUMENT_TRANSFER",
    "DOWNLOAD",
    "ENTITIES",
    "EXPORT",
    "HEALTH",
    "KNOWLEDGE_BASE",
    "LIVE",
    "MEMORIES",
    "MEMORY_LIST",
    "MENTAL_MODELS",
    "OBSERVATIONS",
    "OPERATIONS",
    "RECALL",
    "REFLECT",
    "STATS",
    "TEMPLATE_IMPORT",
    "TRANSFER_IMPORT",
    "VERSION",
    "WEBHOOKS",
    "bank_path",
    "bank_route",
    "below_bank",
    "item_path",
]

#: Ready: the API answers and its database too (the load balancer's and Kubernetes' readiness check).
HEALTH: Final = "/health"
#: Alive: the process answers, database or not (containers' liveness; a worker serves only this).
LIVE: Final = "/health/live"
VERSION: Final = "/version"
_API: Final = "/v1/default"
BANKS: Final = f"{_API}/banks"
DOWNLOAD: Final = f"{_API}/files/download/"
#: Characters a bank id keeps as they are in a path; every other one (``/`` included) is percent-encoded.
_BANK_SAFE: Final = "@:.-_~"

# Below one bank (``bank_path(bank_id, suffix)``); a collection's item is ``item_path(bank_id, collection, id)``.
MEMORIES: Final = "/memories"  # POST: retain
RECALL: Final = "/memories/recall"
REFLECT: Final = "/reflect"
MEMORY_LIST: Final = "/memories/list"
DOCUMENTS: Final = "/documents"
CONFIG: Final = "/config"
OPERATIONS: Final = "/operations"
DELETE: Final = "/delete"  # after an operation's item path: drop a finished operation
EXPORT: Final = "/transfer/export"
STATS: Final = "/stats"
ENTITIES: Final = "/entities"
MENTAL_MODELS: Final = "/mental-models"
DIRECTIVES: Final = "/directives"
KNOWLEDGE_BASE: Final = "/knowledge-base"
WEBHOOKS: Final = "/webhooks"
DELIVERIES: Final = "/deliveries"  # after a webhook's item path
OBSERVATIONS: Final = "/observations"  # after a memory's item path
# Routes only the server extension tells apart (the client never sends them).
TRANSFER_IMPORT: Final = "/transfer/import"
CLONE: Final = "/clone"
DOCUMENT_TRANSFER: Final = "/document-transfer"
TEMPLATE_IMPORT: Final = "/import"


def bank_path(bank_id: str, suffix: str = "") -> str:
    """``/v1/default/banks/{bank_id}{suffix}`` with the bank id percent-encoded (``/`` included)."""
    return f"{BANKS}/{urllib.parse.quote(bank_id, safe=_BANK_SAFE)}{suffix}"


def item_path(bank_id: str, collection: str, item_id: str) -> str:
    """One item of a bank's ``collection`` (``MEMORIES``, ``DOCUMENTS``, ``OPERATIONS``), its id percent-encoded."""
    return bank_path(bank_id, f"{collection}/{urllib.parse.quote(item_id, safe='')}")


#: A whole path below one bank, as the client sends it: ``bank`` (still percent-encoded) and ``rest`` (the suffix).
BANK_REQUEST: Final = re.compile(rf"^{re.escape(BANKS)}/(?P<bank>[^/]+)(?P<rest>/.*)$")


def bank_route(*suffixes: str, item: str | None = None) -> re.Pattern[str]:
    """A path that ends in one bank's route, any of ``suffixes`` (none: the bank itself), a trailing ``/`` allowed:
    for a server, which sees decoded paths. A suffix match, so a prefix (a ``root_path``) changes nothing; a bank id
    cannot contain ``/`` (no route of Hindsight matches one), so group ``bank_id`` is exactly one bank id. ``item``:
    a group of that name for an optional item id after the suffix."""
    tail = "|".join(re.escape(suffix) for suffix in suffixes)
    after = f"(?:/(?P<{item}>[^/]+))?" if item else ""
    return below_bank(rf"(?:{tail}){after}/?$")


def below_bank(tail: str) -> re.Pattern[str]:
    """A path with one bank's segment (group ``bank_id``) followed by the regular expression ``tail``, for a server
    (see :func:`bank_route`); ``tail`` names its routes with this module's suffixes."""
    return re.compile(rf"{re.escape(BANKS.removeprefix(_API))}/(?P<bank_id>[^/]+){tail}")

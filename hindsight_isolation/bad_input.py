"""Which request input Hindsight cannot store or parse, found before it gets there. Pure (stdlib only).

Hindsight 1.1.0 answers 500 (with the database driver's error text) to input that PostgreSQL refuses: a NUL
character (U+0000) in any text that reaches a query (an id in the path, a query parameter, a tag, a JSON field), a
lone UTF-16 surrogate (valid in a Python ``str``, not UTF-8), an integer beyond 64 bits (beyond 32 in a REST body,
where the stored ones go to ``integer`` columns), a non-finite number, JSON nested deeply enough to exhaust the
parser's recursion, a name longer than its ``varchar(256)`` column, a non-UUID id on the routes that hand it to a
UUID column unchecked, a webhook update's null for a field that must have a value, and a webhook deliveries cursor.
The request guard (:mod:`hindsight_isolation.guard`) runs these checks on every request, authenticated or not, and
answers 400 with the :class:`BadInputError` message.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl

from memory_adapter import hindsight_routes as routes

__all__ = [
    "INT32_MAX",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_JSON_DEPTH",
    "MAX_NAME_CHARS",
    "BadInputError",
    "NotJsonError",
    "check_form_fields",
    "check_headers",
    "check_json",
    "check_path",
    "check_query",
    "check_route_body",
    "check_route_query",
    "check_text",
    "integer_query_parameters",
    "parse_json",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
#: Every integer a REST body of Hindsight 1.1.0 takes is a count, size, priority or duration; those it stores go to
#: PostgreSQL ``integer`` columns (a directive's priority, a mental model's max_tokens), so 32 bits bound them all.
INT32_MAX = 2**31 - 1
#: Directive, mental-model and knowledge-page names are ``varchar(256)`` columns.
MAX_NAME_CHARS = 256
#: Deeper than any body Hindsight takes (tag filters nest a few levels); far below the parser's recursion limit.
MAX_JSON_DEPTH = 64

#: Characters PostgreSQL text and jsonb cannot hold: U+0000, and the surrogates UTF-8 cannot encode.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_INTEGER_LITERAL = re.compile(r"[+-]?\d+")
#: What both ``uuid.UUID`` and asyncpg's UUID codec accept.
_UUID = re.compile(r"[0-9A-Fa-f]{8}(?:-?[0-9A-Fa-f]{4}){3}-?[0-9A-Fa-f]{12}")
#: Path ids Hindsight 1.1.0 hands to a UUID column without checking them (other routes answer 400 or 404 themselves).
_UUID_PATH_IDS = (
    ("directive_id", routes.below_bank(f"{routes.DIRECTIVES}/(?P<id>[^/]+)/?$")),
    ("memory_id", routes.below_bank(f"{routes.MEMORIES}/(?P<id>[^/]+){routes.OBSERVATIONS}/?$")),
)
#: Routes whose body's ``name`` is stored in a ``varchar(256)`` column; a bank template names them in lists.
_NAMED = routes.below_bank(f"(?:{routes.DIRECTIVES}|{routes.MENTAL_MODELS}|{routes.KNOWLEDGE_BASE})(?:/|$)")
_TEMPLATE = routes.bank_route(routes.TEMPLATE_IMPORT)
_WEBHOOK = routes.below_bank(f"{routes.WEBHOOKS}/[^/]+/?$")
#: A webhook's fields that are NOT NULL columns (or, ``http_config``, dereferenced): a PATCH may not null them.
_WEBHOOK_REQUIRED = ("url", "event_types", "enabled", "http_config")
#: Hindsight 1.1.0 hands a deliveries ``cursor`` to a timestamp parameter as text: every cursor fails (500).
_DELIVERIES = routes.below_bank(f"{routes.WEBHOOKS}/[^/]+{routes.DELIVERIES}/?$")


class BadInputError(ValueError):
    """Input the server cannot take; ``str()`` is the message for the caller (what is wrong, what to do)."""


class NotJsonError(BadInputError):
    """The body (or form field) is not JSON at all (as opposed to JSON the server cannot take)."""


def check_text(text: str, where: str) -> None:
    """Refuse a NUL character or a lone surrogate in ``text`` (``where`` names the field in the message)."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return
    char = found.group()
    if char == "\x00":
        raise BadInputError(f"{where} contains a NUL character (U+0000), which cannot be stored: remove it")
    raise BadInputError(
        f"{where} contains a lone UTF-16 surrogate (U+{ord(char):04X}), which is not valid Unicode text: "
        "send well-formed UTF-8"
    )


def check_path(path: str) -> None:
    """The decoded request path (ids travel in it): storable text, and a UUID where a UUID column takes it."""
    check_text(path, "the request path")
    for name, pattern in _UUID_PATH_IDS:
        found = pattern.search(path)
        if found and not _UUID.fullmatch(found.group("id")):
            raise BadInputError(f"{name} {found.group('id')[:80]!r} is not a UUID: use an id as the server listed it")


def check_query(query_string: bytes, integer_parameters: frozenset[str]) -> None:
    """Every query parameter: storable text, and the integer ones within 64 bits.

    Decoded as Starlette decodes it, so the check sees what Hindsight's routes see.
    """
    if not query_string:
        return
    for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        check_text(name, "a query parameter name")
        check_text(value, f"query parameter {name!r}")
        if name in integer_parameters and _INTEGER_LITERAL.fullmatch(value.strip()):
            number = int(value)
            if not INT64_MIN <= number <= INT64_MAX:
                raise BadInputError(f"query parameter {name!r} is out of range: it must be at most {INT64_MAX}")


def check_route_query(path: str, query_string: bytes) -> None:
    """Query parameters a route cannot take at all: a webhook deliveries ``cursor``."""
    if not query_string or not _DELIVERIES.search(path):
        return
    if "cursor" in {name for name, _ in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)}:
        raise BadInputError(
            "query parameter 'cursor' cannot be used here (Hindsight 1.1.0 fails on every deliveries cursor): "
            "ask for more deliveries at once with 'limit'"
        )


def check_headers(headers: Iterable[tuple[bytes, bytes]]) -> None:
    """Header values must be UTF-8 (Hindsight's MCP transport decodes them as such) without NUL characters."""
    for raw_name, raw_value in headers:
        name = raw_name.decode("latin-1")
        try:
            value = raw_value.decode("utf-8")
        except UnicodeDecodeError:
            raise BadInputError(f"header {name!r} is not valid UTF-8") from None
        check_text(value, f"header {name!r}")


def _reject_constant(name: str) -> float:
    raise BadInputError(f"the JSON body contains {name}, which is not a number JSON allows: send a finite number")


def parse_json(body: bytes) -> Any:
    """Parse a JSON body; :class:`BadInputError` if it is not JSON, or nests too deeply to parse."""
    try:
        return json.loads(body, parse_constant=_reject_constant)
    except RecursionError:
        raise BadInputError(f"the JSON body is nested too deeply: at most {MAX_JSON_DEPTH} levels") from None
    except UnicodeDecodeError:
        raise NotJsonError("the request body is not valid UTF-8 JSON") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise NotJsonError(f"the request body is not valid JSON: {exc.msg} ({where})") from None
    except BadInputError:
        raise
    except ValueError:  # an integer literal of thousands of digits: int() refuses to parse it
        raise BadInputError(f"the JSON body contains an integer that is out of range (at most {INT64_MAX})") from None


def check_json(value: Any, where: str = "body", *, int_max: int = INT64_MAX) -> None:
    """Every string (keys too) storable, every integer within ``int_max`` (either sign), every float finite,
    nesting bounded."""
    bits = int_max.bit_length() + 1
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, at, depth = stack.pop()
        if isinstance(item, str):
            check_text(item, at)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not -int_max - 1 <= item <= int_max:
                raise BadInputError(f"{at} is out of range: integers must fit in {bits} bits (at most {int_max})")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise BadInputError(f"{at} is too large: numbers must be finite")
        elif isinstance(item, dict | list):
            if depth >= MAX_JSON_DEPTH:
                raise BadInputError(f"the JSON body is nested too deeply: at most {MAX_JSON_DEPTH} levels")
            if isinstance(item, dict):
                for key, child in item.items():
                    check_text(key, f"a key in {at}")
                    stack.append((child, f"{at}.{key}", depth + 1))
            else:
                stack.extend((child, f"{at}[{index}]", depth + 1) for index, child in enumerate(item))


def check_route_body(method: str, path: str, body: Any) -> None:
    """What a route stores in bounded columns, and the one null Hindsight dereferences (a webhook's ``http_config``)."""
    if not isinstance(body, dict):
        return
    names: list[tuple[str, Any]] = []
    if _NAMED.search(path):
        names.append(("name", body.get("name")))
    if _TEMPLATE.search(path):
        for key in ("mental_models", "directives"):
            items = body.get(key)
            if isinstance(items, list):
                names += [
                    (f"{key}[{i}].name", item.get("name")) for i, item in enumerate(items) if isinstance(item, dict)
                ]
    for where, name in names:
        if isinstance(name, str) and len(name) > MAX_NAME_CHARS:
            raise BadInputError(f"{where} is longer than {MAX_NAME_CHARS} characters: shorten it")
    if method == "PATCH" and _WEBHOOK.search(path):
        nulls = sorted(key for key in _WEBHOOK_REQUIRED if key in body and body[key] is None)
        if nulls:
            raise BadInputError(
                f"{', '.join(nulls)}: give a value or leave it out (only secret may be null: it clears it)"
            )


def check_form_fields(fields: Iterable[tuple[str, str]]) -> None:
    """Form fields (multipart or url-encoded): storable text; a field holding JSON is checked as JSON."""
    for name, value in fields:
        check_text(name, "a form field name")
        check_text(value, f"form field {name!r}")
        if value.lstrip()[:1] in ("{", "["):
            try:
                parsed = parse_json(value.encode("utf-8"))
            except NotJsonError:
                continue  # not JSON after all: the route says what it expected
            except BadInputError as exc:
                raise BadInputError(f"form field {name!r}: {exc}") from None
            check_json(parsed, f"form field {name!r}")


def integer_query_parameters(openapi: Mapping[str, Any]) -> frozenset[str]:
    """Names of the query parameters that are integers in every route of ``openapi`` that has them.

    (In Hindsight 1.1.0: ``limit``, ``offset``, ``min_count``.) A name that is text in some route is left out: a
    long number is a valid search string.
    """
    integer: set[str] = set()
    other: set[str] = set()
    for item in openapi.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("in") != "query":
                    continue
                (integer if _is_integer(parameter.get("schema", {})) else other).add(parameter["name"])
    return frozenset(integer - other)


def _is_integer(schema: Mapping[str, Any]) -> bool:
    if schema.get("type") == "integer":
        return True
    variants = [v for v in schema.get("anyOf", []) if v.get("type") != "null"]
    return bool(variants) and all(_is_integer(v) for v in variants)

"""The input Hindsight cannot store is found, with a message that says where and what to do (pure: no server)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hindsight_isolation.bad_input import (
    INT32_MAX,
    INT64_MAX,
    INT64_MIN,
    MAX_JSON_DEPTH,
    BadInputError,
    NotJsonError,
    check_form_fields,
    check_headers,
    check_json,
    check_path,
    check_query,
    check_route_body,
    check_route_query,
    integer_query_parameters,
    parse_json,
)

INTEGERS = frozenset({"limit", "offset"})


def _refused(call: Any, *args: Any) -> str:
    with pytest.raises(BadInputError) as caught:
        call(*args)
    return str(caught.value)


def test_nul_in_the_path_is_refused_with_a_fix() -> None:
    message = _refused(check_path, "/v1/default/banks/b/documents/a\x00b")
    assert "NUL" in message
    assert "remove it" in message
    check_path("/v1/default/banks/user:alice:agent:support/documents/d-1")


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/v1/default/banks/b/directives/not-a-uuid", "directive_id"),
        ("/v1/default/banks/b/directives/urn:uuid:12345678-1234-1234-1234-123456789abc", "directive_id"),
        ("/v1/default/banks/b/memories/1.5/observations", "memory_id"),
    ],
)
def test_an_id_a_uuid_column_takes_unchecked_must_be_a_uuid(path: str, name: str) -> None:
    assert f"{name} " in _refused(check_path, path)
    check_path("/v1/default/banks/b/directives/12345678-1234-1234-1234-123456789ABC")
    check_path("/v1/default/banks/b/memories/123456781234123412341234567890ab/observations")
    check_path("/v1/default/banks/b/memories/not-a-uuid")  # Hindsight checks this one itself (400)
    check_path("/v1/default/banks/b/documents/not-a-uuid")  # document ids are text


def test_rest_bodies_take_32_bit_integers_and_json_rpc_64() -> None:
    check_json({"priority": INT32_MAX, "n": -INT32_MAX - 1}, int_max=INT32_MAX)
    assert "fit in 32 bits" in _refused(lambda: check_json({"priority": INT32_MAX + 1}, int_max=INT32_MAX))
    check_json({"jsonrpc": "2.0", "id": INT64_MAX})


@pytest.mark.parametrize(
    ("method", "path", "body", "fragment"),
    [
        ("POST", "/v1/default/banks/b/directives", {"name": "n" * 257}, "name is longer than 256"),
        ("PATCH", "/v1/default/banks/b/mental-models/m", {"name": "n" * 257}, "name is longer than 256"),
        ("POST", "/v1/default/banks/b/knowledge-base/pages", {"name": "n" * 257}, "name is longer than 256"),
        ("POST", "/v1/default/banks/b/import", {"directives": [{"name": "n" * 257}]}, "directives[0].name"),
        ("PATCH", "/v1/default/banks/b/webhooks/w", {"http_config": None}, "http_config"),
        ("PATCH", "/v1/default/banks/b/webhooks/w", {"url": None, "enabled": None}, "enabled, url: give a value"),
    ],
)
def test_route_bodies_within_what_their_columns_hold(method: str, path: str, body: Any, fragment: str) -> None:
    assert fragment in _refused(check_route_body, method, path, body)
    check_route_body(method, path, {"name": "n" * 256, "http_config": {}})
    check_route_body("PUT", "/v1/default/banks/b", {"name": "n" * 1000})  # a bank's name is text
    check_route_body("PATCH", "/v1/default/banks/b/webhooks/w", {"secret": None})  # null clears the secret


def test_a_webhook_deliveries_cursor_is_refused() -> None:
    path = "/v1/default/banks/b/webhooks/w/deliveries"
    assert "'cursor' cannot be used" in _refused(check_route_query, path, b"limit=5&cursor=2026-12-07T18%3A39%3A00Z")
    check_route_query(path, b"limit=5")
    check_route_query("/v1/default/banks/b/memories/list", b"cursor=x")


@pytest.mark.parametrize(
    ("query", "fragment"),
    [
        (b"q=a%00b", "query parameter 'q' contains a NUL"),
        (b"a%00=1", "a query parameter name contains a NUL"),
        (b"offset=" + str(2**70).encode(), "query parameter 'offset' is out of range"),
        (b"limit=-" + str(2**63 + 1).encode(), "query parameter 'limit' is out of range"),
    ],
)
def test_bad_query_parameters(query: bytes, fragment: str) -> None:
    assert fragment in _refused(check_query, query, INTEGERS)


def test_a_long_number_is_a_valid_search_string() -> None:
    # q is text: a 30-digit query is a search, not an integer out of range
    check_query(b"q=" + str(10**30).encode() + b"&limit=10&offset=" + str(INT64_MAX).encode(), INTEGERS)
    check_query(b"limit=abc", INTEGERS)  # not an integer at all: the route's own validation answers (422)
    check_query(b"", INTEGERS)


def test_headers_must_be_utf8() -> None:
    assert "header 'x-bank-id' is not valid UTF-8" in _refused(check_headers, [(b"x-bank-id", b"\xff\xfe")])
    check_headers([(b"authorization", b"Bearer abc"), (b"x-bank-id", "café".encode())])


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"query": "a\x00b"}, "body.query contains a NUL"),
        ({"items": [{"tags": ["ok", "\ud800"]}]}, "body.items[0].tags[1] contains a lone UTF-16 surrogate (U+D800)"),
        ({"metadata": {"k\x00": "v"}}, "a key in body.metadata contains a NUL"),
        ({"max_tokens": 2**64}, "body.max_tokens is out of range"),
        ({"max_tokens": INT64_MIN - 1}, "body.max_tokens is out of range"),
        ({"budget": float("inf")}, "body.budget is too large"),
    ],
)
def test_bad_json_values_are_located(body: Any, fragment: str) -> None:
    assert fragment in _refused(check_json, body)


def test_json_at_the_limits_passes() -> None:
    check_json({"n": INT64_MAX, "m": INT64_MIN, "f": 1.5, "b": True, "z": None, "s": "héllo 👋", "l": [[[]]]})


def test_nesting_is_bounded() -> None:
    nested: Any = "leaf"
    for _ in range(MAX_JSON_DEPTH):
        nested = [nested]
    check_json(nested)
    assert "nested too deeply" in _refused(check_json, [nested])


@pytest.mark.parametrize("depth", [200, 20_000])
def test_deeply_nested_bodies_are_refused_without_exhausting_the_stack(depth: int) -> None:
    body = b'{"q": ' + b"[" * depth + b"]" * depth + b"}"
    message = _refused(lambda raw: check_json(parse_json(raw)), body)
    assert "nested too deeply" in message


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b'{"n": NaN}', "NaN"),
        (b'{"n": -Infinity}', "-Infinity"),
        (b'{"n": ' + b"9" * 5000 + b"}", "out of range"),
        (b'{"q": 1e999}', None),  # parses to inf: refused by check_json
    ],
)
def test_numbers_json_does_not_allow(body: bytes, fragment: str | None) -> None:
    message = _refused(lambda raw: check_json(parse_json(raw)), body)
    if fragment:
        assert fragment in message


def test_not_json_is_told_apart() -> None:
    with pytest.raises(NotJsonError, match="not valid JSON: Expecting value"):
        parse_json(b"not json")
    with pytest.raises(NotJsonError, match="UTF-8"):
        parse_json(b'{"a": "\xff"}')
    assert parse_json(b'{"a": "\\u00e9"}') == {"a": "é"}


def test_form_fields_and_json_inside_them() -> None:
    assert "form field 'request'" in _refused(check_form_fields, [("request", '{"files_metadata": ["\\u0000"]}')])
    assert "form field 'note' contains a NUL" in _refused(check_form_fields, [("note", "a\x00")])
    deep = "[" * 20_000 + "]" * 20_000
    assert "nested too deeply" in _refused(check_form_fields, [("request", deep)])
    check_form_fields([("request", '{"files_metadata": [{"document_id": "d"}]}'), ("note", "{not json, fine")])


def test_integer_query_parameters_come_from_the_openapi_document() -> None:
    def param(name: str, schema: dict[str, Any], where: str = "query") -> dict[str, Any]:
        return {"name": name, "in": where, "schema": schema}

    openapi = {
        "paths": {
            "/a": {"get": {"parameters": [param("limit", {"type": "integer"}), param("q", {"type": "string"})]}},
            "/b": {
                "get": {
                    "parameters": [
                        param("offset", {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
                        param("page", {"type": "integer"}),
                        param("bank_id", {"type": "integer"}, where="path"),
                    ]
                },
                "parameters": [],
            },
            "/c": {"post": {"parameters": [param("page", {"type": "string"})]}},
        }
    }
    # page is text in one route: a long number there is legitimate, so it is not treated as an integer
    assert integer_query_parameters(openapi) == frozenset({"limit", "offset"})


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3),
    max_leaves=20,
)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, child in value.items() for s in [key, *_strings(child)]]
    if isinstance(value, list):
        return [s for child in value for s in _strings(child)]
    return []


@given(_JSON)
def test_whatever_passes_can_be_stored_as_jsonb(value: Any) -> None:
    """Anything the checks let through is strict JSON whose text PostgreSQL can hold (UTF-8, no NUL, int64)."""
    try:
        check_json(value)
    except BadInputError:
        return
    json.dumps(value, allow_nan=False)
    for text in _strings(value):
        text.encode("utf-8")
        assert "\x00" not in text

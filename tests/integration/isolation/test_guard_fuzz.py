"""Input the other sweeps do not send, on every route of the live OpenAPI document: Unicode and undecodable bytes in
each path parameter, malformed and repeated query strings, a valid body under the wrong or a broken content type,
chunked bodies, odd recall-deadline headers. Sent with the operator key on a bank of its own (so each request
reaches the route's code) and anonymously: never a 5xx, never the server's internals, and the server still serves."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from memory_adapter.identity import format_bank_id
from memory_adapter.recall_deadline import DEADLINE_HEADER
from tests.integration.isolation.support import Server
from tests.integration.isolation.sweep import Victim, openapi_routes, sweep_request
from tests.integration.isolation.test_bad_input import INTERNAL, _with_param

pytestmark = pytest.mark.integration

#: Path parameter values: Unicode, percent-encoded bytes that are not UTF-8 (or encode a surrogate), control
#: characters, a very long id.
_PATH_VALUES = {
    "unicode": "%C3%BC%F0%9F%98%80",
    "bytes not UTF-8": "%FF%FE",
    "encoded surrogate": "%ED%A0%80",
    "control characters": "a%01%1Fb",
    "very long": "n" * 5000,
}
#: Raw query strings appended to a route's own.
_QUERIES = {
    "bad escapes": "%zz=%G1&%=%",
    "bytes not UTF-8": "q=%FF%FE&limit=%FF",
    "repeated and odd integers": "limit=1&limit=-1&offset=x&offset=1e3&min_count=%2B5",
    "no values": "&&=&limit&offset=",
}
_CONTENT_TYPES = {
    "text/plain": "text/plain",
    "form for JSON": "application/x-www-form-urlencoded",
    "multipart without boundary": "multipart/form-data",
    "multipart empty boundary": "multipart/form-data; boundary=",
    "JSON declared UTF-16": "application/json; charset=utf-16",
}
_JSON = {"Content-Type": "application/json"}
#: Recall deadlines that are no number, or an odd one.
_DEADLINES = ("nan", "-inf", "-0", "1e308", "9" * 400, "1_000", "0x10", "\u0663")
Variants = Callable[[str, str, dict[str, Any]], Iterator[tuple[str, dict[str, Any]]]]


def _in_the_path(method: str, path: str, request: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name in re.findall(r"\{([^}]+)\}", path):
        for label, value in _PATH_VALUES.items():
            yield f"{label} in {name}", {**request, "path": _with_param(path, request["path"], name, value)}


def _in_the_query(method: str, path: str, request: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    base = httpx.URL(request["path"], params=request.get("params") or {})
    plain = {k: v for k, v in request.items() if k != "params"}
    for label, query in _QUERIES.items():
        joined = f"{base.query.decode()}&{query}" if base.query else query
        yield f"query {label}", {**plain, "path": f"{base.path}?{joined}"}


def _in_the_body(method: str, path: str, request: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    if path.endswith("/memories/recall"):
        for value in _DEADLINES:
            headers = {**request.get("headers", {}), DEADLINE_HEADER: value.encode("utf-8")}
            yield f"deadline {value[:10]!r}", {**request, "headers": headers}
    if method not in ("POST", "PUT", "PATCH"):
        return
    body = json.dumps(request.get("json", {})).encode()
    plain = {k: v for k, v in request.items() if k not in ("json", "files", "data", "content", "headers")}
    for label, content_type in _CONTENT_TYPES.items():
        yield f"content type {label}", {**plain, "content": body, "headers": {"Content-Type": content_type}}
    yield "chunked body", {**plain, "content": _Chunked(body), "headers": _JSON}
    yield "empty JSON body", {**plain, "content": b"", "headers": _JSON}
    yield "body in UTF-16", {**plain, "content": body.decode().encode("utf-16"), "headers": _JSON}


class _Chunked:
    """A body httpx sends chunked (no Content-Length), in two pieces, as often as it is sent."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def __iter__(self) -> Iterator[bytes]:
        return iter([self.body[:1], self.body[1:]])


@pytest.fixture(scope="module")
def dora(iso: Server) -> tuple[str, Victim]:
    """A user and a bank of the sweep's own (the operator reaches every route's code on it)."""
    user = f"dora-fuzz-{uuid.uuid4().hex[:8]}"
    bank = format_bank_id(user=user, agent="support")
    assert iso.api(iso.mint(user, ttl=3600)).retain(bank, "Dora keeps goats.", document_id="d-1").status_code == 200
    return user, Victim(bank=bank, ids={"document_id": "d-1"})


@pytest.mark.parametrize("variants", [_in_the_path, _in_the_query, _in_the_body], ids=["path", "query", "body"])
def test_no_route_answers_odd_input_with_a_5xx(iso: Server, dora: tuple[str, Victim], variants: Variants) -> None:
    # GIVEN every route of the live OpenAPI document, on a bank of the sweep's own
    spec, routes = openapi_routes(iso)
    user, own = dora
    failures: list[str] = []
    attempts = 0
    operator = iso.api(iso.operator_key)
    callers = (("operator", operator), ("anonymous", iso.api(None)))
    try:
        for method, path, op in routes:
            if method == "DELETE" and path.endswith("/banks/{bank_id}"):
                continue  # the bank must outlive the sweep
            request = sweep_request(method, path, op, own, spec, caller=user)
            for attack, variant in variants(method, path, request):
                for who, api in callers:
                    # WHEN the odd variant is sent, with the operator key and without a credential
                    response = api.call(**variant)
                    attempts += 1
                    # THEN a deliberate answer: never a 5xx, never the server's internals
                    if response.status_code >= 500 or INTERNAL.search(response.text):
                        failures.append(
                            f"{method} {path} [{attack}, {who}] -> {response.status_code} {response.text[:150]}"
                        )
    finally:
        # the operator's odd bank ids made banks on the shared server: the suites that back up or export every
        # bank must not meet them (Hindsight 1.1.0 answers 500 to a download whose bank id is not Latin-1)
        for value in _PATH_VALUES.values():
            operator.call("DELETE", f"/v1/default/banks/{value}")
    assert not failures, "\n".join(failures)
    assert attempts >= 100
    # AND the server still serves (a bank the sweep did not touch: its own bank's routes delete what it holds)
    assert httpx.get(f"{iso.url}/health", timeout=30).json()["status"] == "healthy"
    fresh = f"fay-fuzz-{uuid.uuid4().hex[:8]}"
    bank, fay = format_bank_id(user=fresh, agent="support"), iso.api(iso.mint(fresh, ttl=3600))
    assert fay.retain(bank, "Fay keeps bees.").status_code == 200
    assert fay.texts(bank, "bees") == ["Fay keeps bees."]


def test_a_directive_for_a_bank_that_does_not_exist_yet_is_a_404_that_says_what_to_do(iso: Server) -> None:
    # GIVEN a user whose bank does not exist yet (no retain so far), and the operator
    user = f"erin-new-{uuid.uuid4().hex[:8]}"
    bank = format_bank_id(user=user, agent="support")
    erin = iso.api(iso.mint(user, ttl=3600))
    directive = {"name": "tone", "content": "Answer briefly."}
    for api in (erin, iso.api(iso.operator_key)):
        # WHEN a directive is created for it
        response = api.call("POST", f"/v1/default/banks/{bank}/directives", json=directive)
        # THEN a 404 that names the way forward (Hindsight alone: a foreign-key error, 500)
        assert response.status_code == 404, response.text[:300]
        assert "does not exist yet" in response.json()["detail"]
        assert not INTERNAL.search(response.text)
    # AND once the bank exists, the same request is served
    assert erin.retain(bank, "Erin likes short answers.").status_code == 200
    assert erin.call("POST", f"/v1/default/banks/{bank}/directives", json=directive).status_code == 200


def test_a_second_directive_of_one_name_is_a_409_and_the_template_export_keeps_working(iso: Server) -> None:
    # GIVEN a user's bank with a directive named "tone"
    user = f"gus-dup-{uuid.uuid4().hex[:8]}"
    bank = format_bank_id(user=user, agent="support")
    gus = iso.api(iso.mint(user, ttl=3600))
    assert gus.retain(bank, "Gus likes short answers.").status_code == 200
    base = f"/v1/default/banks/{bank}/directives"
    first = gus.call("POST", base, json={"name": "tone", "content": "Answer briefly."})
    other = gus.call("POST", base, json={"name": "style", "content": "Use lists."})
    assert (first.status_code, other.status_code) == (200, 200), (first.text, other.text)
    # WHEN a second directive takes that name, created or renamed (Hindsight alone keeps both, and every export of
    # the bank's template then answers 500)
    again = gus.call("POST", base, json={"name": "tone", "content": "Answer at length."})
    renamed = gus.call("PATCH", f"{base}/{other.json()['id']}", json={"name": "tone"})
    # THEN a 409 that says what to do, and the export still works
    for response in (again, renamed):
        assert response.status_code == 409, response.text[:300]
        assert "exists in this bank already" in response.json()["detail"]
    assert gus.call("PATCH", f"{base}/{first.json()['id']}", json={"name": "tone", "priority": 3}).status_code == 200
    export = gus.call("GET", f"/v1/default/banks/{bank}/export")
    assert export.status_code == 200, export.text[:300]
    assert sorted(d["name"] for d in export.json()["directives"]) == ["style", "tone"]

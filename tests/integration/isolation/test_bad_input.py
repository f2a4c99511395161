"""Malformed input gets a 4xx that says what is wrong, on every route, over REST and MCP (in the path, query and
headers before authentication; in a body after it: an anonymous body is refused with Hindsight's 401, unread); never a
500, never a database driver's text; and the server stays healthy."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from memory_adapter.identity import format_bank_id
from tests.integration.isolation.support import Api, Server
from tests.integration.isolation.sweep import Victim, openapi_routes, sweep_request

pytestmark = pytest.mark.integration

#: What must never reach a caller: a driver's or the interpreter's text.
INTERNAL = re.compile(
    r"asyncpg|psycopg|invalid byte sequence|int64|CharacterNotInRepertoire|Traceback|RecursionError|"
    r"UnicodeEncodeError|surrogates not allowed|unsupported Unicode escape|Internal Server Error",
    re.IGNORECASE,
)
DEEP = b'{"query": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"
JSON = {"Content-Type": "application/json"}
#: Cases whose fault is in the path, checked before authentication (a body, if any, is never read).
IN_THE_PATH = frozenset({"NUL in a bank id", "directive id not a UUID (update)"})
#: Hindsight's 401 text, which the guard also answers to a body it does not read.
UNAUTHORIZED = "Authentication failed: unauthorized"


@dataclass
class Caller:
    api: Api
    token: str | None
    bank: str


@pytest.fixture(scope="module")
def alice(iso: Server) -> Caller:
    user = f"alice-bad-{uuid.uuid4().hex[:8]}"
    token = iso.mint(user, ttl=3600)
    bank = format_bank_id(user=user, agent="support")
    api = iso.api(token)
    assert api.retain(bank, "Alice keeps bees.", document_id="a-1").status_code == 200
    return Caller(api, token, bank)


def _assert_clear_refusal(response: httpx.Response, *, status: int = 400, says: str | None = None) -> str:
    assert response.status_code == status, response.text[:300]
    assert not INTERNAL.search(response.text), response.text[:300]
    body = response.json()
    message = str(body.get("detail") or body.get("error", {}).get("message"))
    if says:
        assert says in message, message
    return message


def _healthy(iso: Server) -> None:
    response = httpx.get(f"{iso.url}/health", timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "healthy"


@pytest.mark.parametrize("anonymous", [False, True], ids=["authenticated", "anonymous"])
@pytest.mark.parametrize(
    ("name", "method", "path", "kwargs", "says"),
    [
        ("NUL in a document id", "GET", "{base}/documents/a%00b", {}, "NUL"),
        ("NUL in a document's chunks", "GET", "{base}/documents/a%00b/chunks", {}, "NUL"),
        ("NUL in a recall tag", "POST", "{base}/memories/recall", {"json": {"query": "x", "tags": ["a\x00"]}}, "NUL"),
        ("NUL in a list query", "GET", "{base}/memories/list", {"params": {"q": "a\x00b"}}, "NUL"),
        ("NUL in a bank search", "GET", "/v1/default/banks", {"params": {"q": "a\x00b"}}, "NUL"),
        ("NUL in a chunk id", "GET", "/v1/default/chunks/a%00b", {}, "NUL"),
        ("NUL in a bank id", "POST", "/v1/default/banks/a%00b/memories", {"json": {"items": []}}, "NUL"),
        (
            "NUL in a retained document id",
            "POST",
            "{base}/memories",
            {"json": {"items": [{"content": "x", "document_id": "d\x00"}]}},
            "NUL",
        ),
        (
            "lone surrogate",
            "POST",
            "{base}/memories/recall",
            {"content": b'{"query": "\\ud800"}', "headers": JSON},
            "surrogate",
        ),
        ("20,000 levels of JSON", "POST", "{base}/memories/recall", {"content": DEEP, "headers": JSON}, "deeply"),
        ("offset beyond 64 bits", "GET", "{base}/memories/list", {"params": {"offset": str(2**70)}}, "offset"),
        ("limit beyond 64 bits", "GET", "{base}/documents", {"params": {"limit": str(2**64)}}, "limit"),
        (
            "integer beyond 64 bits in JSON",
            "POST",
            "{base}/memories/recall",
            {"content": b'{"query": "x", "max_tokens": 1' + b"0" * 30 + b"}", "headers": JSON},
            "32 bits",
        ),
        # Found by fuzzing the caller's own bank: Hindsight hands these to PostgreSQL unchecked and answered 500.
        ("directive id not a UUID", "GET", "{base}/directives/not-a-uuid", {}, "UUID"),
        ("directive id not a UUID (update)", "PATCH", "{base}/directives/1.5", {"json": {"name": "x"}}, "UUID"),
        ("memory id not a UUID", "DELETE", "{base}/memories/not-a-uuid/observations", {}, "UUID"),
        (
            "integer beyond 32 bits in a stored field",
            "POST",
            "{base}/directives",
            {"json": {"name": "tone", "content": "Be brief.", "priority": 2**31}},
            "32 bits",
        ),
        (
            "directive name longer than its column",
            "POST",
            "{base}/directives",
            {"json": {"name": "n" * 257, "content": "Be brief."}},
            "256",
        ),
        (
            "mental model name longer than its column",
            "POST",
            "{base}/mental-models",
            {"json": {"name": "n" * 257, "source_query": "x"}},
            "256",
        ),
        (
            "knowledge page name longer than its column",
            "POST",
            "{base}/knowledge-base/pages",
            {"json": {"name": "n" * 257, "source_query": "x"}},
            "256",
        ),
        (
            "webhook update with a null http_config",
            "PATCH",
            "{base}/webhooks/00000000-0000-0000-0000-000000000000",
            {"json": {"http_config": None}},
            "http_config",
        ),
        (
            "webhook update nulling a required field",
            "PATCH",
            "{base}/webhooks/00000000-0000-0000-0000-000000000000",
            {"json": {"url": None}},
            "url",
        ),
        (
            "webhook deliveries cursor",
            "GET",
            "{base}/webhooks/00000000-0000-0000-0000-000000000000/deliveries",
            {"params": {"cursor": "2026-12-07T18:39:00+00:00"}},
            "cursor",
        ),
        (
            "infinite number",
            "POST",
            "{base}/memories/recall",
            {"content": b'{"query": "x", "max_tokens": 1e999}', "headers": JSON},
            "finite",
        ),
        (
            "NaN",
            "POST",
            "{base}/memories/recall",
            {"content": b'{"query": "x", "max_tokens": NaN}', "headers": JSON},
            "NaN",
        ),
        ("not JSON", "POST", "{base}/memories/recall", {"content": b"{query", "headers": JSON}, "not valid JSON"),
        ("header not UTF-8", "GET", "{base}/stats", {"headers": {"X-Trace": b"\xff\xfe"}}, "UTF-8"),
        (
            "NUL in a file-retain request",
            "POST",
            "{base}/files/retain",
            {
                "files": {"files": ("a.txt", b"Alice keeps bees.", "text/plain")},
                "data": {"request": '{"files_metadata": [{"document_id": "a\\u0000b"}]}'},
            },
            "NUL",
        ),
        (
            "deep JSON in a file-retain request",
            "POST",
            "{base}/files/retain",
            {"files": {"files": ("a.txt", b"x", "text/plain")}, "data": {"request": "[" * 20_000 + "]" * 20_000}},
            "deeply",
        ),
        (
            "NUL in a template import",
            "POST",
            "{base}/import",
            {"content": b'{"bank": {"retain_mission": "a\\u0000"}}', "headers": {"Content-Type": "text/plain"}},
            "NUL",
        ),
    ],
)
def test_malformed_input_gets_a_clear_400(
    iso: Server, alice: Caller, anonymous: bool, name: str, method: str, path: str, kwargs: dict[str, Any], says: str
) -> None:
    api = iso.api(None) if anonymous else alice.api
    response = api.call(method, path.format(base=f"/v1/default/banks/{alice.bank}"), **kwargs)
    if anonymous and kwargs.keys() & {"json", "content", "data", "files"} and name not in IN_THE_PATH:
        _assert_clear_refusal(response, status=401, says=UNAUTHORIZED)  # refused before its body is read
    else:
        _assert_clear_refusal(response, says=says)
    _healthy(iso)


@pytest.mark.parametrize("anonymous", [False, True], ids=["authenticated", "anonymous"])
def test_mcp_gets_json_rpc_errors_for_malformed_input(iso: Server, alice: Caller, anonymous: bool) -> None:
    token = None if anonymous else alice.token
    url = f"{iso.url}/mcp/"
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    cases = {
        "deep": DEEP,
        "surrogate": b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "recall", '
        b'"arguments": {"query": "\\udc00"}}}',
        "NUL": b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "retain", '
        b'"arguments": {"content": "a\\u0000b"}}}',
    }
    for body in cases.values():
        response = httpx.post(url, content=body, headers=headers, timeout=60)
        if anonymous:  # the body is never read: Hindsight's MCP 401
            assert (response.status_code, response.json()) == (401, {"error": UNAUTHORIZED})
            continue
        _assert_clear_refusal(response)
        assert response.json()["jsonrpc"] == "2.0"
    for name, value in (("X-Bank-Id", b"\xff"), ("Authorization", b"Bearer \xff\xfe")):
        raw = [(k.encode(), v.encode()) for k, v in headers.items() if k != name] + [(name.encode(), value)]
        response = httpx.post(url, content=b"{}", headers=raw, timeout=60)
        _assert_clear_refusal(response, says="UTF-8")
    response = httpx.post(f"{iso.url}/mcp/a%00b/", content=b"{}", headers=headers, timeout=60)
    _assert_clear_refusal(response, says="NUL")
    _healthy(iso)


def _attacks(
    method: str, path: str, op: dict[str, Any], request: dict[str, Any]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Malformed variants of one valid request: NUL in each path parameter and query parameter, a deep body, a
    lone surrogate in the body, each integer query parameter beyond 64 bits."""
    template_params = re.findall(r"\{([^}]+)\}", path)
    for name in template_params:
        bare = name.split(":")[0]
        yield f"NUL in {bare}", {**request, "path": re.sub(r"\{" + re.escape(name) + r"\}", "x%00y", path)}
    for parameter in op.get("parameters", []):
        if parameter.get("in") != "query":
            continue
        schema = parameter.get("schema", {})
        kinds = {schema.get("type"), *(v.get("type") for v in schema.get("anyOf", []))}
        params = dict(request.get("params", {}))
        if "integer" in kinds:
            yield (
                f"{parameter['name']} beyond 64 bits",
                {**request, "params": {**params, parameter["name"]: str(2**70)}},
            )
        else:
            yield f"NUL in {parameter['name']}", {**request, "params": {**params, parameter["name"]: "a\x00"}}
    if method in ("POST", "PUT", "PATCH", "DELETE"):
        plain = {k: v for k, v in request.items() if k not in ("json", "files", "data")}
        yield "deep body", {**plain, "content": DEEP, "headers": JSON}
        yield "lone surrogate in the body", {**plain, "content": b'{"name": "\\ud800", "query": "x"}', "headers": JSON}


def test_no_route_answers_malformed_input_with_a_500(iso: Server, victim: Victim, alice: Caller) -> None:
    # GIVEN every route of the live OpenAPI document, with real ids (bob's) where a valid request needs them
    spec, routes = openapi_routes(iso)
    failures = []
    attempts = 0
    for method, path, op in routes:
        request = sweep_request(method, path, op, victim, spec, caller="mallory")
        for attack, variant in _attacks(method, path, op, request):
            for who, api in (("alice", alice.api), ("anonymous", iso.api(None))):
                # WHEN the malformed variant is sent, with a valid token and without one
                response = api.call(**variant)
                attempts += 1
                # THEN a 4xx that leaks nothing of the server's internals
                if not 400 <= response.status_code < 500 or INTERNAL.search(response.text):
                    failures.append(
                        f"{method} {path} [{attack}, {who}] -> {response.status_code} {response.text[:150]}"
                    )
    assert not failures, "\n".join(failures)
    assert attempts >= 400
    _healthy(iso)
    assert alice.api.texts(alice.bank, "bees") == ["Alice keeps bees."]  # and it still serves


def _out_of_range(
    method: str, path: str, op: dict[str, Any], request: dict[str, Any], spec: dict[str, Any]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Well-formed values a column cannot hold, or a route does not expect: an id that is no UUID in each path
    parameter but the bank, and in each top-level field of the JSON body an integer beyond 32 bits, a 300-character
    string, or null."""
    for name in re.findall(r"\{([^}]+)\}", path):
        if name != "bank_id":
            filled = {k: v for k, v in request.items() if k != "path"}
            yield f"{name} not a UUID", {**filled, "path": _with_param(path, request["path"], name, "not-a-uuid")}
    body = request.get("json")
    schema = (op.get("requestBody") or {}).get("content", {}).get("application/json", {}).get("schema", {})
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    if not isinstance(body, dict):
        return
    for field, field_schema in schema.get("properties", {}).items():
        kinds = {field_schema.get("type"), *(v.get("type") for v in field_schema.get("anyOf", []))}
        if "integer" in kinds:
            yield f"{field} beyond 32 bits", {**request, "json": {**body, field: 2**31}}
        if "string" in kinds:
            yield f"{field} of 300 characters", {**request, "json": {**body, field: "n" * 300}}
        yield f"{field} null", {**request, "json": {**body, field: None}}


def _with_param(template: str, filled: str, name: str, value: str) -> str:
    """``filled`` (``template`` with its parameters filled in) with parameter ``name`` set to ``value``."""
    names = re.findall(r"\{([^}]+)\}", template)
    pattern = re.escape(template)
    for each in names:
        pattern = pattern.replace(re.escape("{" + each + "}"), "(.+?)", 1)
    found = re.fullmatch(pattern, filled)
    assert found is not None, (template, filled)
    values = dict(zip(names, found.groups(), strict=True)) | {name: value}
    return re.sub(r"\{([^}]+)\}", lambda m: values[m.group(1)], template)


def test_no_route_answers_a_500_to_values_out_of_range_on_a_bank_it_may_use(iso: Server) -> None:
    # GIVEN a bank with a memory and the operator key, which passes every authorization check (so each request
    # reaches the route's own code; a user token reaches the same code on its own bank, or is refused before it)
    user = f"carol-range-{uuid.uuid4().hex[:8]}"
    bank = format_bank_id(user=user, agent="support")
    operator = iso.api(iso.operator_key)
    assert iso.api(iso.mint(user, ttl=3600)).retain(bank, "Carol grows figs.", document_id="c-1").status_code == 200
    own = Victim(bank=bank, ids={"document_id": "c-1"})
    spec, routes = openapi_routes(iso)
    failures, attempts = [], 0
    for method, path, op in routes:
        if method == "DELETE" and path.endswith("/banks/{bank_id}"):
            continue  # the bank must outlive the sweep
        request = sweep_request(method, path, op, own, spec, caller=user)
        for attack, variant in _out_of_range(method, path, op, request, spec):
            # WHEN a value out of range is sent on a route
            response = operator.call(**variant)
            attempts += 1
            # THEN a deliberate answer: a 2xx or a 4xx that leaks nothing, never a 500
            if response.status_code >= 500 or INTERNAL.search(response.text):
                failures.append(f"{method} {path} [{attack}] -> {response.status_code} {response.text[:150]}")
    assert not failures, "\n".join(failures)
    assert attempts >= 200
    _healthy(iso)


def test_no_request_got_a_500_or_went_unguarded(iso: Server) -> None:
    # Run after the attacks above (and whatever ran before in this session): the guard replaces the body of any 500
    # and says so in the log, and the validator logs any request that reached it without the guard's label.
    if iso.server_log is None:
        pytest.skip("the server log is not reachable (external server)")
    log = iso.log_text()
    assert "hindsight_isolation: request guard in front of every route" in log
    assert "replaced the body of a 500" not in log
    assert "did not pass the request guard" not in log

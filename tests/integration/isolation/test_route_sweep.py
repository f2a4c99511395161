"""Every route of the running server's OpenAPI document that names a bank refuses another user's token.

The routes come from the server itself, so a Hindsight upgrade that adds a route is swept without a test change.
Sub-resource ids are real ones from the victim's bank (a memory, a document, a chunk, a mental model, an operation,
an export archive, ...), so a route cannot pass by answering "not found" before it authorizes.
"""

from __future__ import annotations

import uuid

import pytest

from tests.integration.isolation.support import FORBIDDEN, Server
from tests.integration.isolation.sweep import Victim, openapi_routes, sweep_request

pytestmark = pytest.mark.integration

#: Routes that answer without authorizing, and why that is safe (nothing of the bank is read or changed).
NOT_BANK_SCOPED = {
    "GET /health": "liveness/readiness, no bank data",
    "GET /health/live": "liveness, no bank data",
    "GET /health/ready": "readiness, no bank data",
    "GET /version": "server version",
    "GET /metrics": "Prometheus counters; bank ids are excluded (the extension refuses METRICS_INCLUDE_BANK_ID)",
    "GET /v1/bank-template-schema": "a static JSON schema",
    "GET /v1/default/banks": "the bank list: filtered to the caller's banks (tested separately)",
}
#: Bank routes Hindsight 1.1.0 answers before any bank access, with no bank data in the answer.
REMOVED_OR_DISABLED = {
    "GET /v1/default/banks/{bank_id}/profile": 410,
    "PUT /v1/default/banks/{bank_id}/profile": 410,
    "POST /v1/default/banks/{bank_id}/background": 410,
    "GET /v1/default/banks/{bank_id}/document-transfer": 410,
    "POST /v1/default/banks/{bank_id}/entities/{entity_id}/regenerate": 410,
    "POST /v1/default/banks/{bank_id}/health/llm": 404,  # disabled unless HINDSIGHT_API_ENABLE_BANK_LLM_HEALTH
    # Off while users are served (HINDSIGHT_API_ENABLE_DOCUMENT_IMPORT_API=false, as deployed); with the switch on
    # they are the operator's (test_transfers.py sweeps them on a server that has it on).
    "POST /v1/default/banks/{bank_id}/transfer/import": 404,
    "POST /v1/default/banks/{bank_id}/clone": 404,
    "POST /v1/default/banks/{bank_id}/document-transfer": 404,
}


#: Lookups by an object id whose route names no bank: Hindsight finds the object before it authorizes, so a refusal
#: answers what a missing object answers (the same 404 and body; test_oracles.py compares the two).
REFUSED_AS_NOT_FOUND = {
    "GET /v1/default/chunks/{chunk_id}": {"detail": "Chunk not found"},
}


def test_openapi_lists_the_routes_we_know(iso: Server) -> None:
    _, routes = openapi_routes(iso)
    names = {f"{m} {p}" for m, p, _ in routes}
    assert len(names) >= 95  # hindsight-api 1.1.0 has 100; fewer means the document changed shape
    assert set(NOT_BANK_SCOPED) <= names
    assert set(REMOVED_OR_DISABLED) <= names


def test_every_bank_route_refuses_another_users_token(iso: Server, victim: Victim) -> None:
    # GIVEN mallory's valid token and bob's bank full of data
    caller = f"mallory-{uuid.uuid4().hex[:6]}"
    mallory = iso.api(iso.mint(caller, ttl=3600))
    spec, routes = openapi_routes(iso)
    leaks: list[str] = []
    swept = 0
    for method, path, op in routes:
        name = f"{method} {path}"
        if name in NOT_BANK_SCOPED:
            continue
        # WHEN she calls the route on bob's bank (or on one of bob's chunks or files)
        response = mallory.call(**sweep_request(method, path, op, victim, spec, caller=caller))
        swept += 1
        # THEN it is refused with a bare 403 (a lookup naming no bank: its not-found answer; a removed or disabled
        # route: its fixed answer, with no bank data)
        if name in REFUSED_AS_NOT_FOUND:
            refused = (response.status_code, response.json()) == (404, REFUSED_AS_NOT_FOUND[name])
        else:
            expected = REMOVED_OR_DISABLED.get(name, 403)
            refused = response.status_code == expected and (expected != 403 or response.json() == FORBIDDEN)
        if not refused:
            leaks.append(f"{name} -> {response.status_code} {response.text[:160]}")
    assert not leaks, "routes that did not refuse another user's token:\n" + "\n".join(leaks)
    assert swept >= 88


def test_sweep_requests_are_valid_for_the_owner(iso: Server, victim: Victim) -> None:
    """The sweep's requests are real: the operator gets past authorization on the data-reading routes."""
    operator = iso.api(iso.operator_key)
    spec, routes = openapi_routes(iso)
    for name in (
        "GET /v1/default/chunks/{chunk_id}",
        "GET /v1/default/files/download/{key}",
        "GET /v1/default/banks/{bank_id}/mental-models/{mental_model_id}",
        "GET /v1/default/banks/{bank_id}/memories/{memory_id}",
        "GET /v1/default/banks/{bank_id}/operations/{operation_id}",
        "GET /v1/default/banks/{bank_id}/documents/{document_id}",
    ):
        method, path, op = next(r for r in routes if f"{r[0]} {r[1]}" == name)
        response = operator.call(**sweep_request(method, path, op, victim, spec, caller="operator"))
        assert response.status_code == 200, f"{name}: {response.status_code} {response.text[:200]}"

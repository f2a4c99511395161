"""The schema check itself (``tests/wire_schema.py``), without a server: it finds the client's routes, accepts what the
wire sends and refuses what the client's models do not know; and the one parser of a memory unit reads only fields
the client's models have. The live check of every request and answer is ``tests/integration/memory_adapter/``'s."""

from __future__ import annotations

import pytest

from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.testing import MockTransport
from memory_adapter.transport import HttpRequest, HttpResponse
from tests.wire_schema import ClientSchema, model_in

BANK = "user:alex:agent:support"


@pytest.fixture(scope="module")
def schema() -> ClientSchema:
    return ClientSchema()


def _recall_request() -> HttpRequest:
    """The recall request the wire sends, as it sends it."""
    transport = MockTransport(lambda request: HttpResponse(200, {"results": []}))
    HindsightApi(transport, timeout=1.0).recall(BANK, "email?", budget="mid", max_tokens=1024, deadline_ms=500)
    (request,) = transport.requests
    return request


def test_the_wires_recall_is_the_clients_recall_and_fits_its_model(schema: ClientSchema) -> None:
    request = _recall_request()
    route = schema.route(request)
    assert route is not None
    assert route.name == "recall_memories"
    assert schema.request_problems(route, request) == []


def test_a_field_or_value_the_client_does_not_know_is_a_problem(schema: ClientSchema) -> None:
    request = _recall_request()
    route = schema.route(request)
    assert route is not None
    unknown = HttpRequest(request.method, request.path, body={**request.body, "bogus": 1}, timeout=1.0)
    retyped = HttpRequest(request.method, request.path, body={**request.body, "max_tokens": "many"}, timeout=1.0)
    nested = HttpRequest(
        request.method, request.path, body={**request.body, "include": {"entities": {"x": 1}}}, timeout=1
    )
    assert schema.request_problems(route, unknown) == [
        "POST /v1/default/banks/{bank_id}/memories/recall request: RecallRequest has no field 'bogus'"
    ]
    assert "max_tokens" in " ".join(schema.request_problems(route, retyped))
    assert schema.request_problems(route, nested)
    answer = HttpResponse(200, {"results": [{"id": "m1", "text": "x", "surprise": True}]})
    assert schema.answer_problems(route, answer) == [
        "200 answer to /v1/default/banks/{bank_id}/memories/recall.results: RecallResult has no field 'surprise'"
    ]


def test_a_route_or_query_parameter_the_client_does_not_have_is_found(schema: ClientSchema) -> None:
    assert schema.route(HttpRequest("GET", f"/v1/default/banks/{BANK}/memories/all/of/them", timeout=1)) is None
    query = "limit=5&tags=kind:fact&tags_match=any_strict&sort=new"
    listing = HttpRequest("GET", f"/v1/default/banks/{BANK}/memories/list?{query}", timeout=1)
    route = schema.route(listing)
    assert route is not None
    assert route.name == "list_memories"  # the literal route, not /memories/{memory_id}
    assert schema.request_problems(route, listing) == [
        "GET /v1/default/banks/{bank_id}/memories/list: query parameter 'sort' unknown to the client"
    ]
    operations = HttpRequest("GET", f"/v1/default/banks/{BANK}/operations?limit=1000", timeout=1)
    route = schema.route(operations)
    assert route is not None
    (problem,) = schema.request_problems(route, operations)
    assert problem.startswith("GET /v1/default/banks/{bank_id}/operations: query parameter limit=['1000'] refused")


def test_the_parser_reads_only_fields_the_clients_memory_models_have(schema: ClientSchema) -> None:
    # memory_from reads these keys of a recall result or a listed unit (a looked-up unit has no model in the client)
    read = {"text", "type", "fact_type", "mentioned_at", "id", "document_id", "tags", "metadata", "scores"}
    read |= {"source_fact_ids", "source_memory_ids"}
    fields: set[str] = set()
    scores: set[str] = set()
    for route in schema.routes:
        if route.name in ("recall_memories", "list_memories"):
            assert route.answer is not None
            for listed in route.answer.model_fields.values():
                unit = model_in(listed.annotation)
                fields |= set(unit.model_fields) if unit is not None else set()
                score = (
                    model_in(unit.model_fields["scores"].annotation) if unit and "scores" in unit.model_fields else None
                )
                scores |= set(score.model_fields) if score is not None else set()
    assert read - fields == set()
    assert "semantic" in scores

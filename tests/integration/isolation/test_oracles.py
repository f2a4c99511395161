"""No answer tells one user whether another user's object exists: a real id of someone else's object gets exactly
what an unused id gets (status and body), on every route and MCP tool that looks an object up by id.

The attacker (mallory) knows real ids from bob's bank (a leak, a shared screenshot) and tries them on her own bank,
on the routes that name no bank, and as a caller-chosen operation id.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from memory_adapter.identity import format_bank_id
from tests.integration.isolation.support import Api, Mcp, Server
from tests.integration.isolation.sweep import Victim, openapi_routes, sweep_request

pytestmark = pytest.mark.integration


@dataclass
class Mallory:
    api: Api
    token: str
    user: str
    bank: str


@pytest.fixture(scope="module")
def mallory(iso: Server) -> Mallory:
    user = f"mallory-oracle-{uuid.uuid4().hex[:8]}"
    token = iso.mint(user, ttl=3600)
    bank = format_bank_id(user=user, agent="support")
    api = iso.api(token)
    assert api.retain(bank, "Mallory grows tomatoes.", document_id="m-1").status_code == 200
    return Mallory(api, token, user, bank)


def _normalized(text: str, *ids: str) -> str:
    for value in ids:
        text = text.replace(value, "<id>")
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", text)


def test_a_chunk_lookup_reads_the_same_for_someone_elses_chunk_and_a_missing_one(
    iso: Server, victim: Victim, mallory: Mallory
) -> None:
    # GIVEN bob's real chunk id (the chunk route names no bank: the bank is read from the chunk)
    real = victim.ids["chunk_id"]
    missing_in_bobs_bank = f"{victim.bank}_no-such-document_0"
    missing_in_her_own = f"{mallory.bank}_no-such-document_0"
    # WHEN mallory looks each up
    answers = [mallory.api.call("GET", f"/v1/default/chunks/{chunk}") for chunk in (real, missing_in_bobs_bank)]
    own = mallory.api.call("GET", f"/v1/default/chunks/{missing_in_her_own}")
    # THEN the same 404, body included, as for her own missing chunk
    assert [(r.status_code, r.json()) for r in answers] == [(own.status_code, own.json())] * 2
    assert own.status_code == 404
    # AND the chunk is still there for those allowed to read it
    assert iso.api(iso.operator_key).call("GET", f"/v1/default/chunks/{real}").status_code == 200


def test_reusing_another_banks_operation_id_answers_like_an_unused_one(
    iso: Server, victim: Victim, mallory: Mallory
) -> None:
    def retain(operation_id: str) -> tuple[int, dict[str, Any]]:
        body = {"items": [{"content": "Mallory waters the tomatoes."}], "async": True, "operation_id": operation_id}
        response = mallory.api.call("POST", f"/v1/default/banks/{mallory.bank}/memories", json=body)
        return response.status_code, response.json()

    bobs = victim.ids["operation_id"]  # an operation of bob's, by the id Hindsight reports for it
    unused = str(uuid.uuid4())
    (bob_status, bob_body), (unused_status, unused_body) = retain(bobs), retain(unused)
    assert bob_status == unused_status == 200, (bob_body, unused_body)
    assert sorted(bob_body) == sorted(unused_body)
    # a re-sent retain still finds its first operation (the idempotency the adapter's spool relies on)
    assert retain(unused)[1]["operation_id"] == unused_body["operation_id"]
    # AND bob's operation is untouched
    operator = iso.api(iso.operator_key)
    bob_op = operator.call("GET", f"/v1/default/banks/{victim.bank}/operations/{bobs}").json()
    assert bob_op["status"] == "completed"


#: Path parameters that are not object ids looked up in a bank.
_NOT_OBJECT_IDS = {"bank_id", "alias"}


def _object_routes(iso: Server) -> tuple[dict[str, Any], list[tuple[str, str, dict[str, Any]]]]:
    spec, routes = openapi_routes(iso)
    chosen = []
    for method, path, op in routes:
        params = {name.split(":")[0] for name in re.findall(r"\{([^}]+)\}", path)} - _NOT_OBJECT_IDS
        if params:
            chosen.append((method, path, op))
    return spec, chosen


def _fake_ids(victim: Victim, mallory: Mallory) -> Victim:
    """Same-shaped ids nobody uses (a chunk or a file key in the same bank as the real one)."""
    ids = {name: str(uuid.uuid4()) for name in victim.ids}
    ids["document_id"] = f"no-such-document-{uuid.uuid4().hex[:6]}"
    ids["chunk_id"] = f"{victim.bank}_{ids['document_id']}_0"
    ids["key"] = victim.ids["key"].replace(victim.bank, mallory.bank).rsplit("/", 2)[0] + f"/{uuid.uuid4()}/x.zip"
    return Victim(bank=mallory.bank, ids=ids)


def test_no_route_tells_a_real_id_of_someone_elses_object_from_an_unused_one(
    iso: Server, victim: Victim, mallory: Mallory
) -> None:
    # GIVEN every route that looks an object up by id, bob's real ids, and unused ids of the same shape
    spec, routes = _object_routes(iso)
    real = Victim(bank=mallory.bank, ids=dict(victim.ids))  # bob's ids, on mallory's own bank
    real.ids["key"] = victim.ids["key"].replace(victim.bank, mallory.bank)  # bob's export's key, under her bank
    fake = _fake_ids(victim, mallory)
    differences = []
    for method, path, op in routes:
        # WHEN mallory tries each (bob's id, then an unused one)
        answers = []
        for ids in (real, fake):
            request = sweep_request(method, path, op, ids, spec, caller=mallory.user)
            response = mallory.api.call(**request)
            answers.append((response.status_code, _normalized(response.text, *ids.ids.values())))
        # THEN the two answers are the same
        if answers[0] != answers[1]:
            differences.append(f"{method} {path}: {answers[0]} vs {answers[1]}")
    assert not differences, "answers that tell another user's object exists:\n" + "\n".join(differences)
    assert len(routes) >= 30
    # AND bob's objects are all still there (mallory's writes reached nothing of his)
    operator = iso.api(iso.operator_key)
    base = f"/v1/default/banks/{victim.bank}"
    assert operator.call("GET", f"{base}/documents/{victim.ids['document_id']}").status_code == 200
    assert operator.call("GET", f"{base}/memories/{victim.ids['memory_id']}").status_code == 200
    assert operator.call("GET", f"{base}/mental-models/{victim.ids['mental_model_id']}").status_code == 200
    assert operator.call("GET", f"{base}/directives/{victim.ids['directive_id']}").status_code == 200


def test_a_folder_under_someone_elses_node_reads_like_one_under_no_node(victim: Victim, mallory: Mallory) -> None:
    answers = []
    for parent in (victim.ids["node_id"], str(uuid.uuid4())):
        response = mallory.api.call(
            "POST",
            f"/v1/default/banks/{mallory.bank}/knowledge-base/folders",
            json={"name": "mine", "parent_id": parent},
        )
        answers.append((response.status_code, _normalized(response.text, parent)))
    assert answers[0] == answers[1]
    assert 400 <= answers[0][0] < 500


@pytest.mark.parametrize(
    ("tool", "argument", "id_name"),
    [
        ("get_memory", "memory_id", "memory_id"),
        ("get_document", "document_id", "document_id"),
        ("delete_document", "document_id", "document_id"),
        ("get_mental_model", "mental_model_id", "mental_model_id"),
        ("delete_mental_model", "mental_model_id", "mental_model_id"),
        ("get_knowledge_page", "page_id", "page_id"),
        ("delete_directive", "directive_id", "directive_id"),
        ("get_operation", "operation_id", "operation_id"),
        ("cancel_operation", "operation_id", "operation_id"),
    ],
)
def test_mcp_tools_answer_the_same_for_someone_elses_id_and_an_unused_one(
    iso: Server, victim: Victim, mallory: Mallory, tool: str, argument: str, id_name: str
) -> None:
    mcp = Mcp(iso.url, mallory.token, header_bank=mallory.bank)
    assert mcp.initialize() == 200
    real, unused = victim.ids[id_name], str(uuid.uuid4())
    answers = [_normalized(mcp.call(tool, **{argument: value}), value) for value in (real, unused)]
    assert answers[0] == answers[1]
    assert "level three" not in answers[0]
    json.dumps(answers)  # printable in a failure report

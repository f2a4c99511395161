"""The wire held to ``hindsight-client``'s schema, against the real local Hindsight: every request the package sends
(the adapter's recall and retain, the memory tools, the operator's reads and writes, the probe's, the replay's) goes
through a transport that checks its route, query and body against the client's own models, and every answer it
parses against the client's answer model (``tests/wire_schema.py``). A Hindsight upgrade whose client changes a
route, a field or a type fails here, not in production."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from memory_adapter import TurnContext
from memory_adapter._hindsight_api import HindsightApi, memory_from, post_retain
from memory_adapter.admin.client import OperatorClient
from memory_adapter.identity import format_bank_id
from memory_adapter.identity.caller import Caller
from memory_adapter.spool import RetainRecord
from memory_adapter.testing import MockTransport
from memory_adapter.tools.memory_tools import MemoryTools
from memory_adapter.transport import HttpRequest, HttpResponse, HttpTransport
from tests.wire_schema import ClientSchema

pytestmark = pytest.mark.integration

#: The client operations the package's wire speaks (each must be exercised below, and found in the client).
SPOKEN = {
    "create_or_update_bank",
    "delete_bank",
    "delete_document",
    "download_file",
    "delete_operation",
    "export_bank_transfer",
    "get_agent_stats",
    "get_bank_config",
    "get_document",
    "get_memory",
    "get_operation_status",
    "list_banks",
    "list_documents",
    "list_entities",
    "list_memories",
    "list_mental_models",
    "list_operations",
    "recall_memories",
    "reflect",
    "reset_bank_config",
    "retain_memories",
    "update_bank_config",
    "update_memory",
}


class CheckedWire:
    """A transport to the real server that checks every request and 2xx answer against the client's schema."""

    def __init__(self, url: str, schema: ClientSchema) -> None:
        self.real, self.schema = HttpTransport(url), schema
        self.problems: list[str] = []
        self.spoken: set[str] = set()
        self.transport = MockTransport(self._handle)

    def _handle(self, request: HttpRequest) -> HttpResponse:
        response = self.real.send(request)
        if not request.path.startswith("/v1/"):
            return response  # /health: no model
        route = self.schema.route(request)
        if route is None:
            self.problems.append(f"{request.method} {request.path}: no such route in the client")
            return response
        self.spoken.add(route.name)
        self.problems += self.schema.request_problems(route, request)
        self.problems += self.schema.answer_problems(route, response)
        return response


@pytest.fixture(scope="module")
def schema() -> ClientSchema:
    return ClientSchema()


def _settled(api: HindsightApi, bank_id: str) -> None:
    deadline = time.monotonic() + 60
    while any(op.get("status") in ("pending", "processing") for op in api.operations(bank_id, limit=20)):
        assert time.monotonic() < deadline, "the bank's operations never settled"
        time.sleep(0.2)


async def test_every_request_and_answer_of_the_wire_fits_the_clients_models(
    local_hindsight: Any,
    schema: ClientSchema,
    make_adapter: Callable[..., Any],
    token_issuer: Any,
    run_id: str,
) -> None:
    wire = CheckedWire(local_hindsight.url, schema)
    user = f"wire-{run_id}"
    token = token_issuer.mint(user, ttl=900)
    bank_id = format_bank_id(user=user, agent="support")
    operator = HindsightApi(wire.transport, timeout=30.0, bearer=local_hindsight.operator_key)

    # the agent's turn: retain and recall as the adapter sends them, with the user's token
    adapter = make_adapter(local_hindsight.url, transport=wire.transport, timeout=30.0, recall_timeout=10.0)
    ctx = TurnContext(runtime_session_id=f"s-{run_id}", user_id=user, agent_name="support", credential=token)
    await adapter.retain_for_turn(ctx, result="Noted: email it is.", query="I prefer email over phone calls.")
    _settled(operator, bank_id)
    recollection = await adapter.recall_for_turn(ctx, "How should we contact the user?")
    assert not recollection.degraded

    # the memory tools (remember waits for extraction, list, recall, forget)
    tools = MemoryTools(wire.transport, settle_s=0.0)
    caller = Caller.of(user=user, agent="support", credential=token)
    assert tools.call(caller, "remember", {"text": "My locker code is 4711.", "kind": "fact"}).error is None
    assert tools.call(caller, "list_recent", {"limit": 5, "kind": "fact"}).error is None
    assert tools.call(caller, "forget", {"query": "locker code"}).error is None

    # the operator's reads and writes, the replay's retain, reflect
    post_retain(
        wire.transport,
        RetainRecord(str(uuid.uuid4()), bank_id, {"content": "I live in Lisbon.", "document_id": f"doc-{run_id}"}),
        bearer=local_hindsight.operator_key,
        timeout=30.0,
    )
    _settled(operator, bank_id)
    operator.create_bank(bank_id, {"retain_mission": "Keep preferences."})
    operator.update_bank_config(bank_id, {"retain_extraction_mode": "concise"})
    assert operator.bank_config_overrides(bank_id) is not None
    assert bank_id in operator.bank_ids()
    assert operator.bank_stats(bank_id) is not None
    documents = list(operator.documents(bank_id))
    assert documents
    assert operator.document(bank_id, str(documents[0]["id"])) is not None
    units = list(operator.memories(bank_id))
    parsed = [m for m in map(memory_from, units) if m is not None and m.id is not None]
    assert parsed
    assert operator.memory(bank_id, str(parsed[0].id)) is not None
    assert operator.invalidate_memory(bank_id, str(parsed[0].id), "schema check")
    list(operator.entities(bank_id))
    list(operator.mental_models(bank_id))
    operations = operator.operations(bank_id, limit=5)
    assert operator.operation_count(bank_id, "completed") >= 1
    assert operations
    operator.operation(bank_id, str(operations[0]["id"]))
    operator.reflect(bank_id, "Where does the user live?", budget="low", max_tokens=256)
    archive = OperatorClient(local_hindsight.url, local_hindsight.operator_key, transport=wire.transport)
    assert archive.export_archive(bank_id)
    operator.reset_bank_config(bank_id)
    operator.delete_document(bank_id, f"doc-{run_id}")
    operator.delete_bank(bank_id)

    assert not wire.problems, "\n".join(wire.problems)
    assert wire.spoken >= SPOKEN, sorted(SPOKEN - wire.spoken)

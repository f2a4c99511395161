"""The deployed path's contract, against moto's SQS over HTTP: what ``QueueSink`` sends is what the pipe reads.

The pipe (infra/constructs/memory_events.py) takes ``detail-type``, ``detail`` and ``time`` from fixed JSON paths of
the message body and relies on the message group being the bank (order per bank) and the deduplication id being
the event id; a change on either side that breaks the other fails here.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from hindsight_isolation.events import Change, MemoryEvent, QueueSink
from hindsight_isolation.principal import Kind, Principal
from infra.constructs.memory_events import PIPE_DETAIL_TYPE, PIPE_INPUT_TEMPLATE, PIPE_TIME
from memory_adapter.identity import format_bank_id


def _path(document: Any, path: str) -> Any:
    """What a pipe's ``$.a.b-c`` path (dot notation, dashes) selects from the pipe's view of an SQS message."""
    assert path.startswith("$.")
    for part in path[2:].split("."):
        document = document[part]
    return document


def test_queue_messages_carry_what_the_pipe_reads_grouped_by_bank(moto_server: Any) -> None:
    # GIVEN a FIFO queue like the stack's (the sender sets the deduplication ids)
    sqs = moto_server.sqs()
    url = sqs.create_queue(QueueName=f"events-{uuid.uuid4().hex[:8]}.fifo", Attributes={"FifoQueue": "true"})[
        "QueueUrl"
    ]
    sink = QueueSink(url, client=sqs)
    alice, bob = format_bank_id(user="alice", agent="support"), format_bank_id(user="bob", agent="support")
    user = Principal(Kind.USER, user="alice")
    sent = [
        MemoryEvent(Change.CREATED, alice, f"m{i}", "retain", user, source_id="doc-1", kind="world") for i in range(12)
    ]
    sent.append(MemoryEvent(Change.DELETED, bob, "b1", "delete_bank", Principal(Kind.OPERATOR), actor="arn:ops"))

    # WHEN the sink sends them (more than one SQS batch)
    sink.send(sent)

    # THEN each arrives once, in its bank's group, deduplicated by event id, in order per bank
    received: list[dict[str, Any]] = []
    while True:
        answer = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["MessageGroupId", "MessageDeduplicationId"]
        )
        messages = answer.get("Messages", [])
        if not messages:
            break
        for message in messages:
            received.append(message)
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    by_id = {e.event_id: e for e in sent}
    assert len(received) == len(sent)
    for message in received:
        view = {"body": json.loads(message["Body"])}  # the pipe parses a JSON body
        detail = _path(view, PIPE_INPUT_TEMPLATE.removeprefix("<").removesuffix(">"))
        event = by_id[detail["event_id"]]
        assert message["Attributes"]["MessageDeduplicationId"] == event.event_id
        assert message["Attributes"]["MessageGroupId"] == event.bank_id == detail["bank"]["id"]
        assert _path(view, PIPE_DETAIL_TYPE) == event.detail_type
        assert _path(view, PIPE_TIME) == event.time
        assert detail == event.detail()
    alice_order = [json.loads(m["Body"])["detail"]["memory_id"] for m in received if alice in m["Body"]]
    assert alice_order == [f"m{i}" for i in range(12)]
    bob_detail = next(json.loads(m["Body"])["detail"] for m in received if bob in m["Body"])
    assert bob_detail["caused_by"] == {"kind": "operator", "principal": "arn:ops"}
    assert "text" not in bob_detail

"""The deployed path's contract, against moto's SQS over HTTP: what ``QueueSink`` sends is what the pipe reads.

The pipe (infra/constructs/memory_events.py) takes ``detail-type``, ``detail`` and ``time`` from fixed JSON paths of
the message body and relies on the message group being the bank (order per bank) and the deduplication id being
the event id; a change on either side that breaks the other fails here.
"""

from __future__ import annotations

import json
import re
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


#: SQS's documented rule for a message group id (SendMessageBatchRequestEntry.MessageGroupId: at most 128
#: characters, alphanumeric and punctuation). moto does not enforce it, so the test checks what the sink sends.
_GROUP_ID = re.compile(r"[A-Za-z0-9!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]{1,128}")


class _SqsRules:
    """moto's SQS client, refusing a batch entry whose message group id SQS itself would refuse."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.groups: list[str] = []

    def send_message_batch(self, *, QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
        for entry in Entries:
            assert _GROUP_ID.fullmatch(entry["MessageGroupId"]), f"SQS refuses group id {entry['MessageGroupId']!r}"
            self.groups.append(entry["MessageGroupId"])
        return self._client.send_message_batch(QueueUrl=QueueUrl, Entries=Entries)


def test_a_bank_id_longer_than_a_message_group_id_still_has_one_group_of_its_own(moto_server: Any) -> None:
    # A bank id can be far longer than SQS's 128-character group id (a tenant, an e-mail-address user claim and an
    # agent name of up to 256 bytes each): every event of such a bank was refused and logged as MEMORY EVENTS LOST
    sqs = moto_server.sqs()
    url = sqs.create_queue(QueueName=f"events-{uuid.uuid4().hex[:8]}.fifo", Attributes={"FifoQueue": "true"})[
        "QueueUrl"
    ]
    client = _SqsRules(sqs)
    user = "firstname.middlename.lastname-" + "x" * 60 + "@subsidiary.example-corporation.com"
    long_a = format_bank_id(tenant="acme-europe-west-production", user=user, agent="customer-support")
    long_b = format_bank_id(tenant="acme-europe-west-production", user=user + ".uk", agent="customer-support")
    short = format_bank_id(user="alice", agent="support")
    principal = Principal(Kind.USER, user="alice")
    events = [
        MemoryEvent(Change.CREATED, bank, f"m{i}", "retain", principal)
        for i in range(2)
        for bank in (long_a, long_b, short)
    ]
    QueueSink(url, client=client).send(events)
    groups = dict(zip([e.bank_id for e in events], client.groups, strict=True))
    assert len(long_a) > 128
    assert groups[short] == short  # an ordinary bank's group is still its id
    assert len({groups[long_a], groups[long_b], groups[short]}) == 3  # one group per bank
    assert client.groups[:3] == client.groups[3:]  # the same bank, the same group each time

"""The replay function's handler (Powertools BatchProcessor) on a batch mixing good, refused, malformed and oversized
messages with a Hindsight that fails part-way: only the messages not processed are reported as batch item failures."""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass
from typing import Any

from infra.functions.retain_replay import index
from memory_adapter.exceptions import HindsightUnavailableError
from memory_adapter.queue_replay import QueueReplayer
from memory_adapter.spool import RetainRecord
from memory_adapter.sqs_codec import QueueMessage, encode_record
from memory_adapter.testing import FakeHindsight, MockTransport
from memory_adapter.transport import HttpRequest, HttpResponse


@dataclass
class LambdaContext:
    function_name: str = "retain-replay"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:111122223333:function:retain-replay"
    aws_request_id: str = "request-1"
    remaining_ms: int = 60_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


class DeadLetterList:
    def __init__(self) -> None:
        self.letters: list[tuple[str, str]] = []

    def forward_dead_letter(self, message: QueueMessage, reason: str) -> None:
        self.letters.append((message.message_id, reason))


def fails_for(fake: FakeHindsight, unreachable_bank: str) -> MockTransport:
    """``fake``, unreachable for requests naming ``unreachable_bank`` (an outage starting mid-batch)."""

    def handler(request: HttpRequest) -> HttpResponse:
        if unreachable_bank in request.path:
            raise HindsightUnavailableError("cannot reach Hindsight: ConnectionRefusedError")
        return fake.send(request)

    return MockTransport(handler)


def sqs_record(message_id: str, body: str, attributes: dict[str, str]) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "receiptHandle": f"receipt-{message_id}",
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1700000000000"},
        "messageAttributes": {k: {"stringValue": v, "dataType": "String"} for k, v in attributes.items()},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:111122223333:retains",
        "awsRegion": "us-east-1",
    }


def retain(message_id: str, bank: str, credential: str = "token") -> dict[str, Any]:
    body, attributes = encode_record(RetainRecord(message_id, bank, {"content": message_id}, credential=credential))
    return sqs_record(message_id, body, attributes)


def test_only_the_messages_not_processed_are_batch_item_failures() -> None:
    fake = FakeHindsight()
    fake.deny.add(("token", "user:mallory-target:agent:a"))
    dead = DeadLetterList()
    transport = fails_for(fake, "user:down:")
    handler = index.make_handler(
        lambda: QueueReplayer(transport=transport, dead_letters=dead, timeout=1.0, metrics=index.metrics)
    )
    bomb = base64.b64encode(zlib.compress(b"0" * 20 * 2**20)).decode()
    event = {
        "Records": [
            retain("good-1", "user:u:agent:a"),
            retain("refused", "user:mallory-target:agent:a"),
            sqs_record("malformed", "{not json", {}),
            sqs_record("oversized", bomb, {"encoding": "zlib+base64"}),
            retain("outage", "user:down:agent:a"),
            retain("after-outage", "user:u:agent:a"),
        ]
    }
    response = handler(event, LambdaContext())
    # GIVEN Hindsight failed at "outage": it and the one after it (not tried) stay on the queue, nothing else
    assert response == {"batchItemFailures": [{"itemIdentifier": "outage"}, {"itemIdentifier": "after-outage"}]}
    assert set(fake.documents("user:u:agent:a")) == {"doc-0"}
    assert [message_id for message_id, _ in dead.letters] == ["refused", "malformed", "oversized"]


def test_a_batch_that_fails_entirely_is_reported_not_raised() -> None:
    transport = fails_for(FakeHindsight(), "user:")
    handler = index.make_handler(
        lambda: QueueReplayer(transport=transport, dead_letters=DeadLetterList(), timeout=1.0, metrics=index.metrics)
    )
    response = handler({"Records": [retain("a", "user:u:agent:a"), retain("b", "user:u:agent:a")]}, LambdaContext())
    assert response == {"batchItemFailures": [{"itemIdentifier": "a"}, {"itemIdentifier": "b"}]}


def test_a_nearly_finished_invocation_leaves_its_messages_for_the_next() -> None:
    fake = FakeHindsight()
    handler = index.make_handler(
        lambda: QueueReplayer(transport=fake, dead_letters=DeadLetterList(), timeout=10.0, metrics=index.metrics)
    )
    response = handler({"Records": [retain("a", "user:u:agent:a")]}, LambdaContext(remaining_ms=5_000))
    assert response == {"batchItemFailures": [{"itemIdentifier": "a"}]}
    assert fake.requests == []

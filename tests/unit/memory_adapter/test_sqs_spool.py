"""The SQS spool (on moto's in-process SQS): records round-trip with their credential, large ones are compressed,
ones too large even compressed are refused (and the delivery counts them as lost), dead letters carry their reason,
and an adapter configured with a queue sends to it instead of the local directory."""

from __future__ import annotations

import base64
import os
import zlib
from typing import Any

import pytest

from memory_adapter import HindsightRuntimeAdapter, RetainOutcome, TurnContext
from memory_adapter.exceptions import MalformedMessageError, RecordTooLargeError
from memory_adapter.spool import RetainRecord
from memory_adapter.sqs_codec import (
    DEAD_LETTER_REASON_ATTRIBUTE,
    ENCODING_ATTRIBUTE,
    MOVED_BY_SQS,
    QueueMessage,
    decode_record,
    encode_record,
)
from memory_adapter.sqs_spool import SqsSpool
from memory_adapter.testing import Fault


def record(op: str, content: str = "hello", **kw: Any) -> RetainRecord:
    return RetainRecord(operation_id=op, bank_id="user:u:agent:a", item={"content": content}, **kw)


@pytest.fixture
def queues(mocked_sqs: Any) -> tuple[Any, str, str]:
    dead = mocked_sqs.create_queue(QueueName="retains-dlq")["QueueUrl"]
    main = mocked_sqs.create_queue(QueueName="retains")["QueueUrl"]
    return mocked_sqs, main, dead


def test_records_round_trip_with_their_credential(queues):
    _, main, dead = queues
    spool = SqsSpool(main, dead_letter_queue_url=dead, wait_seconds=0)
    spool.put(record("a", credential="jwt-a", created_at=1.0))
    spool.put(record("b", created_at=2.0))
    assert spool.count() == 2
    items = spool.items()
    assert [(r.operation_id, r.credential) for r in items] == [("a", "jwt-a"), ("b", None)]
    for item in items:
        spool.remove(item)
    spool.remove(items[0])  # already gone: ignored
    assert spool.count() == 0


@pytest.mark.parametrize("content", ["short", "x" * 2_000_000], ids=["plain", "compressed"])
def test_an_agent_key_never_enters_a_message_a_callers_token_does(content):
    key = "hindsight-agent-key-" + "k" * 32
    body, attributes = encode_record(record("a", content, credential=key, agent_key=True))
    text = body if attributes[ENCODING_ATTRIBUTE] == "json" else zlib.decompress(base64.b64decode(body)).decode()
    assert key not in text
    restored = decode_record(QueueMessage("m", body, attributes))
    assert (restored.credential, restored.agent_key, restored.item["content"]) == (None, True, content)
    token_body, token_attributes = encode_record(record("b", content, credential="jwt-b"))
    assert decode_record(QueueMessage("n", token_body, token_attributes)).credential == "jwt-b"
    assert key in record("a", content, credential=key, agent_key=True).to_json()  # the microVM's own disk spool


def test_dead_letters_carry_their_reason_and_leave_the_queue(queues):
    _, main, dead = queues
    spool = SqsSpool(main, dead_letter_queue_url=dead, wait_seconds=0)
    spool.put(record("a"))
    (item,) = spool.items()
    spool.dead_letter(item, "credential refused (HTTP 401)")
    assert (spool.count(), spool.count(dead=True)) == (0, 1)
    (letter,) = spool.messages(dead=True)
    assert letter.dead_letter_reason == "credential refused (HTTP 401)"
    spool.release([letter], dead=True)
    (again,) = spool.items(dead=True)
    assert (again.operation_id, again.last_error) == ("a", "credential refused (HTTP 401)")


def test_without_a_dead_letter_queue_a_refused_record_goes_back_to_the_queue(queues):
    # The agent may only send to the queue: its consumer tries once more and dead-letters it for good.
    client, main, _ = queues
    SqsSpool(main).dead_letter(record("a"), "HTTP 403")
    (message,) = client.receive_message(QueueUrl=main, MessageAttributeNames=["All"])["Messages"]
    assert message["MessageAttributes"][DEAD_LETTER_REASON_ATTRIBUTE]["StringValue"] == "HTTP 403"


def test_a_dead_letter_sqs_moved_itself_says_so(queues):
    client, main, dead = queues
    body, attributes = encode_record(record("a"))
    client.send_message(
        QueueUrl=dead,
        MessageBody=body,
        MessageAttributes={k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()},
    )
    (item,) = SqsSpool(main, dead_letter_queue_url=dead, wait_seconds=0).items(dead=True)
    assert item.last_error == MOVED_BY_SQS


def test_a_message_that_is_not_a_record_is_moved_aside(queues):
    client, main, dead = queues
    client.send_message(QueueUrl=main, MessageBody="{not json")
    spool = SqsSpool(main, dead_letter_queue_url=dead, wait_seconds=0)
    assert spool.items() == []
    assert spool.count() == 0
    (letter,) = spool.messages(dead=True)
    assert letter.body == "{not json"
    assert letter.dead_letter_reason is not None
    assert letter.dead_letter_reason.startswith("malformed")


def test_a_large_record_is_compressed_and_restored():
    big = record("a", content="the same sentence again. " * 60_000)  # 1.5 MB of text
    body, attributes = encode_record(big)
    assert attributes[ENCODING_ATTRIBUTE] == "zlib+base64"
    assert len(body) < 1_048_576
    assert decode_record(QueueMessage("m", body, attributes)) == big


def test_a_record_too_large_even_compressed_is_refused():
    noise = base64.b64encode(os.urandom(900_000)).decode()  # 1.2 MB that does not compress
    with pytest.raises(RecordTooLargeError) as excinfo:
        encode_record(record("a", content=noise))
    assert excinfo.value.size > excinfo.value.limit


def test_characters_sqs_refuses_are_escaped_and_survive():
    original = record("a", content="odd \ufffe and \uffff")
    body, attributes = encode_record(original)
    assert "\ufffe" not in body
    assert "\uffff" not in body
    assert decode_record(QueueMessage("m", body, attributes)) == original


@pytest.mark.parametrize(
    ("body", "attributes", "error"),
    [
        ("{not json", {}, MalformedMessageError),
        ('{"v": 99}', {}, MalformedMessageError),
        ("x", {ENCODING_ATTRIBUTE: "rot13"}, MalformedMessageError),
        ("!!!", {ENCODING_ATTRIBUTE: "zlib+base64"}, MalformedMessageError),
        (base64.b64encode(b"not zlib").decode(), {ENCODING_ATTRIBUTE: "zlib+base64"}, MalformedMessageError),
        # a "zip bomb": 1 KiB that would inflate to 20 MiB is cut off at the limit, never inflated further
        (
            base64.b64encode(zlib.compress(b"0" * 20 * 2**20)).decode(),
            {ENCODING_ATTRIBUTE: "zlib+base64"},
            RecordTooLargeError,
        ),
    ],
)
def test_malformed_or_oversized_messages_are_named(body, attributes, error):
    with pytest.raises(error):
        decode_record(QueueMessage("m", body, attributes))


def test_a_lambda_event_record_is_read_like_a_received_message():
    body, attributes = encode_record(record("a", credential="jwt"))
    event_record = {
        "messageId": "m-1",
        "receiptHandle": "r-1",
        "body": body,
        "attributes": {"ApproximateReceiveCount": "3"},
        "messageAttributes": {k: {"stringValue": v, "dataType": "String"} for k, v in attributes.items()},
    }
    message = QueueMessage.from_lambda(event_record)
    assert (message.message_id, message.receive_count, message.receipt) == ("m-1", 3, "r-1")
    assert decode_record(message).credential == "jwt"


def test_the_client_is_created_on_first_use_only():
    spool = SqsSpool("https://sqs.eu-west-1.amazonaws.com/123456789012/q")
    assert spool._client is None  # constructing the adapter's spool costs no boto3 import or client


async def test_an_adapter_with_a_queue_spools_to_it_and_never_replays_it(queues, fake, metrics):
    client, main, _ = queues
    fake.fault = Fault.DOWN
    adapter = HindsightRuntimeAdapter(
        "support",
        hindsight_api_url="http://hindsight.test",
        transport=fake,
        spool_queue_url=main,
        max_retries=0,
        metrics=metrics,
    )
    try:
        ctx = TurnContext(runtime_session_id="s", user_id="u", agent_name="support", request_id="r1", credential="t")
        assert await adapter.retain_for_turn(ctx, result="Noted.", query="remember") is RetainOutcome.SPOOLED
        (message,) = client.receive_message(QueueUrl=main, MessageAttributeNames=["All"])["Messages"]
        spooled = decode_record(QueueMessage.from_sqs(message))
        assert (spooled.item["document_id"], spooled.credential) == ("r1", "t")
        assert adapter._auto_replay is False  # the queue's consumer replays it, not the sender
    finally:
        await adapter.aclose(timeout=1)


async def test_a_turn_too_large_for_the_queue_is_counted_and_logged_as_lost(queues, fake, metrics, caplog):
    _, main, _ = queues
    fake.fault = Fault.DOWN
    adapter = HindsightRuntimeAdapter(
        "support", hindsight_api_url="http://h", transport=fake, spool_queue_url=main, max_retries=0, metrics=metrics
    )
    try:
        ctx = TurnContext(runtime_session_id="s", user_id="u", agent_name="support")
        noise = base64.b64encode(os.urandom(900_000)).decode()
        assert await adapter.retain_for_turn(ctx, result=noise) is RetainOutcome.DROPPED
    finally:
        await adapter.aclose(timeout=1)
    assert metrics.total("MemoryRetainTooLarge") == 1
    assert metrics.total("MemoryRetainFailed") == 1
    assert "too large for the spool" in caplog.text


class FlakySqs:
    """An SQS client that cannot be reached ``failures`` times, then accepts."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.sent: list[dict[str, Any]] = []

    def send_message(self, **kwargs: Any) -> dict[str, Any]:
        if self.failures:
            self.failures -= 1
            raise self.error
        self.sent.append(kwargs)
        return {"MessageId": "m"}


def test_a_send_is_retried_while_sqs_cannot_be_reached():
    from botocore.exceptions import EndpointConnectionError

    client = FlakySqs(3, EndpointConnectionError(endpoint_url="https://sqs.us-east-1.amazonaws.com/"))
    pauses: list[float] = []
    spool = SqsSpool("https://sqs.us-east-1.amazonaws.com/1/q", client=client, sleep=pauses.append)  # type: ignore[arg-type]
    spool.put(record("a"))
    assert len(client.sent) == 1
    assert pauses == [0.5, 1.0, 2.0]


def test_a_send_gives_up_after_its_budget_or_at_once_when_sqs_says_no():
    from botocore.exceptions import ClientError, EndpointConnectionError

    from memory_adapter.exceptions import SpoolError

    unreachable = FlakySqs(1000, EndpointConnectionError(endpoint_url="https://sqs.us-east-1.amazonaws.com/"))
    spool = SqsSpool("https://sqs.x/1/q", client=unreachable, send_budget_s=3.0, sleep=lambda _: None)  # type: ignore[arg-type]
    with pytest.raises(SpoolError, match="EndpointConnectionError"):
        spool.put(record("a"))
    denied = FlakySqs(1, ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "SendMessage"))
    pauses: list[float] = []
    with pytest.raises(SpoolError, match="AccessDenied"):
        SqsSpool("https://sqs.x/1/q", client=denied, sleep=pauses.append).put(record("a"))  # type: ignore[arg-type]
    assert pauses == []


def test_a_client_that_cannot_be_created_is_a_spool_error(monkeypatch):
    # e.g. no region anywhere: the delivery must get a SpoolError (DROPPED, logged), never an exception it cannot place
    from memory_adapter.exceptions import SpoolError

    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    spool = SqsSpool("http://127.0.0.1:9/123456789012/q", send_budget_s=0)
    with pytest.raises(SpoolError, match="NoRegionError"):
        spool.put(record("a"))

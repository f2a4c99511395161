"""The queue's replayer (on the fake Hindsight): delivered with the record's own credential, refused ones and
malformed ones dead-lettered with the reason, transient failures left for a later receive, and the rest of a batch
not tried once Hindsight failed."""

from __future__ import annotations

import base64
import json
import time
import zlib
from typing import Any

import pytest

from memory_adapter.exceptions import ConfigurationError, SpoolError
from memory_adapter.queue_replay import QueueReplayer, ReplaySettings, ReplayVerdict, RetryLaterError
from memory_adapter.spool import RetainRecord
from memory_adapter.sqs_codec import QueueMessage, encode_record
from memory_adapter.testing import FakeHindsight, Fault

BANK = "user:u:agent:a"


class DeadLetterList:
    """The dead-letter queue, as a list (``fail`` makes sending raise, as an SQS outage would)."""

    def __init__(self) -> None:
        self.letters: list[tuple[QueueMessage, str]] = []
        self.fail = False

    def forward_dead_letter(self, message: QueueMessage, reason: str) -> None:
        if self.fail:
            raise SpoolError("cannot send a dead letter: EndpointConnectionError")
        self.letters.append((message, reason))


def jwt_expiring_at(exp: float) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part({'sub': 'u', 'exp': exp})}.c2ln"


def message(op: str, credential: str | None = "token", message_id: str | None = None) -> QueueMessage:
    body, attributes = encode_record(RetainRecord(op, BANK, {"content": op, "document_id": op}, credential=credential))
    return QueueMessage(message_id or f"m-{op}", body, attributes)


@pytest.fixture
def dead() -> DeadLetterList:
    return DeadLetterList()


@pytest.fixture
def replayer(fake: FakeHindsight, dead: DeadLetterList, metrics: Any) -> QueueReplayer:
    replayer = QueueReplayer(transport=fake, dead_letters=dead, timeout=1.0, metrics=metrics)
    replayer.start_batch()
    return replayer


def test_a_record_is_delivered_with_its_own_credential(replayer, fake, metrics):
    assert replayer.handle(message("a", credential="jwt-of-a")).verdict is ReplayVerdict.DELIVERED
    (retain,) = fake.calls("/memories")
    assert retain.bearer == "jwt-of-a"
    assert retain.body["operation_id"] == "a"
    assert metrics.total("MemoryQueueDelivered") == 1


def test_delivering_twice_stores_once(replayer, fake):
    replayer.handle(message("a"))
    replayer.handle(message("a", message_id="duplicate"))  # SQS delivered it again
    assert list(fake.documents(BANK)) == ["a"]


def test_a_token_expired_beyond_the_grace_window_is_dead_lettered_with_the_reason(replayer, fake, dead):
    fake.fault, fake.fault_status = Fault.STATUS, 401
    expired = jwt_expiring_at(time.time() - 7 * 3600)
    outcome = replayer.handle(message("a", credential=expired))
    assert outcome.verdict is ReplayVerdict.DEAD_LETTERED
    ((letter, reason),) = dead.letters
    assert letter.message_id == "m-a"
    assert reason == outcome.reason
    assert "HTTP 401" in reason
    assert "expired 7.0 h ago" in reason
    assert expired not in reason  # the reason never carries the token


@pytest.mark.parametrize(
    ("status", "credential", "expected"),
    [
        (401, jwt_expiring_at(time.time() + 30 * 86400), "has not expired"),
        (401, "an-agent-key", "not a JWT"),
        (401, None, "no credential"),
        (403, "token", "may not retain into this bank"),
        (422, "token", "HTTP 422"),
    ],
    ids=["unexpired-jwt", "agent-key", "no-credential", "forbidden", "unprocessable"],  # the same in every process
)
def test_every_definitive_refusal_is_dead_lettered_once(replayer, fake, dead, status, credential, expected):
    fake.fault, fake.fault_status = Fault.STATUS, status
    assert replayer.handle(message("a", credential=credential)).verdict is ReplayVerdict.DEAD_LETTERED
    ((_, reason),) = dead.letters
    assert expected in reason


def _jwt_with_payload(payload: str) -> str:
    return f"e30.{base64.urlsafe_b64encode(payload.encode()).decode().rstrip('=')}.c2ln"


@pytest.mark.parametrize(
    ("credential", "expected"),
    [
        (jwt_expiring_at(10**400), "exp claim is unreadable"),  # float() overflows
        (jwt_expiring_at(-(10**400)), "exp claim is unreadable"),
        (jwt_expiring_at(float("inf")), "exp claim is unreadable"),  # json.dumps writes Infinity, json.loads reads it
        (jwt_expiring_at(float("nan")), "exp claim is unreadable"),
        (jwt_expiring_at(1e300), "exp claim is unreadable"),
        (_jwt_with_payload("[" * 100_000 + "]" * 100_000), "not a JWT"),  # nested past the JSON parser's depth
    ],
    ids=["huge", "huge-negative", "infinity", "nan", "year-past-9999", "deeply-nested"],
)
def test_a_crafted_token_refused_by_hindsight_is_dead_lettered_and_the_batch_goes_on(
    replayer, fake, dead, credential, expected
):
    # GIVEN a record whose token Hindsight refuses, with an exp claim no time can be (or a payload too deep to read)
    fake.fault, fake.fault_status = Fault.STATUS, 401
    # WHEN the replayer handles it THEN it is dead-lettered with the reason (before, OverflowError or RecursionError
    # escaped: the record failed on every receive and reached the dead letters without a reason)
    assert replayer.handle(message("a", credential=credential)).verdict is ReplayVerdict.DEAD_LETTERED
    ((_, reason),) = dead.letters
    assert reason.startswith("credential refused (HTTP 401)")
    assert expected in reason
    # AND the rest of the batch is delivered
    fake.fault = Fault.NONE
    assert replayer.handle(message("b")).verdict is ReplayVerdict.DELIVERED


@pytest.mark.parametrize(
    ("body", "attributes", "expected"),
    [
        ("{not json", {}, "malformed"),
        ("x", {"encoding": "rot13"}, "malformed"),
        (base64.b64encode(zlib.compress(b"0" * 20 * 2**20)).decode(), {"encoding": "zlib+base64"}, "oversized"),
    ],
)
def test_malformed_and_oversized_messages_are_dead_lettered_without_a_request(
    replayer, fake, dead, body, attributes, expected
):
    assert replayer.handle(QueueMessage("bad", body, attributes)).verdict is ReplayVerdict.DEAD_LETTERED
    assert dead.letters[0][1].startswith(expected)
    assert fake.requests == []


def test_hindsight_unavailable_leaves_the_message_and_skips_the_rest_of_the_batch(replayer, fake, dead, metrics):
    fake.fault = Fault.DOWN
    with pytest.raises(RetryLaterError, match="unavailable"):
        replayer.handle(message("a"))
    fake.fault = Fault.NONE
    with pytest.raises(RetryLaterError, match="earlier in this batch"):
        replayer.handle(message("b"))
    assert len(fake.requests) == 1  # b was not tried
    assert dead.letters == []
    replayer.start_batch()  # the next batch tries again
    assert replayer.handle(message("b")).verdict is ReplayVerdict.DELIVERED
    assert metrics.total("MemoryQueueRetried") == 2


def test_a_dead_letter_that_cannot_be_sent_is_retried_later(replayer, fake, dead):
    fake.fault, fake.fault_status = Fault.STATUS, 403
    dead.fail = True
    with pytest.raises(RetryLaterError, match="could not dead-letter"):
        replayer.handle(message("a"))


def test_no_delivery_starts_when_the_invocation_is_about_to_end(fake, dead):
    replayer = QueueReplayer(transport=fake, dead_letters=dead, timeout=10.0)
    replayer.start_batch(seconds_left=3.0)
    with pytest.raises(RetryLaterError, match="about to time out"):
        replayer.handle(message("a"))
    assert fake.requests == []


def test_replay_settings_report_every_problem_at_once():
    with pytest.raises(ConfigurationError) as excinfo:
        ReplaySettings.from_env({"HINDSIGHT_API_URL": "ftp://x", "RETAIN_DELIVERY_TIMEOUT_SECONDS": "-1"})
    message_text = str(excinfo.value)
    for name in ("HINDSIGHT_API_URL", "RETAIN_DEAD_LETTER_QUEUE_URL", "RETAIN_DELIVERY_TIMEOUT_SECONDS"):
        assert name in message_text
    settings = ReplaySettings.from_env(
        {"HINDSIGHT_API_URL": "http://hindsight.internal/", "RETAIN_DEAD_LETTER_QUEUE_URL": "https://sqs.x/1/dlq"}
    )
    assert (settings.hindsight_api_url, settings.delivery_timeout_s) == ("http://hindsight.internal", 10.0)


def agent_key_message(op: str) -> QueueMessage:
    """What an IAM-mode agent queues: the record presented the agent key, the message leaves it out."""
    record = RetainRecord(op, BANK, {"content": op, "document_id": op}, credential="the-agent-key", agent_key=True)
    body, attributes = encode_record(record)
    assert "the-agent-key" not in body
    return QueueMessage(f"m-{op}", body, attributes)


def test_an_agent_key_record_is_delivered_with_the_functions_own_copy_of_the_key(fake, dead, metrics):
    reads: list[int] = []

    def read_key() -> str:
        reads.append(1)
        return "the-agent-key"

    replayer = QueueReplayer(transport=fake, dead_letters=dead, agent_key=read_key, metrics=metrics)
    replayer.start_batch()
    assert replayer.handle(agent_key_message("a")).verdict is ReplayVerdict.DELIVERED
    (retain,) = fake.calls("/memories")
    assert retain.bearer == "the-agent-key"
    assert reads == [1]
    # a caller's own token (JWT mode) is still the message's, and the key is not read for it
    assert replayer.handle(message("b", credential="jwt-of-b")).verdict is ReplayVerdict.DELIVERED
    assert fake.calls("/memories")[-1].bearer == "jwt-of-b"
    assert reads == [1]


def test_an_agent_key_record_without_a_configured_key_is_dead_lettered_with_the_reason(replayer, fake, dead):
    outcome = replayer.handle(agent_key_message("a"))
    assert outcome.verdict is ReplayVerdict.DEAD_LETTERED
    assert "HINDSIGHT_API_KEY_SECRET_ARN" in (outcome.reason or "")
    assert fake.calls("/memories") == []


def test_an_unreadable_agent_key_leaves_the_message_for_a_later_receive(fake, dead, metrics):
    def denied() -> str:
        raise RuntimeError("AccessDeniedException")

    replayer = QueueReplayer(transport=fake, dead_letters=dead, agent_key=denied, metrics=metrics)
    replayer.start_batch()
    with pytest.raises(RetryLaterError, match="agent key could not be read"):
        replayer.handle(agent_key_message("a"))
    assert (fake.calls("/memories"), dead.letters) == ([], [])


def test_the_agent_key_secret_is_read_from_the_environment() -> None:
    env = {"HINDSIGHT_API_URL": "http://h", "RETAIN_DEAD_LETTER_QUEUE_URL": "https://sqs.example/dlq"}
    assert ReplaySettings.from_env(env).agent_key_secret_arn is None
    arn = "arn:aws:secretsmanager:us-east-1:111122223333:secret:agent-key"
    assert ReplaySettings.from_env({**env, "HINDSIGHT_API_KEY_SECRET_ARN": arn}).agent_key_secret_arn == arn
    with pytest.raises(ConfigurationError, match="HINDSIGHT_API_KEY_SECRET_ARN must be a Secrets Manager ARN"):
        ReplaySettings.from_env({**env, "HINDSIGHT_API_KEY_SECRET_ARN": "agent-key"})


def _record_body(**fields: Any) -> str:
    good = {"v": 1, "operation_id": "op-x", "bank_id": BANK, "item": {"content": "x"}, "credential": "token"}
    return json.dumps({**good, **fields})


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (_record_body(item="@").replace('"@"', "[" * 100_000 + "]" * 100_000), "nested too deeply"),
        (_record_body().replace('"credential"', '"attempts": 1e400, "credential"'), "infinity"),
        (_record_body(credential="token\r\nX-Injected: 1"), "credential"),
        (_record_body(credential={"sub": "u"}), "credential"),
        (_record_body(credential=5), "credential"),
        (_record_body(bank_id={"user": "u"}), "bank_id"),
        (_record_body(bank_id=""), "bank_id"),
        (_record_body(bank_id="user:u\ud800:agent:a"), "bank_id"),
        (_record_body(operation_id=["op"]), "operation_id"),
    ],
)
def test_a_crafted_record_is_dead_lettered_with_its_reason_and_never_sent(replayer, fake, dead, body, expected):
    # before: RecursionError, OverflowError, TypeError or ValueError escaped handle(), so the message failed on every
    # receive and SQS moved it saying Hindsight had been unavailable; or it was sent with str() of a non-string
    outcome = replayer.handle(QueueMessage("crafted", body, {}))
    assert outcome.verdict is ReplayVerdict.DEAD_LETTERED
    assert dead.letters[0][1].startswith("malformed")
    assert expected in dead.letters[0][1]
    assert fake.requests == []

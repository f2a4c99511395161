"""The operator's redrive (moto's SQS, the fake Hindsight): review changes nothing, delivery uses the operator
credential and deletes what Hindsight accepted, and a record whose token names another user is never redriven."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest

from memory_adapter.redrive import main, owner_check, redrive
from memory_adapter.spool import RetainRecord
from memory_adapter.sqs_codec import decode_record
from memory_adapter.sqs_spool import SqsSpool
from memory_adapter.testing import FakeHindsight

OPERATOR = "operator-key"


def token(claims: dict[str, Any]) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2ln"


def record(op: str, bank: str, credential: str | None, *, agent_key: bool = False) -> RetainRecord:
    item = {"content": f"turn {op}", "document_id": op}
    return RetainRecord(op, bank, item, credential=credential, agent_key=agent_key)


@pytest.fixture
def spool(mocked_sqs: Any) -> SqsSpool:
    dead = mocked_sqs.create_queue(QueueName="dlq")["QueueUrl"]
    spool = SqsSpool(dead, dead_letter_queue_url=dead, wait_seconds=0)
    spool.dead_letter(record("alex-1", "user:alex:agent:a", token({"sub": "alex"})), "credential refused (HTTP 401)")
    spool.dead_letter(record("steered", "user:grace:agent:a", token({"sub": "mallory"})), "refused (HTTP 403)")
    iam = record("iam", "tenant:acme:user:bo:agent:a", "an-agent-key", agent_key=True)  # queued without the key
    spool.dead_letter(iam, "credential refused (HTTP 401)")
    return spool


def ids(spool: SqsSpool) -> dict[str, str]:
    """Operation id -> message id of what is in the dead-letter queue (made visible again)."""
    messages = spool.messages(dead=True)
    spool.release(messages, dead=True)
    by_op = {}
    for message in messages:
        by_op[decode_record(message).operation_id] = message.message_id
    return by_op


def test_owner_check_compares_the_token_with_the_bank():
    assert owner_check(record("a", "user:alex:agent:a", token({"sub": "alex"}))).ok is True
    assert owner_check(record("a", "user:grace:agent:a", token({"sub": "mallory"}))).ok is False
    tenant = record("a", "tenant:acme:user:alex:agent:a", token({"sub": "alex", "tid": "other"}))
    assert owner_check(tenant, tenant_claim="tid").ok is False
    assert owner_check(record("a", "user:alex:agent:a", "an-agent-key")).ok is None
    assert owner_check(record("a", "user:alex:agent:a", None, agent_key=True)).detail.startswith("the agent key")
    assert owner_check(record("a", "not a bank", token({"sub": "alex"}))).ok is False


def test_list_shows_every_dead_letter_and_changes_nothing(spool):
    out = io.StringIO()
    assert main(["list", "--dead-letter-queue-url", spool.queue_url], env={}, out=out) == 0
    rows = [json.loads(line) for line in out.getvalue().splitlines()[:-1]]
    by_bank = {row["bank"]: row for row in rows}
    assert by_bank["user:alex:agent:a"]["reason"] == "credential refused (HTTP 401)"
    assert by_bank["user:alex:agent:a"]["redrivable"] is True
    assert by_bank["user:grace:agent:a"]["owner_check"].startswith("OWNER MISMATCH")
    assert by_bank["user:grace:agent:a"]["redrivable"] is False
    iam = by_bank["tenant:acme:user:bo:agent:a"]
    assert (iam["redrivable"], iam["owner_check"]) == (
        True,
        "the agent key (IAM mode), not a user token: not checkable",
    )
    assert all("credential" not in row for row in rows)
    assert spool.count(dead=True) == 3
    assert len(spool.messages(dead=True)) == 3  # visible again at once


def test_deliver_uses_the_operator_credential_and_removes_what_was_delivered(spool):
    fake = FakeHindsight()
    chosen = ids(spool)
    result = redrive(spool, fake, operator_credential=OPERATOR, message_ids=[chosen["alex-1"], chosen["iam"]])
    assert sorted(result.delivered) == sorted([chosen["alex-1"], chosen["iam"]])  # the IAM one holds no key
    assert {r.bearer for r in fake.calls("/memories")} == {OPERATOR}
    assert set(fake.documents("user:alex:agent:a")) == {"alex-1"}
    assert set(ids(spool)) == {"steered"}


def test_a_token_naming_another_user_is_never_redriven(spool):
    fake = FakeHindsight()
    steered = ids(spool)["steered"]
    result = redrive(spool, fake, operator_credential=OPERATOR, message_ids=[steered, "no-such-message"])
    assert result.delivered == []
    assert result.refused[steered].startswith("OWNER MISMATCH")
    assert result.not_found == ["no-such-message"]
    assert fake.requests == []
    assert "steered" in ids(spool)


def test_a_dry_run_delivers_nothing(spool):
    fake = FakeHindsight()
    chosen = ids(spool)["alex-1"]
    assert redrive(spool, fake, operator_credential=OPERATOR, message_ids=[chosen], dry_run=True).delivered == [chosen]
    assert fake.requests == []
    assert spool.count(dead=True) == 3


def test_deliver_needs_the_operator_credential_from_the_environment_or_a_secret(spool):
    with pytest.raises(SystemExit, match="HINDSIGHT_OPERATOR_KEY"):
        main(
            ["deliver", "--dead-letter-queue-url", spool.queue_url, "--hindsight-url", "http://h", "--message-id", "m"],
            env={},
        )

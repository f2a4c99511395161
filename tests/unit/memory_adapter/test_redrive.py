"""The operator's redrive (moto's SQS, the fake Hindsight): review changes nothing, delivery uses the operator
credential and deletes what Hindsight accepted, and a record whose token names another user is never redriven."""

from __future__ import annotations

import base64
import io
import json
import time
from typing import Any

import pytest

from memory_adapter.redrive import main, owner_check, redrive
from memory_adapter.spool import RetainRecord
from memory_adapter.sqs_codec import decode_record
from memory_adapter.sqs_spool import SqsSpool
from memory_adapter.testing import FakeHindsight
from tests.unit.issuers import CLIENT_ID, LoopbackIssuer

OPERATOR = "operator-key"


def token(claims: dict[str, Any]) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2ln"


def record(op: str, bank: str, credential: str | None, *, agent_key: bool = False) -> RetainRecord:
    item = {"content": f"turn {op}", "document_id": op}
    return RetainRecord(op, bank, item, credential=credential, agent_key=agent_key)


def jwt_env(issuer: LoopbackIssuer) -> dict[str, str]:
    """The agent's issuer settings, as the operator gives them to the redrive (``JWT_*``)."""
    return {"JWT_DISCOVERY_URL": issuer.discovery_url, "JWT_ALLOWED_CLIENTS": CLIENT_ID}


@pytest.fixture
def spool(mocked_sqs: Any, loopback_issuer: LoopbackIssuer) -> SqsSpool:
    dead = mocked_sqs.create_queue(QueueName="dlq")["QueueUrl"]
    spool = SqsSpool(dead, dead_letter_queue_url=dead, wait_seconds=0)
    expired = time.time() - 7 * 3600
    alex, mallory = loopback_issuer.mint("alex", exp=expired), loopback_issuer.mint("mallory", exp=expired)
    spool.dead_letter(record("alex-1", "user:alex:agent:a", alex), "credential refused (HTTP 401)")
    spool.dead_letter(record("steered", "user:grace:agent:a", mallory), "refused (HTTP 403)")
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


def test_owner_check_compares_the_verified_token_with_the_bank(loopback_issuer: LoopbackIssuer) -> None:
    verifier = loopback_issuer.verifier()
    alex = loopback_issuer.mint("alex")
    assert owner_check(record("a", "user:alex:agent:a", alex), verifier=verifier).ok is True
    assert (
        owner_check(record("a", "user:grace:agent:a", loopback_issuer.mint("mallory")), verifier=verifier).ok is False
    )
    tenant = record("a", "tenant:acme:user:alex:agent:a", loopback_issuer.mint("alex", tid="other"))
    assert owner_check(tenant, verifier=loopback_issuer.verifier(tenant_claim="tid")).ok is False
    assert owner_check(record("a", "user:alex:agent:a", None, agent_key=True)).detail.startswith("the agent key")
    assert owner_check(record("a", "user:alex:agent:a", None, agent_key=True)).ok is None
    assert owner_check(record("a", "not a bank", alex), verifier=verifier).ok is False
    # unverifiable: no issuer settings, a credential that is no JWT, an unsigned token naming the owner
    assert owner_check(record("a", "user:alex:agent:a", alex)).ok is False
    assert owner_check(record("a", "user:alex:agent:a", "an-agent-key"), verifier=verifier).ok is False
    assert owner_check(record("a", "user:alex:agent:a", token({"sub": "alex"})), verifier=verifier).ok is False


def test_list_shows_every_dead_letter_and_changes_nothing(spool, loopback_issuer):
    out = io.StringIO()
    assert main(["list", "--dead-letter-queue-url", spool.queue_url], env=jwt_env(loopback_issuer), out=out) == 0
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


def test_deliver_uses_the_operator_credential_and_removes_what_was_delivered(spool, loopback_issuer):
    fake = FakeHindsight()
    chosen = ids(spool)
    wanted = [chosen["alex-1"], chosen["iam"]]
    result = redrive(spool, fake, operator_credential=OPERATOR, message_ids=wanted, verifier=loopback_issuer.verifier())
    assert sorted(result.delivered) == sorted([chosen["alex-1"], chosen["iam"]])  # the IAM one holds no key
    assert {r.bearer for r in fake.calls("/memories")} == {OPERATOR}
    assert set(fake.documents("user:alex:agent:a")) == {"alex-1"}
    assert set(ids(spool)) == {"steered"}


def test_a_token_naming_another_user_is_never_redriven(spool, loopback_issuer):
    fake = FakeHindsight()
    steered = ids(spool)["steered"]
    wanted = [steered, "no-such-message"]
    result = redrive(spool, fake, operator_credential=OPERATOR, message_ids=wanted, verifier=loopback_issuer.verifier())
    assert result.delivered == []
    assert result.refused[steered].startswith("OWNER MISMATCH")
    assert result.not_found == ["no-such-message"]
    assert fake.requests == []
    assert "steered" in ids(spool)


def test_a_dry_run_delivers_nothing(spool, loopback_issuer):
    fake = FakeHindsight()
    chosen = ids(spool)["alex-1"]
    verifier = loopback_issuer.verifier()
    dry = redrive(spool, fake, operator_credential=OPERATOR, message_ids=[chosen], dry_run=True, verifier=verifier)
    assert dry.delivered == [chosen]
    assert fake.requests == []
    assert spool.count(dead=True) == 3


def test_deliver_needs_the_operator_credential_from_the_environment_or_a_secret(spool):
    with pytest.raises(SystemExit, match="HINDSIGHT_OPERATOR_KEY"):
        main(
            ["deliver", "--dead-letter-queue-url", spool.queue_url, "--hindsight-url", "http://h", "--message-id", "m"],
            env={},
        )


def test_a_crafted_record_for_someone_elses_bank_is_never_redriven_with_the_operator_credential(
    mocked_sqs: Any, loopback_issuer: LoopbackIssuer
) -> None:
    # Someone with SendMessage on the retain queue queues turns for grace's bank: a token signed by no one that names
    # her (its exp 7 h ago, so the replay's reason reads like an honest token expired beyond the grace window), a
    # credential that is no JWT, and none at all. Hindsight refuses each and the replay dead-letters them; the
    # operator's review must not call any of them redrivable: the operator credential would write them into her bank
    dead = mocked_sqs.create_queue(QueueName="dlq-crafted")["QueueUrl"]
    spool = SqsSpool(dead, dead_letter_queue_url=dead, wait_seconds=0)
    honest = loopback_issuer.mint("grace", exp=time.time() - 7 * 3600)
    forged = token(
        {"sub": "grace", "iss": loopback_issuer.issuer, "exp": time.time() - 7 * 3600, "client_id": CLIENT_ID}
    )
    crafted = {"forged": forged, "not-a-jwt": "opaque-key", "none": None}
    for op, credential in {**crafted, "honest": honest}.items():
        spool.dead_letter(record(op, "user:grace:agent:a", credential), "credential refused (HTTP 401): expired")
    env = jwt_env(loopback_issuer)
    out = io.StringIO()
    assert main(["list", "--dead-letter-queue-url", dead], env=env, out=out) == 0
    rows = {row["message_id"]: row for row in map(json.loads, out.getvalue().splitlines()[:-1])}
    by_op = {op: rows[message_id] for op, message_id in ids(spool).items()}
    assert {op: row["redrivable"] for op, row in by_op.items()} == {
        "forged": False,
        "not-a-jwt": False,
        "none": False,
        "honest": True,
    }
    deliver = ["deliver", "--dead-letter-queue-url", dead, "--hindsight-url", "http://127.0.0.1:9"]
    chosen = {op: message_id for op, message_id in ids(spool).items() if op in crafted}
    out = io.StringIO()
    args = [arg for message_id in chosen.values() for arg in ("--message-id", message_id)]
    assert main([*deliver, *args], env={**env, "HINDSIGHT_OPERATOR_KEY": OPERATOR}, out=out) == 1
    refused = {line.split()[1].rstrip(":") for line in out.getvalue().splitlines() if line.startswith("refused")}
    assert refused == set(chosen.values())  # each refused before any request (port 9 would answer "unavailable")
    assert "Hindsight" not in out.getvalue()

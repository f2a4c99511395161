"""The retain queue against the real local Hindsight and moto's SQS server: the replay function (its handler, run
locally as the event source mapping would) delivers queued turns once, dead-letters a token expired beyond the grace
window with the reason, survives malformed and oversized messages, and the operator redrives a reviewed dead letter
with the operator credential."""

from __future__ import annotations

import base64
import io
import json
import zlib
from typing import Any

import pytest

from localdev.token_issuer import LOCAL_CLIENT_ID
from memory_adapter import HindsightRuntimeAdapter, RetainOutcome, TurnContext
from memory_adapter.identity.bank_ids import format_bank_id
from memory_adapter.redrive import main as redrive_main
from memory_adapter.sqs_codec import decode_record
from tests.integration.queue_support import RetainQueues, make_queues, replay_handler, run_event_source

from .conftest import Bank, deliver_directly

pytestmark = pytest.mark.integration

SESSION = "queue-session-0123456789-0123456789"
SEVEN_HOURS = 7 * 3600  # the local server's grace window is 6 h (hindsight_isolation's default)


@pytest.fixture
def queues(moto_server: Any) -> RetainQueues:
    return make_queues(moto_server.sqs())


async def queue_turn(refused_url: str, queues: RetainQueues, context: TurnContext, text: str) -> None:
    """Retain a turn while Hindsight is unreachable: it lands in the queue, as the deployed agent's would."""
    adapter = HindsightRuntimeAdapter(
        "support", hindsight_api_url=refused_url, spool=queues.spool(), max_retries=0, auto_replay=False
    )
    try:
        assert await adapter.retain_for_turn(context, result=text, query="remember") is RetainOutcome.SPOOLED
    finally:
        await adapter.aclose(timeout=5)


def turn(user: str, request_id: str, credential: str) -> TurnContext:
    return TurnContext(SESSION, user, "support", request_id=request_id, credential=credential)


async def test_a_token_expired_beyond_the_grace_window_is_dead_lettered_and_the_operator_redrives_it(
    local_hindsight: Any,
    token_issuer: Any,
    refused_url: str,
    queues: RetainQueues,
    bank: Bank,
    run_id: str,
    moto_server: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user = f"queue-expired-{run_id}"
    bank_id = format_bank_id(user=user, agent="support")
    # GIVEN two queued turns whose tokens have expired since: one within the grace window, one beyond it
    await queue_turn(refused_url, queues, turn(user, "within-grace", token_issuer.mint(user, ttl=-120)), "One.")
    await queue_turn(refused_url, queues, turn(user, "beyond-grace", token_issuer.mint(user, ttl=-SEVEN_HOURS)), "Two.")
    assert queues.depth() == 2
    # WHEN the replay function drains the queue
    answers = run_event_source(queues, replay_handler(local_hindsight.url, queues))
    # THEN the first is delivered with its own token; the second is a dead letter with its reason, not a failure
    assert answers == [{"batchItemFailures": []}]
    assert queues.depth() == 0
    (letter,) = queues.dead_letters()
    assert letter.dead_letter_reason is not None
    assert "credential refused (HTTP 401)" in letter.dead_letter_reason
    assert "expired 7.0 h ago" in letter.dead_letter_reason
    assert bank.wait_for_documents(bank_id, {"within-grace"}) == ["within-grace"]

    # WHEN the operator reviews the dead letters and redrives that one with the operator credential
    for name, value in moto_server.env.items():
        monkeypatch.setenv(name, value)
    listing = io.StringIO()
    jwt = {"JWT_DISCOVERY_URL": token_issuer.discovery_url, "JWT_ALLOWED_CLIENTS": LOCAL_CLIENT_ID}  # the agent's
    assert redrive_main(["list", "--dead-letter-queue-url", queues.dead_url], env=jwt, out=listing) == 0
    (row,) = [json.loads(line) for line in listing.getvalue().splitlines()[:-1]]
    assert (row["bank"], row["redrivable"]) == (bank_id, True)
    assert row["owner_check"] == "the token's subject owns the bank (signature verified)"
    command = ["deliver", "--dead-letter-queue-url", queues.dead_url, "--hindsight-url", local_hindsight.url]
    operator = {**jwt, "HINDSIGHT_OPERATOR_KEY": local_hindsight.operator_key}
    assert redrive_main([*command, "--message-id", letter.message_id], env=operator, out=io.StringIO()) == 0
    # THEN both turns are in the bank exactly once and nothing is left in either queue
    ids = bank.wait_for_documents(bank_id, {"within-grace", "beyond-grace"})
    assert sorted(ids) == ["beyond-grace", "within-grace"]
    assert (queues.depth(), queues.depth(dead=True)) == (0, 0)


async def test_malformed_oversized_and_duplicated_messages_never_break_the_batch(
    local_hindsight: Any, token_issuer: Any, refused_url: str, queues: RetainQueues, bank: Bank, run_id: str
) -> None:
    user = f"queue-mixed-{run_id}"
    bank_id = format_bank_id(user=user, agent="support")
    token = token_issuer.mint(user, ttl=900)
    # GIVEN a queue holding good turns, one of them twice (SQS delivers at least once) and one already delivered
    # behind the queue's back (a lost acknowledgement), plus a malformed message and a compressed "zip bomb"
    await queue_turn(refused_url, queues, turn(user, "turn-1", token), "First answer.")
    await queue_turn(refused_url, queues, turn(user, "turn-2", token), "Second answer.")
    spool = queues.spool()
    received = spool.messages()
    spool.release(received, dead=False)  # only looked at: visible again at once
    (first, second) = sorted((decode_record(m) for m in received), key=lambda r: r.item["document_id"])
    spool.put(second)  # the same record, a second message
    deliver_directly(local_hindsight.url, first)
    queues.client.send_message(QueueUrl=queues.url, MessageBody="{this is not a retain")
    bomb = base64.b64encode(zlib.compress(b"0" * 20 * 2**20)).decode()
    queues.client.send_message(
        QueueUrl=queues.url,
        MessageBody=bomb,
        MessageAttributes={"encoding": {"DataType": "String", "StringValue": "zlib+base64"}},
    )
    # WHEN the replay function drains it in one batch
    answers = run_event_source(queues, replay_handler(local_hindsight.url, queues))
    # THEN no message failed the batch; the bad ones are dead letters with their reasons; each turn is stored once
    assert answers == [{"batchItemFailures": []}]
    reasons = sorted(letter.dead_letter_reason or "" for letter in queues.dead_letters())
    assert [reason.split(":")[0] for reason in reasons] == ["malformed", "oversized"]
    ids = bank.wait_for_documents(bank_id, {"turn-1", "turn-2"})
    assert sorted(ids) == ["turn-1", "turn-2"]
    assert queues.depth() == 0


def test_the_queued_record_is_the_turn_with_its_credential(queues: RetainQueues, refused_url: str) -> None:
    import asyncio

    asyncio.run(queue_turn(refused_url, queues, turn("alex", "r-1", "the-token"), "Noted."))
    (message,) = queues.spool().messages()
    record = decode_record(message)
    assert (record.bank_id, record.item["document_id"], record.credential) == (
        "user:alex:agent:support",
        "r-1",
        "the-token",
    )
    assert record.item["content"] == "User: remember\nAssistant: Noted."


async def test_a_record_steered_into_another_users_bank_or_crafted_is_a_dead_letter_and_writes_nothing(
    local_hindsight: Any, token_issuer: Any, refused_url: str, queues: RetainQueues, bank: Bank, run_id: str
) -> None:
    alex, bob = f"queue-alex-{run_id}", f"queue-bob-{run_id}"
    alex_bank, bob_bank = format_bank_id(user=alex, agent="support"), format_bank_id(user=bob, agent="support")
    alex_token = token_issuer.mint(alex, ttl=900)
    # GIVEN alex's own queued turn, the same record re-addressed to bob's bank (someone with SendMessage on the
    # queue), and records no agent wrote: nested past the parser's depth, a credential carrying a header line
    await queue_turn(refused_url, queues, turn(alex, "own-turn", alex_token), "Alex's answer.")
    spool = queues.spool()
    (own,) = spool.messages()
    spool.release([own], dead=False)
    steered = json.loads(own.body)
    steered.update(bank_id=bob_bank, operation_id=f"{steered['operation_id'][:-4]}beef")
    steered["item"]["document_id"] = "steered-turn"
    crafted = [
        json.dumps(steered),
        "[" * 100_000 + "]" * 100_000,
        json.dumps({**steered, "bank_id": alex_bank, "credential": f"{alex_token}\r\nX-Hindsight-Operator: 1"}),
    ]
    for body in crafted:
        queues.client.send_message(QueueUrl=queues.url, MessageBody=body)
    # WHEN the replay function drains the queue
    answers = run_event_source(queues, replay_handler(local_hindsight.url, queues))
    # THEN no message fails the batch (none waits for SQS to move it with a wrong reason); each crafted one is a dead
    # letter saying why; alex's turn is stored and bob's bank holds nothing
    assert answers == [{"batchItemFailures": []}]
    reasons = sorted((letter.dead_letter_reason or "")[:30] for letter in queues.dead_letters())
    assert reasons == [
        "malformed: not a spooled retai",
        "malformed: not a spooled retai",
        "refused (HTTP 403): the creden",
    ]
    assert bank.wait_for_documents(alex_bank, {"own-turn"}) == ["own-turn"]
    assert bank.document_ids(bob_bank) == []

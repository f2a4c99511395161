"""The administration actions end to end against the real local Hindsight (shared session server).

Users retain with their own tokens; the operator tools (``memory_adapter.admin``) act with the operator key,
exactly as the CLI's ``--local`` mode and the admin function do.
"""

from __future__ import annotations

import dataclasses
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_adapter.admin import AdminDeps, ConfirmationError, InvalidRequestError, OperatorClient, run_action
from memory_adapter.admin.errors import ErasureIncompleteError
from memory_adapter.admin.expiry import expire
from memory_adapter.admin.receipts import canonical_digest
from memory_adapter.kinds import RetentionRules
from tests.integration.admin.conftest import FailingDelete, Users

pytestmark = pytest.mark.integration


def _jsonl(deps: AdminDeps, key: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in deps.store.get(key).decode().splitlines()]


def test_banks_lists_every_agent_of_the_user_with_counts(users: Users, deps: AdminDeps) -> None:
    users.retain("alice", "Alice keeps bees in the garden.", agent="support")
    users.retain("alice", "Alice is planning a trip to Lisbon.", agent="travel")
    users.retain("alicex", "Alicex is someone else entirely.")
    result = run_action({"action": "banks", "user": users.name("alice")}, deps=deps, principal="test")
    by_agent = {b["agent"]: b for b in result["banks"]}
    assert set(by_agent) == {"support", "travel"}
    assert by_agent["support"]["documents"] == 1
    assert by_agent["support"]["facts"] >= 1


def test_export_holds_exactly_the_users_memories(users: Users, deps: AdminDeps) -> None:
    # GIVEN alice (two agents) and two other users, one whose id starts with alice's
    users.retain("alice", "Alice prefers green tea.", agent="support")
    users.retain("alice", "Alice's flight leaves on Friday.", agent="travel", kind="plan")
    users.retain("alicex", "Alicex prefers black coffee.")
    users.retain("bob", "Bob prefers hot chocolate.")
    # WHEN alice is exported
    result = run_action({"action": "export", "user": users.name("alice")}, deps=deps, principal="test")
    records = _jsonl(deps, result["key"])
    # THEN the file has alice's banks and documents, with their text and kind, and nothing of anyone else
    assert records[0]["type"] == "export"
    assert records[0]["requested_by"] == "test"
    assert records[-1]["type"] == "summary"
    assert {r["bank_id"] for r in records if "bank_id" in r} == {users.bank("alice"), users.bank("alice", "travel")}
    documents = {r["text"]: r["kind"] for r in records if r["type"] == "document"}
    assert documents == {"Alice prefers green tea.": "turn", "Alice's flight leaves on Friday.": "plan"}
    facts = " ".join(r["text"] for r in records if r["type"] == "fact")
    assert "green tea" in facts
    assert "Friday" in facts
    text = deps.store.get(result["key"]).decode()
    assert "coffee" not in text
    assert "chocolate" not in text


def test_forget_user_deletes_every_bank_verifies_and_leaves_others_untouched(users: Users, deps: AdminDeps) -> None:
    users.retain("carol", "Carol's locker code is 4711.", agent="support")
    users.retain("carol", "Carol books window seats.", agent="travel")
    users.retain("dave", "Dave's locker code is 1234.")
    carol = users.name("carol")
    # WHEN asked without the confirmation, THEN nothing is deleted
    with pytest.raises(ConfirmationError, match="repeat the user id"):
        run_action({"action": "forget-user", "user": carol}, deps=deps, principal="test")
    with pytest.raises(ConfirmationError):
        run_action({"action": "forget-user", "user": carol, "confirm": "dave"}, deps=deps, principal="test")
    assert users.recall("carol", "locker code")
    # WHEN confirmed
    receipt = run_action(
        {"action": "forget-user", "user": carol, "confirm": carol, "reason": "ticket 42"}, deps=deps, principal="ops"
    )
    # THEN carol's banks are gone, verified, with a sealed receipt next to the exports
    assert receipt["verification"]["verified"] is True
    assert {b["bank_id"] for b in receipt["banks"]} == {users.bank("carol"), users.bank("carol", "travel")}
    assert receipt["totals"]["documents"] == 2
    assert receipt["requested_by"] == "ops"
    assert receipt["reason"] == "ticket 42"
    stored = json.loads(deps.store.get(receipt["key"]))
    body = {k: v for k, v in stored.items() if k not in ("digest", "location", "key")}
    assert stored["digest"] == canonical_digest(body)
    assert receipt["key"].startswith("erasure-receipts/")
    assert run_action({"action": "banks", "user": carol}, deps=deps, principal="t")["banks"] == []
    assert users.recall("carol", "locker code") == []
    assert deps.client.bank_stats(users.bank("carol")) is None
    # AND dave is untouched
    assert any("1234" in t for t in users.recall("dave", "locker code"))
    # AND running it again is a verified no-op
    again = run_action({"action": "forget-user", "user": carol, "confirm": carol}, deps=deps, principal="ops")
    assert again["banks"] == []
    assert again["verification"]["verified"] is True


def test_forget_user_with_a_failed_bank_deletes_the_others_writes_a_partial_receipt_and_a_re_run_completes(
    users: Users, deps: AdminDeps, local_hindsight: Any
) -> None:
    # GIVEN frank with two banks, and Hindsight failing the delete of his travel bank once
    users.retain("frank", "Frank's badge number is 5521.", agent="support")
    users.retain("frank", "Frank flies to Oslo in March.", agent="travel")
    frank, travel = users.name("frank"), users.bank("frank", "travel")
    failing = FailingDelete(local_hindsight.url, travel)
    client = OperatorClient(local_hindsight.url, local_hindsight.operator_key, transport=failing)
    request = {"action": "forget-user", "user": frank, "confirm": frank}
    # WHEN frank is forgotten
    with pytest.raises(ErasureIncompleteError) as failure:
        run_action(request, deps=dataclasses.replace(deps, client=client), principal="ops")
    # THEN the support bank is gone, the travel bank is still there, and the written receipt says so
    first = failure.value.result
    assert (first["outcome"], [b["bank_id"] for b in first["banks"]]) == ("partial", [users.bank("frank")])
    assert [(f["bank_id"], f["status"]) for f in first["failed"]] == [(travel, 500)]
    assert json.loads(deps.store.get(first["key"]))["outcome"] == "partial"
    assert deps.client.bank_stats(users.bank("frank")) is None
    assert any("Oslo" in t for t in users.recall("frank", "Oslo in March", agent="travel"))
    # WHEN it is run again, THEN it completes, counts the travel bank, and names the partial receipt it continues
    again = run_action(request, deps=deps, principal="ops")
    assert (again["outcome"], again["verification"]["verified"]) == ("complete", True)
    assert ([b["bank_id"] for b in again["banks"]], again["continues"]) == ([travel], first["key"])
    assert first["totals"]["documents"] + again["totals"]["documents"] == 2
    assert run_action({"action": "banks", "user": frank}, deps=deps, principal="t")["banks"] == []


def test_forget_memory_previews_then_deletes_exactly_that_turn(users: Users, deps: AdminDeps) -> None:
    old = users.retain("erin", "Erin's old address is 12 Elm Street.")
    keep = users.retain("erin", "Erin likes jazz music.")
    erin = users.name("erin")
    request = {"action": "forget-memory", "user": erin, "query": "Elm Street address", "limit": 1}
    preview = run_action(request, deps=deps, principal="test")
    assert preview["preview"] is True
    assert [d["document_id"] for d in preview["documents"]] == [old]
    assert any("Elm Street" in f["text"] for f in preview["documents"][0]["facts"])
    assert deps.client.document(users.bank("erin"), old) is not None  # a preview deletes nothing
    with pytest.raises(ConfirmationError, match="preview again"):
        run_action({**request, "confirm": "sha256:0"}, deps=deps, principal="test")
    done = run_action({**request, "confirm": preview["confirmation"]}, deps=deps, principal="test")
    assert done["preview"] is False
    assert done["facts_deleted"] >= 1
    assert deps.client.document(users.bank("erin"), old) is None
    assert deps.client.document(users.bank("erin"), keep) is not None
    assert not any("Elm" in t for t in users.recall("erin", "Elm Street address"))


def test_forget_memory_by_id_and_bad_requests(users: Users, deps: AdminDeps) -> None:
    doc = users.retain("fay", "Fay's cat is called Miso.")
    bank = users.bank("fay")
    (memory,) = [m for m in deps.client.memories(bank) if "Miso" in m["text"]]
    request = {"action": "forget-memory", "user": users.name("fay"), "memory_id": memory["id"]}
    preview = run_action(request, deps=deps, principal="test")
    assert [d["document_id"] for d in preview["documents"]] == [doc]
    # another user cannot be reached through the memory id
    other = run_action({**request, "user": users.name("gus")}, deps=deps, principal="test")
    assert other["documents"] == []
    assert other["matched"] == []
    with pytest.raises(InvalidRequestError, match="exactly one"):
        run_action({"action": "forget-memory", "user": "x"}, deps=deps, principal="test")
    with pytest.raises(InvalidRequestError, match="unknown argument"):
        run_action({"action": "export", "user": "x", "bank": "y"}, deps=deps, principal="test")
    with pytest.raises(InvalidRequestError, match="unknown action"):
        run_action({"action": "drop-everything"}, deps=deps, principal="test")


def test_expiry_removes_exactly_what_is_due(users: Users, deps: AdminDeps) -> None:
    # GIVEN one item of each interesting kind, then, a moment later, a second plan
    ids = {
        kind: users.retain("hal", f"Hal's {kind} item number {n}.", kind=kind)
        for n, kind in enumerate(["plan", "problem", "fact", "preference", "turn"])
    }
    unlabelled = users.retain("hal", "Hal said something without a kind.")
    time.sleep(1.5)
    boundary = datetime.now(UTC)
    time.sleep(0.5)
    late_plan = users.retain("hal", "Hal's later plan.", kind="plan")
    bank = users.bank("hal")
    rules = RetentionRules.from_mapping({"turn": 60})

    def docs() -> set[str]:
        return {d["id"] for d in deps.client.documents(bank)}

    # WHEN the clock stands 30 days after the boundary: only the first plan is past its 30 days
    now = boundary + timedelta(days=30)
    dry = expire(deps.client, rules, now=now, dry_run=True, bank_ids=[bank])
    assert [d["document_id"] for d in dry.documents] == [ids["plan"]]
    assert docs() >= {ids["plan"], late_plan}  # a dry run deletes nothing
    report = expire(deps.client, rules, now=now, bank_ids=[bank])
    assert dict(report.expired) == {"plan": 1}
    assert report.facts_deleted >= 1
    assert ids["plan"] not in docs()
    assert late_plan in docs()
    # WHEN 61 days have passed: the later plan, and the turns (labelled or not) past their 60 days
    report = expire(deps.client, rules, now=boundary + timedelta(days=61), bank_ids=[bank])
    assert dict(report.expired) == {"plan": 1, "turn": 2}
    # WHEN 91 days: the problem; facts and preferences are kept whatever the clock says
    expire(deps.client, rules, now=boundary + timedelta(days=91), bank_ids=[bank])
    assert docs() == {ids["fact"], ids["preference"]}
    expire(deps.client, rules, now=boundary + timedelta(days=36500), bank_ids=[bank])
    assert docs() == {ids["fact"], ids["preference"]}
    assert unlabelled not in docs()


def test_expiry_works_in_batches(users: Users, deps: AdminDeps) -> None:
    for n in range(3):
        users.retain("ivy", f"Ivy plan {n}.", kind="plan")
    bank = users.bank("ivy")
    now = datetime.now(UTC) + timedelta(days=31)
    first = expire(deps.client, RetentionRules(), now=now, batch_size=2, bank_ids=[bank])
    assert len(first.documents) == 2
    assert first.more_due is True
    assert dict(first.due) == {"plan": 3}
    second = expire(deps.client, RetentionRules(), now=now, batch_size=2, bank_ids=[bank])
    assert len(second.documents) == 1
    assert second.more_due is False
    assert list(deps.client.documents(bank)) == []


def test_every_action_is_audited_with_the_principal(
    users: Users, deps: AdminDeps, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="memory_adapter.admin")
    users.retain("jo", "Jo likes chess.")
    run_action({"action": "banks", "user": users.name("jo")}, deps=deps, principal="arn:aws:iam::1:role/ops")
    with pytest.raises(ConfirmationError):
        run_action({"action": "forget-user", "user": users.name("jo")}, deps=deps, principal="arn:aws:iam::1:user/x")
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "memory_adapter.admin"]
    assert [(line["action"], line["principal"], line["outcome"]) for line in lines] == [
        ("banks", "arn:aws:iam::1:role/ops", "ok"),
        ("forget-user", "arn:aws:iam::1:user/x", "refused"),
    ]
    assert users.name("jo") not in json.dumps(lines)  # subjects appear hashed

"""Memory events against a real local Hindsight running the isolation extension with a JSONL events sink.

A remember, a forget (invalidation, as the forget tool does) and an erasure (the operator's bank delete) each
produce the right events, and one user's events never name another user's memories. The admin tools (erasure,
forget-memory, the scheduled expiry) say who acts (``x-memory-actor``), so their events name the operator principal
or the schedule. The erasure uses a bank of its
own: an invalidated memory leaves memory_units for Hindsight's curation archive, and deleting it is not reported yet.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from localdev.token_issuer import TokenIssuer
from memory_adapter.admin import AdminDeps, DirectoryStore, OperatorClient, run_action
from memory_adapter.identity import format_bank_id
from memory_adapter.kinds import RetentionRules, kind_tag
from tests.integration.isolation.support import Api


@pytest.fixture(scope="module")
def server(token_issuer: TokenIssuer) -> Iterator[tuple[str, str, Path]]:
    """A dedicated Hindsight whose memory events go to a JSONL file: (url, operator key, events file)."""
    config = LocalHindsightConfig.ephemeral(issuer_discovery_url=token_issuer.discovery_url)
    events_file = config.data_dir / "events.jsonl"  # where the server (maybe another OS user) may write
    config = dataclasses.replace(config, extra_env={"HINDSIGHT_API_TENANT_EVENTS_FILE": str(events_file)})
    hindsight = LocalHindsight(config)
    hindsight.start()
    hindsight.stop_when_gone(delete=True)
    assert hindsight.operator_key is not None
    try:
        yield hindsight.url, hindsight.operator_key, events_file
    finally:
        hindsight.stop()
        shutil.rmtree(hindsight.data_dir, ignore_errors=True)


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _wait_for(path: Path, match: Any, timeout: float = 30.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [e for e in _events(path) if match(e)] if path.exists() else []
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"no matching event in {path}")


def test_remember_and_forget_produce_their_events_for_their_user_only(
    server: tuple[str, str, Path], token_issuer: TokenIssuer
) -> None:
    url, _operator_key, events_file = server
    # GIVEN two users with one memory each
    alice, bob = f"alice-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    alice_bank, bob_bank = format_bank_id(user=alice, agent="support"), format_bank_id(user=bob, agent="support")
    alice_api, bob_api = Api(url, token_issuer.mint(alice)), Api(url, token_issuer.mint(bob))

    # WHEN alice remembers something
    response = alice_api.retain(alice_bank, "I prefer email over phone.", document_id="doc-a")
    assert response.status_code == 200, response.text
    created = _wait_for(events_file, lambda e: e["detail"]["bank"]["id"] == alice_bank)
    # THEN one created event per extracted memory, naming alice's bank, the source and who caused it; no text
    assert {e["detail-type"] for e in created} == {"memory.created"}
    detail = created[0]["detail"]
    assert detail["bank"] == {"id": alice_bank, "tenant": None, "user": alice, "agent": "support"}
    assert detail["source_id"] == "doc-a"
    assert detail["operation"] == "retain"
    assert detail["caused_by"]["kind"] == "user"
    assert detail["caused_by"]["user"] == alice
    assert "text" not in detail
    alice_memory = detail["memory_id"]
    assert bob_api.retain(bob_bank, "My favourite colour is green.", document_id="doc-b").status_code == 200
    _wait_for(events_file, lambda e: e["detail"]["bank"]["id"] == bob_bank)

    # WHEN alice forgets her memory (the forget tool's invalidation)
    response = alice_api.call(
        "PATCH", f"/v1/default/banks/{alice_bank}/memories/{alice_memory}", json={"state": "invalidated", "reason": "x"}
    )
    assert response.status_code == 200, response.text
    invalidated = _wait_for(events_file, lambda e: e["detail-type"] == "memory.invalidated")
    # THEN exactly that memory is reported invalidated, caused by alice
    assert [(e["detail"]["memory_id"], e["detail"]["caused_by"]["user"]) for e in invalidated] == [
        (alice_memory, alice)
    ]

    # AND no event of alice's bank names one of bob's memories (and vice versa)
    everything = _events(events_file)
    bob_ids = {e["detail"]["memory_id"] for e in everything if e["detail"]["bank"]["id"] == bob_bank}
    alice_ids = {e["detail"]["memory_id"] for e in everything if e["detail"]["bank"]["id"] == alice_bank}
    assert bob_ids
    assert not (bob_ids & alice_ids)
    assert all(e["detail"]["bank"]["user"] in (alice, bob) for e in everything)


def test_erasure_reports_every_memory_of_the_bank_deleted(
    server: tuple[str, str, Path], token_issuer: TokenIssuer
) -> None:
    url, operator_key, events_file = server
    # GIVEN a user with a memory
    carol = f"carol-{uuid.uuid4().hex[:6]}"
    carol_bank = format_bank_id(user=carol, agent="support")
    assert (
        Api(url, token_issuer.mint(carol)).retain(carol_bank, "I live in Lyon.", document_id="doc-c").status_code == 200
    )
    created = _wait_for(events_file, lambda e: e["detail"]["bank"]["id"] == carol_bank)

    # WHEN the operator erases carol (bank delete), saying who acts
    operator = Api(url, operator_key)
    response = operator.call(
        "DELETE", f"/v1/default/banks/{carol_bank}", headers={"x-memory-actor": "arn:aws:iam::1:role/ops"}
    )
    assert response.status_code == 200, response.text
    deleted = _wait_for(
        events_file, lambda e: e["detail-type"] == "memory.deleted" and e["detail"]["bank"]["id"] == carol_bank
    )
    # THEN every memory of the bank is reported deleted by that operator
    assert {e["detail"]["memory_id"] for e in deleted} == {e["detail"]["memory_id"] for e in created}
    assert {e["detail"]["caused_by"]["principal"] for e in deleted} == {"arn:aws:iam::1:role/ops"}


def _admin(url: str, operator_key: str, tmp_path: Path, *, days_later: int = 0) -> AdminDeps:
    """The admin tools as the function runs them, with a clock ``days_later`` days ahead (expiry)."""
    now = datetime.now(UTC) + timedelta(days=days_later)
    return AdminDeps(OperatorClient(url, operator_key), DirectoryStore(tmp_path), RetentionRules(), clock=lambda: now)


def test_admin_erasure_names_the_operator_principal_and_only_that_users_memories(
    server: tuple[str, str, Path], token_issuer: TokenIssuer, tmp_path: Path
) -> None:
    url, operator_key, events_file = server
    # GIVEN two users with a memory each
    dave, erin = f"dave-{uuid.uuid4().hex[:6]}", f"erin-{uuid.uuid4().hex[:6]}"
    dave_bank, erin_bank = format_bank_id(user=dave, agent="support"), format_bank_id(user=erin, agent="support")
    assert Api(url, token_issuer.mint(dave)).retain(dave_bank, "I live in Porto.").status_code == 200
    assert Api(url, token_issuer.mint(erin)).retain(erin_bank, "I live in Ghent.").status_code == 200
    created = _wait_for(events_file, lambda e: e["detail"]["bank"]["id"] == dave_bank)
    _wait_for(events_file, lambda e: e["detail"]["bank"]["id"] == erin_bank)
    deps = _admin(url, operator_key, tmp_path)
    operator_arn = "arn:aws:sts::111122223333:assumed-role/MemoryOperators/jane"

    # WHEN an operator erases dave with the admin tools (what the function URL runs for the verified principal)
    receipt = run_action({"action": "forget-user", "user": dave, "confirm": dave}, deps=deps, principal=operator_arn)
    assert receipt["verification"]["verified"] is True

    # THEN every memory of dave's bank is reported deleted, caused by that operator principal
    deleted = _wait_for(
        events_file, lambda e: e["detail-type"] == "memory.deleted" and e["detail"]["bank"]["id"] == dave_bank
    )
    assert {e["detail"]["memory_id"] for e in deleted} == {e["detail"]["memory_id"] for e in created}
    assert {json.dumps(e["detail"]["caused_by"], sort_keys=True) for e in deleted} == {
        json.dumps({"kind": "operator", "principal": operator_arn}, sort_keys=True)
    }
    # AND nothing of erin's was deleted, and no event of dave's bank names one of erin's memories
    everything = _events(events_file)
    assert not [
        e for e in everything if e["detail-type"] == "memory.deleted" and e["detail"]["bank"]["id"] == erin_bank
    ]
    erin_ids = {e["detail"]["memory_id"] for e in everything if e["detail"]["bank"]["id"] == erin_bank}
    dave_ids = {e["detail"]["memory_id"] for e in everything if e["detail"]["bank"]["id"] == dave_bank}
    assert erin_ids
    assert not (erin_ids & dave_ids)


def test_admin_forget_memory_and_scheduled_expiry_name_their_cause(
    server: tuple[str, str, Path], token_issuer: TokenIssuer, tmp_path: Path
) -> None:
    url, operator_key, events_file = server
    # GIVEN a user with a plan (30 days) and a fact (kept), and an operator
    fred = f"fred-{uuid.uuid4().hex[:6]}"
    bank = format_bank_id(user=fred, agent="support")
    api = Api(url, token_issuer.mint(fred))
    plan = {"document_id": "plan-1", "tags": [kind_tag("plan")], "metadata": {"kind": "plan"}}
    assert api.retain(bank, "I plan to visit Oslo next week.", **plan).status_code == 200
    assert api.retain(bank, "My old phone number is 555-0100.", document_id="phone").status_code == 200
    created = _wait_for(
        events_file, lambda e: e["detail"]["bank"]["id"] == bank and e["detail"]["source_id"] == "plan-1"
    )
    _wait_for(events_file, lambda e: e["detail"]["bank"]["id"] == bank and e["detail"]["source_id"] == "phone")

    # WHEN the operator forgets the phone number turn (preview, then confirm)
    operator_arn = "arn:aws:iam::111122223333:user/ops-bob"
    request = {"action": "forget-memory", "user": fred, "query": "old phone number", "limit": 1}
    preview = run_action(request, deps=_admin(url, operator_key, tmp_path), principal=operator_arn)
    assert [d["document_id"] for d in preview["documents"]] == ["phone"]
    run_action(
        {**request, "confirm": preview["confirmation"]},
        deps=_admin(url, operator_key, tmp_path),
        principal=operator_arn,
    )
    # THEN its memories are deleted by that operator
    forgotten = _wait_for(
        events_file,
        lambda e: (
            e["detail-type"] == "memory.deleted"
            and e["detail"]["source_id"] == "phone"
            and e["detail"]["bank"]["id"] == bank
        ),
    )
    assert {e["detail"]["caused_by"]["principal"] for e in forgotten} == {operator_arn}
    assert {e["detail"]["operation"] for e in forgotten} == {"delete_document"}

    # WHEN the scheduled expiry runs 31 days later (as the function's schedule handler calls it)
    rule = "arn:aws:events:us-east-1:111122223333:rule/HindsightMemory-dev-Expiry"
    run_action(
        {"action": "expire"},
        deps=_admin(url, operator_key, tmp_path, days_later=31),
        principal=rule,
        actor=f"schedule:{rule}",
    )
    # THEN the plan's memories are deleted, caused by that schedule
    expired = _wait_for(
        events_file,
        lambda e: (
            e["detail-type"] == "memory.deleted"
            and e["detail"]["source_id"] == "plan-1"
            and e["detail"]["bank"]["id"] == bank
        ),
    )
    assert {e["detail"]["memory_id"] for e in expired} == {e["detail"]["memory_id"] for e in created}
    assert {json.dumps(e["detail"]["caused_by"]) for e in expired} == {json.dumps({"kind": "schedule", "name": rule})}

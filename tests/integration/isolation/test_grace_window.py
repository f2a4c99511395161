"""A token that expired within the grace window retains into its own banks, and does nothing else."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import pytest

from memory_adapter.identity import format_bank_id
from tests.integration.isolation.support import FORBIDDEN, Api, Server

pytestmark = pytest.mark.integration


@dataclass
class Expired:
    api: Api
    fresh: Api
    bank: str
    other_bank: str
    user: str


@pytest.fixture(scope="module")
def expired(iso: Server) -> Expired:
    user = f"carol-{uuid.uuid4().hex[:8]}"
    fresh = iso.api(iso.mint(user, ttl=3600))
    bank = format_bank_id(user=user, agent="support")
    assert fresh.retain(bank, "Carol's favourite colour is teal.").status_code == 200
    other_user = f"dave-{uuid.uuid4().hex[:8]}"
    other_bank = format_bank_id(user=other_user, agent="support")
    assert iso.api(iso.mint(other_user)).retain(other_bank, "Dave likes jazz.").status_code == 200
    # Expired two minutes ago (the default grace window is six hours).
    return Expired(iso.api(iso.mint(user, ttl=-120)), fresh, bank, other_bank, user)


def test_expired_token_retains_into_its_own_bank(expired: Expired) -> None:
    response = expired.api.retain(expired.bank, "Carol moved to Porto.", document_id="spooled-1")
    assert response.status_code == 200, response.text
    assert "Carol moved to Porto." in expired.fresh.listed(expired.bank)


def test_expired_token_creates_its_own_new_bank_by_retaining(expired: Expired) -> None:
    new_bank = format_bank_id(user=expired.user, agent="fresh-agent")
    assert expired.api.retain(new_bank, "Carol started pottery.").status_code == 200
    assert expired.fresh.listed(new_bank) == ["Carol started pottery."]


def test_async_retain_by_expired_token_completes_in_the_worker(expired: Expired) -> None:
    # GIVEN a queued retain accepted inside the grace window
    response = expired.api.call(
        "POST",
        f"/v1/default/banks/{expired.bank}/memories",
        json={"items": [{"content": "Carol adopted a cat named Miso."}], "async": True},
    )
    assert response.status_code == 200, response.text
    # THEN the worker (which re-checks ownership with the stored principal) completes it
    status = expired.fresh.wait_operation(expired.bank, response.json()["operation_id"])
    assert status["status"] == "completed", status
    deadline = time.monotonic() + 30
    while "Carol adopted a cat named Miso." not in expired.fresh.listed(expired.bank):
        assert time.monotonic() < deadline
        time.sleep(0.5)


def test_the_worker_is_never_refused_legitimate_work(iso: Server, expired: Expired) -> None:
    # Queued work was authorized at submission and runs with the submitter's principal: a refusal of internal work
    # would mean the worker lost or changed the principal on the way.
    if iso.server_log is None:
        pytest.skip("the server log is not reachable (external server)")
    refused = [
        line for line in iso.log_text().splitlines() if "hindsight_isolation denied" in line and "internal=True" in line
    ]
    assert not refused, refused[:3]


def test_expired_token_cannot_retain_into_another_users_bank(expired: Expired) -> None:
    response = expired.api.retain(expired.other_bank, "Dave hates jazz.")
    assert response.status_code == 403
    assert response.json() == FORBIDDEN


@pytest.mark.parametrize(
    ("method", "suffix", "kwargs"),
    [
        ("POST", "/memories/recall", {"json": {"query": "colour"}}),
        ("POST", "/reflect", {"json": {"query": "colour?"}}),
        ("GET", "/memories/list", {}),
        ("GET", "/documents", {}),
        ("DELETE", "/documents/spooled-1", {}),
        ("DELETE", "/memories", {}),
        ("DELETE", "", {}),
        ("PATCH", "", {"json": {"name": "renamed"}}),
        ("POST", "/mental-models", {"json": {"name": "m", "source_query": "q"}}),
        ("POST", "/transfer/export", {}),
        # Not retaining a turn either, though each is work a retain may also cause:
        ("POST", "/consolidate", {}),
        ("POST", "/consolidation/recover", {}),
        ("PUT", "", {"json": {}}),
        (
            "POST",
            "/files/retain",
            {"files": {"files": ("a.txt", b"Carol's notes.", "text/plain")}, "data": {"request": "{}"}},
        ),
    ],
)
def test_expired_token_does_nothing_else_in_its_own_bank(
    expired: Expired, method: str, suffix: str, kwargs: dict[str, object]
) -> None:
    response = expired.api.call(method, f"/v1/default/banks/{expired.bank}{suffix}", **kwargs)
    assert response.status_code == 403, response.text
    assert response.json() == FORBIDDEN


def test_expired_token_lists_no_banks(expired: Expired) -> None:
    assert expired.api.bank_ids() == []


def test_expired_token_cannot_create_a_bank_without_retaining(expired: Expired) -> None:
    new_bank = format_bank_id(user=expired.user, agent=f"empty-{uuid.uuid4().hex[:4]}")
    response = expired.api.call("PUT", f"/v1/default/banks/{new_bank}", json={})
    assert response.status_code == 403, response.text
    assert response.json() == FORBIDDEN
    assert new_bank not in expired.fresh.bank_ids()

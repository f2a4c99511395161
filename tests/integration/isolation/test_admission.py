"""Admission control of recalls on a real Hindsight (hindsight_isolation.admission): an overloaded server sheds a
recall that states a deadline at once, admits one that states none, never sheds a retain, and the adapter turns a
shed into an immediate degraded turn without opening its breaker.

The server here serves one recall at a time (``RECALL_CONCURRENCY=1``) and a pool of threads keeps it busy with
other users' recalls that state no deadline, one user per thread (each within its share, so never shed, and the queue
stays long): every recall that states a deadline then finds an expected wait of a dozen recalls, above the 50 ms a
recall may queue. Nothing here is timed:
"at once" is the server's own account (a shed decided on arrival), and the adapter's turns are checked against their
deadline.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from hindsight_isolation.settings import tenant_env
from hindsight_isolation.shed import SHED_LOG
from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from localdev.token_issuer import TokenIssuer
from memory_adapter import HindsightRuntimeAdapter, TurnContext
from memory_adapter.identity.bank_ids import format_bank_id
from memory_adapter.recall_deadline import DEADLINE_HEADER, OVERLOADED, REASON_FIELD, RETRY_AFTER_FIELD
from tests.conftest import throwaway_hindsight

pytestmark = pytest.mark.integration

USER = "admission-alice"
BANK = format_bank_id(user=USER, agent="support")
#: Threads sending recalls without a deadline, back to back: the queue in front of the one slot.
FLOOD = 16
#: The users whose recalls keep the server busy, one per thread: a user may hold only its share of the gate (one
#: place of the one slot), deadline or not.
OTHERS = [f"admission-bob-{n}" for n in range(FLOOD)]
DEADLINE_MS = 1500


class Busy:
    """A server kept saturated by recalls that state no deadline, each user's one at a time (within its share, so
    never shed)."""

    def __init__(self, url: str, token_issuer: TokenIssuer) -> None:
        self.url = url
        self.tokens = [token_issuer.mint(user, ttl=900) for user in OTHERS]
        self.banks = [format_bank_id(user=user, agent="support") for user in OTHERS]
        self.statuses: list[int] = []
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(FLOOD)

    def _loop(self, token: str, bank: str) -> None:
        with httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as c:
            while not self._stop.is_set():
                self.statuses.append(recall(c, "what do I like?", bank=bank).status_code)

    def __enter__(self) -> Busy:
        for token, bank in zip(self.tokens, self.banks, strict=True):
            self._pool.submit(self._loop, token, bank)
        time.sleep(1.0)  # every thread has a recall in the queue
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._pool.shutdown(wait=True)


def recall(client: httpx.Client, query: str, deadline_ms: int | None = None, bank: str = BANK) -> httpx.Response:
    headers = {DEADLINE_HEADER: str(deadline_ms)} if deadline_ms is not None else {}
    return client.post(f"/v1/default/banks/{bank}/memories/recall", json={"query": query}, headers=headers)


@pytest.fixture(scope="module")
def narrow(token_issuer: TokenIssuer) -> Iterator[LocalHindsight]:
    """A dedicated Hindsight serving one recall at a time, with a few memories in the bank."""
    config = LocalHindsightConfig.ephemeral(
        issuer_discovery_url=token_issuer.discovery_url,
        extra_env={tenant_env("recall_concurrency"): "1"},
    )
    with throwaway_hindsight(config) as hindsight:
        items = [{"content": f"I like {thing}."} for thing in ("tea", "hiking", "jazz", "rain")]
        for user in (USER, *OTHERS):
            token = token_issuer.mint(user, ttl=900)
            bank = format_bank_id(user=user, agent="support")
            with httpx.Client(base_url=hindsight.url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as c:
                assert c.post(f"/v1/default/banks/{bank}/memories", json={"items": items}).status_code == 200
                for _ in range(5 if user == USER else 1):  # served recalls: what the server's estimate learns from
                    assert recall(c, "what do I like?", bank=bank).status_code == 200
        yield hindsight


@pytest.fixture
def client(narrow: LocalHindsight, token_issuer: TokenIssuer) -> Iterator[httpx.Client]:
    token = token_issuer.mint(USER, ttl=900)
    with httpx.Client(base_url=narrow.url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as c:
        yield c


def test_an_overloaded_server_sheds_a_recall_with_a_deadline_at_once(
    narrow: LocalHindsight, client: httpx.Client, token_issuer: TokenIssuer
) -> None:
    with Busy(narrow.url, token_issuer) as busy:
        shed = recall(client, "what do I like?", deadline_ms=DEADLINE_MS)
        # AND one that states no deadline waits its turn and is served
        patient = recall(client, "what do I like?")
        # AND a retain is never shed, whatever it states
        retain = client.post(
            f"/v1/default/banks/{BANK}/memories",
            json={"items": [{"content": "I like snow."}], "async": True},
            headers={DEADLINE_HEADER: "1"},
        )
    assert shed.status_code == 503, shed.text
    assert shed.json()[REASON_FIELD] == OVERLOADED
    assert "overloaded" in shed.json()["detail"]
    assert int(shed.headers["retry-after"]) >= 1
    # the body says when, to the millisecond; the header, HTTP's whole seconds, rounds it up
    assert 0 < shed.json()[RETRY_AFTER_FIELD] <= int(shed.headers["retry-after"])
    # decided on arrival (no queueing; not a timed check: this machine may be slow)
    assert f"{SHED_LOG} status=503 stage=arrival" in narrow.server_log.read_text(errors="replace")
    assert patient.status_code == 200, patient.text
    assert retain.status_code == 200, retain.text
    assert set(busy.statuses) == {200}, "recalls without a deadline within their user's share are never shed"
    assert SHED_LOG in narrow.server_log.read_text(errors="replace")


def test_an_idle_server_serves_a_recall_with_a_deadline(client: httpx.Client) -> None:
    response = recall(client, "what do I like?", deadline_ms=DEADLINE_MS)
    assert response.status_code == 200, response.text
    assert response.json()["results"]


@pytest.mark.parametrize("value", ["soon", "-1", "1e999", ""])
def test_a_deadline_that_is_not_a_number_is_no_deadline(client: httpx.Client, value: str) -> None:
    response = client.post(
        f"/v1/default/banks/{BANK}/memories/recall", json={"query": "tea"}, headers={DEADLINE_HEADER: value}
    )
    assert response.status_code == 200, response.text


async def test_the_adapter_turns_a_shed_into_an_immediate_degraded_turn(
    narrow: LocalHindsight, token_issuer: TokenIssuer, tmp_path: Path
) -> None:
    adapter = HindsightRuntimeAdapter(
        "support",
        hindsight_api_url=narrow.url,
        spool_dir=str(tmp_path / "spool"),
        recall_timeout=DEADLINE_MS / 1000,
        breaker_failure_threshold=1,  # one failure would open it: a shed is not one
        auto_replay=False,
    )
    turn = TurnContext(
        runtime_session_id="admission", user_id=USER, agent_name="support", credential=token_issuer.mint(USER)
    )
    try:
        with Busy(narrow.url, token_issuer):
            recollections = [await adapter.recall_for_turn(turn, "what do I like?") for _ in range(5)]
        assert {(r.degraded, r.reason) for r in recollections} == {(True, "shed")}
        assert all(r.latency_ms < DEADLINE_MS for r in recollections), [r.latency_ms for r in recollections]
        assert adapter.breaker_state == "closed"
        # the load gone and the shed's Retry-After over (until then the user's recalls are skipped without asking),
        # the next turn gets its memories
        windows = adapter._recaller.windows
        await asyncio.sleep(max(0.0, max(windows.until.values(), default=0.0) - windows.clock()))
        served = await adapter.recall_for_turn(turn, "what do I like?")
        assert (served.degraded, served.count > 0) == (False, True)
    finally:
        await adapter.aclose(timeout=5)


def test_one_bank_cannot_take_every_place_in_the_gate(narrow: LocalHindsight, token_issuer: TokenIssuer) -> None:
    # GIVEN other users' recalls holding the one slot and queueing behind it
    with Busy(narrow.url, token_issuer) as busy:
        # WHEN one of them also sends a recall stating a deadline it would make (a minute), and one stating none
        headers = {"Authorization": f"Bearer {busy.tokens[0]}"}
        with httpx.Client(base_url=narrow.url, headers=headers, timeout=120) as other:
            greedy = recall(other, "what do I like?", deadline_ms=60_000, bank=busy.banks[0])
            flooding = recall(other, "what do I like?", bank=busy.banks[0])
    # THEN both are shed at once for their user's share of the gate, not queued behind that user's own recall
    assert (greedy.status_code, flooding.status_code) == (503, 503), (greedy.text, flooding.text)
    assert flooding.json()[REASON_FIELD] == OVERLOADED
    sheds = [line for line in narrow.server_log.read_text(errors="replace").splitlines() if SHED_LOG in line]
    assert any("stage=share" in line and "deadline_ms=60000" in line for line in sheds)
    assert any("stage=share" in line and "deadline_ms=none" in line for line in sheds)


def test_a_recall_of_another_user_s_bank_tells_nothing_about_its_load(
    narrow: LocalHindsight, client: httpx.Client, token_issuer: TokenIssuer
) -> None:
    # GIVEN Bob's bank busy with his recall (the one slot, or in the queue of them)
    with Busy(narrow.url, token_issuer) as busy:
        # WHEN Alice, authenticated, recalls Bob's bank, stating a deadline
        probes = [recall(client, "what does bob like?", deadline_ms=60_000, bank=busy.banks[0]) for _ in range(3)]
    # THEN she gets the refusal she would get on an idle server, never a shed that says Bob's bank is busy
    assert [p.status_code for p in probes] == [403, 403, 403], [p.text for p in probes]
    assert set(busy.statuses) == {200}

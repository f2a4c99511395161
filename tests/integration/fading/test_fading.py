"""Fading and reinforcement on a real local Hindsight, time-shifted with the test-only clock header.

A dedicated server runs with fading on (unlabelled turns: half-life 10 days; floor 0.01, so a turn unrecalled for
about 66 days is left out) and honours ``x-memory-clock``, so one test walks months in seconds: a memory not
recalled for 60 days ranks below one recalled the day before; one not recalled for 80 days is no longer recalled
but is still listed (exported); a fact (a kind that never fades) stays; editing the faded memory restores it; and
recalling reinforces (the record lives in the server's database, not in any client).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from localdev.token_issuer import TokenIssuer
from memory_adapter.identity import format_bank_id
from tests.integration.isolation.support import Api

T0 = datetime.now(UTC)
_TYPES = ["world", "experience"]  # observations are derived (consolidation): left out to keep the scenario exact


@pytest.fixture(scope="module")
def server(token_issuer: TokenIssuer) -> Iterator[str]:
    """A dedicated Hindsight with fading on and the clock header honoured: its URL."""
    config = LocalHindsightConfig.ephemeral(issuer_discovery_url=token_issuer.discovery_url)
    config = dataclasses.replace(
        config,
        extra_env={
            "HINDSIGHT_API_TENANT_FADING": "true",
            "HINDSIGHT_API_TENANT_FADING_HALF_LIFE_DAYS": json.dumps({"turn": 10}),
            "HINDSIGHT_API_TENANT_FADING_FLOOR": "0.01",
            "HINDSIGHT_API_TENANT_FADING_CLOCK_HEADER": "true",
        },
    )
    hindsight = LocalHindsight(config)
    hindsight.start()
    hindsight.stop_when_gone(delete=True)
    try:
        yield hindsight.url
    finally:
        hindsight.stop()
        shutil.rmtree(hindsight.data_dir, ignore_errors=True)


def _recall(api: Api, bank: str, day: int, *, topics: list[str] | None = None) -> list[dict[str, Any]]:
    """Recall "where are Ada's keys" as of ``day`` days after now (only ``topics`` when given), best first."""
    body: dict[str, Any] = {"query": "Where does Ada keep her keys?", "types": _TYPES}
    if topics is not None:
        body.update(tags=[f"topic:{t}" for t in topics], tags_match="any_strict")
    response = api.call(
        "POST",
        f"/v1/default/banks/{bank}/memories/recall",
        json=body,
        headers={"x-memory-clock": (T0 + timedelta(days=day)).isoformat()},
    )
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def _topics(results: list[dict[str, Any]]) -> list[str]:
    """The topic of each result, in order (one per source item)."""
    return [next(t.removeprefix("topic:") for t in r["tags"] if t.startswith("topic:")) for r in results]


def _first(topics: list[str], topic: str) -> int:
    return topics.index(topic)


def test_unrecalled_memories_fade_recalled_ones_are_reinforced_and_faded_ones_stay_exported(
    server: str, token_issuer: TokenIssuer
) -> None:
    user = f"ada-{uuid.uuid4().hex[:6]}"
    bank = format_bank_id(user=user, agent="support")
    api = Api(server, token_issuer.mint(user))
    # GIVEN three memories told today: two unlabelled turns (they fade) and a fact (never fades)
    items = {
        "a": ("Ada keeps her spare house keys under the blue flowerpot by the door.", []),
        "b": ("Ada keeps her car keys in the top kitchen drawer.", []),
        "f": ("Ada keeps her office keys in her laptop bag.", ["kind:fact"]),
    }
    for topic, (text, tags) in items.items():
        response = api.retain(bank, text, document_id=f"doc-{topic}", tags=[f"topic:{topic}", *tags])
        assert response.status_code == 200, response.text
    today = _topics(_recall(api, bank, 0))
    assert {"a", "b", "f"} <= set(today), today

    # WHEN b is recalled on day 59 (a is not), and both are recalled together on day 60
    assert set(_topics(_recall(api, bank, 59, topics=["b"]))) == {"b"}
    day60 = _topics(_recall(api, bank, 60, topics=["a", "b"]))
    # THEN a, unrecalled for 60 days (strength 1/64), ranks below b, recalled the day before (and is still there)
    assert _first(day60, "b") < _first(day60, "a"), day60

    # WHEN b alone is recalled on days 100 and 139 (every recall restarts its clock) and everything on day 140
    for day in (100, 139):
        assert _topics(_recall(api, bank, day, topics=["b"])) == ["b"]
    day140 = _recall(api, bank, 140)
    # THEN a (80 days since day 60, strength 1/256) is below the floor and left out;
    # b (reinforced) and the fact (never fades) are recalled
    assert "a" not in _topics(day140), _topics(day140)
    assert {"b", "f"} <= set(_topics(day140))
    # AND a is still in the bank: listed, so exported with everything else
    listed = api.call("GET", f"/v1/default/banks/{bank}/memories/list", params={"limit": 100}).json()["items"]
    faded = [m for m in listed if "topic:a" in (m.get("tags") or [])]
    assert faded, listed

    # WHEN the faded memory is edited (the restore path: a person says it matters) on day 140
    memory = faded[0]
    response = api.call(
        "PATCH",
        f"/v1/default/banks/{bank}/memories/{memory['id']}",
        json={"text": memory["text"]},
        headers={"x-memory-clock": (T0 + timedelta(days=140)).isoformat()},
    )
    assert response.status_code == 200, response.text
    # THEN it is recalled again the next day
    assert "a" in _topics(_recall(api, bank, 141))


def test_the_clock_header_must_be_an_instant(server: str, token_issuer: TokenIssuer) -> None:
    user = f"bo-{uuid.uuid4().hex[:6]}"
    bank = format_bank_id(user=user, agent="support")
    # WHEN a recall sends a clock that is not an instant
    response = Api(server, token_issuer.mint(user)).call(
        "POST", f"/v1/default/banks/{bank}/memories/recall", json={"query": "x"}, headers={"x-memory-clock": "soon"}
    )
    # THEN it is refused with a message saying what is expected
    assert response.status_code == 400
    assert "ISO 8601" in response.text

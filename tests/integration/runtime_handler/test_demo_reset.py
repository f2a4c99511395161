"""``make local``'s demo resets only its own user's bank: what someone stored by hand as user-alex survives it."""

from __future__ import annotations

from typing import Any

import pytest

from localdev.demo import HAND_USER, USER, reset_bank
from memory_adapter.identity.bank_ids import format_bank_id
from memory_adapter.transport import HttpTransport, bank_path

pytestmark = pytest.mark.integration


def _retain(url: str, token: str, user: str, text: str) -> None:
    response = HttpTransport(url).request(
        "POST",
        bank_path(format_bank_id(user=user, agent="support"), "/memories"),
        body={"items": [{"content": text}], "async": False},
        bearer=token,
        timeout=60,
    )
    response.raise_for_status()


def _texts(url: str, operator_key: str, user: str) -> list[str]:
    response = HttpTransport(url).request(
        "GET", bank_path(format_bank_id(user=user, agent="support"), "/memories/list"), bearer=operator_key, timeout=30
    )
    if response.status == 404:
        return []
    response.raise_for_status()
    return [item["text"] for item in response.body["items"]]


def test_the_demo_resets_its_own_user_only(local_hindsight: Any, token_issuer: Any) -> None:
    # GIVEN a memory stored by hand as user-alex and one from an earlier demo run
    assert USER != HAND_USER
    url, key = local_hindsight.url, local_hindsight.operator_key
    _retain(url, token_issuer.mint(HAND_USER, ttl=600), HAND_USER, "My locker number is 4711.")
    _retain(url, token_issuer.mint(USER, ttl=600), USER, "My project codename is Bluebird.")
    # WHEN the demo resets its bank
    reset_bank(url, key)
    # THEN the demo's memories are gone and user-alex's are kept
    assert _texts(url, key, USER) == []
    assert "My locker number is 4711." in _texts(url, key, HAND_USER)

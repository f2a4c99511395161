"""``make local``'s demo resets only its own user's bank: what someone stored by hand as user-alex survives it."""

from __future__ import annotations

from typing import Any

import pytest

from localdev.demo import HAND_USER, USER, reset_bank
from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.identity.bank_ids import format_bank_id
from memory_adapter.transport import HttpTransport

pytestmark = pytest.mark.integration


def _retain(url: str, token: str, user: str, text: str) -> None:
    api = HindsightApi(HttpTransport(url), timeout=60)
    api.retain(format_bank_id(user=user, agent="support"), [{"content": text}], wait=True, bearer=token)


def _texts(url: str, operator_key: str, user: str) -> list[str]:
    api = HindsightApi(HttpTransport(url), timeout=30)
    items = api.list_memories(format_bank_id(user=user, agent="support"), {}, bearer=operator_key)
    return [item["text"] for item in items]


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

"""Spooled retains replay after the user's token expired: with the token they were spooled with, into that user's
banks only, and with no credential that can write any other bank."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest

from memory_adapter import HindsightRuntimeAdapter, TurnContext
from memory_adapter.identity import format_bank_id
from tests.integration.isolation.support import Server

pytestmark = pytest.mark.integration


def _adapter(url: str, spool_dir: Path) -> HindsightRuntimeAdapter:
    return HindsightRuntimeAdapter(
        "support",
        hindsight_api_url=url,
        spool_dir=str(spool_dir),
        retain_async=False,
        max_retries=0,
        auto_replay=False,
        timeout=60.0,
    )


async def _spool(refused_url: str, spool_dir: Path, context: TurnContext, text: str) -> None:
    """Retain while Hindsight is unreachable, so the turn lands in the spool with its credential."""
    adapter = _adapter(refused_url, spool_dir)
    try:
        # The user states the fact (the local extractor, like a real one, keeps what the user said, not the reply).
        await adapter.after_turn(context, result="Noted.", query=text)
        assert adapter.spooled_retains >= 1
    finally:
        await adapter.aclose(timeout=5)


async def test_spooled_retain_replays_with_its_expired_token(iso: Server, refused_url: str, tmp_path: Path) -> None:
    # GIVEN a turn spooled while Hindsight was down, carrying a token that has since expired (within the grace window)
    user = f"frank-{uuid.uuid4().hex[:8]}"
    expired = iso.mint(user, ttl=-120)
    context = TurnContext(runtime_session_id="s" * 40, user_id=user, agent_name="support", credential=expired)
    await _spool(refused_url, tmp_path, context, "Frank's flight to Oslo leaves at 7 am.")

    # WHEN the spool is replayed against the (isolating) server
    adapter = _adapter(iso.url, tmp_path)
    try:
        result = await adapter.replay()
    finally:
        await adapter.aclose(timeout=5)

    # THEN it is delivered into frank's bank, with nothing left behind
    assert (result.delivered, result.rejected, result.remaining) == (1, 0, 0)
    # (the adapter queues retains on the server: the worker stores them moments later)
    bank = format_bank_id(user=user, agent="support")
    operator = iso.api(iso.operator_key)
    deadline = time.monotonic() + 60
    while not any("Oslo" in text for text in operator.listed(bank)):
        assert time.monotonic() < deadline, operator.listed(bank)
        await asyncio.sleep(0.5)


async def test_spooled_retain_steered_into_another_users_bank_is_refused(
    iso: Server, refused_url: str, tmp_path: Path
) -> None:
    # GIVEN a steered agent that spooled a retain for victim's bank with attacker's (expired) token
    attacker, victim = f"mallory-{uuid.uuid4().hex[:8]}", f"grace-{uuid.uuid4().hex[:8]}"
    context = TurnContext(
        runtime_session_id="s" * 40, user_id=victim, agent_name="support", credential=iso.mint(attacker, ttl=-120)
    )
    await _spool(refused_url, tmp_path, context, "Grace wants all refunds sent to account 666.")

    # WHEN it is replayed
    adapter = _adapter(iso.url, tmp_path)
    try:
        result = await adapter.replay()
    finally:
        await adapter.aclose(timeout=5)

    # THEN the server refuses it: no write into the victim's bank
    assert result.delivered == 0
    assert result.rejected == 1
    bank = format_bank_id(user=victim, agent="support")
    assert bank not in iso.api(iso.operator_key).bank_ids()

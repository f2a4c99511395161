"""Start-up replay: retains an earlier process spooled reach Hindsight when the next process starts, before any turn."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

from localdev.token_issuer import TokenIssuer
from memory_adapter import RetainOutcome
from memory_adapter.agentcore import AgentCoreMemory
from memory_adapter.identity.bank_ids import format_bank_id
from memory_adapter.spool import DirectorySpool
from tests.integration.memory_adapter.conftest import Bank
from tests.unit.runtime_handler.serving import serve

from .conftest import AGENT, adapter_of, session_id, turn_for, wiring_env


def test_a_spool_left_by_an_earlier_process_is_delivered_at_start_up_without_a_turn(
    local_hindsight: Any, refused_url: str, token_issuer: TokenIssuer, tmp_path: Path
) -> None:
    spool_dir = tmp_path / "spool"
    user = f"startup-{uuid.uuid4().hex[:8]}"
    # GIVEN an earlier process that spooled a turn while Hindsight refused connections, then ended
    earlier = AgentCoreMemory.from_env(wiring_env(refused_url, token_issuer, spool_dir))
    turn = turn_for(token_issuer, user, session_id("startup"))
    assert turn.request_id is not None
    handle = earlier.memory.retain_for_turn(
        turn.caller,
        result="Noted: the blue bicycle.",
        query="remember my bike",
        session_id=turn.session_id,
        request_id=turn.request_id,
    )
    assert handle.result(timeout=30) is RetainOutcome.SPOOLED
    asyncio.run(earlier.aclose())
    assert DirectorySpool(str(spool_dir)).count() == 1
    # WHEN the next process starts on the same disk with Hindsight answering, and no turn arrives
    later = AgentCoreMemory.from_env(wiring_env(local_hindsight.url, token_issuer, spool_dir))
    with serve(later.create_app()):
        # THEN the spooled turn is delivered and the spool empties, by itself
        deadline = time.monotonic() + 60
        while DirectorySpool(str(spool_dir)).count() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert DirectorySpool(str(spool_dir)).count() == 0
        bank_id = format_bank_id(user=user, agent=AGENT)
        ids = Bank(local_hindsight.url, local_hindsight.operator_key).wait_for_documents(bank_id, {turn.request_id})
        assert ids == [turn.request_id]
        assert adapter_of(later).pending_retains == 0

"""``make local``'s agent loop: localdev.agent runs ``python -m runtime_handler`` as a real process, and the demo's
two sessions show the recalled preference (the same code path as the printed transcript)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localdev.agent import LocalAgent
from localdev.demo import USER, run_agent_demo
from localdev.token_issuer import TokenIssuer
from tests.unit.runtime_handler.serving import free_port

pytestmark = pytest.mark.integration


def test_demo_agent_loop_recalls_the_preference(
    local_hindsight: Any, token_issuer: TokenIssuer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = LocalAgent(tmp_path / "agent")
    url = agent.start(hindsight_url=local_hindsight.url, issuer_url=token_issuer.issuer, port=free_port())
    agent.stop_when_gone()  # even if this session is killed, no agent is left running
    try:
        assert agent.healthy()
        assert run_agent_demo(url, local_hindsight.url, token_issuer.mint(USER, ttl=600))
    finally:
        assert agent.stop()
    assert not agent.healthy()
    transcript = capsys.readouterr().out
    assert "== Session 2" in transcript
    assert "email over phone" in transcript

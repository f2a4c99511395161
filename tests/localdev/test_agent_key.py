"""The local Hindsight's per-deployment agent key: generated, kept private, limited to one agent's banks."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import httpx
import pytest

from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from memory_adapter.identity import format_bank_id


def _config(tmp_path: Path, **overrides: Any) -> LocalHindsightConfig:
    return LocalHindsightConfig(data_dir=tmp_path, port=1, pg_port=2, llm_port=3, **overrides)


def test_agent_key_is_configured_for_its_agent_and_tenant_only(tmp_path: Path) -> None:
    # GIVEN a config naming the agent (and tenant) the key is for
    hs = LocalHindsight(_config(tmp_path, agent_name="support", agent_tenant="acme"))
    # THEN a key distinct from the operator's is generated, kept 0600, and stable across instances
    assert hs.agent_key is not None
    assert len(hs.agent_key) >= 32
    assert hs.agent_key != hs.operator_key
    assert stat.S_IMODE(hs.agent_key_file.stat().st_mode) == 0o600
    assert LocalHindsight(_config(tmp_path, agent_name="support", agent_tenant="acme")).agent_key == hs.agent_key
    # AND the isolation extension is told exactly whose banks it opens
    env = hs.server_env()
    assert env["HINDSIGHT_API_TENANT_AGENT_KEY"] == hs.agent_key
    assert env["HINDSIGHT_API_TENANT_AGENT_NAME"] == hs.agent_name == "support"
    assert env["HINDSIGHT_API_TENANT_AGENT_TENANT"] == hs.agent_tenant == "acme"


def test_no_agent_key_unless_an_agent_is_named(tmp_path: Path) -> None:
    hs = LocalHindsight(_config(tmp_path))
    assert hs.agent_key is None
    env = hs.server_env()
    assert not [k for k in env if k.startswith("HINDSIGHT_API_TENANT_AGENT_")]
    without_isolation = LocalHindsight(_config(tmp_path / "open", isolation=False, agent_name="support"))
    assert without_isolation.agent_key is None


@pytest.mark.integration
def test_session_server_agent_key_opens_only_its_agents_banks(local_hindsight: Any) -> None:
    if not local_hindsight.agent_key:
        pytest.skip("the external Hindsight has no agent key (LOCAL_HINDSIGHT_TEST_AGENT_KEY)")
    headers = {"Authorization": f"Bearer {local_hindsight.agent_key}"}
    agent = local_hindsight.agent_name
    with httpx.Client(base_url=local_hindsight.url, timeout=60, headers=headers) as client:
        # WHEN the agent key is used for its own agent's banks, with and without a tenant (it is for any tenant)
        for tenant in ("acme", None):
            bank = format_bank_id(user="user-agent-key", agent=agent, tenant=tenant)
            assert client.put(f"/v1/default/banks/{bank}", json={}).status_code == 200, bank
        # THEN another agent's bank is refused
        other = format_bank_id(user="user-agent-key", agent=f"not-{agent}", tenant="acme")
        assert client.put(f"/v1/default/banks/{other}", json={}).status_code == 403

"""The local agent keeps what the deployed agent keeps: cdk.json's mission for ``agent.name``, under its own name,
applied by the local Hindsight itself (as every deployed Hindsight task does: a user's token may set no bank
setting)."""

from __future__ import annotations

from pathlib import Path

from infra.config import load_config_from_cdk_json
from localdev.agent import agent_env
from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from localdev.hindsight.config import LOCAL_AGENT_NAME
from memory_adapter.missions import MISSIONS_ENV, Missions


def test_the_local_agent_gets_the_deployed_agents_mission(tmp_path) -> None:
    config = load_config_from_cdk_json()
    env = agent_env(hindsight_url="http://127.0.0.1:1", issuer_url="http://127.0.0.1:2", port=3, spool_dir=tmp_path)
    assert Missions.from_json(env[MISSIONS_ENV]).for_agent(LOCAL_AGENT_NAME) == config.missions.for_agent(
        config.agent.name
    )


def test_the_local_hindsight_applies_the_deployed_agents_mission_to_the_local_agents_banks(tmp_path: Path) -> None:
    config = load_config_from_cdk_json()
    local = LocalHindsight(LocalHindsightConfig.from_env({}, data_dir=tmp_path))
    env = local.server_env()
    applied = Missions.from_json(env["HINDSIGHT_API_TENANT_MISSIONS"])
    assert applied == Missions({LOCAL_AGENT_NAME: config.missions.for_agent(config.agent.name)})  # type: ignore[dict-item]
    # the tests' servers (ephemeral) apply none unless asked
    plain = LocalHindsight(LocalHindsightConfig.ephemeral(base_dir=tmp_path))
    assert "HINDSIGHT_API_TENANT_MISSIONS" not in plain.server_env()

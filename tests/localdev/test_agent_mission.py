"""The local agent keeps what the deployed agent keeps: cdk.json's mission for ``agent.name``, under its own name."""

from __future__ import annotations

from infra.config import load_config_from_cdk_json
from localdev.agent import AGENT_NAME, agent_env
from memory_adapter.missions import MISSIONS_ENV, Missions


def test_the_local_agent_gets_the_deployed_agents_mission(tmp_path) -> None:
    config = load_config_from_cdk_json()
    env = agent_env(hindsight_url="http://127.0.0.1:1", issuer_url="http://127.0.0.1:2", port=3, spool_dir=tmp_path)
    assert Missions.from_json(env[MISSIONS_ENV]).for_agent(AGENT_NAME) == config.missions.for_agent(config.agent.name)

"""The agent's mission from cdk.json reaches the runtime as the memory adapter reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_adapter.missions import MISSIONS_ENV, Missions
from tests.infra.conftest import Synth, resources, synthesize


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(Path(tmp_path_factory.mktemp("cdk-missions")), {}, nag=False)


def test_the_runtime_gets_its_own_agents_mission_and_nothing_else(synth: Synth) -> None:
    (runtime,) = resources(synth.template("-Agent"), "AWS::BedrockAgentCore::Runtime").values()
    env = runtime["Properties"]["EnvironmentVariables"]
    name = synth.config.agent.name
    mission = synth.config.missions.for_agent(name)
    assert mission is not None
    assert Missions.from_json(env[MISSIONS_ENV]) == Missions({name: mission})

"""The agent's mission from cdk.json reaches the runtime as the memory adapter reads it, and only its own: a
deployment runs one agent, and a mission for any other agent is refused before synthesis."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from infra.config import ConfigError
from infra.config.loader import CDK_JSON
from memory_adapter.missions import MISSIONS_ENV, Missions
from tests.infra.conftest import Synth, resources, synthesize

#: Another agent than cdk.json's reference one, with a mission of its own (every field set).
AGENT = "helpdesk"
MISSION = {
    "retain_mission": "Keep the customer's product, plan and open tickets.",
    "retain_extraction_mode": "verbose",
    "reflect_mission": "Answer as a support engineer.",
}


def _defaults(missions: dict[str, Any]) -> dict[str, Any]:
    """cdk.json's ``defaults`` with ``missions`` replaced (a mission is set in cdk.json only, never by ``-c``)."""
    defaults: dict[str, Any] = copy.deepcopy(json.loads(CDK_JSON.read_text())["context"]["defaults"])
    defaults["missions"] = missions
    return defaults


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    overrides: dict[str, Any] = {"agent.name": AGENT, "defaults": _defaults({AGENT: MISSION})}
    return synthesize(Path(tmp_path_factory.mktemp("cdk-missions")), overrides, nag=False)


def test_the_runtime_gets_its_own_agents_mission_and_nothing_else(synth: Synth) -> None:
    (runtime,) = resources(synth.template("-Agent"), "AWS::BedrockAgentCore::Runtime").values()
    env = runtime["Properties"]["EnvironmentVariables"]
    assert json.loads(env[MISSIONS_ENV]) == {AGENT: MISSION}
    assert Missions.from_json(env[MISSIONS_ENV]).for_agent(AGENT) == synth.config.missions.for_agent(AGENT)


def test_a_second_agents_mission_is_refused_before_it_could_reach_the_runtime() -> None:
    from aws_cdk import App

    from infra.config import context_from_cdk_json, load_config

    two = _defaults({AGENT: MISSION, "assistant": {"retain_mission": "Keep everything."}})
    app = App(context=context_from_cdk_json({"agent.name": AGENT, "defaults": two}))
    with pytest.raises(ConfigError) as err:
        load_config(app.node)
    assert err.value.errors == [
        f"missions.assistant names no agent of this deployment (agent.name is '{AGENT}'): fix its spelling"
    ]


def test_every_hindsight_task_applies_the_agents_mission_itself(synth: Synth) -> None:
    # A user's token may set no bank setting, so a JWT runtime cannot apply the mission: every Hindsight process's
    # isolation extension does (HINDSIGHT_API_TENANT_MISSIONS), the same mission the runtime gets.
    name = synth.config.agent.name
    mission = synth.config.missions.for_agent(name)
    assert mission is not None
    expected = Missions({name: mission})
    tasks = resources(synth.template("-MemoryService"), "AWS::ECS::TaskDefinition").values()
    seen = 0
    for task in tasks:
        for container in task["Properties"]["ContainerDefinitions"]:
            env = {item["Name"]: item.get("Value") for item in container.get("Environment", [])}
            if "HINDSIGHT_API_TENANT_EXTENSION" in env:
                assert Missions.from_json(env["HINDSIGHT_API_TENANT_MISSIONS"]) == expected
                seen += 1
    assert seen >= 2  # the API task and the workers

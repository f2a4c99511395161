"""The ``fading`` section reaches every Hindsight task's isolation extension, and never its test clocks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hindsight_isolation import settings as iso
from hindsight_isolation.fading import FadingRules
from infra.config import ConfigError, load_config_from_cdk_json
from memory_adapter.kinds import MemoryKind
from tests.infra.conftest import Synth, resources, synthesize

FADING = iso.tenant_env("fading")
HALF_LIVES = iso.tenant_env("fading_half_life_days")
FLOOR = iso.tenant_env("fading_floor")
CLOCKS = (
    iso.tenant_env("fading_clock"),
    iso.tenant_env("fading_clock_header"),
)


@pytest.fixture(scope="module")
def fading_on(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    overrides = {"fading.enabled": "true", "fading.plan": "7", "fading.fact": "90", "fading.floor": "0.2"}
    return synthesize(tmp_path_factory.mktemp("cdk-fading"), overrides, nag=False)


def _hindsight_environments(template: dict[str, Any]) -> list[dict[str, str]]:
    envs = []
    for definition in resources(template, "AWS::ECS::TaskDefinition").values():
        for container in definition["Properties"]["ContainerDefinitions"]:
            if container.get("Essential"):
                envs.append({e["Name"]: e["Value"] for e in container.get("Environment", [])})
    return envs


def test_off_by_default_the_tasks_carry_no_fading_setting(default: Synth) -> None:
    assert not load_config_from_cdk_json().fading.enabled
    service = json.dumps(default.template("-MemoryService"))
    for name in (FADING, HALF_LIVES, FLOOR, *CLOCKS):
        assert name not in service


def test_on_every_hindsight_task_fades_by_the_configured_rules_without_test_clocks(fading_on: Synth) -> None:
    envs = _hindsight_environments(fading_on.template("-MemoryService"))
    assert len(envs) >= 3  # api, worker-1, maintenance
    for env in envs:
        # WHEN the extension reads its fading settings THEN they are exactly the configured rules
        assert env[FADING] == "true"
        read = FadingRules.from_json(env[HALF_LIVES], floor=float(env[FLOOR]))
        assert read == FadingRules.from_mapping({"plan": 7, "fact": 90}, floor=0.2)
        assert read.half_life_days[MemoryKind.PROBLEM] == 30  # a kind left out keeps its default
        # AND no caller can move its clock (a clock header would let a user keep their memories fresh)
        assert not set(CLOCKS) & set(env)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"fading.plan": "0"}, r"fading: the half-life of plan must be days above 0"),
        ({"fading.turn": "soon"}, r"fading: the half-life of turn must be days"),
        ({"fading.floor": "1"}, r"fading: the floor must be from 0"),
        ({"fading.enabled": "sometimes"}, r"fading\.enabled must be true or false"),
    ],
)
def test_bad_fading_settings_are_refused_with_one_clear_line(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config_from_cdk_json(overrides)


def test_null_half_life_means_that_kind_never_fades() -> None:
    config = load_config_from_cdk_json({"fading.enabled": "true", "fading.turn": "null"})
    assert config.fading.rules.half_life_days[MemoryKind.TURN] is None

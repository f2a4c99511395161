"""The scaling settings the capacity model derives (docs/capacity.md) reach every Hindsight task, and add up."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig, ConfigError, load_config_from_cdk_json
from infra.constructs.hindsight_task import VECTOR_INDEX_MIN_ROWS
from tests.infra.conftest import VARIANTS, Synth, resources

#: RDS PostgreSQL's default max_connections, LEAST(DBInstanceClassMemory / 9531392, 5000), for 4 GiB (t4g.medium).
T4G_MEDIUM_MAX_CONNECTIONS = 410
#: Connections outside the Hindsight pools: the rotation and provisioning functions, an operator's psql.
OTHER_CONNECTIONS = 20


def _config(overrides: dict[str, str]) -> AppConfig:
    # TLS is prod's own requirement, not the capacity model's: off here so prod's sizes can be read alone.
    return load_config_from_cdk_json({"hindsight.require_tls": "false", **overrides})


def _hindsight_envs(synth: Synth) -> dict[str, dict[str, Any]]:
    t = synth.template("-MemoryService")
    out = {}
    for name, task in resources(t, "AWS::ECS::TaskDefinition").items():
        for container in task["Properties"]["ContainerDefinitions"]:
            if container["Name"] == "Hindsight":
                out[name] = {e["Name"]: e["Value"] for e in container["Environment"]}
    return out


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_hindsight_task_gets_the_pool_slots_and_index_threshold(synths: dict[str, Synth], variant: str) -> None:
    # GIVEN a synthesized variant WHEN its API and worker tasks are read
    config = synths[variant].config.hindsight
    envs = _hindsight_envs(synths[variant])
    assert any(name.startswith("MemoryApiTask") for name in envs)
    assert any(name.startswith("MemoryWorker") for name in envs)
    # THEN each runs with the configured pool and slots and the per-bank index threshold
    for name, env in envs.items():
        assert env["HINDSIGHT_API_DB_POOL_MAX_SIZE"] == str(config.db_pool_max_size), name
        assert env["HINDSIGHT_API_WORKER_MAX_SLOTS"] == str(config.worker_max_slots), name
        assert env["HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS"] == str(VECTOR_INDEX_MIN_ROWS), name
        # and recalls as make eval measured best (RRF with the graph arm lost to the semantic arm alone)
        assert env["HINDSIGHT_API_ENABLE_GRAPH_RETRIEVAL"] == "false", name
        # and retains queued in Hindsight's retain lane, never refused for load
        assert env["HINDSIGHT_API_ADMISSION_RETAIN_MAX_WAIT_MS"] == "600000", name


@pytest.mark.parametrize("env_name", ["dev", "prod"])
def test_the_default_fleet_at_its_maximum_fits_the_default_database_connections(env_name: str) -> None:
    # GIVEN the shipped configuration of an environment (default database: db.t4g.medium)
    cfg = _config({"env": env_name})
    assert cfg.database.instance_type == "t4g.medium"
    # WHEN every API task autoscaling may start and every worker hold a full pool
    h = cfg.hindsight
    connections = (h.api_max_count + h.worker_count) * h.db_pool_max_size + OTHER_CONNECTIONS
    # THEN the fleet stays within 80 % of what the database accepts
    assert connections <= 0.8 * T4G_MEDIUM_MAX_CONNECTIONS


def test_prods_fleet_would_not_fit_with_hindsights_own_pool_size() -> None:
    # GIVEN prod's fleet at its maximum WHEN every process held Hindsight's default pool (100)
    h = _config({"env": "prod"}).hindsight
    # THEN it would exceed the database's connections: the pool setting is what makes it fit
    assert (h.api_max_count + h.worker_count) * 100 + OTHER_CONNECTIONS > 0.8 * T4G_MEDIUM_MAX_CONNECTIONS


def test_pool_and_slots_out_of_range_are_refused_with_what_to_do() -> None:
    with pytest.raises(ConfigError, match=r"hindsight\.db_pool_max_size must be between 5 and 200, got 2") as caught:
        _config({"hindsight.db_pool_max_size": "2", "hindsight.worker_max_slots": "0"})
    assert "hindsight.worker_max_slots must be between 1 and 100, got 0" in str(caught.value)


@pytest.mark.parametrize("value", ["0", "1025"])
def test_a_body_cap_outside_the_extensions_bounds_is_refused_with_what_it_is(value: str) -> None:
    # GIVEN hindsight.max_body_mib outside what the extension accepts (1 to 1024 MiB)
    with pytest.raises(ConfigError) as caught:
        _config({"hindsight.max_body_mib": value})
    # THEN synthesis stops with one line naming the setting, its bounds and its meaning (not a task that never starts)
    (line,) = [e for e in caught.value.errors if "max_body_mib" in e]
    assert line.startswith(f"hindsight.max_body_mib must be between 1 and 1024, got {value}")
    assert "largest request body, in MiB" in line


def test_the_body_cap_defaults_to_the_extensions_own() -> None:
    assert _config({}).hindsight.max_body_mib is None
    assert _config({"hindsight.max_body_mib": "64"}).hindsight.max_body_mib == 64

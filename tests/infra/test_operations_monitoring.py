"""Monitoring, asserted on the synthesized templates: the alarms (to the alerts topic) and the dashboard."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from infra.constructs.dashboard import AGENT_METRICS, TITLES
from infra.constructs.system_alarms import SHED_PER_PERIOD
from infra.functions.memory_admin import index
from memory_adapter.observability import Metric
from tests.infra.conftest import ROOT, Synth, resources
from tests.infra.operations_helpers import ALL, handed_off, one_resource, render

# -- alarms and the dashboard -------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_what_needs_a_person_raises_an_alarm_to_the_alerts_topic(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-Operations")
    alarms = resources(t, "AWS::CloudWatch::Alarm")
    storage = "DatabaseStorageLow" if synth.config.database.engine.value == "postgres" else "DatabaseCapacityHigh"
    for name in (
        "MemoryAdminFunctionFailing",
        "MemoryAdminExpiryFailing",
        "MemoryAdminBackupFailing",
        "MemoryAdminBackupIncomplete",
        "MemoryAdminExpiryIncomplete",
        "MemoryAdminExpiryBehind",
        f"Alarms{storage}",
        "AlarmsDatabaseCpuHigh",
        "AlarmsHindsightErrors",
        "AlarmsMemoryDegraded",
        "AlarmsRecallsShed",
        "AlarmsRetainsLost",
    ):
        (alarm,) = [v for k, v in alarms.items() if k.startswith(name)]
        actions = alarm["Properties"]
        assert "AlertsTopic" in render(actions["AlarmActions"])
        assert actions["OKActions"] == actions["AlarmActions"]
    assert len(alarms) == 12


@pytest.mark.parametrize("variant", ALL)
def test_shed_recalls_raise_an_alarm_and_are_not_counted_as_hindsight_errors(
    synths: dict[str, Synth], variant: str
) -> None:
    synth = synths[variant]
    alarms = resources(synth.template("-Operations"), "AWS::CloudWatch::Alarm")
    (shed,) = [v["Properties"] for k, v in alarms.items() if k.startswith("AlarmsRecallsShed")]
    assert {k: shed[k] for k in shed if k not in ("AlarmActions", "OKActions", "AlarmDescription", "Tags")} == {
        "Namespace": "AgentCoreHindsightMemory",
        "MetricName": Metric.RECALL_SHED,
        "Dimensions": [{"Name": "service", "Value": synth.config.agent.name}],
        "Statistic": "Sum",
        "Period": 300,
        "Threshold": SHED_PER_PERIOD,
        "EvaluationPeriods": 2,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
    }
    assert "hindsight.api_max_count" in shed["AlarmDescription"]
    (errors,) = [v["Properties"] for k, v in alarms.items() if k.startswith("AlarmsHindsightErrors")]
    (expression,) = [m for m in errors["Metrics"] if "Expression" in m]
    assert "FILL(target, 0) - FILL(shed, 0)" in expression["Expression"]
    (shed_input,) = [m for m in errors["Metrics"] if m["Id"] == "shed"]
    assert shed_input["MetricStat"]["Metric"]["MetricName"] == Metric.RECALL_SHED


@pytest.mark.parametrize(
    ("name", "metric"),
    [("BackupIncomplete", index.METRIC_BACKUP_FAILED), ("ExpiryIncomplete", index.METRIC_EXPIRY_FAILED)],
)
def test_a_backup_or_expiry_that_skipped_banks_raises_an_alarm(default: Synth, name: str, metric: str) -> None:
    alarms = resources(default.template("-Operations"), "AWS::CloudWatch::Alarm")
    (alarm,) = [v["Properties"] for k, v in alarms.items() if k.startswith(f"MemoryAdmin{name}")]
    assert {k: alarm[k] for k in alarm if k not in ("AlarmActions", "OKActions", "AlarmDescription", "Tags")} == {
        "Namespace": "AgentCoreHindsightMemory",
        "MetricName": metric,
        "Dimensions": [{"Name": "service", "Value": index.SERVICE}],
        "Statistic": "Sum",
        "Period": 3600,
        "Threshold": 1,
        "EvaluationPeriods": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
    }
    assert "failed" in alarm["AlarmDescription"]


def test_database_storage_alarm_fires_before_the_disk_is_full(default: Synth) -> None:
    (alarm,) = [
        v for k, v in resources(default.template("-Operations"), "AWS::CloudWatch::Alarm").items() if "Storage" in k
    ]
    props = alarm["Properties"]
    assert props["MetricName"] == "FreeStorageSpace"
    assert props["ComparisonOperator"] == "LessThanThreshold"
    assert 0 < props["Threshold"] < default.config.database.allocated_storage_gb * 2**30 * 0.1


def _dashboard_body(template: dict[str, Any]) -> dict[str, Any]:
    (dashboard,) = resources(template, "AWS::CloudWatch::Dashboard").values()
    body: dict[str, Any] = json.loads(render(dashboard["Properties"]["DashboardBody"]))
    return body


def _titles(body: dict[str, Any]) -> list[str]:
    return [w["properties"].get("title", "") for w in body["widgets"]]


@pytest.mark.parametrize("variant", ALL)
def test_the_dashboard_shows_every_layer_without_overlaps(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    body = _dashboard_body(synth.template("-Operations"))
    titles = set(_titles(body))
    postgres = synth.config.database.engine.value == "postgres"
    skipped = {"db_capacity" if postgres else "db_storage"}
    assert {TITLES[k] for k in TITLES if k not in skipped} <= titles
    assert not {TITLES[k] for k in skipped} & titles
    cells: set[tuple[int, int]] = set()
    for widget in body["widgets"]:
        assert widget["x"] + widget["width"] <= 24
        area = {
            (x, y)
            for x in range(widget["x"], widget["x"] + widget["width"])
            for y in range(widget["y"], widget["y"] + widget["height"])
        }
        assert not cells & area, widget["properties"].get("title")
        cells |= area
    text = json.dumps(body)
    for namespace in ("AgentCoreHindsightMemory", "AWS/ECS", "ECS/ContainerInsights", "AWS/ApplicationELB", "AWS/RDS"):
        assert f'"{namespace}"' in text, namespace
    assert f'"service", "{synth.config.agent.name}"' in text  # the agent's Powertools dimension
    assert f'"service", "{index.SERVICE}"' in text
    # Every alarm of the deployment is on it, the other stacks' too (by their exported ARNs, named by logical id).
    (widget,) = [w for w in body["widgets"] if w["properties"].get("title") == TITLES["alarms"]]
    # An alarm read by handoff is shown by its parameter: the alarm its value names.
    handed = [handed_off(synth, a) for a in widget["properties"]["alarms"] if a.startswith("<SsmParameterValue")]
    shown = json.dumps([*widget["properties"]["alarms"], *handed])
    every = [
        alarm_id
        for name, template in synth.templates.items()
        for alarm_id in resources(template, "AWS::CloudWatch::Alarm")
        if not name.endswith("-Operations")
    ]
    assert [a for a in every if a not in shown] == []
    assert len(widget["properties"]["alarms"]) == len(every) + len(
        resources(synth.template("-Operations"), "AWS::CloudWatch::Alarm")
    )


def test_the_agent_metrics_on_the_dashboard_are_the_ones_the_agent_emits() -> None:
    code = "".join(path.read_text() for path in (ROOT / "runtime_handler").glob("*.py"))
    for name in AGENT_METRICS:
        assert re.search(rf'obs\.(count|millis)\("{name}"', code), name


def test_the_docs_draw_the_dashboard_the_stack_builds() -> None:
    operating = (ROOT / "docs" / "operating.md").read_text()
    section = operating[operating.index("\n## Read the dashboard") + 1 :]
    section = section[: section.index("\n## ")]
    missing = [title for title in TITLES.values() if title not in section]
    assert missing == []


@pytest.mark.parametrize("variant", ALL)
def test_the_retain_queue_row_shows_its_replay_depth_and_age_beside_the_retains(
    synths: dict[str, Synth], variant: str
) -> None:
    synth = synths[variant]
    body = _dashboard_body(synth.template("-Operations"))
    widgets = {w["properties"].get("title"): w for w in body["widgets"]}
    row = [widgets[TITLES[k]] for k in ("retains", "replay", "queue_depth", "queue_age")]
    assert {w["y"] for w in row} == {row[0]["y"]}  # one row, left to right
    assert [w["x"] for w in row] == sorted(w["x"] for w in row)
    agent = synth.template("-Agent")
    queue_id, _ = one_resource(agent, "AWS::SQS::Queue", "RetainQueue")
    dead_id, _ = one_resource(agent, "AWS::SQS::Queue", "RetainQueueDeadLetters")
    depth, age, replay = (json.dumps(widgets[TITLES[k]]) for k in ("queue_depth", "queue_age", "replay"))
    for queue_id_ in (queue_id, dead_id):  # the -Agent stack's queues, by their exported names
        assert queue_id_ in depth
        assert queue_id_ in age
    assert "ApproximateNumberOfMessagesVisible" in depth
    assert "ApproximateAgeOfOldestMessage" in age
    for name in ("MemoryQueueDelivered", "MemoryQueueDeadLettered", "MemoryQueueRetried"):
        assert name in replay
    assert '"service", "retain-replay"' in replay

"""The database's upkeep, asserted on the synthesized templates: the maintenance task, the schema setting and the
AWS Backup plan."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.constructs.hindsight_task import MAINTENANCE_COMMAND
from tests.infra.conftest import Synth, resources
from tests.infra.operations_helpers import ALL, one_resource, render, role_statements

# -- the maintenance task -----------------------------------------------------------------------------------------


def _task_containers(template: dict[str, Any], prefix: str) -> dict[str, dict[str, Any]]:
    _, task = one_resource(template, "AWS::ECS::TaskDefinition", prefix)
    return {c["Name"]: c for c in task["Properties"]["ContainerDefinitions"]}


@pytest.mark.parametrize("variant", ALL)
def test_the_maintenance_task_is_a_one_off_hindsight_task_with_the_services_settings(
    synths: dict[str, Synth], variant: str
) -> None:
    synth = synths[variant]
    t = synth.template("-MemoryService")
    api = _task_containers(t, "MemoryApiTask")["Hindsight"]
    containers = _task_containers(t, "MemoryMaintenanceTask")
    assert set(containers) == {"PrepareVolumes", "InstallExtension", "Hindsight"}
    main = containers["Hindsight"]
    assert main["EntryPoint"] == ["/bin/bash", "-c", MAINTENANCE_COMMAND, "maintenance"]
    assert main["Command"] == ["--help"]
    assert "memory_adapter.admin.maintenance" in MAINTENANCE_COMMAND
    assert '"$@"' in MAINTENANCE_COMMAND
    assert "PortMappings" not in main or main["PortMappings"] == []
    assert "HealthCheck" not in main
    # The same image, settings, secrets and writable /tmp as the API: the extension (memory_adapter) on PYTHONPATH.
    assert main["Image"] == api["Image"]
    assert main["Environment"] == api["Environment"]
    assert main["Secrets"] == api["Secrets"]
    assert main["MountPoints"] == api["MountPoints"]
    assert main["User"] == "1000:1000"
    env = {e["Name"]: e["Value"] for e in main["Environment"]}
    assert env["HINDSIGHT_API_DATABASE_SCHEMA"] == synth.config.hindsight.database_schema
    assert env["PYTHONPATH"] == "/opt/hindsight-ext"
    # What an ecs run-task of it names (docs/operating.md, Restore): the subnets are the network's own output.
    assert {"MaintenanceTaskDefinition", "ClusterName", "ServiceLogGroup", "TaskSecurityGroupId"} <= set(t["Outputs"])
    subnets = synth.template("-Network")["Outputs"]["SubnetIds"]["Value"]
    assert render(subnets).count(",") == len(synth.stacks.network.network.subnet_ids) - 1


# -- the database's backup plan -----------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_the_database_is_in_an_aws_backup_plan_with_the_configured_schedule(
    synths: dict[str, Synth], variant: str
) -> None:
    synth = synths[variant]
    t = synth.template("-Data")
    (plan,) = resources(t, "AWS::Backup::BackupPlan").values()
    (rule,) = plan["Properties"]["BackupPlan"]["BackupPlanRule"]
    assert rule["ScheduleExpression"] == synth.config.database.backup_plan_schedule
    assert rule["Lifecycle"] == {"DeleteAfterDays": synth.config.database.backup_plan_retention_days}
    vault_id, vault = one_resource(t, "AWS::Backup::BackupVault", "BackupPlanVault")
    assert vault["DeletionPolicy"] == "Retain"
    assert "BackupPlanKey" in render(vault["Properties"]["EncryptionKeyArn"])
    assert rule["TargetBackupVault"] == {"Fn::GetAtt": [vault_id, "BackupVaultName"]}
    (selection,) = resources(t, "AWS::Backup::BackupSelection").values()
    database = "DatabaseInstance" if synth.config.database.engine.value == "postgres" else "DatabaseCluster"
    assert database in render(selection["Properties"]["BackupSelection"]["Resources"])
    _, alarm = one_resource(t, "AWS::CloudWatch::Alarm", "BackupPlanFailedAlarm")
    assert "NumberOfBackupJobsFailed" in json.dumps(alarm["Properties"]["Metrics"])


def test_prod_keeps_database_backups_longer(synths: dict[str, Synth]) -> None:
    prod = synths["jwt-import"].config.database
    assert prod.backup_plan_retention_days > synths["default"].config.database.backup_plan_retention_days


def test_the_schema_setting_moves_every_hindsight_task_and_the_next_model_is_the_maintenance_tasks_alone(
    synths: dict[str, Synth],
) -> None:
    memory = synths["iam-aurora"].template("-MemoryService")  # database_schema=emb_v2, a maintenance model
    for task in resources(memory, "AWS::ECS::TaskDefinition").values():
        (main,) = [c for c in task["Properties"]["ContainerDefinitions"] if c["Name"] == "Hindsight"]
        env = {e["Name"]: e["Value"] for e in main["Environment"]}
        assert env["HINDSIGHT_API_DATABASE_SCHEMA"] == "emb_v2"
    model = "cohere.embed-english-v3"
    assert model in json.dumps(role_statements(memory, "MemoryMaintenanceTaskTaskRole"))
    for role in ("MemoryApiTaskTaskRole", "MemoryWorker1TaskTaskRole"):
        assert model not in json.dumps(role_statements(memory, role))
    # By default the banks stay in public, and the maintenance task may invoke only the service's own models.
    default = synths["default"].template("-MemoryService")
    for task in resources(default, "AWS::ECS::TaskDefinition").values():
        (main,) = [c for c in task["Properties"]["ContainerDefinitions"] if c["Name"] == "Hindsight"]
        assert {"Name": "HINDSIGHT_API_DATABASE_SCHEMA", "Value": "public"} in main["Environment"]
    assert model not in json.dumps(role_statements(default, "MemoryMaintenanceTaskTaskRole"))

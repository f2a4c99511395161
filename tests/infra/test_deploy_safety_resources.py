"""What a real account would refuse at the first deploy or a re-deploy, or leave behind (issue 21), resource by
resource on the synthesized templates: rotations, retained names, log groups, the operators' policy."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.constructs.database import LOGIN_ROTATION_WINDOW, MASTER_ROTATION_HOUR, master_rotation_schedule
from tests.infra.conftest import VARIANTS, Synth, resources

ALL = list(VARIANTS)


def _all_resources(synth: Synth, type_name: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [(stack, k, v) for stack, t in synth.templates.items() for k, v in resources(t, type_name).items()]


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("variant", ALL)
def test_rotations_never_overlap_and_their_failures_alert(synths: dict[str, Synth], variant: str) -> None:
    t = synths[variant].template("-Data")
    schedules = resources(t, "AWS::SecretsManager::RotationSchedule")
    (master_id,) = [k for k in schedules if "Login" not in k]
    (login_id,) = [k for k in schedules if "Login" in k]
    master, login = schedules[master_id], schedules[login_id]
    days = synths[variant].config.database.rotation_days
    # The master never rotates at creation (the login's first rotation logs in with its password) ...
    assert master["Properties"]["RotateImmediatelyOnUpdate"] is False
    # ... the login's schedule comes after the master's, and their windows are apart (rate() opens at 00:00 UTC).
    assert master_id in login.get("DependsOn", [])
    assert login["Properties"]["RotationRules"] == {
        "ScheduleExpression": f"rate({days} days)",
        "Duration": LOGIN_ROTATION_WINDOW,
    }
    assert master["Properties"]["RotationRules"]["ScheduleExpression"] == master_rotation_schedule(days)
    assert int(LOGIN_ROTATION_WINDOW.removesuffix("h")) < MASTER_ROTATION_HOUR
    # A failed or abandoned rotation of either secret reaches the alerts topic.
    (rule,) = [
        r
        for r in resources(t, "AWS::Events::Rule").values()
        if "RotationFailed" in _text(r["Properties"].get("EventPattern"))
    ]
    pattern = rule["Properties"]["EventPattern"]
    assert sorted(pattern["detail"]["eventName"]) == ["RotationAbandoned", "RotationFailed"]
    assert len(pattern["detail"]["additionalEventData"]["SecretId"]) == 2
    (target,) = rule["Properties"]["Targets"]
    assert "AlertsTopic" in _text(target["Arn"])
    network = synths[variant].template("-Network")
    (key,) = [k for k in resources(network, "AWS::KMS::Key").values() if "alarm" in k["Properties"]["Description"]]
    assert "events.amazonaws.com" in _text(key["Properties"]["KeyPolicy"])


def test_the_master_rotates_from_day_one_every_few_days_or_monthly() -> None:
    assert master_rotation_schedule(7) == f"cron(0 {MASTER_ROTATION_HOUR} 1/7 * ? *)"
    assert master_rotation_schedule(30) == f"cron(0 {MASTER_ROTATION_HOUR} 1 * ? *)"


@pytest.mark.parametrize("variant", ALL)
def test_the_backup_plan_is_named_per_deployment_and_its_alarm_can_fire(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-Data")
    (plan,) = resources(t, "AWS::Backup::BackupPlan").values()
    (data_stack,) = [name for name in synth.templates if name.endswith("-Data")]
    assert plan["Properties"]["BackupPlan"]["BackupPlanName"] == f"{data_stack}-Database"
    # The retained vault's name ends in its stack's creation id: a deployment created again after cdk destroy gets
    # another vault instead of failing on the kept one's name (the administration bucket's: test_operations.py).
    (vault,) = resources(t, "AWS::Backup::BackupVault").values()
    assert vault["DeletionPolicy"] == "Retain"
    name = vault["Properties"]["BackupVaultName"]["Fn::Join"][1]
    assert name[0] == f"{data_stack[:30]}-Vault-"
    assert "AWS::StackId" in _text(name[1])
    (alarm,) = [a for a in resources(t, "AWS::CloudWatch::Alarm").values() if "backup" in _text(a).lower()]
    (expression,) = [m["Expression"] for m in alarm["Properties"]["Metrics"] if "Expression" in m]
    assert expression == "FILL(m0, 0) + FILL(m1, 0)"


# -- the first deploy ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["default", "jwt-import"])
def test_the_gateway_waits_for_its_role_policy_and_trusts_only_itself(synths: dict[str, Synth], variant: str) -> None:
    t = synths[variant].template("-Gateway")
    (gateway,) = resources(t, "AWS::BedrockAgentCore::Gateway").values()
    role_ref = gateway["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    (policy_id,) = [
        k for k, p in resources(t, "AWS::IAM::Policy").items() if p["Properties"]["Roles"] == [{"Ref": role_ref}]
    ]
    assert policy_id in gateway.get("DependsOn", [])
    trust = t["Resources"][role_ref]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    (statement,) = trust
    assert statement["Principal"] == {"Service": "bedrock-agentcore.amazonaws.com"}
    assert set(statement["Condition"]) == {"StringEquals", "ArnLike"}
    assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert ":gateway/" in _text(statement["Condition"]["ArnLike"]["aws:SourceArn"])


@pytest.mark.parametrize("variant", ALL)
def test_log_groups_services_create_themselves_are_claimed_idempotently(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    agent = synth.template("-Agent")
    # No plain log group may carry a name AgentCore creates itself (it would fail with AlreadyExists).
    assert not [
        g
        for g in resources(agent, "AWS::Logs::LogGroup").values()
        if "bedrock-agentcore" in _text(g["Properties"].get("LogGroupName"))
    ]
    claims = {_text(c["Properties"]["LogGroupName"]): c["Properties"] for *_, c in _claims(synth)}
    for endpoint in ("-DEFAULT", "-live"):
        (props,) = [p for name, p in claims.items() if "bedrock-agentcore/runtimes/" in name and endpoint in name]
        assert props["RetentionInDays"] == str(synth.config.agent.log_retention_days)
        assert "LogsKey" in _text(props["KmsKeyArn"])
    # RDS's log exports: one claimed group per exported log.
    data = synth.template("-Data")
    servers = [
        r
        for r in data["Resources"].values()
        if r["Type"] in ("AWS::RDS::DBInstance", "AWS::RDS::DBCluster")
        and "EnableCloudwatchLogsExports" in r["Properties"]
    ]
    for server in servers:
        for log in server["Properties"]["EnableCloudwatchLogsExports"]:
            assert [n for n in claims if "/aws/rds/" in n and n.endswith(f'/{log}"]]}}')], log
    # Each rotation function's /aws/lambda group, claimed before its schedule can run it.
    for app_id, app in resources(data, "AWS::Serverless::Application").items():
        group = "/aws/lambda/" + app["Properties"]["Parameters"]["functionName"]
        (claim_id,) = [k for _, k, c in _claims(synth) if c["Properties"]["LogGroupName"] == group]
        schedules = [s for s in resources(data, "AWS::SecretsManager::RotationSchedule").values() if app_id in _text(s)]
        assert schedules
        assert all(claim_id in s.get("DependsOn", []) for s in schedules)


def _claims(synth: Synth) -> list[tuple[str, str, dict[str, Any]]]:
    return _all_resources(synth, "Custom::ServiceLogGroup")


@pytest.mark.parametrize("variant", ALL)
def test_every_function_logs_to_a_group_with_retention_and_the_logs_key(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    for stack, logical_id, function in _all_resources(synth, "AWS::Lambda::Function"):
        group = function["Properties"].get("LoggingConfig", {}).get("LogGroup")
        assert group is not None, f"{stack} {logical_id} has no log group of its own"
        (group_id,) = [v for v in group.values()] if isinstance(group, dict) else [None]
        props = synth.templates[stack]["Resources"][group_id]["Properties"]
        assert props["RetentionInDays"] > 0, f"{stack} {logical_id}"
        assert "KmsKeyId" in props, f"{stack} {logical_id}"


# -- operators -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_operators_get_a_policy_for_the_maintenance_task(synths: dict[str, Synth], variant: str) -> None:
    t = synths[variant].template("-MemoryService")
    output = t["Outputs"]["MaintenancePolicyArn"]
    policy = t["Resources"][output["Value"]["Ref"]]["Properties"]["PolicyDocument"]["Statement"]
    actions = {a for s in policy for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])}
    assert {"ecs:RunTask", "iam:PassRole", "ecs:DescribeTasks"} <= actions
    (run,) = [s for s in policy if s["Action"] == "ecs:RunTask"]
    (task_id,) = [k for k in resources(t, "AWS::ECS::TaskDefinition") if k.startswith("MemoryMaintenanceTask")]
    family = t["Resources"][task_id]["Properties"]["Family"]
    assert f"task-definition/{family}:*" in _text(run["Resource"])
    assert "ecs:cluster" in _text(run["Condition"])
    (passing,) = [s for s in policy if s["Action"] == "iam:PassRole"]
    assert passing["Condition"] == {"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}}
    assert "MemoryMaintenanceTask" in _text(passing["Resource"])


class _LogsWithKeyAssociation:
    """moto's CloudWatch Logs client plus AssociateKmsKey, which moto does not implement: recorded, then visible in
    DescribeLogGroups as CloudWatch Logs would show it."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.associated: dict[str, str] = {}
        self.exceptions = client.exceptions

    def associate_kms_key(self, *, logGroupName: str, kmsKeyId: str) -> None:
        self.associated[logGroupName] = kmsKeyId

    def get_paginator(self, name: str) -> Any:
        shim = self

        class _Pages:
            def paginate(self, **kwargs: Any) -> Any:
                for page in shim._client.get_paginator(name).paginate(**kwargs):
                    for group in page["logGroups"]:
                        if group["logGroupName"] in shim.associated:
                            group["kmsKeyId"] = shim.associated[group["logGroupName"]]
                    yield page

        return _Pages()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_the_log_group_handler_is_idempotent() -> None:
    """Against moto's CloudWatch Logs: a missing group is created with the key, an existing one (the service was
    first) is kept with what it holds and gets the key; both get the retention; delete removes only when asked."""
    import boto3
    from moto import mock_aws

    from infra.functions.log_groups import index

    with mock_aws():
        moto_logs = boto3.client("logs", region_name="us-east-1")
        logs = _LogsWithKeyAssociation(moto_logs)
        key = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["Arn"]
        answers: list[dict[str, Any]] = []

        def run(kind: str, name: str, remove: str = "true") -> dict[str, Any]:
            event: dict[str, Any] = {
                "RequestType": kind,
                "StackId": "s",
                "RequestId": "r",
                "LogicalResourceId": "L",
                "ResponseURL": "https://example.invalid/",
                "ResourceProperties": {
                    "LogGroupName": name,
                    "RetentionInDays": "90",
                    "KmsKeyArn": key,
                    "RemoveOnDelete": remove,
                },
            }
            if kind != "Create":
                event["PhysicalResourceId"] = name
            return index.handler(event, None, logs=logs, respond=lambda _url, body: answers.append(body))

        runtime, rds = "/aws/bedrock-agentcore/runtimes/r-DEFAULT", "/aws/rds/instance/db/postgresql"
        # GIVEN AgentCore created its group first and wrote to it
        moto_logs.create_log_group(logGroupName=runtime)
        moto_logs.create_log_stream(logGroupName=runtime, logStreamName="kept")
        # WHEN both groups are claimed
        assert run("Create", runtime) == {"status": "SUCCESS"}
        assert run("Create", rds) == {"status": "SUCCESS"}
        # THEN both have the retention and the key; the existing one kept its streams
        for name in (runtime, rds):
            (group,) = moto_logs.describe_log_groups(logGroupNamePrefix=name)["logGroups"]
            assert group["retentionInDays"] == 90
            assert group.get("kmsKeyId") == key or logs.associated.get(name) == key
        assert logs.associated == {runtime: key}  # the created one had the key from the start
        assert [s["logStreamName"] for s in moto_logs.describe_log_streams(logGroupName=runtime)["logStreams"]] == [
            "kept"
        ]
        assert [a["PhysicalResourceId"] for a in answers] == [runtime, rds]
        # AND an update runs again without failing; delete keeps the group unless asked, and a missing one is no error
        assert run("Update", rds) == {"status": "SUCCESS"}
        assert run("Delete", rds, remove="false") == {"status": "SUCCESS"}
        assert moto_logs.describe_log_groups(logGroupNamePrefix=rds)["logGroups"]
        assert run("Delete", rds) == {"status": "SUCCESS"}
        assert run("Delete", rds) == {"status": "SUCCESS"}
        assert not moto_logs.describe_log_groups(logGroupNamePrefix=rds)["logGroups"]

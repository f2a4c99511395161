"""Memory administration and monitoring, asserted on the synthesized templates: the administration bucket, the admin
functions and their schedules, the maintenance task, the database's backup plan, the alarms and the dashboard."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from infra.constructs.admin_bucket import NONCURRENT_VERSION_DAYS, admin_bucket_name, admin_bucket_pattern
from infra.constructs.dashboard import AGENT_METRICS, TITLES
from infra.constructs.hindsight_task import MAINTENANCE_COMMAND
from infra.constructs.system_alarms import SHED_PER_PERIOD
from infra.functions.memory_admin import index
from memory_adapter.kinds import MemoryKind, RetentionRules
from memory_adapter.observability import Metric
from memory_adapter.settings_fields import env_names
from tests.infra.conftest import ROOT, VARIANTS, Synth, resources

ALL = list(VARIANTS)
#: How the stack's own creation id (infra/constructs/creation.py) renders in a name.
CREATION = "<select:0:<split:-:<select:2:<split:/:<AWS::StackId>>>>>"


def _render(value: Any) -> str:
    """A template value as text: literals as they are, intrinsics as ``<...>`` placeholders."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join(_render(v) for v in value)
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Fn::Join":
            return str(arg[0]).join(_render(v) for v in arg[1])
        if key == "Ref":
            return f"<{arg}>"
        if key == "Fn::GetAtt":
            return f"<{'.'.join(arg) if isinstance(arg, list) else arg}>"
        if key == "Fn::ImportValue":
            return f"<import:{arg}>"
        if key == "Fn::Select":
            return f"<select:{arg[0]}:{_render(arg[1])}>"
        if key == "Fn::Split":
            return f"<split:{arg[0]}:{_render(arg[1])}>"
    return json.dumps(value, sort_keys=True)


def _one(template: dict[str, Any], type_name: str, path: str) -> tuple[str, dict[str, Any]]:
    """The one resource whose logical id is ``path`` (the construct path, CDK's repeated words removed) + its hash."""
    pattern = re.compile(rf"{path}[0-9A-F]{{8}}")
    (found,) = [(k, v) for k, v in resources(template, type_name).items() if pattern.fullmatch(k)]
    return found


def _functions(synth: Synth) -> dict[str, dict[str, Any]]:
    t = synth.template("-Operations")
    return {
        name: _one(t, "AWS::Lambda::Function", f"MemoryAdmin{name}")[1]["Properties"]
        for name in ("Function", "Expiry", "Backup")
    }


def _role_statements(template: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    (role_id,) = [k for k in resources(template, "AWS::IAM::Role") if k.startswith(role_prefix)]
    return [
        s
        for p in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return actions if isinstance(actions, list) else [actions]


# -- the stack ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_operations_is_its_own_stack_deployed_last(synths: dict[str, Synth], variant: str) -> None:
    stacks = synths[variant].stacks
    assert stacks.all()[-1] is stacks.operations
    assert stacks.operations.stack_name.endswith("-Operations")
    assert stacks.agent in stacks.operations.dependencies
    outputs = synths[variant].template("-Operations")["Outputs"]
    assert {"MemoryAdminUrl", "OperatorPolicyArn", "AdminBucketName", "DashboardName"} <= set(outputs)


# -- the administration bucket ------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_the_admin_bucket_is_private_versioned_kms_encrypted_tls_only_and_logged(
    synths: dict[str, Synth], variant: str
) -> None:
    synth = synths[variant]
    t = synth.template("-Operations")
    bucket_id, bucket = _one(t, "AWS::S3::Bucket", "AdminBucket")
    logs_id, _ = _one(t, "AWS::S3::Bucket", "AdminBucketAccessLogs")
    key_id, key = _one(t, "AWS::KMS::Key", "AdminBucketKey")
    props = bucket["Properties"]
    assert bucket["DeletionPolicy"] == "Retain"
    assert key["Properties"]["EnableKeyRotation"] is True
    (encryption,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    assert encryption["ServerSideEncryptionByDefault"]["KMSMasterKeyID"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert encryption["BucketKeyEnabled"] is True
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert props["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert props["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": logs_id}
    expected_name = admin_bucket_name(
        synth.config.stack_prefix, account="<AWS::AccountId>", region=synth.config.region, creation=CREATION
    )
    assert _render(props["BucketName"]) == expected_name
    # TLS only: a Deny on aws:SecureTransport=false, for the bucket and its objects.
    (policy,) = [
        p for p in resources(t, "AWS::S3::BucketPolicy").values() if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements
    )


@pytest.mark.parametrize("variant", ALL)
def test_exports_and_backups_expire_and_receipts_are_kept(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    _, bucket = _one(synth.template("-Operations"), "AWS::S3::Bucket", "AdminBucket")
    rules = {r["Id"]: r for r in bucket["Properties"]["LifecycleConfiguration"]["Rules"]}
    ops = synth.config.operations
    assert (rules["Exports"]["Prefix"], rules["Exports"]["ExpirationInDays"]) == (
        "exports/",
        ops.export_retention_days,
    )
    assert (rules["Backups"]["Prefix"], rules["Backups"]["ExpirationInDays"]) == (
        "backups/",
        ops.logical_backup_retention_days,
    )
    old = rules["OldVersions"]
    assert old["NoncurrentVersionExpiration"] == {"NoncurrentDays": NONCURRENT_VERSION_DAYS}
    assert old["ExpiredObjectDeleteMarker"] is True
    assert "Prefix" not in old
    assert "ExpirationInDays" not in old
    assert not any(r.get("Prefix", "").startswith("erasure-receipts") for r in rules.values())


def test_the_bucket_name_is_unique_per_deployment_and_fits_s3() -> None:
    account, region = "123456789012", "ap-southeast-3"
    creation = "0a1b2c3d"  # the first eight hex digits of a stack id
    short = admin_bucket_name("HindsightMemory-dev", account=account, region=region, creation=creation)
    assert short == f"hindsightmemory-dev-admin-{account}-{region}-{creation}"
    long_a = admin_bucket_name("A" * 24 + "-prodeurope12", account=account, region=region, creation=creation)
    long_b = admin_bucket_name("A" * 24 + "-prodeurope13", account=account, region=region, creation=creation)
    assert long_a != long_b
    assert max(len(short), len(long_a), len(long_b)) <= 63
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9-]*[a-z0-9]", n) for n in (short, long_a, long_b))


def test_the_created_vpcs_s3_gateway_admits_the_admin_bucket_for_reads_and_writes(synths: dict[str, Synth]) -> None:
    synth = synths["default"]
    t = synth.template("-Network")
    (gateway,) = [
        e for e in resources(t, "AWS::EC2::VPCEndpoint").values() if e["Properties"]["VpcEndpointType"] == "Gateway"
    ]
    statements = gateway["Properties"]["PolicyDocument"]["Statement"]
    (admin,) = [s for s in statements if "s3:PutObject" in _actions(s)]
    assert sorted(_actions(admin)) == ["s3:GetObject", "s3:PutObject"]
    pattern = admin_bucket_pattern(synth.config.stack_prefix, account="<AWS::AccountId>", region=synth.config.region)
    assert _render(admin["Resource"]) == f"arn:aws:s3:::{pattern}/*"  # the partition of a known region is literal
    # A pattern, so only this account's buckets of it (names are global).
    assert admin["Condition"] == {"StringEquals": {"aws:ResourceAccount": {"Ref": "AWS::AccountId"}}}
    # The bucket the Operations stack creates has a name of that pattern, ending in its own stack's creation id (a
    # deployment created again after cdk destroy, which keeps the bucket, gets another one).
    _, bucket = _one(synth.template("-Operations"), "AWS::S3::Bucket", "AdminBucket")
    assert _render(bucket["Properties"]["BucketName"]) == pattern.replace("*", CREATION)


def test_the_maintenance_task_reads_the_bucket_through_its_resource_policies(default: Synth) -> None:
    t = default.template("-Operations")
    bucket_id, _ = _one(t, "AWS::S3::Bucket", "AdminBucket")
    (policy,) = [
        p for p in resources(t, "AWS::S3::BucketPolicy").values() if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    (read,) = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    assert _actions(read) == ["s3:GetObject"]
    # The role is read by handoff (the platform may change): its parameter holds the maintenance task's role.
    role = _render(read["Principal"]["AWS"])
    assert _handed_off(default, role) == {"Fn::GetAtt": ["MemoryMaintenanceTaskTaskRole6BF12801", "Arn"]}
    _, key = _one(t, "AWS::KMS::Key", "AdminBucketKey")
    (decrypt,) = [s for s in key["Properties"]["KeyPolicy"]["Statement"] if _render(s["Principal"].get("AWS")) == role]
    assert _actions(decrypt) == ["kms:Decrypt"]
    assert decrypt["Condition"] == {"StringEquals": {"kms:ViaService": f"s3.{default.config.region}.amazonaws.com"}}
    # ... and the maintenance task's stack never names the bucket (it is deployed first).
    assert "AdminBucket" not in json.dumps(default.template("-MemoryService"))


# -- the admin functions ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_the_admin_functions_run_on_the_layer_in_the_vpc_with_exactly_their_settings(
    synths: dict[str, Synth], variant: str
) -> None:
    synth = synths[variant]
    t = synth.template("-Operations")
    (layer_id,) = resources(t, "AWS::Lambda::LayerVersion")
    handlers = {}
    for name, fn in _functions(synth).items():
        handlers[name] = fn["Handler"]
        assert (fn["Runtime"], fn["Architectures"]) == ("python3.12", ["arm64"])
        assert fn["Layers"] == [{"Ref": layer_id}]
        assert fn["Timeout"] == 900
        assert len(fn["VpcConfig"]["SecurityGroupIds"]) == 1
        env = fn["Environment"]["Variables"]
        assert set(env) <= {*env_names(index.FunctionSettings), "POWERTOOLS_METRICS_NAMESPACE"}
        assert RetentionRules.from_json(env["MEMORY_RETENTION_DAYS"]) == synth.config.retention.rules
        assert env["EXPIRY_BATCH_SIZE"] == str(synth.config.operations.expiry_batch_size)
        assert env["EXPIRY_DRY_RUN"] == str(synth.config.operations.expiry_dry_run).lower()
        assert "OperatorKey" in _render(env["OPERATOR_KEY_SECRET_ARN"])
        assert "AdminBucket" in _render(env["ADMIN_BUCKET"])
    assert handlers == {
        "Function": "index.handler",
        "Expiry": "index.expire_handler",
        "Backup": "index.backup_handler",
    }
    # The handlers exist in the bundle's module under those names.
    for handler in handlers.values():
        assert callable(getattr(index, handler.split(".")[1]))


@pytest.mark.parametrize("variant", ALL)
def test_each_admin_function_holds_the_operator_key_and_only_what_its_job_needs(
    synths: dict[str, Synth], variant: str
) -> None:
    t = synths[variant].template("-Operations")
    for name, writes in (("Function", True), ("Expiry", False), ("Backup", True)):
        statements = _role_statements(t, f"MemoryAdmin{name}ServiceRole")
        actions = {a for s in statements for a in _actions(s)}
        secret_reads = [s for s in statements if "secretsmanager:GetSecretValue" in _actions(s)]
        assert len(secret_reads) == 1, name
        assert "OperatorKey" in _render(secret_reads[0]["Resource"]), name
        assert ("s3:PutObject" in actions) is writes, name
        assert not {a for a in actions if a.startswith("s3:") and a != "s3:PutObject"}, name
        assert not any(a.endswith("*") for a in actions if a.startswith(("s3:", "secretsmanager:"))), name
        if writes:
            (put,) = [s for s in statements if "s3:PutObject" in _actions(s)]
            assert _render(put["Resource"]).startswith("<AdminBucket")
            assert _render(put["Resource"]).endswith("/*")
    # The agent never gets the operator key; the functions' group reaches Hindsight's listener only.
    assert "OperatorKey" not in json.dumps(_role_statements(synths[variant].template("-Agent"), "AgentRuntime"))


@pytest.mark.parametrize("variant", ALL)
def test_the_function_url_is_iam_authorized_and_the_operator_policy_keeps_callers_verifiable(
    synths: dict[str, Synth], variant: str
) -> None:
    t = synths[variant].template("-Operations")
    (url,) = resources(t, "AWS::Lambda::Url").values()
    assert url["Properties"]["AuthType"] == "AWS_IAM"
    function_id, _ = _one(t, "AWS::Lambda::Function", "MemoryAdminFunction")
    assert url["Properties"]["TargetFunctionArn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    # Nothing in the function's resource policy lets anyone in: only EventBridge may invoke the scheduled ones.
    for permission in resources(t, "AWS::Lambda::Permission").values():
        assert permission["Properties"]["Principal"] == "events.amazonaws.com"
        assert permission["Properties"]["FunctionName"] != {"Fn::GetAtt": [function_id, "Arn"]}
    (policy,) = resources(t, "AWS::IAM::ManagedPolicy").values()
    statements = {s["Action"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert statements["lambda:InvokeFunctionUrl"]["Condition"] == {
        "StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}
    }
    # A direct invoke could put any principal into the event: InvokeFunction only through the URL.
    assert statements["lambda:InvokeFunction"]["Condition"] == {"Bool": {"lambda:InvokedViaFunctionUrl": "true"}}
    for statement in statements.values():
        assert statement["Resource"] == {"Fn::GetAtt": [function_id, "Arn"]}


@pytest.mark.parametrize("variant", ALL)
def test_expiry_and_backup_run_on_their_configured_schedules(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-Operations")
    for rule_prefix, function_prefix, expression in (
        ("MemoryAdminExpirySchedule", "MemoryAdminExpiry", synth.config.operations.expiry_schedule),
        ("MemoryAdminBackupSchedule", "MemoryAdminBackup", synth.config.operations.backup_schedule),
    ):
        _, rule = _one(t, "AWS::Events::Rule", rule_prefix)
        function_id, _ = _one(t, "AWS::Lambda::Function", function_prefix)
        assert rule["Properties"]["ScheduleExpression"] == expression
        (target,) = rule["Properties"]["Targets"]
        assert target["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
        assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 1


@pytest.mark.parametrize("variant", ALL)
def test_the_admin_functions_reach_hindsights_listener_and_https_only(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-Operations")
    group_id, group = _one(t, "AWS::EC2::SecurityGroup", "MemoryAdminSecurityGroup")
    egress = [r["Properties"] for r in resources(t, "AWS::EC2::SecurityGroupEgress").values()]
    egress += [
        {**r, "GroupId": {"Fn::GetAtt": [group_id, "GroupId"]}} for r in group["Properties"]["SecurityGroupEgress"]
    ]
    listener = 443 if synth.config.hindsight.certificate_arn else 80
    assert sorted((r["FromPort"], r["ToPort"]) for r in egress) == sorted([(443, 443), (listener, listener)])
    ingress = [r["Properties"] for r in resources(t, "AWS::EC2::SecurityGroupIngress").values()]
    assert all(r["SourceSecurityGroupId"] == {"Fn::GetAtt": [group_id, "GroupId"]} for r in ingress)
    assert sorted(r["FromPort"] for r in ingress) == sorted([443, listener])  # the endpoints and the load balancer


def test_audit_logs_are_kept_as_configured_and_encrypted(default: Synth) -> None:
    t = default.template("-Operations")
    groups = resources(t, "AWS::Logs::LogGroup")
    assert len(groups) == 3
    for group in groups.values():
        assert group["Properties"]["RetentionInDays"] == default.config.operations.audit_log_retention_days
        assert "LogsKey" in _render(group["Properties"]["KmsKeyId"])


# -- the maintenance task -----------------------------------------------------------------------------------------


def _task_containers(template: dict[str, Any], prefix: str) -> dict[str, dict[str, Any]]:
    _, task = _one(template, "AWS::ECS::TaskDefinition", prefix)
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
    assert _render(subnets).count(",") == len(synth.stacks.network.network.subnet_ids) - 1


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
    vault_id, vault = _one(t, "AWS::Backup::BackupVault", "BackupPlanVault")
    assert vault["DeletionPolicy"] == "Retain"
    assert "BackupPlanKey" in _render(vault["Properties"]["EncryptionKeyArn"])
    assert rule["TargetBackupVault"] == {"Fn::GetAtt": [vault_id, "BackupVaultName"]}
    (selection,) = resources(t, "AWS::Backup::BackupSelection").values()
    database = "DatabaseInstance" if synth.config.database.engine.value == "postgres" else "DatabaseCluster"
    assert database in _render(selection["Properties"]["BackupSelection"]["Resources"])
    _, alarm = _one(t, "AWS::CloudWatch::Alarm", "BackupPlanFailedAlarm")
    assert "NumberOfBackupJobsFailed" in json.dumps(alarm["Properties"]["Metrics"])


def test_prod_keeps_database_backups_longer(synths: dict[str, Synth]) -> None:
    prod = synths["jwt-import"].config.database
    assert prod.backup_plan_retention_days > synths["default"].config.database.backup_plan_retention_days


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
        assert "AlertsTopic" in _render(actions["AlarmActions"])
        assert actions["OKActions"] == actions["AlarmActions"]
    assert len(alarms) == 10


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


def test_database_storage_alarm_fires_before_the_disk_is_full(default: Synth) -> None:
    (alarm,) = [
        v for k, v in resources(default.template("-Operations"), "AWS::CloudWatch::Alarm").items() if "Storage" in k
    ]
    props = alarm["Properties"]
    assert props["MetricName"] == "FreeStorageSpace"
    assert props["ComparisonOperator"] == "LessThanThreshold"
    assert 0 < props["Threshold"] < default.config.database.allocated_storage_gb * 2**30 * 0.1


def _handed_off(synth: Synth, rendered: str) -> Any:
    """What ``<parameter>`` (a rendered reference to one of -Operations' SSM parameters) stands for: the value an
    earlier stack's handoff writes under that parameter's name."""
    parameter = synth.template("-Operations")["Parameters"][rendered.strip("<>")]
    assert parameter["Type"] == "AWS::SSM::Parameter::Value<String>"
    (value,) = [
        p["Properties"]["Value"]
        for t in synth.templates.values()
        for p in resources(t, "AWS::SSM::Parameter").values()
        if p["Properties"].get("Name") == parameter["Default"]
    ]
    return value


def _dashboard_body(template: dict[str, Any]) -> dict[str, Any]:
    (dashboard,) = resources(template, "AWS::CloudWatch::Dashboard").values()
    body: dict[str, Any] = json.loads(_render(dashboard["Properties"]["DashboardBody"]))
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
    handed = [_handed_off(synth, a) for a in widget["properties"]["alarms"] if a.startswith("<SsmParameterValue")]
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


# -- configuration flows into the resources -------------------------------------------------------------------------


def test_retention_and_dry_run_settings_reach_the_functions(synths: dict[str, Synth]) -> None:
    template = synths["iam-aurora"].template("-Operations")  # retention.plan=7, retention.turn=null, dry run
    functions = [f["Properties"] for f in resources(template, "AWS::Lambda::Function").values()]
    assert len(functions) == 3
    for fn in functions:
        env = fn["Environment"]["Variables"]
        rules = RetentionRules.from_json(env["MEMORY_RETENTION_DAYS"])
        days = (rules.days_for(MemoryKind.PLAN), rules.days_for(MemoryKind.TURN), rules.days_for(MemoryKind.PROBLEM))
        assert days == (7, None, 90)
        assert env["EXPIRY_DRY_RUN"] == "true"
    (rule,) = [r for k, r in resources(template, "AWS::Events::Rule").items() if k.startswith("MemoryAdminExpiry")]
    assert rule["Properties"]["ScheduleExpression"] == "rate(6 hours)"


def test_the_schema_setting_moves_every_hindsight_task_and_the_next_model_is_the_maintenance_tasks_alone(
    synths: dict[str, Synth],
) -> None:
    memory = synths["iam-aurora"].template("-MemoryService")  # database_schema=emb_v2, a maintenance model
    for task in resources(memory, "AWS::ECS::TaskDefinition").values():
        (main,) = [c for c in task["Properties"]["ContainerDefinitions"] if c["Name"] == "Hindsight"]
        env = {e["Name"]: e["Value"] for e in main["Environment"]}
        assert env["HINDSIGHT_API_DATABASE_SCHEMA"] == "emb_v2"
    model = "cohere.embed-english-v3"
    assert model in json.dumps(_role_statements(memory, "MemoryMaintenanceTaskTaskRole"))
    for role in ("MemoryApiTaskTaskRole", "MemoryWorker1TaskTaskRole"):
        assert model not in json.dumps(_role_statements(memory, role))
    # By default the banks stay in public, and the maintenance task may invoke only the service's own models.
    default = synths["default"].template("-MemoryService")
    for task in resources(default, "AWS::ECS::TaskDefinition").values():
        (main,) = [c for c in task["Properties"]["ContainerDefinitions"] if c["Name"] == "Hindsight"]
        assert {"Name": "HINDSIGHT_API_DATABASE_SCHEMA", "Value": "public"} in main["Environment"]
    assert model not in json.dumps(_role_statements(default, "MemoryMaintenanceTaskTaskRole"))


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
    queue_id, _ = _one(agent, "AWS::SQS::Queue", "RetainQueue")
    dead_id, _ = _one(agent, "AWS::SQS::Queue", "RetainQueueDeadLetters")
    depth, age, replay = (json.dumps(widgets[TITLES[k]]) for k in ("queue_depth", "queue_age", "replay"))
    for queue_id_ in (queue_id, dead_id):  # the -Agent stack's queues, by their exported names
        assert queue_id_ in depth
        assert queue_id_ in age
    assert "ApproximateNumberOfMessagesVisible" in depth
    assert "ApproximateAgeOfOldestMessage" in age
    for name in ("MemoryQueueDelivered", "MemoryQueueDeadLettered", "MemoryQueueRetried"):
        assert name in replay
    assert '"service", "retain-replay"' in replay

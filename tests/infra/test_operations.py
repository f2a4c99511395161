"""Memory administration, asserted on the synthesized templates: the operations stack, the administration bucket,
the admin functions, their schedules and settings. The maintenance task and the database's backup plan are
``test_operations_database.py``; the alarms and the dashboard ``test_operations_monitoring.py``."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from infra.constructs.admin_bucket import NONCURRENT_VERSION_DAYS, admin_bucket_name, admin_bucket_pattern
from infra.functions.memory_admin import index
from infra.permissions import MAINTENANCE_ROLE_TAG
from memory_adapter.kinds import MemoryKind, RetentionRules
from memory_adapter.settings_fields import env_names
from tests.infra.conftest import Synth, resources
from tests.infra.operations_helpers import ALL, handed_off, one_resource, render, role_statements

#: How the stack's own creation id (infra/constructs/creation.py) renders in a name.
CREATION = "<select:0:<split:-:<select:2:<split:/:<AWS::StackId>>>>>"


def _functions(synth: Synth) -> dict[str, dict[str, Any]]:
    t = synth.template("-Operations")
    return {
        name: one_resource(t, "AWS::Lambda::Function", f"MemoryAdmin{name}")[1]["Properties"]
        for name in ("Function", "Expiry", "Backup")
    }


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
    bucket_id, bucket = one_resource(t, "AWS::S3::Bucket", "AdminBucket")
    logs_id, _ = one_resource(t, "AWS::S3::Bucket", "AdminBucketAccessLogs")
    key_id, key = one_resource(t, "AWS::KMS::Key", "AdminBucketKey")
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
    assert render(props["BucketName"]) == expected_name
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
    _, bucket = one_resource(synth.template("-Operations"), "AWS::S3::Bucket", "AdminBucket")
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
    assert render(admin["Resource"]) == f"arn:aws:s3:::{pattern}/*"  # the partition of a known region is literal
    # A pattern, so only this account's buckets of it (names are global).
    assert admin["Condition"] == {"StringEquals": {"aws:ResourceAccount": {"Ref": "AWS::AccountId"}}}
    # The bucket the Operations stack creates has a name of that pattern, ending in its own stack's creation id (a
    # deployment created again after cdk destroy, which keeps the bucket, gets another one).
    _, bucket = one_resource(synth.template("-Operations"), "AWS::S3::Bucket", "AdminBucket")
    assert render(bucket["Properties"]["BucketName"]) == pattern.replace("*", CREATION)


def test_the_maintenance_task_reads_the_bucket_through_its_resource_policies(default: Synth) -> None:
    t = default.template("-Operations")
    bucket_id, _ = one_resource(t, "AWS::S3::Bucket", "AdminBucket")
    (policy,) = [
        p for p in resources(t, "AWS::S3::BucketPolicy").values() if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    (read,) = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    assert _actions(read) == ["s3:GetObject"]
    # The role is read by handoff (the platform may change): its parameter holds the maintenance task's role.
    role = render(read["Principal"]["AWS"])
    assert handed_off(default, role) == {"Fn::GetAtt": ["MemoryMaintenanceTaskTaskRole6BF12801", "Arn"]}
    # Whoever may write the parameter could name another role: the grant holds only for a role of this account
    # carrying the maintenance tag, which the maintenance role has and only the -MemoryService stack sets.
    prefix = default.config.parameter_prefix
    trusted = {"aws:PrincipalAccount": {"Ref": "AWS::AccountId"}, f"aws:PrincipalTag/{MAINTENANCE_ROLE_TAG}": prefix}
    assert read["Condition"] == {"StringEquals": trusted}
    role_resource = default.template("-MemoryService")["Resources"]["MemoryMaintenanceTaskTaskRole6BF12801"]
    assert {"Key": MAINTENANCE_ROLE_TAG, "Value": prefix} in role_resource["Properties"]["Tags"]
    _, key = one_resource(t, "AWS::KMS::Key", "AdminBucketKey")
    (decrypt,) = [s for s in key["Properties"]["KeyPolicy"]["Statement"] if render(s["Principal"].get("AWS")) == role]
    assert _actions(decrypt) == ["kms:Decrypt"]
    via_s3 = {"kms:ViaService": f"s3.{default.config.region}.amazonaws.com"}
    assert decrypt["Condition"] == {"StringEquals": {**via_s3, **trusted}}
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
        assert "OperatorKey" in render(env["OPERATOR_KEY_SECRET_ARN"])
        assert "AdminBucket" in render(env["ADMIN_BUCKET"])
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
        statements = role_statements(t, f"MemoryAdmin{name}ServiceRole")
        actions = {a for s in statements for a in _actions(s)}
        secret_reads = [s for s in statements if "secretsmanager:GetSecretValue" in _actions(s)]
        assert len(secret_reads) == 1, name
        assert "OperatorKey" in render(secret_reads[0]["Resource"]), name
        assert ("s3:PutObject" in actions) is writes, name
        assert not {a for a in actions if a.startswith("s3:") and a != "s3:PutObject"}, name
        assert not any(a.endswith("*") for a in actions if a.startswith(("s3:", "secretsmanager:"))), name
        if writes:
            (put,) = [s for s in statements if "s3:PutObject" in _actions(s)]
            assert render(put["Resource"]).startswith("<AdminBucket")
            assert render(put["Resource"]).endswith("/*")
    # The agent never gets the operator key; the functions' group reaches Hindsight's listener only.
    assert "OperatorKey" not in json.dumps(role_statements(synths[variant].template("-Agent"), "AgentRuntime"))


@pytest.mark.parametrize("variant", ALL)
def test_the_function_url_is_iam_authorized_and_the_operator_policy_keeps_callers_verifiable(
    synths: dict[str, Synth], variant: str
) -> None:
    t = synths[variant].template("-Operations")
    (url,) = resources(t, "AWS::Lambda::Url").values()
    assert url["Properties"]["AuthType"] == "AWS_IAM"
    function_id, _ = one_resource(t, "AWS::Lambda::Function", "MemoryAdminFunction")
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
        _, rule = one_resource(t, "AWS::Events::Rule", rule_prefix)
        function_id, _ = one_resource(t, "AWS::Lambda::Function", function_prefix)
        assert rule["Properties"]["ScheduleExpression"] == expression
        (target,) = rule["Properties"]["Targets"]
        assert target["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
        assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 1


@pytest.mark.parametrize("variant", ALL)
def test_the_admin_functions_reach_hindsights_listener_and_https_only(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-Operations")
    group_id, group = one_resource(t, "AWS::EC2::SecurityGroup", "MemoryAdminSecurityGroup")
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
        assert "LogsKey" in render(group["Properties"]["KmsKeyId"])


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

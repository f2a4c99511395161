"""What a real account would refuse at the first deploy, at an update, or leave behind (issue 21): checked on the
synthesized templates, and on a synthesized before/after pair for the updates."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from infra.constructs.database import LOGIN_ROTATION_WINDOW, MASTER_ROTATION_HOUR, master_rotation_schedule
from tests.infra.conftest import ROOT, VARIANTS, Synth, resources, synthesize
from tests.infra.eks_variant import EKS_VARIANT
from tests.infra.exports import blocking_exports, exports, imports
from tests.infra.external_variant import EXTERNAL_COGNITO
from tests.infra.updates import NAME_PROPERTIES, Collision, name_collisions, retained_types, updated_in_place

ALL = list(VARIANTS)
#: The ordinary setting changes that used to block ``cdk deploy --all``, applied together to ``jwt-import`` (HTTPS
#: on, two workers, one issuer): HTTPS off, one worker, another issuer, shorter log retention. Checked in both
#: directions, so turning HTTPS on, adding a worker and changing the issuer back are covered as well.
CHANGED = {
    "hindsight.certificate_arn": "null",
    "hindsight.domain_name": "null",
    "hindsight.require_tls": "false",
    "hindsight.worker_count": "1",
    "auth.discovery_url": "https://login.example.com/tenant-2/.well-known/openid-configuration",
    "agent.log_retention_days": "30",
    "hindsight.log_retention_days": "30",
}


@pytest.fixture(scope="module")
def changed(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """``jwt-import`` with :data:`CHANGED` (the one extra synthesis of this module; no nag packs, which the update
    check does not need)."""
    return synthesize(tmp_path_factory.mktemp("cdk-changed"), {**VARIANTS["jwt-import"], **CHANGED}, nag=False)


@pytest.fixture(scope="module")
def tls_to_tasks(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """``jwt-import`` with TLS from the load balancer to the tasks too (no nag packs)."""
    overrides = {**VARIANTS["jwt-import"], "hindsight.tls_to_tasks": "true"}
    return synthesize(tmp_path_factory.mktemp("cdk-tls-to-tasks"), overrides, nag=False)


@pytest.fixture(scope="module")
def platforms(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Synth]:
    """The EKS variant and the same deployment on ECS (no nag packs), for ``hindsight.platform`` switched."""
    on_ecs = {k: v for k, v in EKS_VARIANT.items() if not k.startswith("eks.") and k != "hindsight.platform"}
    return {
        name: synthesize(tmp_path_factory.mktemp(f"cdk-platform-{name}"), overrides, nag=False)
        for name, overrides in (("ecs", on_ecs), ("eks", EKS_VARIANT))
    }


PROBE = "hindsight.external_probe"


@pytest.fixture(scope="module")
def probe_modes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Synth]:
    """An external-mode deployment whose isolation probe warns, and the same one failing the deploy (no nag packs)."""
    return {
        mode: synthesize(tmp_path_factory.mktemp(f"cdk-probe-{mode}"), {**EXTERNAL_COGNITO, PROBE: mode}, nag=False)
        for mode in ("warn", "fail")
    }


#: Custom resources whose answer depends on something outside the templates (a server, a cluster): never updated in
#: place. A changed one is a new resource (its logical id names what it checks), so a failed check is a failed Create,
#: which the rollback deletes; an Update's rollback would check the same outside thing again and fail the same way.
CHECKS_OUTSIDE = {"Custom::HindsightIsolationProbe", "Custom::AWSCDK-EKS-KubernetesObjectValue"}


def _all_resources(synth: Synth, type_name: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [(stack, k, v) for stack, t in synth.templates.items() for k, v in resources(t, type_name).items()]


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


# -- every update after the first deploy -----------------------------------------------------------------------------


def test_the_changes_that_alter_exports_are_refused_by_none(synths: dict[str, Synth], changed: Synth) -> None:
    before, after = synths["jwt-import"].templates, changed.templates
    assert set(before) == set(after)
    assert blocking_exports(before, after) == {}  # HTTPS off, fewer workers, another issuer
    assert blocking_exports(after, before) == {}  # HTTPS on, more workers, the issuer back


def test_the_update_check_finds_an_export_that_is_removed_or_changed_while_imported() -> None:
    # GIVEN a producer whose export the consumer imports
    producer: dict[str, Any] = {
        "Outputs": {"O": {"Value": {"Fn::GetAtt": ["Lb", "DNSName"]}, "Export": {"Name": "P:Dns"}}}
    }
    consumer: dict[str, Any] = {"Resources": {"F": {"Type": "X", "Properties": {"Url": {"Fn::ImportValue": "P:Dns"}}}}}
    before: dict[str, dict[str, Any]] = {"P": producer, "C": consumer}
    # THEN removing it, or changing its value, blocks the update; an export nobody imports does not
    assert blocking_exports(before, {"P": {"Outputs": {}}, "C": {}}) == {"P:Dns": {"C"}}
    renamed = {"O": {"Value": {"Fn::GetAtt": ["Other", "DNSName"]}, "Export": {"Name": "P:Dns"}}}
    assert blocking_exports(before, {"P": {"Outputs": renamed}, "C": consumer}) == {"P:Dns": {"C"}}
    assert blocking_exports({"P": producer}, {"P": {"Outputs": {}}}) == {}
    # AND a custom resource's attribute counts as changed when the resource's properties change
    custom = {"Type": "Custom::Keys", "Properties": {"Url": "a"}}
    issuer = {"Value": {"Fn::GetAtt": ["Keys", "Issuer"]}, "Export": {"Name": "P:Iss"}}
    old: dict[str, dict[str, Any]] = {
        "P": {"Resources": {"Keys": custom}, "Outputs": {"I": issuer}},
        "C": {"x": {"Fn::ImportValue": "P:Iss"}},
    }
    new: dict[str, dict[str, Any]] = {
        "P": {"Resources": {"Keys": {**custom, "Properties": {"Url": "b"}}}, "Outputs": {"I": issuer}}
    }
    assert blocking_exports(old, new) == {"P:Iss": {"C"}}
    assert blocking_exports(old, old) == {}


def test_the_changes_create_no_name_a_kept_or_live_resource_holds(synths: dict[str, Synth], changed: Synth) -> None:
    before, after = synths["jwt-import"].templates, changed.templates
    assert name_collisions([before, after, before]) == []  # HTTPS off, fewer workers, another issuer, and back


def test_tls_to_the_tasks_can_be_turned_on_and_off(synths: dict[str, Synth], tls_to_tasks: Synth) -> None:
    before, after = synths["jwt-import"].templates, tls_to_tasks.templates
    assert blocking_exports(before, after) == {}
    assert blocking_exports(after, before) == {}
    assert name_collisions([before, after, before, after]) == []


def test_the_platform_can_be_switched_both_ways(platforms: dict[str, Synth]) -> None:
    # The -Operations stack reads what only one platform has (the ECS cluster and API service, the maintenance role,
    # the restart alarm) through handoffs: the -MemoryService stack may drop them when hindsight.platform changes.
    ecs, eks = platforms["ecs"].templates, platforms["eks"].templates
    # Back on EKS, the manifests are applied, not created: what the last delete left is taken over, not refused.
    applied = resources(platforms["eks"].template("-MemoryService"), "Custom::AWSCDK-EKS-KubernetesResource")
    (manifest,) = applied.values()
    assert manifest["Properties"]["Overwrite"] is True
    assert blocking_exports(ecs, eks) == {}
    assert blocking_exports(eks, ecs) == {}
    assert name_collisions([ecs, eks, ecs, eks]) == []


def test_the_probe_mode_can_be_switched_both_ways(probe_modes: dict[str, Synth]) -> None:
    warn, fail = probe_modes["warn"].templates, probe_modes["fail"].templates
    assert blocking_exports(warn, fail) == blocking_exports(fail, warn) == {}
    assert name_collisions([warn, fail, warn, fail]) == []
    # warn -> fail probes again, and a leak fails the deploy: that probe is a Create, its rollback a no-op Delete.
    for before, after in ((warn, fail), (fail, warn)):
        assert {t for *_, t in updated_in_place(before, after)} & CHECKS_OUTSIDE == set()


def test_the_in_place_check_finds_a_changed_custom_resource() -> None:
    probe = {"Type": "Custom::HindsightIsolationProbe", "Properties": {"OnLeak": "fail"}}
    before: dict[str, dict[str, Any]] = {"S": {"Resources": {"Probe": probe}}}
    after = {"S": {"Resources": {"Probe": {**probe, "Properties": {"OnLeak": "warn"}}}}}
    assert updated_in_place(before, after) == {("S", "Probe", "Custom::HindsightIsolationProbe")}
    assert updated_in_place(before, before) == set()
    assert updated_in_place(before, {"S": {"Resources": {"Probe2": after["S"]["Resources"]["Probe"]}}}) == set()


@pytest.mark.parametrize("sequence", ["changed", "tls_to_tasks", "events", "platforms"])
def test_no_outside_check_is_updated_in_place(
    synths: dict[str, Synth],
    changed: Synth,
    tls_to_tasks: Synth,
    default: Synth,
    with_text: Synth,
    platforms: dict[str, Synth],
    sequence: str,
) -> None:
    pairs = {
        "changed": (synths["jwt-import"], changed),
        "tls_to_tasks": (synths["jwt-import"], tls_to_tasks),
        "events": (default, with_text),
        "platforms": (platforms["ecs"], platforms["eks"]),
    }
    one, other = (s.templates for s in pairs[sequence])
    for before, after in ((one, other), (other, one)):
        assert {t for *_, t in updated_in_place(before, after)} & CHECKS_OUTSIDE == set()


#: What the -Operations stack of a deployment made before the platform handoffs imports from -MemoryService, per
#: platform: the first update with this version must still export them (else CloudFormation refuses it).
IMPORTED_BEFORE_THE_HANDOFFS = {
    "ecs": {
        "ExportsOutputFnGetAttMemoryApiServiceA340C545NameCE84F3D8",
        "ExportsOutputFnGetAttMemoryMaintenanceTaskTaskRole6BF12801Arn7A1B16EB",
        "ExportsOutputFnGetAttMemoryRedeployFailing2FDBEDB5Arn8EE8E99A",
        "ExportsOutputRefMemoryClusterEF01D7252ABB9375",
    },
    "eks": {
        "ExportsOutputFnGetAttMemoryEksMaintenanceRoleD6052A7FArnD7A2CBE9",
        "ExportsOutputFnGetAttMemoryEksRestartFailingF295C053Arn37D2B155",
    },
}


def test_deployments_made_before_the_platform_handoffs_can_be_updated(platforms: dict[str, Synth]) -> None:
    for platform, names in IMPORTED_BEFORE_THE_HANDOFFS.items():
        templates = platforms[platform].templates
        (stack,) = [name for name in templates if name.endswith("-MemoryService")]
        assert {f"{stack}:{name}" for name in names} <= set(exports(templates)), platform
        # ... and nothing imports them any more: the platform switch may drop them.
        assert not {f"{stack}:{name}" for name in names} & set(imports(templates)), platform


def test_events_can_be_turned_on_off_and_on_again(default: Synth, with_text: Synth) -> None:
    # Turning events off keeps the bus, its archive and the audit log (removal=retain); on again must not meet them.
    on, off = with_text.templates, default.templates
    assert name_collisions([off, on, off, on, off, on]) == []
    assert retained_types(on) - {"AWS::Events::Archive"} >= {"AWS::Events::EventBus", "AWS::Logs::LogGroup"}


@pytest.mark.parametrize("variant", [*ALL, "with_text"])
def test_every_retained_type_has_its_name_property_known(
    synths: dict[str, Synth], with_text: Synth, variant: str
) -> None:
    templates = with_text.templates if variant == "with_text" else synths[variant].templates
    assert retained_types(templates) <= set(NAME_PROPERTIES)


def test_the_name_check_finds_a_kept_name_created_again_a_renamed_id_and_a_named_replacement() -> None:
    name = {"Fn::Join": ["", [{"Ref": "AWS::StackName"}, "-bus"]]}
    bus = {"Type": "AWS::Events::EventBus", "DeletionPolicy": "Retain", "Properties": {"Name": name}}
    on: dict[str, dict[str, Any]] = {"S": {"Resources": {"Bus": bus}}}
    off: dict[str, dict[str, Any]] = {"S": {"Resources": {}}}
    # GIVEN a kept bus with a fixed name: on, off, on fails at the third deployment; without Retain it does not
    ((collision,),) = [name_collisions([on, off, on])]
    expected_name = 'AWS::Events::EventBus {"Fn::Join": ["", ["S", "-bus"]]}'
    assert collision == Collision(2, "S", "Bus", expected_name, "S/Bus (retained at step 1)")
    deleted = {"S": {"Resources": {"Bus": {**bus, "DeletionPolicy": "Delete"}}}}
    assert name_collisions([deleted, off, deleted]) == []
    # AND a name ending in a key's generated id is another name each time the key is created again
    keyed = {**bus, "Properties": {"Name": {"Fn::Join": ["-", ["bus", {"Ref": "Key"}]]}}}
    with_key = {"S": {"Resources": {"Key": {"Type": "AWS::KMS::Key"}, "Bus": keyed}}}
    assert name_collisions([with_key, off, with_key]) == []
    # AND a new logical id for the same name fails (created before the old one is deleted), retained or not
    renamed = {"S": {"Resources": {"Bus2": {**bus, "DeletionPolicy": "Delete"}}}}
    assert [c.logical_id for c in name_collisions([deleted, renamed])] == ["Bus2"]
    # AND a property change that replaces a custom-named resource fails; one that updates it in place does not
    log = {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "/a", "RetentionInDays": 7}}
    group = {"S": {"Resources": {"Log": log}}}
    longer = {"S": {"Resources": {"Log": {**log, "Properties": {"LogGroupName": "/a", "RetentionInDays": 30}}}}}
    assert name_collisions([group, longer]) == []
    archive = {"Type": "AWS::Events::Archive", "Properties": {"ArchiveName": "a", "SourceArn": "arn:1"}}
    moved = {**archive, "Properties": {"ArchiveName": "a", "SourceArn": "arn:2"}}
    ((replaced,),) = [name_collisions([{"S": {"Resources": {"A": archive}}}, {"S": {"Resources": {"A": moved}}}])]
    assert replaced.holder.startswith("itself")


#: Every custom resource type the stacks deploy, and why its Update survives CloudFormation's rollback (another Update,
#: with the previous properties): a handler whose Update can fail must not fail the same way when rolled back.
ROLLBACK_SAFE = {
    "Custom::HindsightIsolationProbe": "changed settings are a new resource (CHECKS_OUTSIDE): a failed probe is a "
    "failed Create; an Update (the service token only) to the properties its physical id proved answers without "
    "probing again (tests/integration/external/test_probe_function.py::"
    "test_a_failed_update_rolls_back_without_probing_again)",
    "Custom::ServiceLogGroup": "create-if-missing, then retention and key, as Create does: the old ones are set again "
    "(test_the_log_group_handler_is_idempotent)",
    "Custom::HindsightDatabaseLogin": "idempotent SQL (the login role and grants exist: nothing to do), with the "
    "secrets read at the time, never the properties' (tests/infra/test_db_provisioning.py)",
    "Custom::MirroredSigningKeys": "writes the keys of the issuer in its properties: the rollback's is the issuer the "
    "last deploy mirrored; a fetch that fails leaves the parameter as it was",
    "Custom::RdsCaBundle": "writes the bundle of the URL in its properties (Overwrite): the old URL's again",
    "Custom::CDKECRDeployment": "the one tag it writes is excluded from tag immutability, so the old image is pushed "
    "again (infra/constructs/image_mirror.py)",
    "Custom::AWS": "the image digest lookup: a read (ecr:DescribeImages) of the tag the rollback re-pushed",
    "Custom::VpcRestrictDefaultSG": "CDK's: revokes the default group's rules, ignoring rules already gone",
    "Custom::AWSCDK-EKS-KubernetesResource": "CDK's kubectl apply: the rollback applies the manifests the cluster "
    "took at the last deploy again (client-side apply, idempotent); its provider framework runs outside the VPC, so "
    "neither hangs (infra/constructs/eks_workloads.py)",
    "Custom::AWSCDK-EKS-KubernetesObjectValue": "the CNI preflight's read: never updated (CHECKS_OUTSIDE), a changed "
    "read is a new resource; its Delete reads nothing",
}


def _custom_types(templates: dict[str, dict[str, Any]]) -> set[str]:
    return {
        r["Type"]
        for t in templates.values()
        for r in t["Resources"].values()
        if r["Type"].startswith("Custom::") or r["Type"] == "AWS::CloudFormation::CustomResource"
    }


@pytest.mark.parametrize("variant", [*ALL, "with_text", "eks", "external"])
def test_every_custom_resource_is_rollback_safe(
    synths: dict[str, Synth],
    with_text: Synth,
    platforms: dict[str, Synth],
    probe_modes: dict[str, Synth],
    variant: str,
) -> None:
    others = {"with_text": with_text, "eks": platforms["eks"], "external": probe_modes["fail"]}
    templates = others[variant].templates if variant in others else synths[variant].templates
    assert _custom_types(templates) <= set(ROLLBACK_SAFE)
    # Every type this app declares, whichever variant deploys it (the external probe, the EKS ones).
    declared = set(
        re.findall(r'resource_type="(Custom::[^"]+)"', "".join(p.read_text() for p in (ROOT / "infra").rglob("*.py")))
    )
    assert declared <= set(ROLLBACK_SAFE)


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

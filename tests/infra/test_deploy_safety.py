"""What a real account would refuse at an update (issue 21): checked on synthesized before/after pairs (exports,
names, updates in place, rollbacks). What it would refuse at the first deploy, or leave behind, is
``test_deploy_safety_resources.py``."""

from __future__ import annotations

import re
from typing import Any

import pytest

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
    "Custom::MirroredSigningKeys": "a rollback's Update (the stack UPDATE_ROLLBACK_IN_PROGRESS) asks no issuer: it "
    "puts back the keys and issuer last mirrored for the old discovery URL from the parameter's labelled history "
    "(infra/functions/owned_parameter.py; tests/infra/test_owned_parameter_rollback.py)",
    "Custom::RdsCaBundle": "a rollback's Update downloads nothing: the old URL's bundle from the parameter's labelled "
    "history (tests/infra/test_owned_parameter_rollback.py::test_the_rds_bundle_rolls_back_without_downloading)",
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

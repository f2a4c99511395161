"""Hindsight on the customer's EKS cluster (``hindsight.platform=eks``): its configuration, and the one EKS variant
checked as the ECS tasks are (posture, secrets, IAM, cdk-nag), its manifests validated against the Kubernetes schemas
of every supported version (offline: kubernetes-validate ships them). How the stack reaches and operates the cluster
is ``test_eks_cluster.py``."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from hindsight_isolation.settings import SERVER_REQUIRED_ENV
from infra.config import ConfigError, load_config_from_cdk_json
from infra.config.eks import SUPPORTED_KUBERNETES_VERSIONS
from infra.constructs.eks_manifests import API_NAME, WORKER_NAME
from tests.infra.conftest import Synth, resources, synthesize
from tests.infra.eks_template import (
    CONTROLLER_KINDS,
    get_att,
    manifests_of,
    objects_by_kind,
    pod_specs,
    synthesize_eks,
    target_group_ref,
)
from tests.infra.eks_variant import EKS_VARIANT, OIDC_PROVIDER


@pytest.fixture(scope="module")
def eks(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize_eks(tmp_path_factory)


@pytest.fixture(scope="module")
def ecs_twin(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The same deployment on ECS (no nag packs: only its roles are compared)."""
    overrides = {k: v for k, v in EKS_VARIANT.items() if not k.startswith("eks.") and k != "hindsight.platform"}
    return synthesize(tmp_path_factory.mktemp("cdk-eks-twin"), overrides, nag=False)


def _role_of(synth: Synth, subject: str) -> str:
    """The logical id of the one role only this service account may assume (IRSA's token subject)."""
    (logical_id,) = [
        k
        for k, r in resources(synth.template("-MemoryService"), "AWS::IAM::Role").items()
        for statement in r["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        if statement.get("Condition", {}).get("StringEquals", {}).get(f"{OIDC_PROVIDER}:sub") == subject
    ]
    return logical_id


# -- configuration ------------------------------------------------------------------------------------------------


def test_eks_needs_an_imported_vpc_and_the_clusters_attributes() -> None:
    with pytest.raises(ConfigError) as err:
        load_config_from_cdk_json({"hindsight.platform": "eks", "eks.kubernetes_version": "1.29"})
    names = {e.split(" ")[0] for e in err.value.errors}
    assert {
        "hindsight.platform=eks",
        "eks.cluster_name",
        "eks.kubernetes_version",
        "eks.kubectl_role_arn",
        "eks.oidc_provider_arn",
        "eks.cluster_security_group_id",
    } <= names
    assert any("one of 1.33, 1.34, 1.35 (got 1.29)" in e for e in err.value.errors)


def test_eks_role_source_is_irsa_or_pod_identity_never_both() -> None:
    both = {**EKS_VARIANT, "eks.pod_identity": "true"}
    with pytest.raises(ConfigError, match="set exactly one"):
        load_config_from_cdk_json(both)
    pod_identity = {k: v for k, v in both.items() if k != "eks.oidc_provider_arn"}
    assert load_config_from_cdk_json(pod_identity).eks.pod_identity is True
    with pytest.raises(ConfigError, match=r"eks\.namespace must be a namespace name of its own"):
        load_config_from_cdk_json({**EKS_VARIANT, "eks.namespace": "kube-system"})
    with pytest.raises(ConfigError, match=r"eks\.oidc_provider_arn must be the cluster's IAM OIDC provider ARN"):
        load_config_from_cdk_json({**EKS_VARIANT, "eks.oidc_provider_arn": "arn:aws:iam::111122223333:role/x"})


def test_eks_settings_without_the_platform_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"eks.cluster_name: used only with hindsight.platform=eks"):
        load_config_from_cdk_json({"eks.cluster_name": "platform-prod"})
    assert load_config_from_cdk_json().hindsight.platform.value == "ecs"


# -- template -----------------------------------------------------------------------------------------------------


def test_cdk_nag_has_no_unacknowledged_findings(eks: Synth) -> None:
    violations = [
        (v["ruleName"], c["constructPath"])
        for plugin in (eks.nag_report or {}).get("pluginReports", [])
        for v in plugin["violations"]
        for c in v["violatingConstructs"]
    ]
    assert eks.nag_error is None, violations
    assert violations == []


def test_no_ecs_and_the_cluster_is_imported_not_created(eks: Synth) -> None:
    for template in eks.templates.values():
        kinds = {r["Type"] for r in template["Resources"].values()}
        assert not {t for t in kinds if t.startswith("AWS::ECS::")}
        assert "AWS::EKS::Cluster" not in kinds
        assert "Custom::AWSCDK-EKS-Cluster" not in kinds
    (resource,) = resources(eks.template("-MemoryService"), "Custom::AWSCDK-EKS-KubernetesResource").values()
    assert resource["Properties"]["ClusterName"] == "platform-prod"
    assert resource["Properties"]["RoleArn"] == EKS_VARIANT["eks.kubectl_role_arn"]


@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_manifest_is_valid_for_each_supported_version(eks: Synth, version: str) -> None:
    manifests = manifests_of(eks)
    kinds = {m["kind"] for m in manifests}
    assert {"Namespace", "ServiceAccount", "Deployment", "StatefulSet", "PodDisruptionBudget"} <= kinds
    assert "HorizontalPodAutoscaler" in kinds
    for manifest in manifests:
        if manifest["kind"] in CONTROLLER_KINDS:
            continue
        kubernetes_validate.validate(manifest, f"{version}.0", strict=True)


def test_a_manifest_kubernetes_refuses_fails_validation() -> None:
    # The validation above can fail: a misspelt field is refused in strict mode.
    bad = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "x"}, "automountToken": False}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, "1.34.0", strict=True)


def test_controller_objects_name_the_stacks_target_group_and_pod_group(eks: Synth) -> None:
    objects = objects_by_kind(eks)
    binding = objects[("TargetGroupBinding", API_NAME)]
    assert binding["apiVersion"] == "elbv2.k8s.aws/v1beta1"
    assert binding["spec"]["serviceRef"] == {"name": API_NAME, "port": eks.config.hindsight.port}
    assert binding["spec"]["targetType"] == "ip"
    assert binding["spec"]["targetGroupARN"] == target_group_ref(eks)
    policy = objects[("SecurityGroupPolicy", "hindsight")]
    assert policy["apiVersion"] == "vpcresources.k8s.aws/v1beta1"
    assert policy["spec"]["securityGroups"] == {"groupIds": [get_att(_pod_group(eks), "GroupId")]}
    assert policy["spec"]["podSelector"]["matchLabels"] == {"app.kubernetes.io/part-of": "hindsight"}
    # every Hindsight pod is selected by the policy: its template carries the label
    for kind, name in (("Deployment", API_NAME), ("StatefulSet", WORKER_NAME)):
        labels = objects[(kind, name)]["spec"]["template"]["metadata"]["labels"]
        assert labels["app.kubernetes.io/part-of"] == "hindsight"


def _pod_group(synth: Synth) -> str:
    """The pods' security group: the one source the database admits."""
    memory = synth.template("-MemoryService")
    (rule,) = [
        r["Properties"]
        for r in resources(memory, "AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"]["FromPort"] == synth.config.database.port
    ]
    logical_id: str = rule["SourceSecurityGroupId"]["Fn::GetAtt"][0]
    return logical_id


def test_pods_are_non_root_read_only_without_capabilities_or_api_token(eks: Synth) -> None:
    for name, spec in pod_specs(eks).items():
        assert spec["securityContext"]["runAsUser"] == 1000
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert spec["automountServiceAccountToken"] is False
        assert spec["nodeSelector"]["kubernetes.io/arch"] == "arm64"
        assert "hostNetwork" not in spec
        assert "hostPID" not in spec
        containers = [*spec["initContainers"], *spec["containers"]]
        assert [c["name"] for c in containers] == ["fetch-secrets", "install-extension", "hindsight"]
        for c in containers:
            ctx = c["securityContext"]
            assert (ctx["runAsUser"], ctx["runAsGroup"], ctx["runAsNonRoot"]) == (1000, 1000, True), (name, c["name"])
            assert ctx["readOnlyRootFilesystem"] is True
            assert ctx["allowPrivilegeEscalation"] is False
            assert ctx["privileged"] is False
            assert ctx["capabilities"] == {"drop": ["ALL"]}
            assert c["resources"]["limits"]
        main = spec["containers"][0]
        mounts = {m["mountPath"]: m.get("readOnly", False) for m in main["volumeMounts"]}
        assert mounts == {"/opt/hindsight-ext": True, "/tmp": False, "/run/hindsight-secrets": True}
        secrets_volume = next(v for v in spec["volumes"] if v["name"] == "secrets")
        assert secrets_volume["emptyDir"]["medium"] == "Memory"  # never on the node's disk


def test_pods_run_the_extension_as_the_tasks_do(eks: Synth) -> None:
    for name, spec in pod_specs(eks).items():
        main = spec["containers"][0]
        env = {e["name"]: e.get("value") for e in main["env"]}
        assert env["PYTHONPATH"] == "/opt/hindsight-ext"
        assert {k: env.get(k) for k in SERVER_REQUIRED_ENV} == dict(SERVER_REQUIRED_ENV), name
        assert env["HINDSIGHT_API_ENABLE_DOCUMENT_IMPORT_API"] == "false"
        install = spec["initContainers"][1]
        install_env = {e["name"] for e in install["env"]}
        assert {"EXT_BUCKET", "EXT_KEY", "EXT_SHA256"} <= install_env
        assert "extension digest mismatch" in install["command"][-1]
        assert {m["mountPath"] for m in install["volumeMounts"]} >= {"/opt/hindsight-ext"}


def test_secrets_are_read_by_the_pods_role_never_in_plain_environment(eks: Synth) -> None:
    secret_names = {"DB_USERNAME", "DB_PASSWORD", "HINDSIGHT_API_TENANT_OPERATOR_KEY", "DB_CA_BUNDLE"}
    for spec in pod_specs(eks).values():
        main = spec["containers"][0]
        env_names = {e["name"] for e in main["env"]}
        assert not env_names & (secret_names | {"HINDSIGHT_API_DATABASE_URL", "HINDSIGHT_API_TENANT_JWT_STATIC_JWKS"})
        assert not any("valueFrom" in e and "secretKeyRef" in e["valueFrom"] for e in main["env"])
        fetch = spec["initContainers"][0]
        where = {e["name"]: e["value"] for e in fetch["env"]}
        assert where["SECRET_FIELD_DB_PASSWORD"] == "password"
        assert "SECRET_ARN_HINDSIGHT_API_TENANT_OPERATOR_KEY" in where
        assert "PARAMETER_NAME_DB_CA_BUNDLE" in where
        assert "PARAMETER_NAME_HINDSIGHT_API_TENANT_JWT_STATIC_JWKS" in where
        command = main["command"][-1]
        assert "for f in /run/hindsight-secrets/*" in command
        assert "sslmode=verify-full&sslrootcert=/tmp/rds-ca.pem" in command
        assert "set -x" not in command
        assert "echo" not in command
        assert "print('read', name)" in fetch["command"][-1]  # names only, never values


def test_sizes_probes_scaling_and_stable_worker_ids_follow_the_ecs_settings(eks: Synth) -> None:
    h = eks.config.hindsight
    objects = objects_by_kind(eks)
    for name, spec in pod_specs(eks).items():
        main = spec["containers"][0]
        assert (
            main["resources"]["requests"]
            == main["resources"]["limits"]
            == {
                "cpu": f"{h.cpu * 1000 // 1024}m",
                "memory": f"{h.memory_mib}Mi",
            }
        )
        assert main["livenessProbe"]["httpGet"]["path"] == "/health/live"
        assert main["startupProbe"]["periodSeconds"] * main["startupProbe"]["failureThreshold"] >= 180
        ready = main["readinessProbe"]["httpGet"]["path"]
        assert ready == ("/health" if name == API_NAME else "/health/live")
    hpa = objects[("HorizontalPodAutoscaler", API_NAME)]["spec"]
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (h.api_min_count, h.api_max_count)
    assert hpa["metrics"][0]["resource"]["target"]["averageUtilization"] == h.cpu_target_percent
    deployment = objects[("Deployment", API_NAME)]["spec"]
    assert deployment["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": 1}
    workers = objects[("StatefulSet", WORKER_NAME)]["spec"]
    assert workers["replicas"] == h.worker_count == 2
    worker_env = {e["name"]: e for e in workers["template"]["spec"]["containers"][0]["env"]}
    assert worker_env["HINDSIGHT_API_WORKER_ID"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert worker_env["HINDSIGHT_API_WORKER_ENABLED"]["value"] == "true"
    for name in (API_NAME, WORKER_NAME):
        assert objects[("PodDisruptionBudget", name)]["spec"]["maxUnavailable"] == 1


def test_service_accounts_carry_irsa_roles_only_their_subject_may_assume(eks: Synth) -> None:
    objects = objects_by_kind(eks)
    for account in ("hindsight", "hindsight-maintenance"):
        annotations = objects[("ServiceAccount", account)]["metadata"]["annotations"]
        role_id = _role_of(eks, f"system:serviceaccount:hindsight:{account}")
        assert annotations == {"eks.amazonaws.com/role-arn": get_att(role_id, "Arn")}
    roles = {
        k: r
        for k, r in resources(eks.template("-MemoryService"), "AWS::IAM::Role").items()
        if k.startswith(("MemoryEksWorkloadRole", "MemoryEksMaintenanceRole"))
    }
    assert len(roles) == 2
    subjects = set()
    for role in roles.values():
        (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
        conditions = statement["Condition"]["StringEquals"]
        assert conditions[f"{OIDC_PROVIDER}:aud"] == "sts.amazonaws.com"
        subjects.add(conditions[f"{OIDC_PROVIDER}:sub"])
    assert subjects == {
        "system:serviceaccount:hindsight:hindsight",
        "system:serviceaccount:hindsight:hindsight-maintenance",
    }


def _grants(template: dict[str, Any], role_prefixes: tuple[str, ...]) -> set[tuple[str, str]]:
    """(action, resource) of every policy statement attached to roles whose logical id starts with a prefix."""
    out: set[tuple[str, str]] = set()
    for policy in resources(template, "AWS::IAM::Policy").values():
        roles = json.dumps(policy["Properties"]["Roles"])
        if not any(f'"{p}' in roles for p in role_prefixes):
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            targets = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            out |= {(a, json.dumps(r, sort_keys=True)) for a in actions for r in targets}
    return out


def test_the_pods_role_may_do_exactly_what_the_api_tasks_roles_may(eks: Synth, ecs_twin: Synth) -> None:
    ecs = _grants(ecs_twin.template("-MemoryService"), ("MemoryApiTaskTaskRole", "MemoryApiTaskExecutionRole"))
    # Pulling the image and shipping logs are the nodes' on EKS (their role, their log agent).
    ecs = {(a, r) for a, r in ecs if not a.startswith(("ecr:", "logs:"))}
    pods = _grants(eks.template("-MemoryService"), ("MemoryEksWorkloadRole",))
    assert pods == ecs
    assert any(a == "bedrock:InvokeModel" for a, _ in pods)
    assert any(a == "secretsmanager:GetSecretValue" for a, _ in pods)


def test_the_maintenance_role_may_do_exactly_what_the_maintenance_task_may(eks: Synth, ecs_twin: Synth) -> None:
    ecs = _grants(
        ecs_twin.template("-MemoryService"), ("MemoryMaintenanceTaskTaskRole", "MemoryMaintenanceTaskExecutionRole")
    )
    ecs = {(a, r) for a, r in ecs if not a.startswith(("ecr:", "logs:"))}
    assert _grants(eks.template("-MemoryService"), ("MemoryEksMaintenanceRole",)) == ecs


def test_the_api_deployment_leaves_its_replicas_to_the_autoscaler(eks: Synth) -> None:
    objects = objects_by_kind(eks)
    assert "replicas" not in objects[("Deployment", API_NAME)]["spec"]  # an apply would reset the HPA's scale
    hpa = objects[("HorizontalPodAutoscaler", API_NAME)]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": API_NAME}
    assert hpa["minReplicas"] == eks.config.hindsight.api_min_count

"""Hindsight on the customer's EKS cluster (``hindsight.platform=eks``): the one EKS variant, synthesized once for
this module, checked as the ECS tasks are (posture, secrets, IAM, cdk-nag) and its manifests validated against the
Kubernetes schemas of every supported version (offline: kubernetes-validate ships them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from hindsight_isolation.settings import SERVER_REQUIRED_ENV
from infra.config import ConfigError, load_config_from_cdk_json
from infra.config.eks import SUPPORTED_KUBERNETES_VERSIONS
from infra.constructs.eks_manifests import API_NAME, RESTARTED_AT_ANNOTATION, RESTARTER_GROUP, WORKER_NAME
from infra.constructs.eks_preflight import cni_json_path, cni_pattern, cni_settings
from tests.infra.conftest import Synth, resources, synthesize
from tests.infra.eks_variant import CLUSTER_SECURITY_GROUP, EKS_VARIANT, OIDC_PROVIDER

#: Kinds of the controllers the cluster must run (a prerequisite); Kubernetes' schemas do not hold them.
CONTROLLER_KINDS = {"SecurityGroupPolicy", "TargetGroupBinding"}


@pytest.fixture(scope="module")
def eks(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(tmp_path_factory.mktemp("cdk-eks"), EKS_VARIANT)


@pytest.fixture(scope="module")
def ecs_twin(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The same deployment on ECS (no nag packs: only its roles are compared)."""
    overrides = {k: v for k, v in EKS_VARIANT.items() if not k.startswith("eks.") and k != "hindsight.platform"}
    return synthesize(tmp_path_factory.mktemp("cdk-eks-twin"), overrides, nag=False)


def ref(logical_id: str) -> str:
    """How :func:`_manifests` writes ``{"Ref": logical_id}``."""
    return f"<Ref:{logical_id}>"


def get_att(logical_id: str, attribute: str) -> str:
    """How :func:`_manifests` writes ``{"Fn::GetAtt": [logical_id, attribute]}``."""
    return f"<GetAtt:{logical_id}.{attribute}>"


def _render(value: Any) -> str:
    """A CloudFormation string as text, each reference kept as what it names (:func:`ref`, :func:`get_att`,
    ``<Fn::ImportValue:export>``...), so a manifest that names the wrong resource differs."""
    if isinstance(value, str | int):
        return str(value)
    if isinstance(value, list):
        return ",".join(_render(v) for v in value)
    ((function, argument),) = value.items()
    if function == "Fn::Join":
        separator, parts = argument
        return str(separator).join(_render(p) for p in parts)
    if function == "Ref":
        return ref(argument)
    if function == "Fn::GetAtt":
        return get_att(*argument)
    return f"<{function}:{_render(argument)}>"


def _manifests(synth: Synth) -> list[dict[str, Any]]:
    template = synth.template("-MemoryService")
    (resource,) = resources(template, "Custom::AWSCDK-EKS-KubernetesResource").values()
    manifests: list[dict[str, Any]] = json.loads(_render(resource["Properties"]["Manifest"]))
    return manifests


def _one(template: dict[str, Any], type_name: str, **properties: Any) -> str:
    """The logical id of the one resource of a type whose properties include these values."""
    (logical_id,) = [
        k
        for k, r in resources(template, type_name).items()
        if all(r["Properties"].get(name) == value for name, value in properties.items())
    ]
    return logical_id


def _role_of(synth: Synth, subject: str) -> str:
    """The logical id of the one role only this service account may assume (IRSA's token subject)."""
    (logical_id,) = [
        k
        for k, r in resources(synth.template("-MemoryService"), "AWS::IAM::Role").items()
        for statement in r["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        if statement.get("Condition", {}).get("StringEquals", {}).get(f"{OIDC_PROVIDER}:sub") == subject
    ]
    return logical_id


def _by_kind(synth: Synth) -> dict[tuple[str, str], dict[str, Any]]:
    return {(m["kind"], m["metadata"]["name"]): m for m in _manifests(synth)}


def _pod_specs(synth: Synth) -> dict[str, dict[str, Any]]:
    objects = _by_kind(synth)
    return {
        API_NAME: objects[("Deployment", API_NAME)]["spec"]["template"]["spec"],
        WORKER_NAME: objects[("StatefulSet", WORKER_NAME)]["spec"]["template"]["spec"],
    }


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
    manifests = _manifests(eks)
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
    objects = _by_kind(eks)
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


def target_group_ref(synth: Synth) -> str:
    """The stack's one target group (its Ref is its ARN)."""
    (logical_id,) = resources(synth.template("-MemoryService"), "AWS::ElasticLoadBalancingV2::TargetGroup")
    return ref(logical_id)


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
    for name, spec in _pod_specs(eks).items():
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
    for name, spec in _pod_specs(eks).items():
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
    for spec in _pod_specs(eks).values():
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
    objects = _by_kind(eks)
    for name, spec in _pod_specs(eks).items():
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
    objects = _by_kind(eks)
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


def test_database_and_load_balancer_admit_the_pods_group_and_the_kubelet_probes(eks: Synth) -> None:
    memory = eks.template("-MemoryService")
    ingress = [r["Properties"] for r in resources(memory, "AWS::EC2::SecurityGroupIngress").values()]
    db_port, hs_port = eks.config.database.port, eks.config.hindsight.port
    db = [r for r in ingress if r["FromPort"] == db_port]
    assert len(db) == 1
    assert "MemorySecurityGroup" in json.dumps(db[0]["SourceSecurityGroupId"])
    to_pods = [r for r in ingress if r["FromPort"] == hs_port]
    sources = sorted(json.dumps(r["SourceSecurityGroupId"]) for r in to_pods)
    assert len(sources) == 2
    assert any("LoadBalancerSecurityGroup" in s for s in sources)
    assert any(CLUSTER_SECURITY_GROUP in s for s in sources)
    # The cluster's API admits the stack's two functions (kubectl at deploy time, the restart after a rotation).
    to_api = [r for r in ingress if r.get("GroupId") == CLUSTER_SECURITY_GROUP]
    assert sorted((r["FromPort"], r["ToPort"]) for r in to_api) == [(443, 443), (443, 443)]
    assert sorted("Restart" in json.dumps(r["SourceSecurityGroupId"]) for r in to_api) == [False, True]
    for template in eks.templates.values():
        for rule in resources(template, "AWS::EC2::SecurityGroupIngress").values():
            assert rule["Properties"].get("CidrIp") != "0.0.0.0/0"


def test_the_agent_reaches_it_as_on_ecs_and_tls_is_the_same(eks: Synth) -> None:
    memory = eks.template("-MemoryService")
    (lb,) = resources(memory, "AWS::ElasticLoadBalancingV2::LoadBalancer").values()
    assert lb["Properties"]["Scheme"] == "internal"
    (listener,) = resources(memory, "AWS::ElasticLoadBalancingV2::Listener").values()
    assert listener["Properties"]["Protocol"] == "HTTPS"
    assert listener["Properties"]["Certificates"] == [{"CertificateArn": EKS_VARIANT["hindsight.certificate_arn"]}]
    (group,) = resources(memory, "AWS::ElasticLoadBalancingV2::TargetGroup").values()
    assert group["Properties"]["TargetType"] == "ip"
    assert group["Properties"]["HealthCheckPath"] == "/health"
    # The URL goes to the later stacks through the same SSM handoff as on ECS (url_in), not as an export.
    (published,) = [
        p["Properties"]
        for p in resources(memory, "AWS::SSM::Parameter").values()
        if p["Properties"].get("Name", "").endswith("/memory/url")
    ]
    assert published["Value"] == "https://memory.internal.example.com"
    agent = eks.template("-Agent")
    (read,) = [k for k, v in agent["Parameters"].items() if v["Default"] == published["Name"]]
    assert {"Ref": read} in [
        f["Properties"]["EnvironmentVariables"]["HINDSIGHT_API_URL"]
        for f in resources(agent, "AWS::BedrockAgentCore::Runtime").values()
    ]


def test_a_rotated_login_restarts_the_pods(eks: Synth) -> None:
    memory = eks.template("-MemoryService")
    functions = [
        k
        for k, f in resources(memory, "AWS::Lambda::Function").items()
        if "EKS_CLUSTER_NAME" in json.dumps(f["Properties"].get("Environment", {}))
    ]
    (restart_id,) = functions
    restart = memory["Resources"][restart_id]["Properties"]
    env = restart["Environment"]["Variables"]
    assert env["EKS_NAMESPACE"] == "hindsight"
    assert env["EKS_WORKLOADS"] == f"deployments/{API_NAME},statefulsets/{WORKER_NAME}"
    assert env["RESTART_ANNOTATION"] == RESTARTED_AT_ANNOTATION
    assert "VpcConfig" in restart  # the cluster's private API endpoint
    # Each rule filters on exactly what the pods read at start (the login secret, the mirrored keys) and targets the
    # restart function.
    fetch = {e["name"]: e["value"] for e in _pod_specs(eks)[API_NAME]["initContainers"][0]["env"]}
    login = fetch["SECRET_ARN_DB_PASSWORD"]
    assert login.startswith("<Fn::ImportValue:")
    assert "DatabaseLoginSecret" in login  # the application login, not the master
    rules = {r["Properties"]["Description"]: r["Properties"] for r in resources(memory, "AWS::Events::Rule").values()}
    assert set(rules) == {
        "Secrets Manager rotated the Hindsight database secret",
        "The mirrored JWKS of the token issuer changed",
    }
    rotated = rules["Secrets Manager rotated the Hindsight database secret"]["EventPattern"]
    assert rotated == {
        "source": ["aws.secretsmanager"],
        "detail-type": ["AWS Service Event via CloudTrail"],
        "detail": {
            "eventName": ["RotationSucceeded"],
            "additionalEventData": {"SecretId": [rotated["detail"]["additionalEventData"]["SecretId"][0]]},
        },
    }
    assert _render(rotated["detail"]["additionalEventData"]["SecretId"]) == login
    keys = rules["The mirrored JWKS of the token issuer changed"]["EventPattern"]
    assert keys == {
        "source": ["aws.ssm"],
        "detail-type": ["Parameter Store Change"],
        "detail": {"name": [fetch["PARAMETER_NAME_HINDSIGHT_API_TENANT_JWT_STATIC_JWKS"]], "operation": ["Update"]},
    }
    for rule in rules.values():
        assert rule["Targets"] == [
            {"Arn": {"Fn::GetAtt": [restart_id, "Arn"]}, "Id": "Target0", "RetryPolicy": {"MaximumRetryAttempts": 2}}
        ]
    (entry,) = resources(memory, "AWS::EKS::AccessEntry").values()
    assert entry["Properties"]["KubernetesGroups"] == [RESTARTER_GROUP]
    assert entry["Properties"]["PrincipalArn"] == {"Fn::GetAtt": [restart["Role"]["Fn::GetAtt"][0], "Arn"]}
    # What that group may do: read and patch the two workloads by name, nothing else.
    objects = _by_kind(eks)
    assert objects[("Role", RESTARTER_GROUP)]["rules"] == [
        {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": [API_NAME], "verbs": ["get", "patch"]},
        {
            "apiGroups": ["apps"],
            "resources": ["statefulsets"],
            "resourceNames": [WORKER_NAME],
            "verbs": ["get", "patch"],
        },
    ]
    binding = objects[("RoleBinding", RESTARTER_GROUP)]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": RESTARTER_GROUP}
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": RESTARTER_GROUP}]
    assert [k for k, _ in objects if k in {"ClusterRole", "ClusterRoleBinding"}] == []


def _kubectl_provider(synth: Synth) -> tuple[str, dict[str, Any]]:
    """CDK's kubectl provider: (its nested stack's logical id in the memory stack, its template)."""
    (stack_id,) = resources(synth.template("-MemoryService"), "AWS::CloudFormation::Stack")
    (name,) = [n for n in synth.templates if n.endswith(".nested") and "KubectlProvider" in n]
    return stack_id, synth.templates[name]


def test_the_kubectl_framework_runs_outside_the_vpc_and_only_its_handler_inside(eks: Synth) -> None:
    """The framework calls the Lambda API and CloudFormation's S3 URL, which an isolated VPC cannot reach
    (aws/aws-cdk#12608); the handler needs the cluster's private endpoint."""
    memory = eks.template("-MemoryService")
    stack_id, nested = _kubectl_provider(eks)
    functions = resources(nested, "AWS::Lambda::Function")
    (framework_id,) = [k for k in functions if k.startswith("ProviderframeworkonEvent")]
    (handler_id,) = [k for k in functions if k.startswith("Handler")]
    framework, handler = functions[framework_id]["Properties"], functions[handler_id]["Properties"]
    assert "VpcConfig" not in framework
    kubectl_group = _one(
        memory,
        "AWS::EC2::SecurityGroup",
        GroupDescription=("The kubectl function: HTTPS to the cluster API and endpoints"),
    )
    (parameter,) = [
        k
        for k, v in memory["Resources"][stack_id]["Properties"]["Parameters"].items()
        if v == {"Fn::GetAtt": [kubectl_group, "GroupId"]}
    ]
    assert handler["VpcConfig"] == {
        "SecurityGroupIds": [{"Ref": parameter}],
        "SubnetIds": EKS_VARIANT["network.subnet_ids"].split(","),
    }
    # The framework role may only write its logs and invoke the handler (no network-interface management).
    roles = resources(nested, "AWS::IAM::Role")
    framework_role = roles[framework["Role"]["Fn::GetAtt"][0]]["Properties"]
    assert framework_role["ManagedPolicyArns"] == [
        {
            "Fn::Join": [
                "",
                ["arn:", {"Ref": "AWS::Partition"}, ":iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"],
            ]
        }
    ]


def test_the_kubectl_functions_log_to_encrypted_groups_kept_like_ours(eks: Synth) -> None:
    memory = eks.template("-MemoryService")
    (restart_logs,) = [k for k in resources(memory, "AWS::Logs::LogGroup") if k.startswith("MemoryEksRestartPodsLogs")]
    ours = memory["Resources"][restart_logs]["Properties"]
    _, nested = _kubectl_provider(eks)
    groups = resources(nested, "AWS::Logs::LogGroup")
    functions = resources(nested, "AWS::Lambda::Function")
    assert len(functions) == 2
    for logical_id, function in functions.items():
        group_id = function["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
        group = groups[group_id]["Properties"]
        assert group["RetentionInDays"] == ours["RetentionInDays"] == 90, logical_id
        assert group["KmsKeyId"] == ours["KmsKeyId"], logical_id  # the logs key (imported from the network stack)
        assert groups[group_id]["DeletionPolicy"] == "Delete"


def test_kubectl_waits_for_its_path_to_the_cluster_and_the_manifests_for_the_preflight(eks: Synth) -> None:
    """The EKS endpoint (its kubeconfig) and the cluster API's rule for the kubectl function exist before any
    kubectl call and stay until the manifests are gone; the manifests wait for the CNI preflight."""
    memory = eks.template("-MemoryService")
    kubectl_group = _one(
        memory,
        "AWS::EC2::SecurityGroup",
        GroupDescription=("The kubectl function: HTTPS to the cluster API and endpoints"),
    )
    ingress = _one(
        memory,
        "AWS::EC2::SecurityGroupIngress",
        GroupId=CLUSTER_SECURITY_GROUP,
        SourceSecurityGroupId={"Fn::GetAtt": [kubectl_group, "GroupId"]},
    )
    endpoint = _one(memory, "AWS::EC2::VPCEndpoint", ServiceName="com.amazonaws.us-east-1.eks")
    (read,) = resources(memory, "Custom::AWSCDK-EKS-KubernetesObjectValue").values()
    (check_id,) = [
        k for k, p in resources(memory, "AWS::SSM::Parameter").items() if "AllowedPattern" in p["Properties"]
    ]
    (manifest,) = resources(memory, "Custom::AWSCDK-EKS-KubernetesResource").values()
    assert {ingress, endpoint} <= set(read["DependsOn"])
    assert {ingress, endpoint, check_id} <= set(manifest["DependsOn"])


def test_the_cni_preflight_reads_the_aws_node_daemonset_and_checks_it(eks: Synth) -> None:
    """What the stack cannot create: the preflight reads the VPC CNI's settings through the kubectl provider and an
    SSM parameter refuses a line that does not match (tests/infra/test_eks_preflight.py runs the read with kubectl)."""
    memory = eks.template("-MemoryService")
    stack_id, _ = _kubectl_provider(eks)
    ((read_id, read),) = resources(memory, "Custom::AWSCDK-EKS-KubernetesObjectValue").items()
    (manifest,) = resources(memory, "Custom::AWSCDK-EKS-KubernetesResource").values()
    settings = cni_settings(pod_identity=False)
    assert {k: v for k, v in read["Properties"].items() if k != "ServiceToken"} == {
        "ClusterName": "platform-prod",
        "RoleArn": EKS_VARIANT["eks.kubectl_role_arn"],
        "ObjectType": "daemonset",
        "ObjectName": "aws-node",
        "ObjectNamespace": "kube-system",
        "JsonPath": cni_json_path(settings),
        "TimeoutSeconds": 120,
    }
    assert read["Properties"]["ServiceToken"] == manifest["Properties"]["ServiceToken"]
    assert read["Properties"]["ServiceToken"]["Fn::GetAtt"][0] == stack_id
    (check,) = [p for p in resources(memory, "AWS::SSM::Parameter").values() if "AllowedPattern" in p["Properties"]]
    assert check["Properties"]["Value"] == {"Fn::GetAtt": [read_id, "Value"]}
    assert check["Properties"]["AllowedPattern"] == cni_pattern(settings)
    assert "Name" not in check["Properties"]  # a new requirement is a new parameter: no fixed name to collide


def test_the_api_deployment_leaves_its_replicas_to_the_autoscaler(eks: Synth) -> None:
    objects = _by_kind(eks)
    assert "replicas" not in objects[("Deployment", API_NAME)]["spec"]  # an apply would reset the HPA's scale
    hpa = objects[("HorizontalPodAutoscaler", API_NAME)]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": API_NAME}
    assert hpa["minReplicas"] == eks.config.hindsight.api_min_count


def test_the_pod_identity_variant_associates_the_roles(tmp_path: Path) -> None:
    overrides = {k: v for k, v in EKS_VARIANT.items() if k != "eks.oidc_provider_arn"}
    synth = synthesize(tmp_path, {**overrides, "eks.pod_identity": "true"}, nag=False)
    memory = synth.template("-MemoryService")
    associations = sorted(
        r["Properties"]["ServiceAccount"] for r in resources(memory, "AWS::EKS::PodIdentityAssociation").values()
    )
    assert associations == ["hindsight", "hindsight-maintenance"]
    accounts = [m for m in _manifests(synth) if m["kind"] == "ServiceAccount"]
    assert all("annotations" not in m["metadata"] for m in accounts)
    # Pods get credentials only if their association exists when they are created: the manifests wait for both.
    (manifest,) = resources(memory, "Custom::AWSCDK-EKS-KubernetesResource").values()
    assert set(resources(memory, "AWS::EKS::PodIdentityAssociation")) <= set(manifest["DependsOn"])
    # And the CNI must let pods with a security group reach the Pod Identity agent: standard mode.
    (check,) = [p for p in resources(memory, "AWS::SSM::Parameter").values() if "AllowedPattern" in p["Properties"]]
    assert check["Properties"]["AllowedPattern"] == cni_pattern(cni_settings(pod_identity=True))
    assert "POD_SECURITY_GROUP_ENFORCING_MODE=standard " in check["Properties"]["AllowedPattern"]


def test_every_client_gets_the_private_ca_as_on_ecs(tmp_path: Path) -> None:
    """``hindsight.ca_bundle`` reaches the agent and the functions that call Hindsight on EKS too (the same load
    balancer and certificate): MemoryService.ca_bundle serves both platforms."""
    from memory_adapter.constants import CA_BUNDLE_ENV
    from tests.unit.private_ca import make_private_ca

    ca = make_private_ca(tmp_path)
    synth = synthesize(tmp_path / "out", {**EKS_VARIANT, "hindsight.ca_bundle": str(ca.ca_file)}, nag=False)
    clients: dict[str, dict[str, Any]] = {}
    for stack, template in synth.templates.items():
        for logical_id, function in resources(template, "AWS::Lambda::Function").items():
            env = function["Properties"].get("Environment", {}).get("Variables", {})
            if "HINDSIGHT_API_URL" in env:
                clients[f"{stack}/{logical_id}"] = env
        for logical_id, runtime in resources(template, "AWS::BedrockAgentCore::Runtime").items():
            clients[f"{stack}/{logical_id}"] = runtime["Properties"]["EnvironmentVariables"]
    for part in ("Runtime", "RetainReplay"):  # the agent, the replay function (and the admin functions)
        assert any(part in name for name in clients), clients
    for name, env in clients.items():
        assert env.get(CA_BUNDLE_ENV) == ca.ca_pem.strip() + "\n", name

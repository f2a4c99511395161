"""Hindsight on the customer's EKS cluster: how the stack reaches it and operates it (security group rules, the
agent's path and TLS, restarts on a rotated login, the kubectl provider and the CNI preflight), and the pod identity
and private CA variants."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.constructs.eks_manifests import API_NAME, RESTARTED_AT_ANNOTATION, RESTARTER_GROUP, WORKER_NAME
from infra.constructs.eks_preflight import cni_json_path, cni_pattern, cni_settings
from tests.infra.conftest import Synth, resources, synthesize
from tests.infra.eks_template import manifests_of, objects_by_kind, pod_specs, render, synthesize_eks
from tests.infra.eks_variant import CLUSTER_SECURITY_GROUP, EKS_VARIANT


@pytest.fixture(scope="module")
def eks(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize_eks(tmp_path_factory)


def _one(template: dict[str, Any], type_name: str, **properties: Any) -> str:
    """The logical id of the one resource of a type whose properties include these values."""
    (logical_id,) = [
        k
        for k, r in resources(template, type_name).items()
        if all(r["Properties"].get(name) == value for name, value in properties.items())
    ]
    return logical_id


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
    fetch = {e["name"]: e["value"] for e in pod_specs(eks)[API_NAME]["initContainers"][0]["env"]}
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
    assert render(rotated["detail"]["additionalEventData"]["SecretId"]) == login
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
    objects = objects_by_kind(eks)
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


def test_the_pod_identity_variant_associates_the_roles(tmp_path: Path) -> None:
    overrides = {k: v for k, v in EKS_VARIANT.items() if k != "eks.oidc_provider_arn"}
    synth = synthesize(tmp_path, {**overrides, "eks.pod_identity": "true"}, nag=False)
    memory = synth.template("-MemoryService")
    associations = sorted(
        r["Properties"]["ServiceAccount"] for r in resources(memory, "AWS::EKS::PodIdentityAssociation").values()
    )
    assert associations == ["hindsight", "hindsight-maintenance"]
    accounts = [m for m in manifests_of(synth) if m["kind"] == "ServiceAccount"]
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

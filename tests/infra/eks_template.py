"""What the EKS tests (``test_eks.py``, ``test_eks_cluster.py``, ``test_tls_to_tasks.py``) share: how the one EKS
variant is synthesized (each module's ``eks`` fixture), and its Kubernetes manifests read back from the template, each
reference kept as what it names."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.constructs.eks_manifests import API_NAME, WORKER_NAME
from tests.infra.conftest import Synth, resources, synthesize
from tests.infra.eks_variant import EKS_VARIANT

#: Kinds of the controllers the cluster must run (a prerequisite); Kubernetes' schemas do not hold them.
CONTROLLER_KINDS = {"SecurityGroupPolicy", "TargetGroupBinding"}


def synthesize_eks(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The EKS variant with both cdk-nag packs: what each EKS test module's ``eks`` fixture holds."""
    return synthesize(tmp_path_factory.mktemp("cdk-eks"), EKS_VARIANT)


def ref(logical_id: str) -> str:
    """How :func:`manifests_of` writes ``{"Ref": logical_id}``."""
    return f"<Ref:{logical_id}>"


def get_att(logical_id: str, attribute: str) -> str:
    """How :func:`manifests_of` writes ``{"Fn::GetAtt": [logical_id, attribute]}``."""
    return f"<GetAtt:{logical_id}.{attribute}>"


def render(value: Any) -> str:
    """A CloudFormation string as text, each reference kept as what it names (:func:`ref`, :func:`get_att`,
    ``<Fn::ImportValue:export>``...), so a manifest that names the wrong resource differs."""
    if isinstance(value, str | int):
        return str(value)
    if isinstance(value, list):
        return ",".join(render(v) for v in value)
    ((function, argument),) = value.items()
    if function == "Fn::Join":
        separator, parts = argument
        return str(separator).join(render(p) for p in parts)
    if function == "Ref":
        return ref(argument)
    if function == "Fn::GetAtt":
        return get_att(*argument)
    return f"<{function}:{render(argument)}>"


def manifests_of(synth: Synth) -> list[dict[str, Any]]:
    template = synth.template("-MemoryService")
    (resource,) = resources(template, "Custom::AWSCDK-EKS-KubernetesResource").values()
    manifests: list[dict[str, Any]] = json.loads(render(resource["Properties"]["Manifest"]))
    return manifests


def objects_by_kind(synth: Synth) -> dict[tuple[str, str], dict[str, Any]]:
    return {(m["kind"], m["metadata"]["name"]): m for m in manifests_of(synth)}


def pod_specs(synth: Synth) -> dict[str, dict[str, Any]]:
    objects = objects_by_kind(synth)
    return {
        API_NAME: objects[("Deployment", API_NAME)]["spec"]["template"]["spec"],
        WORKER_NAME: objects[("StatefulSet", WORKER_NAME)]["spec"]["template"]["spec"],
    }


def target_group_ref(synth: Synth) -> str:
    """The stack's one target group (its Ref is its ARN)."""
    (logical_id,) = resources(synth.template("-MemoryService"), "AWS::ElasticLoadBalancingV2::TargetGroup")
    return ref(logical_id)

"""The ``eks`` section: the customer's EKS cluster Hindsight runs on with ``hindsight.platform=eks``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from infra.config.checks import require
from infra.config.hindsight import HindsightConfig, Platform
from infra.config.network import VpcMode

#: The Kubernetes minor versions the manifests are validated against (tests/infra/test_eks.py, kubernetes-validate)
#: and the kubectl layer (1.34, which supports its own minor version +/- 1) may talk to.
SUPPORTED_KUBERNETES_VERSIONS = ("1.33", "1.34", "1.35")


@dataclass(frozen=True)
class EksConfig:
    """The customer's EKS cluster Hindsight runs on with ``hindsight.platform=eks`` (the stack does not create it).

    ``kubectl_role_arn``: a role with cluster-admin access (an access entry with ``AmazonEKSClusterAdminPolicy``,
    or ``system:masters``) that CloudFormation's kubectl function assumes to apply the manifests. The pods' AWS
    role comes either from IRSA (``oidc_provider_arn``, the cluster's IAM OIDC provider) or from EKS Pod Identity
    (``pod_identity``). ``cluster_security_group_id`` is the security group EKS created for the cluster (its
    control plane and managed nodes): the kubectl and restart functions reach the API through it, and the pods'
    own group (security groups for pods) admits the kubelet's probes and reaches CoreDNS through it.
    """

    cluster_name: str | None
    kubernetes_version: str | None
    kubectl_role_arn: str | None
    oidc_provider_arn: str | None
    pod_identity: bool
    namespace: str
    cluster_security_group_id: str | None


_EKS_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
_IAM_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
_OIDC_PROVIDER_ARN = re.compile(
    r"^arn:aws[a-z-]*:iam::\d{12}:oidc-provider/oidc\.eks\.[a-z0-9-]+\.amazonaws\.com/id/[0-9A-F]{8,64}$"
)
_SECURITY_GROUP_ID = re.compile(r"^sg-[0-9a-f]{8,17}$")
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
#: Namespaces Hindsight must not share: Kubernetes' and EKS's own.
_RESERVED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease", "amazon-cloudwatch"})


def eks_problems(e: EksConfig, h: HindsightConfig, network_mode: VpcMode | None) -> list[str]:
    """The ``eks`` section: required (and checked) with ``hindsight.platform=eks``, unused otherwise."""
    errors: list[str] = []
    if h.platform is not Platform.EKS:
        given = [
            name
            for name in (
                "cluster_name",
                "kubernetes_version",
                "kubectl_role_arn",
                "oidc_provider_arn",
                "cluster_security_group_id",
            )
            if getattr(e, name) is not None
        ] + (["pod_identity"] if e.pod_identity else [])
        require(
            errors,
            not given,
            f"eks.{', eks.'.join(given)}: used only with hindsight.platform=eks; unset them or set the platform",
        )
        return errors
    require(
        errors,
        network_mode is not VpcMode.CREATE,
        "hindsight.platform=eks needs network.mode=import with the cluster's VPC (a created VPC holds no cluster)",
    )
    require(
        errors,
        e.cluster_name is not None and bool(_EKS_CLUSTER_NAME.match(e.cluster_name)),
        "eks.cluster_name must name your existing EKS cluster (required with hindsight.platform=eks)",
    )
    require(
        errors,
        e.kubernetes_version in SUPPORTED_KUBERNETES_VERSIONS,
        f"eks.kubernetes_version must be your cluster's version, one of {', '.join(SUPPORTED_KUBERNETES_VERSIONS)}"
        f" (got {e.kubernetes_version}): upgrade the cluster or run Hindsight on ECS",
    )
    require(
        errors,
        e.kubectl_role_arn is not None and bool(_IAM_ROLE_ARN.match(e.kubectl_role_arn)),
        "eks.kubectl_role_arn must be the ARN of an IAM role with cluster-admin access to the cluster (an access "
        "entry with AmazonEKSClusterAdminPolicy), which applies the manifests",
    )
    require(
        errors,
        (e.oidc_provider_arn is None) == e.pod_identity,
        "eks.oidc_provider_arn (IRSA) or eks.pod_identity=true (EKS Pod Identity): set exactly one, for the pods' "
        "AWS role",
    )
    require(
        errors,
        e.oidc_provider_arn is None or bool(_OIDC_PROVIDER_ARN.match(e.oidc_provider_arn)),
        "eks.oidc_provider_arn must be the cluster's IAM OIDC provider ARN "
        "(arn:aws:iam::<account>:oidc-provider/oidc.eks.<region>.amazonaws.com/id/<id>)",
    )
    require(
        errors,
        bool(_K8S_NAME.match(e.namespace)) and e.namespace not in _RESERVED_NAMESPACES,
        f"eks.namespace must be a namespace name of its own (lowercase, digits, -), not {e.namespace!r}",
    )
    require(
        errors,
        e.cluster_security_group_id is not None and bool(_SECURITY_GROUP_ID.match(e.cluster_security_group_id)),
        "eks.cluster_security_group_id must be the cluster security group EKS created (sg-...; aws eks "
        "describe-cluster: resourcesVpcConfig.clusterSecurityGroupId)",
    )
    return errors

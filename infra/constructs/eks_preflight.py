"""The deploy-time preflight of what the stack cannot create on the cluster (``hindsight.platform=eks``): the VPC
CNI's settings that security groups for pods need.

Pods with their own security group (the manifests' SecurityGroupPolicy) need the VPC CNI with ``ENABLE_POD_ENI=true``;
the kubelet's TCP probes of such pods need ``DISABLE_TCP_EARLY_DEMUX=true`` on its init container; with EKS Pod
Identity the pods reach the agent's link-local address only in ``POD_SECURITY_GROUP_ENFORCING_MODE=standard`` (in the
default ``strict`` mode they get no credentials: amazon-vpc-cni-k8s#2797). Without them the pods never start or never
become ready, and CloudFormation waits for nothing: the manifests apply fine.

So before the manifests, the kubectl function reads the settings off the ``aws-node`` DaemonSet (CDK's
``KubernetesObjectValue``, through the same kubectl provider), as one line (:func:`cni_json_path`), and an SSM
parameter stores that line with an ``AllowedPattern`` of the required values (:func:`cni_pattern`): SSM refuses a line
that does not match, the deploy stops at that parameter and its error shows the line read next to the one required.

The read happens when the check is created; its construct id carries the digest of everything it reads and requires
(the cluster, the kubectl role, the JSONPath, the pattern) and of the pods' manifests, so a changed requirement
(``eks.pod_identity``) checks again, and so does every deploy that changes the pods (new image, settings, secrets,
extension: each starts new pods, which a CNI changed since the last check would leave without credentials or
readiness); a failed check (which the rollback deletes) runs again at the next deploy. A deploy that leaves the pods
as they are does not read again: running pods keep what they started with. Neither resource is ever updated: the
rollback of a failed Update would read again and fail the same way (UPDATE_ROLLBACK_FAILED).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from aws_cdk import Duration, Token
from aws_cdk import aws_eks as eks
from aws_cdk import aws_ssm as ssm
from constructs import Construct

#: Where the VPC CNI runs (the EKS add-on and the self-managed manifests alike).
CNI_NAMESPACE = "kube-system"
CNI_DAEMONSET = "aws-node"
CNI_CONTAINER = "aws-node"
CNI_INIT_CONTAINER = "aws-vpc-cni-init"
#: How long the kubectl function retries reading the DaemonSet (it is missing with another CNI).
READ_TIMEOUT = Duration.minutes(2)


@dataclass(frozen=True)
class CniSetting:
    """One variable of the CNI's DaemonSet and the values it may have (a regular expression)."""

    variable: str
    allowed: str
    init: bool = False

    @property
    def json_path(self) -> str:
        """The variable's value in the DaemonSet (empty when unset, which is the CNI's default)."""
        containers, name = ("initContainers", CNI_INIT_CONTAINER) if self.init else ("containers", CNI_CONTAINER)
        return f'.spec.template.spec.{containers}[?(@.name=="{name}")].env[?(@.name=="{self.variable}")].value'


def cni_settings(*, pod_identity: bool) -> list[CniSetting]:
    """What the Hindsight pods need of the VPC CNI; the enforcing mode matters only to EKS Pod Identity (IRSA's
    token exchange goes through STS, which strict mode reaches like any VPC address)."""
    return [
        CniSetting("ENABLE_POD_ENI", "true"),
        CniSetting("POD_SECURITY_GROUP_ENFORCING_MODE", "standard" if pod_identity else "[a-z]*"),
        CniSetting("DISABLE_TCP_EARLY_DEMUX", "true", init=True),
    ]


def cni_template(settings: list[CniSetting]) -> str:
    """The kubectl JSONPath template of the line read: ``aws-node NAME=value ...`` (never empty while the
    DaemonSet exists, so an unset variable reads as ``NAME=``)."""
    return "{.metadata.name}" + "".join(f" {s.variable}={{{s.json_path}}}" for s in settings)


def cni_json_path(settings: list[CniSetting]) -> str:
    """:func:`cni_template` as ``KubernetesObjectValue``'s ``json_path`` (its handler wraps it in one pair of
    braces)."""
    return cni_template(settings)[1:-1]


def cni_pattern(settings: list[CniSetting]) -> str:
    """The line the cluster must give, as the SSM parameter's ``AllowedPattern``."""
    return f"^{CNI_DAEMONSET}" + "".join(f" {s.variable}={s.allowed}" for s in settings) + "$"


class CniPreflight(Construct):
    """Reads the CNI settings (``value``: a ``KubernetesObjectValue``) and checks them (``check``: the SSM parameter
    whose pattern they must match); the manifests depend on ``check``. ``pods``: the manifests, resolved (a change
    checks again)."""

    def __init__(
        self, scope: Construct, construct_id: str, *, cluster: eks.ICluster, pod_identity: bool, pods: str
    ) -> None:
        super().__init__(scope, construct_id)
        settings = cni_settings(pod_identity=pod_identity)
        pattern = cni_pattern(settings)
        assert cluster.kubectl_role is not None
        reads = [cluster.cluster_name, cluster.kubectl_role.role_arn, cni_json_path(settings), pattern, pods]
        assert not any(Token.is_unresolved(r) for r in reads)  # the imported cluster's attributes are settings
        digest = hashlib.sha256("\n".join(reads).encode()).hexdigest()[:8]
        self.value = eks.KubernetesObjectValue(
            self,
            f"Read{digest}",
            cluster=cluster,
            object_type="daemonset",
            object_name=CNI_DAEMONSET,
            object_namespace=CNI_NAMESPACE,
            json_path=cni_json_path(settings),
            timeout=READ_TIMEOUT,
        )
        self.check = ssm.StringParameter(
            self,
            f"Check{digest}",
            string_value=self.value.value,
            allowed_pattern=pattern,
            description="The VPC CNI settings security groups for pods need (docs/eks.md 'What the cluster must "
            "already have'); a deploy that stops here names the values read and the values required",
        )

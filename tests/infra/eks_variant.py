"""The one EKS variant (``hindsight.platform=eks``) the EKS tests synthesize: an imported VPC holding the customer's
cluster, IRSA, HTTPS with a private name."""

from __future__ import annotations

from tests.infra.conftest import IMPORTED_NETWORK

CLUSTER_SECURITY_GROUP = "sg-0c1a2b3c4d5e6f708"
OIDC_PROVIDER = "oidc.eks.us-east-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF"

EKS_VARIANT: dict[str, str] = {
    **IMPORTED_NETWORK,
    "hindsight.platform": "eks",
    "hindsight.certificate_arn": "arn:aws:acm:us-east-1:111122223333:certificate/abcd-1234",
    "hindsight.domain_name": "memory.internal.example.com",
    "hindsight.worker_count": "2",
    "eks.cluster_name": "platform-prod",
    "eks.kubernetes_version": "1.34",
    "eks.kubectl_role_arn": "arn:aws:iam::111122223333:role/platform-prod-cdk-kubectl",
    "eks.oidc_provider_arn": f"arn:aws:iam::111122223333:oidc-provider/{OIDC_PROVIDER}",
    "eks.cluster_security_group_id": CLUSTER_SECURITY_GROUP,
}

"""Restart Hindsight's pods on EKS after something they read once at start changed (``kubectl rollout restart``).

The EKS counterpart of ``redeploy_on_rotation``: after Secrets Manager rotated the login, or the key mirror wrote
new keys, it stamps the API Deployment's and the worker StatefulSet's pod template with the time, so Kubernetes
replaces their pods one at a time (the Deployment keeps every old pod until its replacement is ready; with
alternating-users rotation the old login still works meanwhile). It runs in the VPC and calls the cluster's private
API endpoint as its own IAM role, which an EKS access entry maps to a group that may patch exactly these two
workloads (the manifests' Role).
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.signers import RequestSigner

from memory_adapter.settings_fields import DeclaredSettings, setting

#: How long the presigned token is valid; EKS accepts at most 15 minutes.
TOKEN_SECONDS = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class RestartSettings(DeclaredSettings):
    """Which workloads of which cluster to restart, and the pod template annotation that does it."""

    cluster_name: str = setting("EKS_CLUSTER_NAME", required="the EKS cluster")
    namespace: str = setting("EKS_NAMESPACE", required="the workloads' namespace")
    workloads: tuple[str, ...] = setting("EKS_WORKLOADS", kind=tuple, required="<kind>/<name> of each workload")
    annotation: str = setting("RESTART_ANNOTATION", required="the pod template annotation stamped with the time")


def cluster_token(cluster_name: str, region: str, session: Any = None) -> str:
    """The bearer token ``aws eks get-token`` makes: a presigned STS GetCallerIdentity for this cluster."""
    session = session or boto3.session.Session()
    sts = session.client("sts", region_name=region)
    signer = RequestSigner(
        sts.meta.service_model.service_id, region, "sts", "v4", session.get_credentials(), session.events
    )
    url = signer.generate_presigned_url(
        {
            "method": "GET",
            "url": f"https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15",
            "body": {},
            "headers": {"x-k8s-aws-id": cluster_name},
            "context": {},
        },
        region_name=region,
        expires_in=TOKEN_SECONDS,
        operation_name="",
    )
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def restart_patch(annotation: str, now: datetime) -> bytes:
    """The strategic-merge patch that makes the workload replace its pods."""
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return json.dumps({"spec": {"template": {"metadata": {"annotations": {annotation: stamp}}}}}).encode()


def handler(event: Any, context: Any) -> dict[str, Any]:
    """EventBridge target: the rotation (or key change) event."""
    del context
    settings = RestartSettings.from_env(os.environ)
    cluster_name, region = settings.cluster_name, os.environ["AWS_REGION"]  # Lambda's own variable
    cluster = boto3.client("eks").describe_cluster(name=cluster_name)["cluster"]
    with tempfile.NamedTemporaryFile("wb", suffix=".pem", delete=False) as ca:
        ca.write(base64.b64decode(cluster["certificateAuthority"]["data"]))
    tls = ssl.create_default_context(cafile=ca.name)
    token = cluster_token(cluster_name, region)
    body = restart_patch(settings.annotation, datetime.now(UTC))
    namespace, workloads = settings.namespace, settings.workloads
    for workload in workloads:
        kind, name = workload.split("/")
        request = urllib.request.Request(  # noqa: S310 (the cluster's https endpoint from describe-cluster)
            f"{cluster['endpoint']}/apis/apps/v1/namespaces/{namespace}/{kind}/{name}",
            data=body,
            method="PATCH",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/strategic-merge-patch+json"},
        )
        with urllib.request.urlopen(request, context=tls, timeout=10) as response:  # noqa: S310
            response.read()
    print(
        json.dumps(
            {
                "message": "pods restarted after rotation",
                "count": len(workloads),
                "event": event.get("detail-type") if isinstance(event, dict) else None,
            }
        )
    )
    return {"restarted": len(workloads)}

"""The EKS pods' restart function's two pure parts: the cluster token and the restart patch."""

from __future__ import annotations

import base64
import json
import urllib.parse
from datetime import UTC, datetime

import boto3
import pytest

from infra.functions.eks_restart.index import cluster_token, restart_patch


def test_the_token_is_a_presigned_caller_identity_bound_to_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret")
    token = cluster_token("platform-prod", "eu-west-1", session=boto3.session.Session())
    prefix, _, encoded = token.partition(".")
    assert prefix == "k8s-aws-v1"
    assert "=" not in encoded  # EKS wants the padding stripped
    url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    parsed = urllib.parse.urlparse(url)
    query = urllib.parse.parse_qs(parsed.query)
    assert parsed.netloc == "sts.eu-west-1.amazonaws.com"
    assert query["Action"] == ["GetCallerIdentity"]
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"][0].split(";")  # the signature covers the cluster name
    assert int(query["X-Amz-Expires"][0]) <= 900


def test_the_patch_stamps_only_the_pod_templates_annotation() -> None:
    body = json.loads(restart_patch("hindsight.memory/restarted-at", datetime(2026, 12, 1, 22, 40, tzinfo=UTC)))
    assert body == {
        "spec": {"template": {"metadata": {"annotations": {"hindsight.memory/restarted-at": "2026-12-01T22:40:00Z"}}}}
    }

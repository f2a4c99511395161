"""The stacks' small Lambda handlers, against fakes of the issuer and of SSM/ECS."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.functions.jwks_mirror import index as mirror
from infra.functions.redeploy_on_rotation import index as redeploy

ISSUER = "https://issuer.example.com/pool"
DISCOVERY = ISSUER + "/.well-known/openid-configuration"
KEY = {"kty": "RSA", "kid": "k1", "n": "abc", "e": "AQAB", "use": "sig", "alg": "RS256"}


def _fetch(documents: dict[str, Any]):
    return lambda url: documents[url]


class FakeSsm:
    def __init__(self, value: str) -> None:
        self.value = value
        self.puts: list[dict[str, Any]] = []

    def get_parameter(self, Name: str) -> dict[str, Any]:
        return {"Parameter": {"Value": self.value}}

    def put_parameter(self, **kwargs: Any) -> None:
        self.puts.append(kwargs)
        self.value = kwargs["Value"]


def test_mirror_stores_public_keys_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARAMETER_NAME", "/jwks")
    monkeypatch.setenv("DISCOVERY_URL", DISCOVERY)
    docs = {DISCOVERY: {"issuer": ISSUER, "jwks_uri": ISSUER + "/jwks"}, ISSUER + "/jwks": {"keys": [KEY]}}
    ssm = FakeSsm('{"keys":[]}')
    assert mirror.handler({}, None, ssm=ssm, fetch=_fetch(docs)) == {"changed": True}
    assert json.loads(ssm.value) == {"keys": [KEY]}
    assert ssm.puts[0]["Tier"] == "Advanced"
    assert mirror.handler({}, None, ssm=ssm, fetch=_fetch(docs)) == {"changed": False}


@pytest.mark.parametrize(
    ("discovery", "jwks", "reason"),
    [
        ({"issuer": "https://evil.example.com", "jwks_uri": ISSUER + "/jwks"}, {"keys": [KEY]}, "issuer"),
        ({"issuer": ISSUER, "jwks_uri": ISSUER + "/jwks"}, {"keys": [{**KEY, "d": "secret"}]}, "private"),
        ({"issuer": ISSUER, "jwks_uri": ISSUER + "/jwks"}, {"keys": [{"kty": "oct", "k": "x"}]}, "asymmetric"),
        ({"issuer": ISSUER, "jwks_uri": ISSUER + "/jwks"}, {"keys": []}, "no keys"),
    ],
)
def test_mirror_refuses_unusable_documents(discovery: Any, jwks: Any, reason: str) -> None:
    docs = {DISCOVERY: discovery, ISSUER + "/jwks": jwks}
    with pytest.raises(mirror.MirrorError, match=reason):
        mirror.public_jwks(DISCOVERY, fetch=_fetch(docs))


def test_mirror_refuses_plain_http() -> None:
    with pytest.raises(mirror.MirrorError, match="non-https"):
        mirror.fetch_json("http://issuer.example.com/.well-known/openid-configuration")


def test_redeploy_forces_new_deployments(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    class FakeEcs:
        def update_service(self, **kwargs: Any) -> None:
            calls.append(kwargs)

    monkeypatch.setenv("CLUSTER_ARN", "arn:cluster")
    monkeypatch.setenv("SERVICE_ARNS", "arn:a,arn:b")
    assert redeploy.handler({"detail-type": "x"}, None, ecs=FakeEcs()) == {"redeployed": 2}
    assert [c["service"] for c in calls] == ["arn:a", "arn:b"]
    assert all(c["forceNewDeployment"] for c in calls)

"""Fetch the issuer's JWKS (through its OIDC discovery document) and store it in an SSM parameter.

Runs outside the VPC (it must reach the IdP on the internet) on every deploy and on a schedule. The agent and the
Hindsight isolation extension read the parameter through the SSM VPC endpoint. Only public key material is stored:
a key carrying private members is refused, so a misconfigured IdP cannot leak a private key into SSM.
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

import boto3

DISCOVERY_SUFFIX = "/.well-known/openid-configuration"
MAX_DOCUMENT_BYTES = 64 * 1024
MAX_PARAMETER_BYTES = 8 * 1024  # SSM advanced tier
PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "k", "oth"})
ALLOWED_KTY = frozenset({"RSA", "EC", "OKP"})


class MirrorError(Exception):
    """The issuer's documents are unusable; the previous keys stay in place."""


def fetch_json(url: str, *, timeout: float = 10.0) -> Any:
    """GET an https URL and parse its JSON body (bounded size)."""
    if not url.startswith("https://"):
        raise MirrorError(f"refusing a non-https URL: {url}")
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310 (https checked above)
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (https checked above)
        body = response.read(MAX_DOCUMENT_BYTES + 1)
    if len(body) > MAX_DOCUMENT_BYTES:
        raise MirrorError(f"document larger than {MAX_DOCUMENT_BYTES} bytes: {url}")
    return json.loads(body)


def public_jwks(discovery_url: str, *, fetch: Any = fetch_json) -> str:
    """The issuer's JWKS as compact JSON, checked to hold only public signing keys."""
    if not discovery_url.endswith(DISCOVERY_SUFFIX):
        raise MirrorError("discovery URL must end in " + DISCOVERY_SUFFIX)
    discovery = fetch(discovery_url)
    expected_issuer = discovery_url[: -len(DISCOVERY_SUFFIX)]
    if not isinstance(discovery, dict) or discovery.get("issuer") != expected_issuer:
        raise MirrorError("discovery document issuer does not match the discovery URL")
    jwks_uri = discovery.get("jwks_uri")
    if not isinstance(jwks_uri, str):
        raise MirrorError("discovery document has no jwks_uri")
    jwks = fetch(jwks_uri)
    keys = jwks.get("keys") if isinstance(jwks, dict) else None
    if not isinstance(keys, list) or not keys:
        raise MirrorError("JWKS has no keys")
    public: list[dict[str, Any]] = []
    for key in keys:
        if not isinstance(key, dict) or key.get("kty") not in ALLOWED_KTY:
            raise MirrorError("JWKS holds a key that is not an asymmetric public key")
        if PRIVATE_MEMBERS & key.keys():
            raise MirrorError("JWKS holds private key material; refusing to store it")
        if key.get("use", "sig") == "sig":
            public.append(key)
    document = json.dumps({"keys": public}, separators=(",", ":"), sort_keys=True)
    if len(document.encode()) > MAX_PARAMETER_BYTES:
        raise MirrorError(f"JWKS larger than {MAX_PARAMETER_BYTES} bytes")
    return document


def handler(event: Any, context: Any, *, ssm: Any = None, fetch: Any = fetch_json) -> dict[str, Any]:
    """Lambda entry point (schedule or deploy trigger): refresh the parameter when the keys changed."""
    del event, context
    client = ssm or boto3.client("ssm")
    name = os.environ["PARAMETER_NAME"]
    document = public_jwks(os.environ["DISCOVERY_URL"], fetch=fetch)
    current = client.get_parameter(Name=name)["Parameter"]["Value"]
    changed = current != document
    if changed:
        client.put_parameter(Name=name, Value=document, Overwrite=True, Tier="Advanced", Type="String")
    print(json.dumps({"message": "jwks mirrored", "parameter": name, "changed": changed}))
    return {"changed": changed}

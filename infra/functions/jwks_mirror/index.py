"""Mirror the issuer's public JWKS (found through its OIDC discovery document) into an SSM parameter it owns.

Runs outside the VPC (it must reach the IdP on the internet). Two callers:

- CloudFormation, as the custom resource that owns the parameter: on create and update it fetches the keys and
  writes the parameter (the deploy fails if the issuer is unusable, so a deploy never leaves it empty), and returns
  the discovery document's ``issuer`` for the stacks to hand to the agent and Hindsight (some issuers' ``issuer``
  ends with a slash, so it cannot be derived from the URL); on delete it removes the parameter unless another
  resource of the stack holds it (``owned_parameter.release``). CloudFormation never holds the value, so a stack
  update cannot reset it (aws/aws-cdk#25949). A rollback fetches nothing: it puts back the keys last mirrored for
  the old discovery URL from the parameter's own history (``infra.functions.owned_parameter``), with the issuer
  they came with.
- The schedule: it rewrites the parameter only when the keys changed.

Only public key material is stored: a key carrying private members is refused, so a misconfigured IdP cannot leak a
private key into SSM.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3

from infra.functions import cfn_response, owned_parameter
from memory_adapter.settings_fields import DeclaredSettings, setting

DISCOVERY_SUFFIX = "/.well-known/openid-configuration"  # memory_adapter.identity.settings's (no layer here)
MAX_DOCUMENT_BYTES = 64 * 1024
MAX_PARAMETER_BYTES = 8 * 1024  # SSM advanced tier
PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "k", "oth"})
ALLOWED_KTY = frozenset({"RSA", "EC", "OKP"})


class MirrorError(Exception):
    """The issuer's documents are unusable; the previous keys stay in place."""


@dataclass(frozen=True)
class Mirrored:
    """What the issuer published: its ``issuer`` (verbatim) and its public signing keys as compact JSON."""

    issuer: str
    jwks: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MirrorSettings(DeclaredSettings):
    """What the scheduled refresh mirrors: the issuer's discovery document, into which SSM parameter."""

    discovery_url: str = setting("DISCOVERY_URL", required="the issuer's OIDC discovery document")
    parameter_name: str = setting("PARAMETER_NAME", required="the SSM parameter holding the mirrored keys")


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


def mirror_issuer(discovery_url: str, *, fetch: Callable[[str], Any] = fetch_json) -> Mirrored:
    """The issuer's ``issuer`` and its JWKS, checked to hold only public signing keys.

    OpenID Connect Discovery builds the discovery URL from the issuer with any trailing slash removed, so the
    document's ``issuer`` must equal the URL's prefix up to a trailing slash; it is returned exactly as published,
    which is what tokens carry in ``iss``.
    """
    if not discovery_url.endswith(DISCOVERY_SUFFIX):
        raise MirrorError("discovery URL must end in " + DISCOVERY_SUFFIX)
    discovery = fetch(discovery_url)
    issuer = discovery.get("issuer") if isinstance(discovery, dict) else None
    if not isinstance(issuer, str) or issuer.rstrip("/") != discovery_url[: -len(DISCOVERY_SUFFIX)]:
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
    return Mirrored(issuer=issuer, jwks=document)


def refresh(
    ssm: Any, name: str, discovery_url: str, *, fetch: Callable[[str], Any] = fetch_json
) -> tuple[Mirrored, bool]:
    """Write the issuer's keys into the parameter when they differ from what it holds (or it does not exist)."""
    mirrored = mirror_issuer(discovery_url, fetch=fetch)
    try:
        current: dict[str, Any] | None = ssm.get_parameter(Name=name)["Parameter"]
    except ssm.exceptions.ParameterNotFound:
        current = None
    changed = current is None or current["Value"] != mirrored.jwks
    # Labelled with the discovery URL, so that a rollback to it finds these keys (and their issuer) again.
    label = owned_parameter.content_label(discovery_url)
    if changed:
        owned_parameter.write(name, mirrored.jwks, label, mirrored.issuer, ssm=ssm)
    elif current is not None:
        owned_parameter.label_current(name, label, current["Version"], ssm=ssm)
    return mirrored, changed


def on_cloudformation(
    event: dict[str, Any], ssm: Any, *, fetch: Callable[[str], Any] = fetch_json, cloudformation: Any = None
) -> tuple[str, dict[str, str]]:
    """The custom resource that owns the parameter: (physical id, attributes). A rollback's Update puts back what
    the old properties mirrored (their issuer with it), without asking the issuer."""
    properties = event["ResourceProperties"]
    name = properties["ParameterName"]
    if event["RequestType"] == "Delete":
        return owned_parameter.release(event, ssm=ssm, cloudformation=cloudformation), {}
    discovery_url = properties["DiscoveryUrl"]
    if event["RequestType"] == "Update" and owned_parameter.is_rollback(event["StackId"], cloudformation):
        kept = owned_parameter.roll_back(name, owned_parameter.content_label(discovery_url), ssm=ssm)
        if kept is not None and kept.get("Description"):
            return name, {"Issuer": kept["Description"], "ParameterName": name}
    mirrored, _ = refresh(ssm, name, discovery_url, fetch=fetch)
    return name, {"Issuer": mirrored.issuer, "ParameterName": name}


def handler(
    event: Any,
    context: Any,
    *,
    ssm: Any = None,
    fetch: Callable[[str], Any] = fetch_json,
    respond: cfn_response.Respond = cfn_response.send_response,
    cloudformation: Any = None,
) -> dict[str, Any]:
    """Lambda entry point: a CloudFormation custom resource event, or the schedule's refresh."""
    client = ssm or boto3.client("ssm")
    if isinstance(event, dict) and "RequestType" in event and "ResponseURL" in event:
        return cfn_response.answer(
            event,
            lambda: on_cloudformation(event, client, fetch=fetch, cloudformation=cloudformation),
            message="custom resource",
            respond=respond,
        )
    settings = MirrorSettings.from_env(os.environ)
    name = settings.parameter_name
    _, changed = refresh(client, name, settings.discovery_url, fetch=fetch)
    print(json.dumps({"message": "jwks mirrored", "parameter": name, "changed": changed}))
    return {"changed": changed}

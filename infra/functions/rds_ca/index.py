"""Copy Amazon RDS's certificate bundle for this region into an SSM parameter this function owns.

``sslmode=require`` encrypts but trusts any server; ``verify-full`` needs the CA that signs RDS's server
certificates, which neither the stock Hindsight image nor the Lambda runtime ships. This custom resource runs
outside the VPC at deploy time, fetches the region's bundle from AWS's trust store
(``https://truststore.pki.rds.amazonaws.com/<region>/<region>-bundle.pem``, documented in the RDS User Guide,
"Using SSL/TLS to encrypt a connection to a DB instance or cluster"), checks it holds only certificates and stores it
for the Hindsight tasks (an ECS secret) and the provisioning function (read through the SSM endpoint). CloudFormation
never holds the value; delete removes the parameter unless another resource of the stack holds it. A rollback
downloads nothing: it puts back the bundle last stored from the old URL, from the parameter's own history
(``infra.functions.owned_parameter``).
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.request
from collections.abc import Callable
from typing import Any

import boto3

from infra.functions import cfn_response, owned_parameter

MAX_BUNDLE_BYTES = 8 * 1024  # SSM advanced tier
_BLOCK = re.compile(r"-----BEGIN CERTIFICATE-----\r?\n([A-Za-z0-9+/=\r\n]+?)-----END CERTIFICATE-----")


class BundleError(Exception):
    """The downloaded bundle is not a small set of PEM certificates."""


def fetch(url: str, *, timeout: float = 10.0) -> str:
    """GET the bundle over https (bounded size)."""
    if not url.startswith("https://"):
        raise BundleError(f"refusing a non-https URL: {url}")
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (https checked above)
        body: bytes = response.read(MAX_BUNDLE_BYTES + 1)
    if len(body) > MAX_BUNDLE_BYTES:
        raise BundleError(f"bundle larger than {MAX_BUNDLE_BYTES} bytes (the SSM parameter's limit): {url}")
    return body.decode("ascii")


def certificates(bundle: str) -> str:
    """The bundle's certificates, normalised; anything else (keys, HTML, junk) is refused."""
    blocks = _BLOCK.findall(bundle)
    if not blocks or _BLOCK.sub("", bundle).strip():
        raise BundleError("the bundle holds something other than PEM certificates")
    pem = []
    for body in blocks:
        try:
            base64.b64decode("".join(body.split()), validate=True)
        except binascii.Error as exc:
            raise BundleError("a certificate in the bundle is not valid base64") from exc
        pem.append("-----BEGIN CERTIFICATE-----\n" + body.strip().replace("\r", "") + "\n-----END CERTIFICATE-----\n")
    return "".join(pem)


def on_event(
    event: dict[str, Any], ssm: Any, *, download: Callable[[str], str] = fetch, cloudformation: Any = None
) -> tuple[str, dict[str, str]]:
    """Create/update: store the bundle (a rollback's Update: the old URL's, from history); delete: remove the
    parameter this resource created."""
    properties = event["ResourceProperties"]
    name = properties["ParameterName"]
    if event["RequestType"] == "Delete":
        return owned_parameter.release(event, ssm=ssm, cloudformation=cloudformation), {}
    label = owned_parameter.content_label(properties["BundleUrl"])
    kept = None
    if event["RequestType"] == "Update" and owned_parameter.is_rollback(event["StackId"], cloudformation):
        kept = owned_parameter.roll_back(name, label, ssm=ssm)
    if kept is not None:
        bundle = str(kept["Value"])
    else:
        bundle = certificates(download(properties["BundleUrl"]))
        if len(bundle.encode()) > MAX_BUNDLE_BYTES:
            raise BundleError(f"bundle larger than {MAX_BUNDLE_BYTES} bytes (the SSM parameter's limit)")
        owned_parameter.write(name, bundle, label, ssm=ssm)
    return name, {"ParameterName": name, "Certificates": str(bundle.count("BEGIN CERTIFICATE"))}


def handler(
    event: dict[str, Any],
    context: Any,
    *,
    ssm: Any = None,
    download: Callable[[str], str] = fetch,
    respond: cfn_response.Respond = cfn_response.send_response,
    cloudformation: Any = None,
) -> dict[str, Any]:
    """CloudFormation custom resource entry point; always answers CloudFormation (or the stack waits an hour)."""
    del context

    def run() -> tuple[str, dict[str, str]]:
        client = ssm or boto3.client("ssm")
        return on_event(event, client, download=download, cloudformation=cloudformation)

    return cfn_response.answer(event, run, message="rds ca bundle", respond=respond)

"""``hindsight.mode=external``: the rules of the ``hindsight`` section for the customer's own Hindsight (the URL,
the keys' secrets and their region, the egress CIDRs)."""

from __future__ import annotations

import ipaddress
import re
import urllib.parse

from hindsight_isolation.settings import tenant_env
from infra.config.auth import AuthConfig, AuthMode
from infra.config.checks import require
from infra.config.hindsight import HindsightConfig, Platform, ca_bundle_problems

#: A complete Secrets Manager ARN (with the 6-character suffix AWS appends), so a grant names exactly that secret.
_SECRET_ARN = re.compile(
    r"^arn:aws[a-z-]*:secretsmanager:(?P<region>[a-z]{2}(-[a-z]+)+-\d):\d{12}:secret:[\w/+=.@-]{1,512}-[A-Za-z0-9]{6}$"
)
_KMS_KEY_ARN = re.compile(r"^arn:aws[a-z-]*:kms:(?P<region>[a-z]{2}(-[a-z]+)+-\d):\d{12}:key/[0-9a-f-]{36}$")
_HOST = re.compile(
    r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
#: Managed-only settings an external deployment must leave at their defaults (they would build nothing).
_MANAGED_ONLY = ("certificate_arn", "domain_name", "hosted_zone_id")


def external_problems(h: HindsightConfig, auth: AuthConfig | None, region: str | None) -> list[str]:
    """``hindsight.mode=external``: the URL (scheme, host, port), the secrets' ARNs and region, the egress CIDRs.

    What synthesis cannot see (the route from the isolated subnets, the server's extension) the deploy-time
    isolation probe checks.
    """
    errors: list[str] = []
    errors.extend(_external_url_problems(h))
    require(
        errors,
        h.platform is Platform.ECS,
        "hindsight.platform=eks builds Hindsight on your cluster: with hindsight.mode=external unset it",
    )
    given = [name for name in _MANAGED_ONLY if getattr(h, name) is not None]
    require(
        errors,
        not given,
        f"hindsight.{', hindsight.'.join(given)}: used only with hindsight.mode=managed (an external server brings "
        "its own certificate; give its private CA as hindsight.ca_bundle)",
    )
    require(
        errors,
        h.max_body_mib is None,
        "hindsight.max_body_mib configures the server this stack builds: with hindsight.mode=external set "
        f"{tenant_env('max_body_mib')} on your server and unset it here",
    )
    errors.extend(
        _secret_arn_problems(
            "hindsight.external_operator_key_secret_arn", h.external_operator_key_secret_arn, region, required=True
        )
    )
    iam_mode = auth is not None and auth.mode is AuthMode.IAM
    if iam_mode:
        errors.extend(
            _secret_arn_problems(
                "hindsight.external_agent_key_secret_arn", h.external_agent_key_secret_arn, region, required=True
            )
        )
    else:
        require(
            errors,
            h.external_agent_key_secret_arn is None,
            "hindsight.external_agent_key_secret_arn is used only with auth.mode=iam (with user tokens the agent "
            "forwards the caller's token and holds no key): unset it",
        )
    key = h.external_secrets_key_arn
    if key is not None:
        match = _KMS_KEY_ARN.match(key)
        require(
            errors,
            match is not None,
            "hindsight.external_secrets_key_arn must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>), or "
            "null for the aws/secretsmanager key",
        )
        require(
            errors,
            match is None or region is None or match["region"] == region,
            f"hindsight.external_secrets_key_arn is in another region than region={region}: use the key of the "
            "secrets in this region",
        )
    for cidr in h.external_egress_cidrs:
        try:
            network = ipaddress.ip_network(cidr, strict=True)
        except ValueError:
            errors.append(f"hindsight.external_egress_cidrs: {cidr!r} is not an IPv4 CIDR like 10.50.0.0/16")
            continue
        require(
            errors,
            network.version == 4 and network.prefixlen >= 8 and not network.is_loopback and not network.is_link_local,
            f"hindsight.external_egress_cidrs: {cidr} must be an IPv4 range of at most /8 where the endpoint's "
            "addresses are (not 0.0.0.0/0, loopback or link-local)",
        )
    errors.extend(ca_bundle_problems(h, external=True))
    return errors


def _external_url_problems(h: HindsightConfig) -> list[str]:
    """Scheme (https unless ``external_allow_http``), host, port; no credentials, query or fragment."""
    url = h.external_url
    if not url:
        return [
            "hindsight.external_url is required with hindsight.mode=external: your Hindsight's base URL, "
            "e.g. https://memory.internal.example.com"
        ]
    parts = urllib.parse.urlsplit(url)
    errors: list[str] = []
    if parts.scheme == "http":
        require(
            errors,
            h.external_allow_http,
            f"hindsight.external_url {url} is plain http: tokens and keys would cross the network in clear; use "
            "https, or set hindsight.external_allow_http=true for a development server",
        )
    elif parts.scheme != "https":
        errors.append(f"hindsight.external_url {url} must start with https:// (the server's base URL)")
        return errors
    try:
        port = parts.port
    except ValueError:
        return [f"hindsight.external_url {url} has a port that is not a number from 1 to 65535"]
    host = parts.hostname or ""
    require(
        errors,
        bool(_HOST.match(host)) or _is_ip(host),
        f"hindsight.external_url {url} needs a host name (memory.internal.example.com) or an IPv4 address",
    )
    if _is_ip(host):
        address = ipaddress.ip_address(host)
        require(
            errors,
            not (address.is_loopback or address.is_link_local or address.is_unspecified),
            f"hindsight.external_url {url}: {host} is not reachable from the isolated subnets (loopback, "
            "link-local or unspecified)",
        )
    require(errors, host != "localhost", f"hindsight.external_url {url}: localhost is not reachable from AWS")
    require(errors, port is None or port > 0, f"hindsight.external_url {url} has port 0")
    require(
        errors,
        not (parts.username or parts.password or parts.query or parts.fragment),
        f"hindsight.external_url {url} must hold no credentials, query or fragment (keys come from Secrets Manager)",
    )
    return errors


def _is_ip(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 4
    except ValueError:
        return False


def _secret_arn_problems(name: str, arn: str | None, region: str | None, *, required: bool) -> list[str]:
    if arn is None:
        return (
            [f"{name} is required with hindsight.mode=external: the complete ARN of the secret holding the key"]
            if required
            else []
        )
    match = _SECRET_ARN.match(arn)
    if match is None:
        return [
            f"{name} must be a complete Secrets Manager ARN (arn:aws:secretsmanager:<region>:<account>:secret:"
            "<name>-<6 characters>; aws secretsmanager describe-secret shows it)"
        ]
    if region is not None and match["region"] != region:
        return [f"{name} is in {match['region']}, the deployment in {region}: replicate the secret to {region}"]
    return []

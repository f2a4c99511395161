"""The ``auth`` section: caller authentication, shared by the AgentCore authorizer, the agent and the Hindsight
extension; with ``mode=jwt`` the identity contract's token rules
(:func:`memory_adapter.identity.settings.jwt_settings_problems`, the same the agent and the extension apply) plus
what the deployment needs beyond them (an https issuer, claim names AgentCore and CloudFormation accept)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from enum import StrEnum

from hindsight_isolation.settings import DEFAULT_EXPIRY_GRACE_S, MAX_EXPIRY_GRACE_S
from infra.config.checks import bounded, require
from memory_adapter.identity.settings import DISCOVERY_SUFFIX, jwt_settings_problems
from memory_adapter.settings_reader import Naming


class AuthMode(StrEnum):
    """How callers of the agent are authenticated (and so how Hindsight authorizes the agent's calls)."""

    COGNITO = "cognito"
    JWT = "jwt"
    IAM = "iam"


@dataclass(frozen=True)
class AuthConfig:
    """Caller authentication, shared by the AgentCore authorizer, the agent and the Hindsight extension."""

    mode: AuthMode
    discovery_url: str | None
    allowed_clients: tuple[str, ...]
    allowed_audience: tuple[str, ...]
    user_claim: str
    tenant_claim: str | None
    tenant_id: str | None
    jwks_refresh_minutes: int
    #: ``null``: the isolation extension's default (``hindsight_isolation.settings.DEFAULT_EXPIRY_GRACE_S``).
    retain_grace_seconds: int | None

    @property
    def grace_seconds(self) -> int:
        """The retain grace window in seconds: the one the extension enforces and the retain queue retries within."""
        return int(DEFAULT_EXPIRY_GRACE_S) if self.retain_grace_seconds is None else self.retain_grace_seconds


#: How the identity contract names the ``auth`` section's JWT settings: ``cdk.json`` keys, "auth.<key>" in messages.
AUTH_NAMING = Naming(seconds="_seconds", shown_prefix="auth.")


_CLAIM = re.compile(r"^[A-Za-z_][A-Za-z0-9_:.-]{0,63}$")


def auth_problems(a: AuthConfig) -> list[str]:
    """Caller authentication; with ``mode=jwt`` the identity contract's token rules, plus the deployment's own."""
    errors: list[str] = []
    require(errors, bool(_CLAIM.match(a.user_claim)), "auth.user_claim must be a claim name like sub")
    require(
        errors, a.tenant_claim is None or bool(_CLAIM.match(a.tenant_claim)), "auth.tenant_claim must be a claim name"
    )
    bounded(errors, "auth.jwks_refresh_minutes", a.jwks_refresh_minutes, low=5, high=1440)
    bounded(errors, "auth.retain_grace_seconds", a.grace_seconds, low=0, high=MAX_EXPIRY_GRACE_S)
    if a.mode is AuthMode.JWT:
        values = dataclasses.asdict(a)
        if a.discovery_url is None:
            # The contract also accepts an issuer with a JWKS URL, a static JWKS or a parameter; the deployment
            # mirrors the keys from the discovery document, so it needs exactly that (a placeholder lets the
            # contract check the other settings in the same run).
            errors.append(
                "auth.discovery_url is required with auth.mode=jwt: your issuer's "
                "https://.../.well-known/openid-configuration"
            )
            values["discovery_url"] = f"https://issuer.invalid{DISCOVERY_SUFFIX}"
        errors.extend(jwt_settings_problems(values, AUTH_NAMING))
        # AgentCore's authorizer and the key mirror fetch the discovery document over the internet: https only.
        require(
            errors,
            not (a.discovery_url or "").startswith("http://"),
            "auth.discovery_url must be an https URL (AgentCore and the key mirror fetch it over the internet)",
        )
    else:
        require(errors, a.discovery_url is None, "auth.discovery_url is used only with auth.mode=jwt (leave it null)")
    if a.mode is AuthMode.IAM:
        require(errors, a.tenant_claim is None, "auth.tenant_claim: IAM callers carry no claims; use auth.tenant_id")
    return errors

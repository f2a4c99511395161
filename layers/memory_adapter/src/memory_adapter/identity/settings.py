"""JWT settings: what a bearer token must satisfy, and where the issuer's signing keys come from. Defined once.

The agent reads them from ``JWT_*`` environment variables, the Hindsight isolation extension from its ``jwt_*``
config keys, the CDK app from its ``cdk.json`` context: each with its own
:class:`~memory_adapter.settings_reader.Naming` and the same fields, rules and messages
(:meth:`JwtSettings.problems` lists every problem at once, naming each setting the way that component's users write
it). Standard library only (no PyJWT), so the CDK app can validate its
configuration with it.

Where keys come from (exactly one source):

* ``discovery_url`` alone: the OIDC discovery document gives the issuer and the JWKS URL (its issuer must match the
  URL, OIDC Discovery 1.0 section 4.3);
* ``jwks_url``, ``static_jwks`` (a JWKS document delivered out of band) or ``jwks_parameter`` (an SSM parameter
  holding one, e.g. the stack's mirrored keys), with ``issuer``, or with ``discovery_url`` to name the issuer
  (the URL without its ``/.well-known/openid-configuration`` suffix; nothing is fetched from it).

Example:
    >>> settings = JwtSettings.from_mapping(os.environ, ENV_NAMING)  # raises IdentityConfigError listing every problem
    >>> jwt_settings_problems({"discovery_url": url, "allowed_clients": ["app"]}, Naming(shown_prefix="auth."))
    []
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from memory_adapter.identity.errors import IdentityConfigError
from memory_adapter.settings_fields import declared, env_of, read_declared, setting
from memory_adapter.settings_reader import Naming, SettingsReader

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "DISCOVERY_SUFFIX",
    "ENV_NAMING",
    "FIELD_NAMES",
    "KEY_SOURCES",
    "TOKEN_USES",
    "JwtSettings",
    "discovery_url_for",
    "issuer_of",
    "jwt_settings_problems",
]

#: The only algorithms a verifier may be configured with: public-key signatures. HMAC (``HS*``) and ``none`` are
#: excluded so a token can never be "verified" with the issuer's public key used as a shared secret.
ASYMMETRIC_ALGORITHMS: Final = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
#: What an OIDC discovery URL ends with (AgentCore's JWT authorizer requires it too).
DISCOVERY_SUFFIX: Final = "/.well-known/openid-configuration"
#: Values of Cognito's ``token_use`` claim.
TOKEN_USES: Final = ("access", "id")
#: Fields naming a key source other than the discovery document.
KEY_SOURCES: Final = ("jwks_url", "static_jwks", "jwks_parameter")
#: Names messages after the fields themselves (for settings built in code).
FIELD_NAMES: Final = Naming()
#: Environment variables: ``JWT_`` + the field upper-cased, seconds spelled out (``JWT_LEEWAY_SECONDS``). The agent's
#: spelling, and the one for any other process configured through its environment (e.g. a gateway interceptor).
ENV_NAMING: Final = Naming(prefix="JWT_", upper=True, seconds="_SECONDS")

_HTTP = ("https://", "http://")
_JWKS_DOCUMENT = "a JWKS JSON object with 'keys'"


def discovery_url_for(issuer: str) -> str:
    """The discovery URL of an issuer: the issuer URL with the ``/.well-known/openid-configuration`` suffix."""
    return issuer.rstrip("/") + DISCOVERY_SUFFIX


def issuer_of(discovery_url: str) -> str:
    """The issuer a discovery URL belongs to: the URL without its ``/.well-known/openid-configuration`` suffix."""
    return discovery_url.rstrip("/").removesuffix(DISCOVERY_SUFFIX)


def _jwks_document(reader: SettingsReader, key: str) -> Mapping[str, Any] | None:
    return reader.json_object(key, what=_JWKS_DOCUMENT)


@dataclass(frozen=True, slots=True, kw_only=True)
class JwtSettings:
    """What a token must satisfy. Durations are in seconds.

    Each field is a setting without a variable of its own (:func:`~memory_adapter.settings_fields.setting`): each
    component reads it under the key its :class:`~memory_adapter.settings_reader.Naming` spells from the field's name
    (``leeway_s``: the agent's ``JWT_LEEWAY_SECONDS``, the extension's ``jwt_leeway_s``, ``cdk.json``'s
    ``auth.leeway_seconds``); the fields are in the order :meth:`to_env` writes them (the deployed templates'
    order: a container whose environment is reordered is a new task definition revision).

    Args:
        discovery_url: OIDC discovery document URL (``.../.well-known/openid-configuration``).
        issuer: Expected ``iss`` when the keys come from ``jwks_url``, ``static_jwks`` or ``jwks_parameter``.
        jwks_url: JWKS endpoint.
        static_jwks: A JWKS document (``{"keys": [...]}``); nothing is fetched.
        jwks_parameter: Name of an SSM parameter holding the JWKS document (read with boto3, cached like a JWKS).
        user_claim: Claim holding the user id.
        allowed_clients: Client ids, matched against ``client_id`` (access tokens) or ``aud`` (ID tokens).
        allowed_audience: Audiences, matched against ``aud``. Both lists are enforced when both are set.
        tenant_claim: Claim holding the tenant id; ``None`` for single-tenant deployments.
        token_use: ``"access"`` or ``"id"`` to require that ``token_use``; ``None`` accepts either when present.
        algorithms: Accepted ``alg`` values, a subset of :data:`ASYMMETRIC_ALGORITHMS`.
        leeway_s: Clock skew tolerated on ``exp``, ``nbf`` and ``iat`` (at most 300).
        jwks_cache_ttl_s: How long fetched keys are reused.
        jwks_refetch_interval_s: Minimum time between refetches caused by an unknown ``kid``, and between attempts
            while the key source fails.
        jwks_max_stale_s: While the key source fails, how long the last keys fetched stay in use.
        http_timeout_s: Timeout of each discovery/JWKS request.
        max_token_bytes: Longer tokens are refused before any parsing.
    """

    discovery_url: str | None = setting(None)
    issuer: str | None = setting(None)
    jwks_url: str | None = setting(None)
    static_jwks: Mapping[str, Any] | None = setting(None, parse=_jwks_document)
    jwks_parameter: str | None = setting(None)
    user_claim: str = setting(None, "sub", always=True)  # a deployed environment states whose bank a token opens
    allowed_clients: tuple[str, ...] = setting(None, ())
    allowed_audience: tuple[str, ...] = setting(None, ())
    tenant_claim: str | None = setting(None)
    token_use: str | None = setting(None, choices=TOKEN_USES)
    algorithms: tuple[str, ...] = setting(None, ("RS256",))
    leeway_s: float = setting(None, 30.0, low=0, high=300)  # more defeats the expiry check
    jwks_cache_ttl_s: float = setting(None, 300.0, above=0)
    jwks_refetch_interval_s: float = setting(None, 60.0, above=0)
    jwks_max_stale_s: float = setting(None, 86400.0, above=0)
    http_timeout_s: float = setting(None, 5.0, above=0)
    max_token_bytes: int = setting(None, 8192, low=256, high=65536)

    # -- derived facts ---------------------------------------------------------------------------------------------

    @property
    def key_source(self) -> str:
        """``"discovery_url"`` or the one field of :data:`KEY_SOURCES` that is set."""
        return next((name for name in KEY_SOURCES if getattr(self, name) is not None), "discovery_url")

    @property
    def expected_issuer(self) -> str | None:
        """The ``iss`` tokens must carry, or ``None`` when only the discovery document can tell."""
        if self.issuer:
            return self.issuer
        if self.discovery_url and self.key_source != "discovery_url":
            return issuer_of(self.discovery_url)
        return None

    def given(self) -> dict[str, Any]:
        """The fields that differ from their defaults (what was configured)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) != f.default}

    # -- validation ------------------------------------------------------------------------------------------------

    def problems(self, naming: Naming = FIELD_NAMES) -> list[str]:
        """Every reason these settings cannot verify tokens safely (empty when usable), named per ``naming``."""

        def n(field_name: str) -> str:
            return naming.shown(naming.key(field_name))

        errors: list[str] = []
        sources = [name for name in KEY_SOURCES if getattr(self, name) is not None]
        others = f"{n('jwks_url')}, {n('static_jwks')} or {n('jwks_parameter')}"
        if len(sources) > 1:
            errors.append(f"give one key source, not {' and '.join(n(s) for s in sources)}")
        if not sources and not self.discovery_url:
            errors.append(
                f"{n('discovery_url')} is required (or {n('issuer')} with {others}): token settings without an "
                "issuer verify nothing"
            )
        elif not sources and self.issuer:
            errors.append(
                f"{n('issuer')} is used only with {others}: with {n('discovery_url')} alone the issuer comes from "
                "the discovery document"
            )
        elif sources and not self.issuer and not self.discovery_url:
            errors.append(
                f"{n('issuer')} (or {n('discovery_url')}, naming the issuer) is required with {n(sources[0])}"
            )
        if self.discovery_url is not None:
            if not self.discovery_url.startswith(_HTTP):
                errors.append(f"{n('discovery_url')} must be an http(s) URL")
            if not self.discovery_url.rstrip("/").endswith(DISCOVERY_SUFFIX):
                errors.append(f"{n('discovery_url')} must end with {DISCOVERY_SUFFIX}")
        if self.jwks_url is not None and not self.jwks_url.startswith(_HTTP):
            errors.append(f"{n('jwks_url')} must be an http(s) URL")
        if self.static_jwks is not None and not (
            isinstance(self.static_jwks, Mapping) and isinstance(self.static_jwks.get("keys"), list)
        ):
            errors.append(f"{n('static_jwks')} must be {_JWKS_DOCUMENT}")
        if not self.allowed_clients and not self.allowed_audience:
            errors.append(
                f"set {n('allowed_clients')} and/or {n('allowed_audience')}: a token for any client must not pass"
            )
        if any(not isinstance(v, str) or not v.strip() for v in (*self.allowed_clients, *self.allowed_audience)):
            errors.append(f"{n('allowed_clients')} and {n('allowed_audience')} must hold non-blank names")
        if not self.user_claim.strip():
            errors.append(f"{n('user_claim')} must not be blank")
        if self.tenant_claim is not None and not self.tenant_claim.strip():
            errors.append(f"{n('tenant_claim')} must be unset or a non-blank claim name")
        if not self.algorithms:
            errors.append(f"{n('algorithms')} must not be empty")
        unsafe = sorted(set(self.algorithms) - ASYMMETRIC_ALGORITHMS)
        if unsafe:
            errors.append(
                f"{n('algorithms')} may list asymmetric algorithms only (RS*, PS*, ES*, EdDSA), not {', '.join(unsafe)}"
            )
        for f, declaration in declared(type(self)):
            problem = declaration.out_of_range(n(f.name), getattr(self, f.name))
            if problem is not None:
                errors.append(problem)
        return errors

    # -- reading ---------------------------------------------------------------------------------------------------

    @classmethod
    def read(cls, reader: SettingsReader) -> JwtSettings:
        """The settings under ``reader.naming``'s keys; every problem (types, bounds and rules) goes to
        ``reader.problems``."""
        values = read_declared(cls, reader)
        settings = cls(**{name: value for name, value in values.items() if value is not None})
        # Out-of-range values were read as their defaults, so the rules add no second problem for them.
        reader.problems.extend(settings.problems(reader.naming))
        return settings

    def to_env(self, naming: Naming) -> dict[str, str]:
        """The variables (keys per ``naming``) that :meth:`read` turns back into these settings: every field that
        differs from its default, and the user claim always."""
        return env_of(self, naming)

    @classmethod
    def from_mapping(cls, values: Mapping[str, object], naming: Naming = FIELD_NAMES) -> JwtSettings:
        """Read and validate; raise :class:`~memory_adapter.identity.errors.IdentityConfigError` with every problem."""
        reader = SettingsReader(values, naming)
        settings = cls.read(reader)
        if reader.problems:
            raise IdentityConfigError(reader.problems)
        return settings


def jwt_settings_problems(values: Mapping[str, object], naming: Naming = FIELD_NAMES) -> list[str]:
    """Every problem of the JWT settings in ``values`` (keys per ``naming``; other keys are ignored).

    For configuration checks that report everything before anything is deployed, e.g. the CDK app's::

        problems = jwt_settings_problems(context["auth"], Naming(seconds="_seconds", shown_prefix="auth."))
    """
    reader = SettingsReader(values, naming)
    JwtSettings.read(reader)
    return reader.problems

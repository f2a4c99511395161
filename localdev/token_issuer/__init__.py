"""A local OpenID Connect token issuer for development and tests (stands in for Amazon Cognito).

It owns an RSA signing key (``kid``), serves ``/.well-known/openid-configuration`` and its JWKS on
127.0.0.1, and mints RS256 tokens shaped like Cognito access tokens (``iss``, ``sub``, ``client_id``,
``token_use``, ``exp``, ``iat``, optionally ``aud`` and the tenant claim ``custom:tenant``).

From Python (the ``token_issuer`` pytest fixture is one of these)::

    with TokenIssuer() as issuer:
        token = issuer.mint("user-alex", tenant="acme")
        verifier_config = JwtSettings(discovery_url=issuer.discovery_url, allowed_clients=(LOCAL_CLIENT_ID,))

By hand, for calling the local agent with curl (the key and the issuer URL persist in the data dir,
``.local/token-issuer`` by default, so a separate ``mint`` process signs tokens the server accepts)::

    python -m localdev.token_issuer start          # serves on 127.0.0.1:8890 in the background
    python -m localdev.token_issuer mint --user user-alex [--tenant acme] [--ttl 3600]
    python -m localdev.token_issuer stop

Never use it outside local development: anyone with the data dir can mint any identity.

Where things live: ``keys`` (the RSA signing key and its file), ``tokens`` (:func:`mint_token`, the claim names),
``server`` (:class:`TokenIssuer`: discovery, JWKS, minting), ``background`` (the ``start``/``stop`` process, found by
its state file), ``cli``.
"""

from localdev.token_issuer.background import (
    DEFAULT_PORT,
    default_data_dir,
    default_issuer_url,
    default_port,
    ensure_running,
    running_during,
    running_issuer_url,
    stop_background,
    stop_when_gone,
)
from localdev.token_issuer.keys import SigningKey, load_or_create_key
from localdev.token_issuer.server import TokenIssuer
from localdev.token_issuer.tokens import LOCAL_CLIENT_ID, TENANT_CLAIM, mint_token

__all__ = [
    "DEFAULT_PORT",
    "LOCAL_CLIENT_ID",
    "TENANT_CLAIM",
    "SigningKey",
    "TokenIssuer",
    "default_data_dir",
    "default_issuer_url",
    "default_port",
    "ensure_running",
    "load_or_create_key",
    "mint_token",
    "running_during",
    "running_issuer_url",
    "stop_background",
    "stop_when_gone",
]

"""The Hindsight tasks' settings for the isolation extension, named by ``hindsight_isolation.settings`` itself.

Plain values only; the secrets (operator key, agent key) and the mirrored signing keys are read at start (ECS
container secrets, or the pod's init step: :meth:`~infra.constructs.memory_service.MemoryService.workload_access`),
never plain environment variables or template literals.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from hindsight_isolation import settings as iso
from infra.config import AuthMode
from memory_adapter.missions import Missions

if TYPE_CHECKING:
    from constructs import Construct

    from infra.constructs.memory_props import MemoryServiceProps


#: Environment variable names the stack sets for the extension (secrets included), for tests and docs.
ENV_OPERATOR_KEY = iso.tenant_env("operator_key")
ENV_AGENT_KEY = iso.tenant_env("agent_key")
ENV_STATIC_JWKS = iso.tenant_env(iso.JWT_NAMING.key("static_jwks"))


def isolation_settings(props: MemoryServiceProps, *, scope: Construct) -> iso.IsolationSettings:
    """The extension's settings as deployed (:func:`_served_settings`) with the request-body cap
    ``hindsight.max_body_mib`` gives (null: the extension's default)."""
    settings = _served_settings(props, scope=scope)
    cap = props.config.max_body_mib
    return settings if cap is None else dataclasses.replace(settings, max_body_mib=cap)


def _served_settings(props: MemoryServiceProps, *, scope: Construct) -> iso.IsolationSettings:
    """The extension's settings as deployed, without its secrets (the operator key, the agent key and the mirrored
    signing keys are read at start): the token checks match the agent's; fading as configured
    (never its test clocks); the agent's mission, which the server applies to the agent's banks before a caller's
    retain (a user's token may set no bank setting). ``IsolationSettings.to_env`` writes them (plain values only).

    Transfer imports are off (``iso.SERVER_REQUIRED_ENV``): the extension keeps restores, clones and imports for the
    operator, but an operator's restore writes the archive's rows as they are, so the switch goes on only for a
    maintenance window (hindsight_isolation/README.md).
    """
    auth, fading, mission, agent_name = props.auth, props.fading, props.mission, props.agent_name
    rules = fading.rules if fading is not None and fading.enabled else None
    missions = Missions({agent_name: mission}) if mission is not None and mission.updates() else Missions()
    if auth.mode is AuthMode.IAM:
        return iso.IsolationSettings(
            expiry_grace_s=float(auth.grace_seconds),
            agent_name=agent_name,
            agent_tenant=auth.tenant_id or None,
            **iso.fading_settings(rules),
            missions=missions,
        )
    assert props.identity is not None
    # The issuer is fixed by configuration; the keys come from the SSM mirror (a VPC without egress cannot reach
    # the issuer's JWKS URL), injected as JWT_STATIC_JWKS. The tasks restart when the mirror changes.
    checks = props.identity.verifier_settings(scope)
    return iso.IsolationSettings(
        jwt=dataclasses.replace(checks, jwks_parameter=None),
        expiry_grace_s=float(auth.grace_seconds),
        **iso.fading_settings(rules),
        missions=missions,
    )

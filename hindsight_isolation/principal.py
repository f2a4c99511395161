"""Who a request speaks for, and how that identity travels through Hindsight to the validators and the worker.

The tenant slot authenticates; the validator slot authorizes; the only per-request channel between them that Hindsight
carries everywhere (HTTP, MCP, and into queued work, where the worker restores it with ``internal=True``) is
``RequestContext.tenant_id``. So the tenant extension writes the caller's principal there, encoded by
:meth:`Principal.encode`, and the validator reads it back with :func:`Principal.decode`. The encoding carries no
secret and no expiry: queued work was authorized when it was submitted, and only ownership is re-checked later.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Kind", "Principal"]

_PREFIX = "hsi1:"


class Kind(StrEnum):
    """What kind of credential authenticated the request."""

    OPERATOR = "operator"  # the operator key: administers every bank
    USER = "user"  # a verified, unexpired user token: that user's banks
    USER_GRACE = "user_grace"  # a user token expired within the grace window: retain into that user's banks only
    AGENT = "agent"  # the per-deployment agent credential: that deployment's (tenant, agent) banks


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller. ``user`` is set for user kinds, ``agent`` for the agent kind.

    ``any_tenant`` (agent kind only) widens the agent credential to the agent's banks in every tenant, for IAM
    runtimes that take the tenant from a request header.
    """

    kind: Kind
    tenant: str | None = None
    user: str | None = None
    agent: str | None = None
    any_tenant: bool = False

    def __post_init__(self) -> None:
        if self.kind in (Kind.USER, Kind.USER_GRACE) and not self.user:
            raise ValueError("a user principal needs a user")
        if self.kind is Kind.AGENT and not self.agent:
            raise ValueError("an agent principal needs an agent")
        if self.any_tenant and (self.kind is not Kind.AGENT or self.tenant is not None):
            raise ValueError("only an agent principal without a tenant may reach any tenant")

    def encode(self) -> str:
        """A compact string for ``RequestContext.tenant_id`` (round-trips through :meth:`decode`)."""
        return _PREFIX + json.dumps(
            [self.kind.value, self.tenant, self.user, self.agent, self.any_tenant], separators=(",", ":")
        )

    @classmethod
    def decode(cls, value: str | None) -> Principal | None:
        """The principal encoded in ``value``, or ``None`` when ``value`` is not one of ours."""
        if not value or not value.startswith(_PREFIX):
            return None
        try:
            kind, tenant, user, agent, any_tenant = json.loads(value[len(_PREFIX) :])
            if not isinstance(any_tenant, bool):
                return None
            return cls(Kind(kind), _opt(tenant), _opt(user), _opt(agent), any_tenant)
        except (ValueError, TypeError):
            return None

    def describe(self) -> str:
        """A short label for logs (identities, never credentials)."""
        parts = [self.kind.value]
        if self.tenant is not None:
            parts.append(f"tenant={self.tenant!r}")
        if self.any_tenant:
            parts.append("tenant=*")
        if self.user is not None:
            parts.append(f"user={self.user!r}")
        if self.agent is not None:
            parts.append(f"agent={self.agent!r}")
        return " ".join(parts)


def _opt(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError("identity parts are strings")
    return value

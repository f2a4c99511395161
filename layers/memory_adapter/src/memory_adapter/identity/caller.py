"""The verified caller of a turn and the memory bank that belongs to it: built once, then handed on as is.

An agent builds a :class:`Caller` from what it verified (a token's claims, or a user id header it trusts) before the
turn runs; the memory adapter recalls from and retains to ``caller.bank_id`` with ``caller.credential``. Nothing
downstream derives the bank again, so every step of a turn agrees on whose memory it is.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from memory_adapter.identity.bank_ids import format_bank_id

__all__ = ["Caller"]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a turn runs for, the bank id that follows from it, and the credential presented to Hindsight.

    Build it with :meth:`of` (the bank id from :func:`~memory_adapter.identity.bank_ids.format_bank_id`), or directly
    with a ``bank_id`` from a custom bank resolver. ``credential`` (the caller's token, or an agent key) is never
    printed and never compared. ``agent_key`` says the credential is the deployment's agent key (IAM mode), not the
    caller's own token: a retain queued for the replay function then leaves it out (the function reads the key from
    Secrets Manager itself), so no message in the queue or its dead letters holds it.

    Example:
        >>> caller = Caller.of(user=verified.user, agent="support", tenant=verified.tenant, credential=token)
        >>> caller.bank_id
        'user:user-alex:agent:support'
    """

    user: str
    agent: str
    bank_id: str
    tenant: str | None = None
    credential: str | None = field(default=None, repr=False, compare=False)
    agent_key: bool = field(default=False, compare=False)

    @classmethod
    def of(cls, *, user: str, agent: str, tenant: str | None = None, credential: str | None = None) -> Caller:
        """The caller ``(tenant, user, agent)``; raise :class:`~memory_adapter.identity.errors.BankResolutionError`
        when those cannot name a bank (blank, too long, not text): fail closed before any turn runs."""
        bank_id = format_bank_id(user=user, agent=agent, tenant=tenant)
        return cls(user=user, agent=agent, bank_id=bank_id, tenant=tenant or None, credential=credential)

    def with_credential(self, credential: str | None) -> Caller:
        """The same caller presenting ``credential`` (its own token)."""
        return dataclasses.replace(self, credential=credential, agent_key=False)

    def with_agent_key(self, key: str | None) -> Caller:
        """The same caller presenting the deployment's agent key (IAM mode; ``None``: no key configured)."""
        return dataclasses.replace(self, credential=key, agent_key=key is not None)

    def __repr__(self) -> str:  # never print the raw user id (personal data) or the credential
        return (
            f"Caller(agent={self.agent!r}, tenant={self.tenant is not None}, credential={self.credential is not None})"
        )

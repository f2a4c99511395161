"""Whose banks are whose: a user's banks (every agent), a tenant's, and what each holds.

"A user's banks" are exactly the banks whose id parses (:func:`memory_adapter.identity.bank_ids.parse_bank_id`) to that
(tenant, user), whatever the agent: the same rule the server's isolation extension enforces, so the operator tools
never reach a bank the user could not. Ids of no known scheme belong to nobody.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from memory_adapter.admin.errors import InvalidRequestError
from memory_adapter.identity.bank_ids import BankOwner, encode_part, parse_bank_id
from memory_adapter.identity.errors import BankResolutionError

if TYPE_CHECKING:
    from memory_adapter.admin.client import OperatorClient

__all__ = ["BankSummary", "Subject", "bank_summary", "subject_banks"]


@dataclass(frozen=True, slots=True)
class Subject:
    """Whose memories an action concerns: one user of a tenant (``tenant`` ``None``: no tenant), or a whole
    tenant (``user`` ``None``)."""

    tenant: str | None
    user: str | None

    def __post_init__(self) -> None:
        try:
            for label, value in (("tenant", self.tenant), ("user", self.user)):
                if value is not None:
                    encode_part(value, label=label)
        except BankResolutionError as exc:
            raise InvalidRequestError(str(exc)) from exc
        if self.user is None and self.tenant is None:
            raise InvalidRequestError("name a user (and its tenant, if any) or a tenant")

    def owns(self, owner: BankOwner | None) -> bool:
        """Whether a bank of ``owner`` belongs to this subject."""
        if owner is None or (owner.tenant or None) != (self.tenant or None):
            return False
        return self.user is None or owner.user == self.user

    @property
    def key(self) -> str:
        """An S3-safe path naming the subject (``<tenant or _>/<user or _tenant>``)."""
        tenant = encode_part(self.tenant, label="tenant") if self.tenant else "_"
        user = encode_part(self.user, label="user") if self.user else "_tenant"
        return f"{tenant}/{user}"

    def describe(self) -> dict[str, str | None]:
        return {"tenant": self.tenant, "user": self.user}


@dataclass(frozen=True, slots=True)
class BankSummary:
    """One bank and what it holds."""

    bank_id: str
    tenant: str | None
    user: str
    agent: str
    documents: int
    facts: int
    observations: int
    mental_models: int
    entities: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def subject_banks(client: OperatorClient, subject: Subject) -> list[str]:
    """The ids of every bank of ``subject``, sorted."""
    return sorted(b for b in client.bank_ids() if subject.owns(parse_bank_id(b)))


def bank_summary(client: OperatorClient, bank_id: str) -> BankSummary | None:
    """What ``bank_id`` holds, or ``None`` when it does not exist (or is of no known scheme)."""
    owner = parse_bank_id(bank_id)
    stats = client.bank_stats(bank_id)
    if owner is None or stats is None:
        return None
    by_type = stats.get("nodes_by_fact_type") or {}
    facts = sum(int(v) for k, v in by_type.items() if k != "observation")
    return BankSummary(
        bank_id=bank_id,
        tenant=owner.tenant,
        user=owner.user,
        agent=owner.agent,
        documents=int(stats.get("total_documents") or 0),
        facts=facts,
        observations=int(stats.get("total_observations") or by_type.get("observation") or 0),
        mental_models=sum(1 for _ in client.mental_models(bank_id)),
        entities=sum(1 for _ in client.entities(bank_id)),
    )

"""The prior art's turn identity (:class:`TurnContext`), its bank (:func:`default_bank_resolver`), and what a retained
turn is labelled with (:func:`turn_metadata`, :func:`turn_tags`).

A :class:`TurnContext` becomes the same :class:`~memory_adapter.identity.Caller` an agent builds from a verified
token (:meth:`TurnContext.caller`), so both APIs run the same code from there on. The session id never takes part in
a bank id: AgentCore sessions end and are re-provisioned, long-term memory must outlive them. Bank ids come from
:func:`memory_adapter.identity.format_bank_id`, the injective scheme the server-side isolation extension parses
back, so ``user="a:agent:b"`` can never land in another user's bank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final, Protocol

from memory_adapter.identity.bank_ids import format_bank_id
from memory_adapter.identity.caller import Caller
from memory_adapter.identity.errors import BankResolutionError

__all__ = ["BankResolver", "TurnContext", "default_bank_resolver", "turn_metadata", "turn_tags", "turn_time"]

#: How far ahead of this host's clock a turn's time may be (clock skew between hosts), no more.
MAX_CLOCK_SKEW: Final = timedelta(days=1)


def turn_time(occurred_at: datetime | None, *, now: datetime | None = None) -> datetime:
    """When a retained turn took place: ``occurred_at`` (timezone-aware, at most a day ahead) or now, in UTC.

    Raises:
        ValueError: A naive datetime (its moment is ambiguous), a non-datetime, or a time in the future.
    """
    current = now or datetime.now(UTC)
    if occurred_at is None:
        return current
    if not isinstance(occurred_at, datetime):
        raise ValueError(f"occurred_at must be a datetime, not {type(occurred_at).__name__}")
    if occurred_at.tzinfo is None or occurred_at.utcoffset() is None:
        raise ValueError(
            f"occurred_at {occurred_at.isoformat()} has no timezone: pass an aware datetime "
            "(e.g. datetime(..., tzinfo=UTC) or datetime.fromisoformat('2024-05-08T13:56:00+00:00'))"
        )
    if occurred_at - current > MAX_CLOCK_SKEW:
        raise ValueError(f"occurred_at {occurred_at.isoformat()} is in the future (now {current.isoformat()})")
    try:
        return occurred_at.astimezone(UTC)
    except OverflowError:  # 0001-01-01 at a positive offset is before the first UTC instant a datetime can hold
        raise ValueError(f"occurred_at {occurred_at.isoformat()} is out of range (before 0001-01-01 UTC)") from None


def turn_metadata(
    *, session_id: str, user: str, agent: str, tenant: str | None, request_id: str | None
) -> dict[str, str]:
    """Metadata attached to a retained turn (the prior art's keys; never a credential)."""
    meta: dict[str, str] = {
        "channel": "agentcore-runtime",
        "runtime_session_id": session_id,
        "agent_name": agent,
        "user_id": user,
    }
    if tenant:
        meta["tenant_id"] = tenant
    if request_id:
        meta["request_id"] = request_id
    return meta


def turn_tags(*, session_id: str, user: str, agent: str, tenant: str | None) -> list[str]:
    """Tags attached to a retained turn: ``tenant:`` (when set), ``user:``, ``agent:``, ``session:``."""
    tags = [f"user:{user}", f"agent:{agent}", f"session:{session_id}"]
    if tenant:
        tags.insert(0, f"tenant:{tenant}")
    return tags


@dataclass
class TurnContext:
    """Identity of one AgentCore Runtime invocation, from trusted sources only (validated token, runtime headers).

    Attributes:
        runtime_session_id: AgentCore Runtime session id; metadata and tags only, never part of the bank id.
        user_id: Stable user identity: the primary key of long-term memory.
        agent_name: Name of this agent deployment.
        tenant_id: Optional tenant for multi-tenant deployments.
        request_id: Optional per-request id; becomes the retained turn's document id (one document per turn).
        credential: Optional bearer credential of the caller (their JWT), sent as ``Authorization: Bearer`` on this
            turn's calls, its retries and its spooled replays. ``None`` uses the adapter's ``api_key``. Never
            printed: excluded from ``repr`` and from metadata.
    """

    runtime_session_id: str
    user_id: str
    agent_name: str
    tenant_id: str | None = None
    request_id: str | None = None
    credential: str | None = field(default=None, kw_only=True, repr=False, compare=False)

    def as_metadata(self) -> dict[str, str]:
        """Metadata attached to retained memories (same keys as the prior art; never the credential)."""
        return turn_metadata(
            session_id=self.runtime_session_id,
            user=self.user_id,
            agent=self.agent_name,
            tenant=self.tenant_id,
            request_id=self.request_id,
        )

    def as_tags(self) -> list[str]:
        """Tags attached to retained memories: ``tenant:`` (when set), ``user:``, ``agent:``, ``session:``."""
        return turn_tags(
            session_id=self.runtime_session_id, user=self.user_id, agent=self.agent_name, tenant=self.tenant_id
        )

    def caller(self, bank_resolver: BankResolver | None = None) -> Caller:
        """This turn's :class:`~memory_adapter.identity.Caller`, its bank named by ``bank_resolver`` (default:
        :func:`default_bank_resolver`); raise :class:`BankResolutionError` when there is none."""
        bank_id = (bank_resolver or default_bank_resolver)(self)
        return Caller(
            user=self.user_id,
            agent=self.agent_name,
            bank_id=bank_id,
            tenant=self.tenant_id or None,
            credential=self.credential,
        )


class BankResolver(Protocol):
    """Maps a turn's identity to a Hindsight bank id. Implement it to customise the mapping."""

    def __call__(self, context: TurnContext) -> str:
        """Return the bank id for ``context``; raise :class:`BankResolutionError` to refuse (fail closed)."""
        ...


def default_bank_resolver(context: TurnContext) -> str:
    """One bank per (tenant, user, agent): ``tenant:{t}:user:{u}:agent:{a}`` or ``user:{u}:agent:{a}``.

    Ids made of safe characters keep this readable prior-art form; anything else is encoded reversibly (see
    :mod:`memory_adapter.identity.bank_ids`), so distinct identities always get distinct banks.

    Raises:
        BankResolutionError: ``user_id`` or ``agent_name`` missing or blank, a blank (non-empty) tenant, or a part
            that cannot be encoded (too long, not text). Fails closed to prevent cross-user leakage.
    """
    if not isinstance(context.user_id, str) or not context.user_id.strip():
        raise BankResolutionError(
            "Cannot resolve bank ID: user_id is required. "
            "Ensure a trusted user identity is extracted from the AgentCore auth context."
        )
    if not isinstance(context.agent_name, str) or not context.agent_name.strip():
        raise BankResolutionError("Cannot resolve bank ID: agent_name is required.")
    return format_bank_id(user=context.user_id, agent=context.agent_name, tenant=context.tenant_id)

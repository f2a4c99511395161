"""Turn identity (:class:`TurnContext`) and its mapping to a Hindsight bank (:func:`default_bank_resolver`).

The session id never takes part in a bank id: AgentCore sessions end and are re-provisioned, long-term memory must
outlive them. Bank ids come from :func:`memory_adapter.bank_ids.format_bank_id`, the injective scheme the
server-side isolation extension parses back, so ``user="a:agent:b"`` can never land in another user's bank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from memory_adapter.bank_ids import format_bank_id
from memory_adapter.exceptions import BankResolutionError

__all__ = ["BankResolver", "TurnContext", "default_bank_resolver"]


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
        meta: dict[str, str] = {
            "channel": "agentcore-runtime",
            "runtime_session_id": self.runtime_session_id,
            "agent_name": self.agent_name,
            "user_id": self.user_id,
        }
        if self.tenant_id:
            meta["tenant_id"] = self.tenant_id
        if self.request_id:
            meta["request_id"] = self.request_id
        return meta

    def as_tags(self) -> list[str]:
        """Tags attached to retained memories: ``tenant:`` (when set), ``user:``, ``agent:``, ``session:``."""
        tags = [f"user:{self.user_id}", f"agent:{self.agent_name}", f"session:{self.runtime_session_id}"]
        if self.tenant_id:
            tags.insert(0, f"tenant:{self.tenant_id}")
        return tags


class BankResolver(Protocol):
    """Maps a turn's identity to a Hindsight bank id. Implement it to customise the mapping."""

    def __call__(self, context: TurnContext) -> str:
        """Return the bank id for ``context``; raise :class:`BankResolutionError` to refuse (fail closed)."""
        ...


def default_bank_resolver(context: TurnContext) -> str:
    """One bank per (tenant, user, agent): ``tenant:{t}:user:{u}:agent:{a}`` or ``user:{u}:agent:{a}``.

    Ids made of safe characters keep this readable prior-art form; anything else is encoded reversibly (see
    :mod:`memory_adapter.bank_ids`), so distinct identities always get distinct banks.

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

"""The authorization rule: may this principal perform this kind of action on this bank? Pure, no I/O.

A bank belongs to the identity :func:`memory_adapter.identity.bank_ids.parse_bank_id` reads out of its id: the same
module the adapter uses to name banks (``format_bank_id``), so the two agree by construction (a property test proves
it).

* A user token reaches the banks of its own (tenant, user), any agent.
* A user token within the expiry grace window may only retain into those banks (including the bank creation of a
  first retain and the consolidation a retain queues).
* The per-deployment agent credential reaches the banks of its (tenant, agent), any user.
* The operator key reaches every bank.
* Work the server runs for itself (``internal``) keeps the principal of the request that queued it and is checked for
  ownership only; internal work with no principal is the server's own housekeeping.
* Some actions are for the operator alone (webhooks make the server call out; aliases redirect other callers; config
  resets and maintenance affect the server), and alias creation is refused to everyone.
* A bank's settings (config, missions, disposition, profile) are the deployment's policy, never a user's: a user
  token changes none of them, on any route (every hook of a :attr:`RequestKind.SETTINGS` or
  :attr:`RequestKind.MISSION` request refuses it, and :attr:`Action.CONFIG` hooks do too, over MCP as well). The
  operator sets any; the agent key sets the missions of its agent's banks (:data:`memory_adapter.missions.MISSION_KEYS`)
  in a request that sets nothing else (:attr:`RequestKind.MISSION`), and nothing more.
* Some requests are for the operator alone, whatever hook they reach: a bank restore, clone or document import
  (:attr:`RequestKind.TRANSFER`) writes an archive's rows as they are, naming any bank or none.
* A grace-window token acts only inside a retain request (or over MCP, where it is shown the retain tools only).
* A request the guard did not label (``request=None``) is refused: the guard is not in front of this server.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from hindsight_isolation.principal import Kind, Principal
from hindsight_isolation.route import RequestKind
from memory_adapter.identity.bank_ids import BankOwner, parse_bank_id

__all__ = ["Action", "Decision", "authorize", "owns", "reaches"]


class Action(StrEnum):
    """What an operation does to a bank, as far as isolation cares."""

    RETAIN = "retain"  # add memories (text, files)
    CREATE_BANK = "create_bank"  # create a bank (explicitly, or implicitly on first retain)
    CONSOLIDATE = "consolidate"  # turn retained facts into observations (a retain queues it)
    READ = "read"  # recall, reflect, and every other read of bank content or settings
    WRITE = "write"  # change or delete bank content or settings
    LIST = "list"  # see a bank in a bank list
    OPERATOR_ONLY = "operator_only"  # webhooks, alias listing/deletion, config reset, maintenance
    CONFIG = "config"  # change bank settings: the operator's; the agent key's for a mission update (MISSION)
    WHOLE_BANK = "whole_bank"  # any operation on a whole bank (the tag-scope backstop): its own hook decides the rest
    NEVER = "never"  # alias creation: it lets one bank capture requests meant for another id


@dataclass(frozen=True, slots=True)
class Decision:
    """An authorization outcome. ``reason`` is for the log, never for the caller."""

    allowed: bool
    reason: str

    def __bool__(self) -> bool:
        return self.allowed


_ALLOW_OWNER = Decision(True, "owner")
#: What an expired token within the grace window may still do: a retain and what the server does because of it.
_GRACE_ACTIONS = frozenset({Action.RETAIN, Action.CREATE_BANK, Action.CONSOLIDATE, Action.WHOLE_BANK})
#: The requests inside which a grace-window token may do those (over MCP it is shown the retain tools only).
_GRACE_REQUESTS = frozenset({RequestKind.RETAIN, RequestKind.MCP})
_TRANSFER_REASON = "bank restore, clone and document import are the operator's (archive rows are kept as they are)"
_SETTINGS_REASON = "bank settings are the operator's (a user token sets none; the agent key sets missions only)"
_MISSION_REASON = "a bank's missions are set by the operator, the agent key or the server, never by a user token"
_UNGUARDED_REASON = "request did not pass the request guard (hindsight_isolation.guard is not in front)"


def owns(principal: Principal, owner: BankOwner) -> bool:
    """Whether ``owner`` (a parsed bank id) is within ``principal``'s reach (operators reach everything)."""
    if principal.kind is Kind.OPERATOR:
        return True
    if principal.kind is Kind.AGENT:
        return owner.agent == principal.agent and (principal.any_tenant or owner.tenant == principal.tenant)
    if owner.tenant != principal.tenant:
        return False
    return owner.user == principal.user


def authorize(
    principal: Principal | None,
    bank_id: str,
    action: Action,
    *,
    internal: bool = False,
    request: RequestKind | None = RequestKind.OTHER,
) -> Decision:
    """Decide whether ``principal`` may perform ``action`` on ``bank_id``.

    Args:
        principal: The authenticated caller, or ``None`` when the request carries none of ours.
        bank_id: The bank the operation names (already resolved from any alias by Hindsight).
        action: What the operation does.
        internal: True for work the server runs itself (the worker, follow-up tasks).
        request: The kind of HTTP request being served (:func:`hindsight_isolation.route.current`); ``None``: the
            request did not pass the guard.
    """
    if internal:
        if principal is None:
            return Decision(True, "server housekeeping")
        return reaches(principal, bank_id)
    if principal is None:
        return Decision(False, "request carries no authenticated principal")
    if request is None:
        return Decision(False, _UNGUARDED_REASON)
    if action is Action.NEVER:
        return Decision(False, f"{action.value}: refused to every caller (bank aliases can redirect other users)")
    if principal.kind is Kind.OPERATOR:
        return Decision(True, "operator")
    if request is RequestKind.TRANSFER:
        return Decision(False, _TRANSFER_REASON)
    if request is RequestKind.SETTINGS:
        return Decision(False, _SETTINGS_REASON)
    if request is RequestKind.MISSION and principal.kind is not Kind.AGENT:
        return Decision(False, _MISSION_REASON)
    if action is Action.OPERATOR_ONLY:
        return Decision(False, "operator-only operation")
    if action is Action.CONFIG and not (request is RequestKind.MISSION and principal.kind is Kind.AGENT):
        return Decision(False, _SETTINGS_REASON)
    if principal.kind is Kind.USER_GRACE:
        if action not in _GRACE_ACTIONS:
            return Decision(False, f"expired token (grace window) may only retain, not {action.value}")
        if request not in _GRACE_REQUESTS:
            return Decision(False, f"expired token (grace window) may only send retains, not {request.value} requests")
    return reaches(principal, bank_id)


def reaches(principal: Principal, bank_id: str) -> Decision:
    """Ownership alone: whether ``bank_id`` is within ``principal``'s reach, whatever the action."""
    if principal.kind is Kind.OPERATOR:
        return Decision(True, "operator")
    owner = parse_bank_id(bank_id)
    if owner is None:
        return Decision(False, "bank id is not of the per-user scheme")
    if not owns(principal, owner):
        return Decision(False, "bank belongs to another identity")
    return _ALLOW_OWNER

"""The server applies each agent's configured mission to that agent's banks itself, so no user's token ever needs to.

A mission (what an agent's memory keeps: ``cdk.json``'s ``missions.<agent>``, :class:`memory_adapter.missions.Missions`)
is the deployment's policy, and a user's token may set no bank setting (:mod:`hindsight_isolation.policy`). An agent
that sends its users' tokens (a JWT-authorized runtime) therefore cannot apply it; Hindsight does, from
``HINDSIGHT_API_TENANT_MISSIONS`` (the same JSON as the agent's ``HINDSIGHT_ADAPTER_MISSIONS``): before a caller's
retain into a bank of a per-user id (REST or MCP, any credential), the validator's ``validate_retain`` hook calls
:func:`before_retain`, which creates the bank if needed (through Hindsight's own bank creation, so its hooks run) and
writes the fields of the agent's mission the bank does not have yet, once per bank per server process. A mission
changed in ``cdk.json`` reaches every bank at its next retain after the tasks restart.

Never raises: a failure is logged and the retain goes on (the next retain into that bank tries again).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from memory_adapter.identity.bank_ids import parse_bank_id
from memory_adapter.missions import Missions

__all__ = ["before_retain", "configure"]

logger = logging.getLogger("hindsight_isolation")


@dataclass(slots=True)
class _State:
    missions: Missions = field(default_factory=Missions)
    settled: set[str] = field(default_factory=set)


_state = _State()


def configure(missions: Missions) -> None:
    """Set the missions this server applies (called once by the tenant extension at start-up)."""
    _state.missions = missions
    _state.settled = set()


async def before_retain(engine: Any, bank_id: str, request_context: Any) -> None:
    """Bring ``bank_id``'s settings in line with its agent's mission before a retain (a no-op once settled)."""
    if bank_id in _state.settled or not _state.missions.by_agent:
        return
    owner = parse_bank_id(bank_id)
    mission = _state.missions.for_agent(owner.agent) if owner is not None else None
    wanted = mission.updates() if mission is not None else {}
    if not wanted:
        _state.settled.add(bank_id)
        return
    try:
        resolver = engine._config_resolver
        await engine._ensure_bank_exists(bank_id, request_context)
        overrides = await resolver._load_bank_config(bank_id, cached=False)
        changed = {key: value for key, value in wanted.items() if overrides.get(key) != value}
        if changed:
            # The server's own write (like Hindsight's default bank template): no caller's field permissions apply.
            validated = await resolver.validate_bank_config_updates(
                bank_id, changed, request_context, check_permissions=False
            )
            await resolver._persist_bank_config(bank_id, validated)
            logger.info("hindsight_isolation: mission applied to bank %r: %s", bank_id, ", ".join(sorted(changed)))
    except Exception:  # a failure here must never cost the retain
        logger.exception(
            "hindsight_isolation: the mission of bank %r could not be applied (next retain retries)", bank_id
        )
        return
    _state.settled.add(bank_id)

"""Applying the missions (:mod:`memory_adapter.missions`, the value) to banks: the half that speaks Hindsight's wire,
kept apart so the value can be imported (by the CDK configuration and Hindsight's isolation extension) without it.
"""

from __future__ import annotations

import logging
import threading

from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.exceptions import HindsightRequestError, HindsightUnavailableError
from memory_adapter.identity.bank_ids import parse_bank_id
from memory_adapter.missions import Missions
from memory_adapter.observability import Observer, short_hash

__all__ = ["BankMissions"]


class BankMissions:
    """Applies each bank's agent mission once per process, before the first retain this process delivers there.

    Args:
        api: The adapter's Hindsight API client (its transport and timeout).
        missions: The configured missions.
        observer: Logs (bank ids hashed).

    Only a retain sent with the agent's own key applies a mission (a static ``HINDSIGHT_API_KEY`` or the one an IAM
    runtime reads from Secrets Manager: an opaque secret); one sent with a user's token (a JWT: three dot-separated
    parts) or none asks for nothing, since a user's token may set no bank setting and Hindsight applies the mission
    itself. Telling the two apart by shape is safe: the server decides, a wrong guess costs one refused request.

    :meth:`prepare` never raises: a bank whose mission could not be applied now (Hindsight unavailable) is tried
    again on its next retain; one Hindsight refuses (a server whose isolation extension keeps bank settings the
    operator's) is logged once and left as it is, and its retains go on.
    """

    def __init__(self, *, api: HindsightApi, missions: Missions, observer: Observer) -> None:
        self._api = api
        self._missions = missions
        self._obs = observer
        self._settled: set[str] = set()
        self._lock = threading.Lock()

    def prepare(self, bank_id: str, bearer: str | None) -> None:
        """Bring ``bank_id``'s settings in line with its agent's mission (a no-op once settled in this process)."""
        if bank_id in self._settled or not self._missions.by_agent:
            return
        if bearer is None or _is_token(bearer):
            return  # a user's token sets no bank setting: Hindsight applies the mission itself
        owner = parse_bank_id(bank_id)
        mission = self._missions.for_agent(owner.agent) if owner is not None else None
        wanted = mission.updates() if mission is not None else {}
        if not wanted:
            self._settle(bank_id)
            return
        try:
            changed = self._apply(bank_id, wanted, bearer)
        except HindsightUnavailableError as exc:
            self._obs.event(
                logging.INFO, "memory mission not applied yet", event="mission.deferred", bank=short_hash(bank_id),
                error=str(exc)[:200],
            )  # fmt: skip
            return
        except HindsightRequestError as exc:
            self._obs.event(
                logging.WARNING, "memory mission refused by Hindsight", event="mission.refused",
                bank=short_hash(bank_id), status=exc.status,
            )  # fmt: skip
        except Exception:  # a bug here must never cost the retain that follows
            logging.getLogger("memory_adapter").exception("memory mission failed")
            return
        else:
            if changed:
                self._obs.event(
                    logging.INFO, "memory mission applied", event="mission.applied", bank=short_hash(bank_id),
                    keys=",".join(sorted(changed)),
                )  # fmt: skip
        self._settle(bank_id)

    def _settle(self, bank_id: str) -> None:
        with self._lock:
            self._settled.add(bank_id)

    def _apply(self, bank_id: str, wanted: dict[str, str], bearer: str | None) -> list[str]:
        """Write the fields of ``wanted`` the bank does not have yet; return their names."""
        overrides = self._api.bank_config_overrides(bank_id, bearer=bearer) or {}  # None: the write creates it
        changed = {key: value for key, value in wanted.items() if overrides.get(key) != value}
        if changed:
            self._api.update_bank_config(bank_id, changed, bearer=bearer)
        return sorted(changed)


def _is_token(bearer: str) -> bool:
    """Whether ``bearer`` is shaped like a JWT (a user's token), not an opaque key (the generated keys have no dot)."""
    parts = bearer.split(".")
    return len(parts) == 3 and all(parts)

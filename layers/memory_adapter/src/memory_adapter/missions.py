"""What memory keeps, per agent: the extraction missions of ``cdk.json``'s ``missions`` section (the value; what
applies it to banks is :mod:`memory_adapter.bank_missions`).

Hindsight steers extraction per bank (``retain_mission``: what to keep; ``retain_extraction_mode``: how much;
``reflect_mission``: how reflect answers; see ``/v1/default/banks/{bank_id}/config``). A mission belongs to an agent
(``missions.<agent name>``), so every user's bank of that agent gets the same one. It is the deployment's policy:
a user's token cannot change it (the isolation extension refuses every bank-setting write to user tokens). The setting
reaches the process as JSON in ``HINDSIGHT_ADAPTER_MISSIONS`` (agent name -> mission); an agent holding the agent key
(``auth.mode=iam``) applies it with that key: :class:`~memory_adapter.bank_missions.BankMissions` writes it to each
bank the first time this process delivers into it, before that retain, on the delivery thread (never on the turn's):
it reads the bank's overrides back and writes only when they differ, so a bank created elsewhere, or a mission
changed in ``cdk.json`` since, is brought up to date, and an unchanged bank costs one read per process. A retain sent
with a user's token leaves missions to Hindsight, which applies the configured mission itself
(``HINDSIGHT_API_TENANT_MISSIONS``, see hindsight_isolation/README.md).

A field left out (``None``) is not managed: the bank keeps whatever it has. ``""`` as ``retain_mission`` or
``reflect_mission`` clears it (Hindsight treats an empty mission as none).

Standard library only, and no wire: the CDK configuration and Hindsight's isolation extension import this module
(:data:`MISSION_KEYS`, :class:`Missions`) without loading the adapter's HTTP client.

Example:
    >>> missions = Missions.from_json('{"support": {"retain_mission": "Keep preferences and decisions."}}')
    >>> missions.for_agent("support").updates()
    {'retain_mission': 'Keep preferences and decisions.'}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from memory_adapter.constants import ADAPTER_ENV_PREFIX
from memory_adapter.exceptions import HindsightAgentCoreError

__all__ = [
    "EXTRACTION_MODES",
    "MAX_MISSION_CHARS",
    "MISSIONS_ENV",
    "MISSION_KEYS",
    "Mission",
    "Missions",
    "MissionsError",
]

MISSIONS_ENV: Final = ADAPTER_ENV_PREFIX + "MISSIONS"
#: The bank settings a mission sets: the only bank-config keys a bank's owner may write (the isolation extension
#: keeps every other key the operator's).
MISSION_KEYS: Final = ("retain_mission", "retain_extraction_mode", "reflect_mission")
#: Hindsight 1.1.0's extraction modes a mission may pick ("custom" needs instructions a mission does not carry).
EXTRACTION_MODES: Final = ("concise", "verbose", "verbatim", "chunks")
#: Longest mission text accepted, here and by the isolation extension (it rides in every extraction prompt).
MAX_MISSION_CHARS: Final = 4000


class MissionsError(HindsightAgentCoreError, ValueError):
    """The missions setting is unusable; the message lists every problem."""


@dataclass(frozen=True, slots=True)
class Mission:
    """One agent's bank settings (``None``: not managed, the bank keeps its own)."""

    retain_mission: str | None = None
    retain_extraction_mode: str | None = None
    reflect_mission: str | None = None

    def updates(self) -> dict[str, str]:
        """The bank-config overrides this mission sets (the managed fields only)."""
        return {key: value for key in MISSION_KEYS if (value := getattr(self, key)) is not None}


@dataclass(frozen=True, slots=True)
class Missions:
    """Agent name -> :class:`Mission`. Build with :meth:`from_mapping` (``cdk.json``) or :meth:`from_json` (env)."""

    by_agent: Mapping[str, Mission] = field(default_factory=dict)

    @classmethod
    def checked(cls, raw: Any, *, shown_prefix: str = "missions.") -> tuple[Missions, list[str]]:
        """The missions of ``raw`` (agent name -> {field: text}) and every problem, one message each (an agent
        whose mission has a problem is left out)."""
        if raw is None:
            return cls(), []
        if not isinstance(raw, Mapping):
            return cls(), [f"{shown_prefix.rstrip('.')} must be an object of agent name -> mission"]
        by_agent: dict[str, Mission] = {}
        problems: list[str] = []
        for agent, spec in raw.items():
            name = f"{shown_prefix}{agent}"
            if not isinstance(agent, str) or not agent.strip():
                problems.append(f"{shown_prefix}: an agent name must not be blank")
                continue
            if not isinstance(spec, Mapping):
                problems.append(f"{name} must be an object with any of {', '.join(MISSION_KEYS)}")
                continue
            found = len(problems)
            unknown = sorted(set(spec) - set(MISSION_KEYS))
            problems.extend(
                f"{name}.{key} is not a mission setting (known: {', '.join(MISSION_KEYS)})" for key in unknown
            )
            for key in MISSION_KEYS:
                value = spec.get(key)
                if value is not None and not isinstance(value, str):
                    problems.append(f"{name}.{key} must be text or null, got {value!r}")
                elif value is not None and len(value) > MAX_MISSION_CHARS:
                    problems.append(f"{name}.{key} is longer than {MAX_MISSION_CHARS} characters")
            mode = spec.get("retain_extraction_mode")
            if isinstance(mode, str) and mode not in EXTRACTION_MODES:
                problems.append(
                    f"{name}.retain_extraction_mode must be one of {', '.join(EXTRACTION_MODES)}, got {mode!r}"
                )
            if len(problems) == found:
                by_agent[agent] = Mission(**{key: spec.get(key) for key in MISSION_KEYS})
        return cls(by_agent), problems

    @classmethod
    def from_mapping(cls, raw: Any) -> Missions:
        """:meth:`checked`, raising :class:`MissionsError` on any problem."""
        missions, problems = cls.checked(raw)
        if problems:
            raise MissionsError("invalid missions: " + "; ".join(problems))
        return missions

    @classmethod
    def from_json(cls, text: str | None) -> Missions:
        """:meth:`from_mapping` of a JSON object (``None`` or blank: no missions)."""
        if text is None or not text.strip():
            return cls()
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MissionsError(f"{MISSIONS_ENV} is not valid JSON: {exc}") from exc
        return cls.from_mapping(raw)

    def for_agent(self, agent: str) -> Mission | None:
        """The mission of ``agent`` (``None``: none configured)."""
        return self.by_agent.get(agent)

    def to_json(self) -> str:
        """The missions as :meth:`from_json` reads them (agents sorted, managed fields only)."""
        return json.dumps({a: m.updates() for a, m in sorted(self.by_agent.items())}, sort_keys=True)

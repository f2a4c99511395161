"""The ``missions`` section: what memory keeps, per agent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memory_adapter.missions import Mission, Missions


@dataclass(frozen=True)
class MissionsConfig:
    """What memory keeps, per agent: ``missions.<agent name>`` holds that agent's ``retain_mission``,
    ``retain_extraction_mode`` and ``reflect_mission`` (Hindsight's bank settings), applied to every bank of the agent.

    Read by :class:`~memory_adapter.missions.Missions` (the fields and their rules are defined there, once); set in
    ``cdk.json`` only (there is no ``-c missions.<agent>`` override: a mission is a paragraph, not a flag).
    """

    missions: Missions

    @staticmethod
    def section_keys() -> tuple[str, ...]:
        """No ``-c`` keys: the section's keys are agent names."""
        return ()

    @classmethod
    def from_section(cls, raw: Mapping[str, Any], shown_prefix: str) -> tuple[MissionsConfig, list[str]]:
        """The section as read from context, and every problem with it."""
        missions, problems = Missions.checked(raw, shown_prefix=shown_prefix)
        return cls(missions), problems

    def for_agent(self, agent: str) -> Mission | None:
        """The mission of ``agent`` (``None``: its banks keep Hindsight's defaults)."""
        return self.missions.for_agent(agent)

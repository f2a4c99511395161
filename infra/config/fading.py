"""The ``fading`` section: fading and reinforcement of memories."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hindsight_isolation.fading import DEFAULT_FLOOR, FadingRules
from memory_adapter.kinds import MemoryKind


@dataclass(frozen=True)
class FadingConfig:
    """Fading and reinforcement of memories (docs/operating.md#fading-and-reinforcement): ``fading.enabled`` (off by
    default: it lowered recall on the eval, BENCHMARKS.md), ``fading.floor`` and ``fading.<kind>`` half-life days
    (``null``: that kind never fades). The kinds, defaults and rule are :class:`hindsight_isolation.fading.FadingRules`'
    alone; the extension reads the same rules from its environment."""

    enabled: bool
    rules: FadingRules

    @staticmethod
    def section_keys() -> tuple[str, ...]:
        """The keys the section may hold (``-c fading.enabled=true``, ``-c fading.<kind>=<days>``)."""
        return ("enabled", "floor", *(kind.value for kind in MemoryKind))

    @classmethod
    def from_section(cls, raw: Mapping[str, Any], shown_prefix: str) -> tuple[FadingConfig, list[str]]:
        """The section as read from context (``-c`` values arrive as text), and every problem with it."""
        problems = [
            f"{shown_prefix}{key} is not a setting: use enabled, floor or a memory kind "
            f"({', '.join(kind.value for kind in MemoryKind)})"
            for key in sorted(set(raw) - set(cls.section_keys()))
        ]
        enabled = raw.get("enabled", False)
        if isinstance(enabled, str) and enabled.strip().lower() in ("true", "false"):
            enabled = enabled.strip().lower() == "true"
        if not isinstance(enabled, bool):
            problems.append(f"{shown_prefix}enabled must be true or false")
            enabled = False
        floor = _number(raw.get("floor", DEFAULT_FLOOR))
        if isinstance(floor, bool) or not isinstance(floor, int | float):
            problems.append(f"{shown_prefix}floor must be a number from 0 to below 1, got {floor!r}")
            floor = DEFAULT_FLOOR
        kinds = {kind.value for kind in MemoryKind}
        half_lives = {key: _number(value) for key, value in raw.items() if key in kinds}
        rules, found = FadingRules.checked(half_lives, floor=floor, shown=shown_prefix.rstrip("."))
        problems.extend(found)
        return cls(enabled, rules), problems


def _number(value: Any) -> Any:
    """A number given as text on the command line (``-c fading.plan=7``) as a float; anything else as it is."""
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return value
    return value

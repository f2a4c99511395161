"""The ``retention`` section: how many days each memory kind is kept."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memory_adapter.kinds import MemoryKind, RetentionRules


@dataclass(frozen=True)
class RetentionConfig:
    """How many days each memory kind is kept: ``retention.<kind>`` (``null``: kept until someone forgets it).

    Not one field per setting: the kinds, their defaults and the rule are :mod:`memory_adapter.kinds`' alone (the
    functions read the same rules from ``MEMORY_RETENTION_DAYS``), so this section is read by
    :class:`~memory_adapter.kinds.RetentionRules`; a kind left out keeps its default.
    """

    rules: RetentionRules

    @staticmethod
    def section_keys() -> tuple[str, ...]:
        """The keys the section may hold (``-c retention.<kind>=<days>``): the memory kinds."""
        return tuple(kind.value for kind in MemoryKind)

    @classmethod
    def from_section(cls, raw: Mapping[str, Any], shown_prefix: str) -> tuple[RetentionConfig, list[str]]:
        """The section as read from context (``-c`` values arrive as text), and every problem with it."""
        values = {
            key: int(value.strip()) if isinstance(value, str) and value.strip().isdigit() else value
            for key, value in raw.items()
        }
        rules, problems = RetentionRules.checked(values, shown_prefix=shown_prefix)
        return cls(rules), problems

"""Fading and reinforcement: a memory not recalled for long ranks lower and, below a floor, is no longer recalled.

The memory model's natural decay (docs/memory.md#fading-and-reinforcement). A memory's *strength* is
``0.5 ** (age / half-life)``, where the age runs from the last time a recall returned it, or, never recalled, from
when it was told (``mentioned_at``: the turn's own time, so imported history keeps its age; else its creation). The
half-life is per kind (:mod:`memory_adapter.kinds`; ``None``: that kind never fades). A recall's results are
re-ranked by ``final score x strength``; those whose strength is below the floor are left out (they stay in the
bank: listed, exported, restorable). Every memory a recall returns is reinforced: its clock restarts.

Why in the server and not the adapter: AgentCore sessions are short-lived microVMs and Hindsight runs several
workers and tasks, so a usage record kept in any one process is lost or partial; the record must live in the
database every server process shares (:mod:`hindsight_isolation.usage`), and applying it where the recall is
answered gives every client (the adapter, the raw client, MCP) the same behaviour. This module is the pure part:
the rules, the re-ranking and the clock. Standard library only (the settings and the tests import it).

Off by default: on the LoCoMo dev conversations, whose questions reach months back, it lowers recall
(BENCHMARKS.md, "Fading").

Example:
    >>> rules = FadingRules.from_mapping({"turn": 30})
    >>> round(rules.strength(MemoryKind.TURN, age_days=30), 2), rules.strength(MemoryKind.FACT, age_days=3650)
    (0.5, 1.0)
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Protocol

from memory_adapter.kinds import MemoryKind, kind_of

__all__ = [
    "CLOCK_HEADER",
    "DEFAULT_FLOOR",
    "DEFAULT_HALF_LIFE_DAYS",
    "FadingRules",
    "FadingRulesError",
    "Ranked",
    "clocked",
    "parse_instant",
    "request_clock",
    "rerank",
]

#: Header that sets "now" for one request, honoured only when the server's ``FADING_CLOCK_HEADER`` setting is on
#: (tests and local runs: the deployed stack never sets it).
CLOCK_HEADER: Final = "x-memory-clock"
#: A memory weaker than this is left out of recall (about 3.3 half-lives without a recall).
DEFAULT_FLOOR: Final = 0.1
#: Days until an unrecalled memory of each kind has half its strength (``None``: never fades). The memory model
#: keeps facts, preferences, decisions and solutions indefinitely; plans and problems are short-lived.
DEFAULT_HALF_LIFE_DAYS: Final[Mapping[MemoryKind, float | None]] = {
    MemoryKind.PREFERENCE: None,
    MemoryKind.DECISION: None,
    MemoryKind.FACT: None,
    MemoryKind.SOLUTION: None,
    MemoryKind.PLAN: 14.0,
    MemoryKind.PROBLEM: 30.0,
    MemoryKind.TURN: 60.0,
}
_DAY_S: Final = 86_400.0
_MAX_HALF_LIFE_DAYS: Final = 36_500.0


class FadingRulesError(ValueError):
    """The fading settings are unusable; the message lists every problem."""


@dataclass(frozen=True, slots=True)
class FadingRules:
    """Half-life per kind and the floor. Build with :meth:`from_mapping` or :meth:`checked`."""

    half_life_days: Mapping[MemoryKind, float | None] = field(default_factory=lambda: dict(DEFAULT_HALF_LIFE_DAYS))
    floor: float = DEFAULT_FLOOR

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any] | None, *, floor: float = DEFAULT_FLOOR) -> FadingRules:
        """Defaults overlaid with ``raw`` (kind -> half-life days > 0, or ``None``: never fades); all errors at once."""
        rules, problems = cls.checked(raw, floor=floor)
        if problems:
            raise FadingRulesError("invalid fading: " + "; ".join(problems))
        return rules

    @classmethod
    def checked(
        cls, raw: Mapping[str, Any] | None, *, floor: float = DEFAULT_FLOOR, shown: str = "fading"
    ) -> tuple[FadingRules, list[str]]:
        """:meth:`from_mapping` without raising: the rules (defaults where ``raw`` is unusable) and every problem."""
        days: dict[MemoryKind, float | None] = dict(DEFAULT_HALF_LIFE_DAYS)
        problems: list[str] = []
        known = ", ".join(k.value for k in MemoryKind)
        for name, value in (raw or {}).items():
            try:
                kind = MemoryKind(name)
            except ValueError:
                problems.append(f"{shown}: {name!r} is not a memory kind (known: {known})")
                continue
            if value is None:
                days[kind] = None
            elif (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0 < value <= _MAX_HALF_LIFE_DAYS
            ):
                problems.append(
                    f"{shown}: the half-life of {name} must be days above 0 and at most {_MAX_HALF_LIFE_DAYS:.0f}, "
                    f"or null to never fade; got {value!r}"
                )
            else:
                days[kind] = float(value)
        if not 0 <= floor < 1:
            problems.append(f"{shown}: the floor must be from 0 (never left out) to below 1, got {floor!r}")
            floor = DEFAULT_FLOOR
        return cls(days, floor), problems

    @classmethod
    def from_json(cls, text: str | None, *, floor: float = DEFAULT_FLOOR) -> FadingRules:
        """:meth:`from_mapping` of a JSON object (``None`` or blank: the defaults)."""
        if text is None or not text.strip():
            return cls(floor=floor)
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FadingRulesError(f"fading half-lives are not valid JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise FadingRulesError("fading half-lives must be a JSON object of kind -> days")
        return cls.from_mapping(raw, floor=floor)

    def strength(self, kind: MemoryKind, *, age_days: float) -> float:
        """How strong a memory of ``kind`` is after ``age_days`` without a recall (1.0 fresh; a kind that never
        fades stays 1.0; a negative age, a clock behind the memory, counts as fresh)."""
        half_life = self.half_life_days.get(kind, DEFAULT_HALF_LIFE_DAYS[kind])
        if half_life is None or age_days <= 0:
            return 1.0
        return float(0.5 ** (age_days / half_life))


class Result(Protocol):
    """What :func:`rerank` reads of a recall result (Hindsight's ``MemoryFact``)."""

    id: str
    tags: list[str] | None
    metadata: dict[str, str] | None


@dataclass(frozen=True, slots=True)
class Ranked:
    """One result after fading: kept or left out, its strength, and the score it ranks by."""

    index: int
    strength: float
    score: float
    kept: bool


def rerank(
    results: Sequence[Result],
    scores: Sequence[float],
    last_seen: Mapping[str, datetime],
    rules: FadingRules,
    now: datetime,
) -> list[Ranked]:
    """The results in their new order (kept ones first, by ``score x strength``, ties in the old order), then the
    ones left out (strength below the floor).

    Args:
        results: The recall's results, best first.
        scores: Each result's final score (same order).
        last_seen: Memory id -> when it was last recalled, or told when never recalled; a missing id is fresh.
        rules: The half-lives and the floor.
        now: The clock (:func:`request_clock` or the server's time).
    """
    ranked = []
    for index, (result, score) in enumerate(zip(results, scores, strict=True)):
        seen = last_seen.get(str(result.id))
        age_days = (now - seen).total_seconds() / _DAY_S if seen is not None else 0.0
        strength = rules.strength(kind_of(result.tags, result.metadata), age_days=age_days)
        ranked.append(Ranked(index, strength, score * strength, strength >= rules.floor))
    return sorted(ranked, key=lambda r: (not r.kept, -r.score, r.index))


def parse_instant(text: str) -> datetime:
    """An ISO 8601 instant (naive means UTC); raises ``ValueError`` with a message naming the expected form."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 instant such as 2026-03-01T12:00:00Z") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


_clock: ContextVar[datetime | None] = ContextVar("hindsight_isolation_fading_clock", default=None)


@contextmanager
def clocked(now: datetime | None) -> Iterator[None]:
    """Serve the enclosed request with ``now`` as its clock (``None``: the server's; the guard sets it from
    :data:`CLOCK_HEADER` when the server allows it)."""
    token = _clock.set(now)
    try:
        yield
    finally:
        _clock.reset(token)


def request_clock(fixed: datetime | None = None) -> datetime:
    """ "Now" for fading: the request's clock, else ``fixed`` (the ``FADING_CLOCK`` setting), else the time."""
    return _clock.get() or fixed or datetime.now(UTC)

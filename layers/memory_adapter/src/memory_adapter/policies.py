"""Recall and retention policies (prior-art names, fields and defaults), and the retry policy of retains."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from memory_adapter.kinds import MemoryKind

__all__ = ["RecallPolicy", "RetentionPolicy", "RetryPolicy"]


@dataclass
class RecallPolicy:
    """How memories are retrieved before a turn.

    Attributes:
        mode: ``"recall"`` for retrieval, ``"reflect"`` for an LLM-synthesised answer (slower: raise
            ``recall_timeout`` accordingly).
        budget: Hindsight search depth, ``"low"``, ``"mid"`` or ``"high"``; ``None`` uses the configured budget.
        max_tokens: Maximum tokens in the retrieved block; ``None`` uses the configured value.
    """

    mode: str = "recall"
    budget: str | None = None
    max_tokens: int | None = None


@dataclass
class RetentionPolicy:
    """How a turn is retained after it ran.

    Attributes:
        context_label: Provenance label stored with each retained memory.
        extra_tags: Tags added after the turn's own tags and the configured tags.
        extra_metadata: Metadata merged over the turn's own metadata.
        include_user_message: Store ``User: {query}\\nAssistant: {result}`` rather than the result alone.
        kind: The kind every retained item carries (tag ``kind:<kind>`` and metadata ``kind``), which decides how
            long it is kept (:mod:`memory_adapter.kinds`); automatic turns are ``turn``.
    """

    context_label: str = "agentcore-runtime:conversation_turn"
    extra_tags: list[str] = field(default_factory=list)
    extra_metadata: dict[str, str] = field(default_factory=dict)
    include_user_message: bool = True
    kind: MemoryKind = MemoryKind.TURN


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded retries: ``max_retries`` after the first attempt, delay ``min(max, base * 2**n)`` with full jitter."""

    max_retries: int
    base_delay: float
    max_delay: float

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        ceiling = min(self.max_delay, self.base_delay * (2**retry))
        if retry_after is not None:
            ceiling = min(self.max_delay, max(ceiling, retry_after))
        return rng.uniform(0, ceiling)

"""The baselines over raw turns: BM25 and naive vector RAG, and the block either would hand a model.

Both index each turn as ``speaker: text`` (the LoCoMo paper's retrieval unit) and return turn ids best first. BM25
is the classic Okapi formula (k1 = 1.2, b = 0.75) over lowercased word tokens, a few lines rather than a dependency.
Vector RAG embeds the same lines with the model the local Hindsight uses (:class:`~bench.eval.helper.VenvHelper`)
and ranks by cosine similarity.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from bench.eval.data import Turn

__all__ = ["BM25", "LAYOUTS", "prior_art", "prior_text", "rag_block", "rag_line"]

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the and or of to in on at is was were be been it i you he she we they my your do did what".split()  # noqa: SIM905
)


def _tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


class BM25:
    """Okapi BM25 over a fixed list of documents."""

    def __init__(self, documents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self._docs = [Counter(_tokens(d)) for d in documents]
        self._lengths = [sum(d.values()) for d in self._docs]
        self._avg = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0
        df: Counter[str] = Counter()
        for doc in self._docs:
            df.update(doc.keys())
        n = len(self._docs)
        self._idf = {term: math.log(1 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}
        self._k1, self._b = k1, b

    def rank(self, query: str, k: int) -> list[int]:
        """Indices of the ``k`` best documents for ``query``, best first (ties by position)."""
        terms = [t for t in set(_tokens(query)) if t in self._idf]
        scores: list[tuple[float, int]] = []
        for index, (doc, length) in enumerate(zip(self._docs, self._lengths, strict=True)):
            score = 0.0
            for term in terms:
                tf = doc.get(term, 0)
                if tf:
                    norm = tf + self._k1 * (1 - self._b + self._b * length / (self._avg or 1.0))
                    score += self._idf[term] * tf * (self._k1 + 1) / norm
            if score > 0:
                scores.append((-score, index))
        return [index for _, index in sorted(scores)[:k]]


def rag_line(turn: Turn) -> str:
    """One retrieved turn as a RAG prompt shows it: ``- speaker: text (date)``."""
    return f"- {turn.line} ({turn.at:%d %B %Y})"


def rag_block(turns: Sequence[Turn]) -> str:
    """The block naive RAG hands the model: its turns, one line each, with the session date."""
    return "\n".join(rag_line(t) for t in turns)


def prior_text(bullet: str) -> str:
    """The memory text of one prior-art bullet ``- {text} [{type}] ({mentioned_at})``."""
    text = bullet.strip().removeprefix("- ")
    if text.endswith(")") and " (" in text:
        text = text.rsplit(" (", 1)[0]
    if text.endswith("]") and " [" in text:
        text = text.rsplit(" [", 1)[0]
    return text.strip()


def prior_art() -> Any:
    try:
        import hindsight_agentcore  # type: ignore[import-not-found]
    except ModuleNotFoundError:
        return None
    return hindsight_agentcore


def _iso_time_block(memories: Sequence[Any]) -> str:
    """The block as it was before times were shortened (full ISO stamps), for ``"layout": "iso-times"``."""
    from memory_adapter.formatting import (
        MEMORY_BLOCK_CLOSE,
        MEMORY_BLOCK_NOTICE,
        MEMORY_BLOCK_OPEN,
        format_memories_as_bullets,
    )

    bullets = format_memories_as_bullets(memories)
    return f"{MEMORY_BLOCK_OPEN}\n{MEMORY_BLOCK_NOTICE}\n{bullets}\n{MEMORY_BLOCK_CLOSE}" if bullets else ""


#: Block layouts a variant can name (``{"adapter": {"layout": "iso-times"}}``) to compare against the default.
LAYOUTS: dict[str, Callable[[Sequence[Any]], str]] = {"iso-times": _iso_time_block}

"""Re-ranking Hindsight's candidates in the adapter, without a model: the injected block's order.

Hindsight 1.1.0 fuses its arms with plain, unweighted reciprocal-rank fusion (RRF), and without a cross-encoder (none
installs offline for the local stack) that fused order is the final one. On LoCoMo its whole candidate list held the
evidence for ~94 % of questions, but too low: its own semantic arm alone ranked better for every kind of question
but "when" ones, where the keyword arm's dates and names help (BENCHMARKS.md, "Recall quality"). The recall request
cannot choose arms, but each result carries its arm scores (``scores.semantic``, the cosine similarity), so the
adapter asks for a larger candidate list and fuses, again by RRF (k = 60):

* Hindsight's own order (weight 1),
* the order by semantic similarity (weight :data:`SEMANTIC_WEIGHT` for a question that is not about time; none for one
  that is, :func:`about_time`: it asks when, or names a year or a month; read from the query text only),
* a BM25 over the candidates' own text with the query's content words (weight 1): what the question names, ranked
  among the candidates rather than the whole bank.

Pure Python on ~300 short texts: a few milliseconds per recall (BENCHMARKS.md has the measured cost).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Final

from memory_adapter.formatting import RecalledMemory

__all__ = ["RRF_K", "SEMANTIC_WEIGHT", "about_time", "content_words", "rerank"]

#: The RRF constant Hindsight fuses its arms with.
RRF_K: Final = 60
#: Weight of the semantic-similarity order (Hindsight's order and the local BM25 weigh 1).
SEMANTIC_WEIGHT: Final = 2.0
_BM25_K1: Final = 1.2
_BM25_B: Final = 0.75
_WORD: Final = re.compile(r"[a-z0-9]+")
#: English function words: they match everywhere and name nothing.
_STOP: Final = frozenset(
    """a an the and or of to in on at is was were be been being it its i me my mine you your yours he him his she her
    hers we us our they them their do does did doing what which who whom whose when where why how that this these
    those there here am are has have had having for from with about as by into than then so if not no but can could
    would should will shall may might must up down out over under again just also very much many more most some any
    each every all both few other such own same too s t don didn doesn isn wasn weren aren ever""".split()  # noqa: SIM905
)
#: A question about time: "When ...", "What year ...", "How long ago ...", "Since when ...".
_WHEN: Final = re.compile(
    r"^\W*(?:when\b|what (?:year|month|date|day|time|week|season)\b|which (?:year|month|day|date|week)\b|"
    r"how long (?:ago|since|before|after|has|have|had|did|was|were|is)\b|since when\b|in which (?:year|month)\b)",
    re.IGNORECASE,
)
#: A date the question names: a year, or a month written as a name (capitalised and not the first word, so "May I
#: ..." and "march" the verb are not one). Hindsight's keyword arm holds dates as text; similarity does not.
_DATE: Final = re.compile(
    r"\b(?:19|20)\d\d\b|(?<=\W)(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December)\b"
)


def about_time(query: str) -> bool:
    """Whether ``query`` asks when something happened (or how long ago), or names a year or a month ("Where was Ana
    in 2022?", "What did Ana buy in May?"): its answer is found by its date more than by its meaning."""
    return _WHEN.search(query) is not None or _DATE.search(query.strip()) is not None


def content_words(text: str) -> list[str]:
    """The lowercased words of ``text`` that name something (function words left out)."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def _bm25(query: str, texts: Sequence[str]) -> list[float]:
    """Okapi BM25 of each text for ``query``'s content words, document frequencies taken over ``texts`` themselves."""
    docs = [Counter(content_words(t)) for t in texts]
    lengths = [sum(d.values()) for d in docs]
    average = (sum(lengths) / len(lengths) if lengths else 0.0) or 1.0
    words = set(content_words(query))
    frequency = Counter(w for d in docs for w in words if w in d)
    idf = {w: math.log(1 + (len(docs) - f + 0.5) / (f + 0.5)) for w, f in frequency.items()}
    scores = []
    for doc, length in zip(docs, lengths, strict=True):
        norm = _BM25_K1 * (1 - _BM25_B + _BM25_B * length / average)
        scores.append(sum(idf[w] * doc[w] * (_BM25_K1 + 1) / (doc[w] + norm) for w in idf if doc[w]))
    return scores


def _ranks(scores: Sequence[float]) -> list[int | None]:
    """Each item's 1-based rank by score, best first (ties keep their order); ``None`` where the score is 0."""
    order = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: -scores[i])
    ranks: list[int | None] = [None] * len(scores)
    for rank, index in enumerate(order, start=1):
        ranks[index] = rank
    return ranks


def rerank(query: str, memories: Sequence[RecalledMemory]) -> list[RecalledMemory]:
    """``memories`` (Hindsight's order, best first) in the fused order described in the module docstring."""
    semantic_weight = 0.0 if about_time(query) else SEMANTIC_WEIGHT
    semantic = _ranks([m.similarity or 0.0 for m in memories])
    lexical = _ranks(_bm25(query, [m.text for m in memories]))
    fused: list[float] = []
    for position, (by_meaning, by_words) in enumerate(zip(semantic, lexical, strict=True), start=1):
        score = 1.0 / (RRF_K + position)
        if by_meaning is not None:
            score += semantic_weight / (RRF_K + by_meaning)
        if by_words is not None:
            score += 1.0 / (RRF_K + by_words)
        fused.append(score)
    order = sorted(range(len(memories)), key=lambda i: (-fused[i], i))
    return [memories[i] for i in order]

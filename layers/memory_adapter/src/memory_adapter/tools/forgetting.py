"""What a forget selects and what removing it takes, decided once for the model's ``forget`` tool and the operator's
``forget-memory`` (``memory_adapter.admin.forget``), whoever's credential does the calls.

**Selection** (:func:`select`): the candidates are what Hindsight's recall of the description returns (its semantic
arm finds "my dog is called Pixel" for "my dog's name", though "name" is not in it); each carries the recall's
cosine similarity to the description. A candidate is *eligible* when it holds every significant word of the
description (:func:`~memory_adapter.tools.matching.coverage`, stem-aware: "peanut allergy" is in "allergic to
peanuts"), or holds some of them and is similar (:data:`SIMILAR_WITH_WORDS`), or is very similar alone
(:data:`SIMILAR_ALONE`). Of the eligible, those holding the largest share of the words are kept, and of those the
nearest (similarity within :data:`NEAREST_MARGIN` of the best): "where I live" selects "I live in Berlin", not "my
sister lives in Lisbon". So a description selects the memory it means (and any that are as near), and one that
matches nothing selects nothing, however near the search's hits are ("my cat's name" when only a dog has one).
The thresholds are cosine similarities of the embedding model the server uses: measured on the local
all-MiniLM-L6-v2 (a paraphrase scores ~0.45-0.65, an unrelated memory < 0.3); a result that only Hindsight's
keyword or graph arm surfaced has no similarity and counts as 0.

**Removal** (:func:`plan_removal`), on Hindsight 1.1.0, which cannot delete one memory unit (only a whole source
document, with every fact extracted from it):

* an observation is forgotten through the facts it was derived from (Hindsight re-derives or drops it);
* a document every live fact of which is chosen is **deleted** (``DELETE /documents/{id}``);
* a chosen fact whose document also holds facts that were *not* chosen is **invalidated** instead
  (``PATCH /memories/{id}``, ``state=invalidated``: out of recall, consolidation and the graph; kept in Hindsight's
  curation archive, and the source text stays): deleting its document would take the others with it.
  :attr:`Removal.shared` names those others, so a caller can say exactly what a source also holds.

Standard library only; the callers do the HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from memory_adapter.formatting import sanitize_text
from memory_adapter.kinds import MemoryKind, kind_of
from memory_adapter.tools.matching import coverage

__all__ = [
    "CURATABLE",
    "NEAREST_MARGIN",
    "SIMILAR_ALONE",
    "SIMILAR_WITH_WORDS",
    "Fact",
    "Removal",
    "fact_from",
    "plan_removal",
    "select",
    "usable",
]

#: The memory types Hindsight lets a caller curate (invalidate) and that documents hold; observations are derived.
CURATABLE: Final = frozenset({"world", "experience"})
#: Similarity at which a memory holding some (not all) of the description's words is eligible.
SIMILAR_WITH_WORDS: Final = 0.4
#: Similarity at which a memory holding none of the description's words is eligible.
SIMILAR_ALONE: Final = 0.6
#: How far below the nearest eligible memory (of the same share of words) another may be and still be selected.
NEAREST_MARGIN: Final = 0.05


@dataclass
class Fact:
    """One memory unit as Hindsight returned it (a fact or an observation), the fields forgetting needs."""

    id: str
    text: str
    type: str | None
    document_id: str | None
    mentioned_at: str | None = None
    kind: str = MemoryKind.TURN.value
    sources: list[str] = field(default_factory=list)
    similarity: float | None = None

    def public(self) -> dict[str, Any]:
        """What a caller is shown of it (the text sanitized)."""
        return {
            "id": self.id,
            "text": sanitize_text(self.text),
            "type": self.type,
            "kind": self.kind,
            "mentioned_at": self.mentioned_at,
        }


def usable(raw: Mapping[str, Any]) -> bool:
    """Whether a memory unit from Hindsight has the id and text a fact needs."""
    return isinstance(raw.get("id"), str) and isinstance(raw.get("text"), str)


def fact_from(raw: Mapping[str, Any]) -> Fact:
    """A :class:`Fact` from a recall result, a listing item or a memory unit (check :func:`usable` first)."""

    def text(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) and value else None

    tags = raw.get("tags")
    metadata = raw.get("metadata")
    sources = raw.get("source_fact_ids") or raw.get("source_memory_ids") or []
    scores = raw.get("scores")
    similarity = scores.get("semantic") if isinstance(scores, dict) else None
    return Fact(
        id=raw["id"],
        text=raw["text"],
        type=text("type") or text("fact_type"),
        document_id=text("document_id"),
        mentioned_at=text("mentioned_at"),
        kind=kind_of(tags if isinstance(tags, list) else None, metadata if isinstance(metadata, dict) else None).value,
        sources=[s for s in sources if isinstance(s, str)] if isinstance(sources, list) else [],
        similarity=float(similarity) if isinstance(similarity, int | float) else None,
    )


def select(description: str, candidates: Iterable[Fact]) -> list[Fact]:
    """The candidates (in their order) that ``description`` selects (see the module docstring)."""
    eligible: list[tuple[float, float, Fact]] = []
    for fact in candidates:
        share = coverage(description, fact.text)
        near = fact.similarity or 0.0
        if share == 1.0 or (share > 0.0 and near >= SIMILAR_WITH_WORDS) or near >= SIMILAR_ALONE:
            eligible.append((share, near, fact))
    if not eligible:
        return []
    most = max(share for share, _, _ in eligible)
    best = max(near for share, near, _ in eligible if share == most)
    return [fact for share, near, fact in eligible if share == most and near >= best - NEAREST_MARGIN]


@dataclass(frozen=True, slots=True)
class Removal:
    """What removing the chosen memories does.

    ``delete``: document id -> its facts, every one chosen (the document goes). ``invalidate``: chosen facts that stay
    in a document with others (or have none). ``shared``: document id -> the facts *not* chosen that share a source
    document with an invalidated fact (deleting that document would remove them).
    """

    delete: dict[str, list[Fact]]
    invalidate: list[Fact]
    shared: dict[str, list[Fact]]


def plan_removal(
    chosen: Iterable[Fact],
    *,
    lookup: Callable[[str], Fact | None],
    live_facts: Callable[[str], Iterable[Fact]],
) -> Removal:
    """Plan the removal of ``chosen`` (see the module docstring).

    Args:
        chosen: The selected memories (facts or observations).
        lookup: A memory unit by id (an observation's sources), or ``None``.
        live_facts: Every live (not invalidated) fact of a document.
    """
    facts: dict[str, Fact] = {}
    for fact in chosen:
        if fact.type in CURATABLE:
            facts[fact.id] = fact
        for source in fact.sources:  # an observation: forget what it was derived from
            found = lookup(source)
            if found is not None and found.type in CURATABLE:
                facts[found.id] = found
    by_document: dict[str | None, list[Fact]] = {}
    for fact in facts.values():
        by_document.setdefault(fact.document_id, []).append(fact)
    delete: dict[str, list[Fact]] = {}
    invalidate: list[Fact] = []
    shared: dict[str, list[Fact]] = {}
    for document_id, group in by_document.items():
        if document_id is None:
            invalidate += group
            continue
        ids = {fact.id for fact in group}
        others = [fact for fact in live_facts(document_id) if fact.id not in ids]
        if others:
            invalidate += group
            shared[document_id] = others
        else:
            delete[document_id] = group
    return Removal(delete=delete, invalidate=invalidate, shared=shared)

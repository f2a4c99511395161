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

The memories are :class:`~memory_adapter.formatting.RecalledMemory` (parsed once, by the wire module); standard
library only; the callers do the HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from memory_adapter.formatting import RecalledMemory
from memory_adapter.tools.matching import coverage

__all__ = [
    "CURATABLE",
    "NEAREST_MARGIN",
    "SIMILAR_ALONE",
    "SIMILAR_WITH_WORDS",
    "Removal",
    "identified",
    "plan_removal",
    "select",
]

#: The memory types Hindsight lets a caller curate (invalidate) and that documents hold; observations are derived.
CURATABLE: Final = frozenset({"world", "experience"})
#: Similarity at which a memory holding some (not all) of the description's words is eligible.
SIMILAR_WITH_WORDS: Final = 0.4
#: Similarity at which a memory holding none of the description's words is eligible.
SIMILAR_ALONE: Final = 0.6
#: How far below the nearest eligible memory (of the same share of words) another may be and still be selected.
NEAREST_MARGIN: Final = 0.05


def identified(memories: Iterable[RecalledMemory | None]) -> list[RecalledMemory]:
    """The memories that carry the id forgetting needs (a unit without one cannot be removed)."""
    return [m for m in memories if m is not None and m.id is not None]


def select(description: str, candidates: Iterable[RecalledMemory]) -> list[RecalledMemory]:
    """The candidates (in their order) that ``description`` selects (see the module docstring)."""
    eligible: list[tuple[float, float, RecalledMemory]] = []
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

    delete: dict[str, list[RecalledMemory]]
    invalidate: list[RecalledMemory]
    shared: dict[str, list[RecalledMemory]]


def plan_removal(
    chosen: Iterable[RecalledMemory],
    *,
    lookup: Callable[[str], RecalledMemory | None],
    live_facts: Callable[[str], Iterable[RecalledMemory]],
) -> Removal:
    """Plan the removal of ``chosen`` (see the module docstring).

    Args:
        chosen: The selected memories (facts or observations).
        lookup: A memory unit by id (an observation's sources), or ``None``.
        live_facts: Every live (not invalidated) fact of a document.
    """
    facts: dict[str | None, RecalledMemory] = {}
    for fact in chosen:
        if fact.type in CURATABLE:
            facts[fact.id] = fact
        for source in fact.sources:  # an observation: forget what it was derived from
            found = lookup(source)
            if found is not None and found.type in CURATABLE:
                facts[found.id] = found
    by_document: dict[str | None, list[RecalledMemory]] = {}
    for fact in facts.values():
        by_document.setdefault(fact.document_id, []).append(fact)
    delete: dict[str, list[RecalledMemory]] = {}
    invalidate: list[RecalledMemory] = []
    shared: dict[str, list[RecalledMemory]] = {}
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

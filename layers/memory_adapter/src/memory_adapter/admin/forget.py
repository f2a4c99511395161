"""Forgetting: a whole user (every bank, verified gone, with an erasure receipt), or chosen memories (previewed).

**A user.** Every bank of the (tenant, user), any agent, is deleted: Hindsight's bank delete removes the
documents, chunks, facts, observations, entities, links, mental models, directives, operations and files. Then
the result is verified from the outside (no bank of the user in the listing, each bank's stats, documents and
memories answer "no such bank", recalls of the deleted documents' own text return nothing), and an erasure receipt
(who asked, which banks, what counts, when, verification, a digest) is written next to the exports. It refuses
unless ``confirm`` repeats the user id; running it again finds nothing and writes a receipt saying so. A bank
Hindsight fails to delete (tried again only for a transient failure) does not stop the others: the receipt is
written anyway, ``outcome: partial`` with that bank under ``failed``, and the erasure raises
:class:`~memory_adapter.admin.errors.ErasureIncompleteError`; the next run deletes what is left and its receipt
names the partial one it ``continues``.

**Memories.** By id (one or more), or the memories a description selects by the model-facing ``forget`` tool's own
rule (:mod:`memory_adapter.tools.forgetting`: words matched by stem and the recall's similarity; a description that
matches nothing selects nothing), in the user's banks only. Removal is the tool's, one rule for both
(:func:`~memory_adapter.tools.forgetting.plan_removal`): only the selected facts go, other facts of the same source
turn stay recallable. A source turn every live memory of which is selected is deleted (text, chunks, facts;
Hindsight sweeps the observations built on them); a selected memory whose turn also holds memories that were not
selected is invalidated (out of recall; Hindsight 1.1.0 cannot delete one memory unit), and the preview names those
others, which stay. The preview lists exactly what would go and a confirmation digest; the removal runs only with
that digest, and only if the plan is still exactly what was previewed.
"""

from __future__ import annotations

import functools
import json
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from memory_adapter._hindsight_api import memory_from
from memory_adapter.admin.backup import per_bank
from memory_adapter.admin.errors import (
    ConfirmationError,
    ErasureIncompleteError,
    InvalidRequestError,
    VerificationError,
)
from memory_adapter.admin.inventory import Subject, bank_summary, subject_banks
from memory_adapter.admin.receipts import canonical_digest, seal
from memory_adapter.exceptions import HindsightAgentCoreError
from memory_adapter.tools.forgetting import identified, plan_removal, select
from memory_adapter.tools.matching import significant_words

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from memory_adapter.admin.client import OperatorClient
    from memory_adapter.admin.store import ArtifactStore
    from memory_adapter.formatting import RecalledMemory

__all__ = ["ForgetPlan", "forget_memories", "forget_user", "plan_forget_memories"]

#: Recalls used to check a forgotten user (texts of the deleted documents): enough to catch a surviving index.
_PROBES: Final = 3
_COUNT_FIELDS: Final = ("documents", "facts", "observations", "mental_models", "entities")
#: What the receipt states Hindsight keeps outside the bank (see docs/operating.md, "Forget").
_NOT_COVERED: Final = (
    "Hindsight's LLM request traces are off (HINDSIGHT_API_LLM_TRACE_ENABLED=false in every server this project "
    "starts); a server run with them on keeps prompts for HINDSIGHT_API_LLM_TRACE_RETENTION_DAYS after the delete",
    "database backups (AWS Backup recovery points, RDS automated backups) and earlier logical exports keep the "
    "data until their retention ends",
    "a retain the user's agent still holds in its spool is delivered later and starts a new bank",
)


def forget_user(
    client: OperatorClient,
    subject: Subject,
    store: ArtifactStore,
    *,
    confirm: str | None,
    principal: str,
    reason: str | None = None,
    now: datetime | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Delete every bank of ``subject`` (a user), verify, and write the erasure receipt; return the receipt.

    A bank Hindsight fails to delete (after :func:`~memory_adapter.admin.backup.per_bank`'s retries) does not stop
    the others; the receipt is written anyway (``outcome: partial``, the bank under ``failed``) and
    :class:`ErasureIncompleteError` is raised. It is also raised when anything of the user is still reachable."""
    if subject.user is None:
        raise InvalidRequestError("forget a user: name the user (a whole tenant is not forgotten in one call)")
    if confirm != subject.user:
        raise ConfirmationError(
            f"forgetting deletes every memory of user {subject.user!r} for good: repeat the user id to confirm "
            f"(--confirm {shlex.quote(subject.user)}) to proceed (nothing was deleted)"
        )
    started = now or datetime.now(UTC)
    prefix = f"erasure-receipts/{subject.key}/"
    previous = _previous_partial(store, prefix)
    banks = subject_banks(client, subject)
    before = {s.bank_id: s for s in (bank_summary(client, b) for b in banks) if s is not None}
    probes = _probe_texts(client, banks)
    failed = _delete_banks(client, banks, sleep)
    remaining = _remaining(client, subject, banks, probes)
    again = sorted({r["bank_id"] for r in remaining if r["bank_id"]} - set(failed))
    if again:  # a retain landed meanwhile, or a delete did not take: one more pass, then report
        failed |= _delete_banks(client, again, sleep)
        remaining = _remaining(client, subject, banks, probes)
    left = {r["bank_id"] for r in remaining} | set(failed)
    gone = [s for b, s in before.items() if b not in left]
    receipt = seal(
        {
            "type": "erasure-receipt",
            "version": 1,
            "outcome": "partial" if left else "complete",
            "subject": subject.describe(),
            "requested_by": principal,
            "reason": reason,
            "requested_at": started.isoformat(),
            "completed_at": datetime.now(UTC).isoformat(),
            "continues": previous,
            "banks": [s.as_dict() for s in gone],
            "totals": {f: sum(getattr(s, f) for s in gone) for f in _COUNT_FIELDS},
            "failed": [f | {"counts": before[b].as_dict() if b in before else None} for b, f in sorted(failed.items())],
            "verification": {
                "verified": not remaining,
                "banks_listed_after": sum(1 for r in remaining if r["what"] == "bank listed"),
                "recall_probes": len(probes) * max(len(banks), 0),
                "remaining": remaining,
            },
            "not_covered": list(_NOT_COVERED),
        }
    )
    key = f"{prefix}{started.strftime('%Y%m%dT%H%M%S.%fZ')}.json"
    receipt["location"] = store.put(
        key, json.dumps(receipt, indent=2, sort_keys=True).encode(), content_type="application/json"
    )
    receipt["key"] = key
    if left:
        raise ErasureIncompleteError(
            f"forgetting the user is incomplete: {len(failed)} bank(s) could not be deleted, {len(remaining)} item(s) "
            f"still reachable, {len(gone)} bank(s) deleted; the receipt (outcome partial) at {key} lists each: run "
            "forget-user again once Hindsight answers (docs/operating.md, Forget)",
            receipt,
        )
    return receipt


def _delete_banks(client: OperatorClient, banks: Iterable[str], sleep: Callable[[float], None]) -> dict[str, Any]:
    """Delete each bank (transient failures tried again); the failures, by bank id."""
    failed: dict[str, Any] = {}
    for bank_id in banks:
        _, failure = per_bank("forget.bank_failed", bank_id, functools.partial(client.delete_bank, bank_id), sleep)
        if failure is not None:
            failed[bank_id] = failure
    return failed


def _previous_partial(store: ArtifactStore, prefix: str) -> str | None:
    """The key of the subject's latest erasure receipt when that erasure was partial (this run continues it)."""
    latest = max(store.keys(prefix), default=None)
    if latest is None:
        return None
    return latest if json.loads(store.get(latest)).get("outcome") == "partial" else None


def _probe_texts(client: OperatorClient, banks: list[str]) -> list[str]:
    texts: list[str] = []
    for bank_id in banks:
        for summary in client.documents(bank_id):
            doc = client.document(bank_id, str(summary["id"]))
            text = (doc or {}).get("original_text")
            if isinstance(text, str) and text.strip():
                texts.append(text[:500])
            if len(texts) >= _PROBES:
                return texts
    return texts


def _remaining(client: OperatorClient, subject: Subject, banks: list[str], probes: list[str]) -> list[dict[str, Any]]:
    """Everything of the subject still reachable: banks listed, stats, documents, memories, recall results. A check
    Hindsight fails to answer counts as reachable (an erasure is complete only when verified)."""
    try:
        found: list[dict[str, Any]] = [{"bank_id": b, "what": "bank listed"} for b in subject_banks(client, subject)]
    except HindsightAgentCoreError as exc:
        found = [{"bank_id": None, "what": f"bank listing failed ({type(exc).__name__})"}]
    for bank_id in banks:
        try:
            found += _reachable(client, bank_id, probes)
        except HindsightAgentCoreError as exc:
            found.append({"bank_id": bank_id, "what": f"check failed ({type(exc).__name__})"})
    return found


def _reachable(client: OperatorClient, bank_id: str, probes: list[str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if client.bank_stats(bank_id) is not None:
        found.append({"bank_id": bank_id, "what": "bank stats answer"})
    if next(client.documents(bank_id), None) is not None:
        found.append({"bank_id": bank_id, "what": "documents listed"})
    if next(client.memories(bank_id), None) is not None:
        found.append({"bank_id": bank_id, "what": "memories listed"})
    for probe in probes:
        if client.recall(bank_id, probe):
            found.append({"bank_id": bank_id, "what": "recall result"})
            break
    return found


@dataclass(frozen=True, slots=True)
class ForgetPlan:
    """What forgetting the selected memories does, exactly: ``documents`` are deleted whole (every live fact of each is
    selected), ``invalidations`` are taken out of recall (a selected fact without a document, or one whose source
    also holds memories not selected), ``shared`` names those sources and the memories in them that were *not*
    selected (they stay). ``confirmation`` is the digest to pass back."""

    matched: list[dict[str, Any]]
    documents: list[dict[str, Any]]
    invalidations: list[dict[str, Any]]
    shared: list[dict[str, Any]]
    more_matched: int = 0

    @property
    def confirmation(self) -> str:
        return canonical_digest(
            {"documents": self.documents, "invalidations": self.invalidations, "shared": self.shared}
        )

    @property
    def summary(self) -> str:
        """One line: what would be (or was) removed."""
        if not self.matched:
            return "nothing matched: nothing is removed"
        parts = [
            f"{len(self.matched)} memory(ies) selected",
            f"{len(self.documents)} source turn(s) deleted whole "
            f"({sum(len(d['facts']) for d in self.documents)} memory(ies))",
            f"{len(self.invalidations)} memory(ies) invalidated",
        ]
        if self.shared:
            kept = sum(len(d["others"]) for d in self.shared)
            parts.append(f"{kept} other memory(ies) of the same source turn(s) stay (listed in shared)")
        if self.more_matched:
            parts.append(f"{self.more_matched} more matched beyond the limit (raise --limit to include them)")
        return "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "matched": self.matched,
            "documents": self.documents,
            "invalidations": self.invalidations,
            "shared": self.shared,
            "more_matched": self.more_matched,
            "confirmation": self.confirmation,
        }


def _facts(raw: Iterable[Any]) -> list[RecalledMemory]:
    return identified(map(memory_from, raw))


def _shown(bank_id: str, fact: RecalledMemory) -> dict[str, Any]:
    return {"bank_id": bank_id, "id": fact.id, "text": fact.text, "type": fact.type}


def plan_forget_memories(
    client: OperatorClient,
    subject: Subject,
    *,
    memory_ids: Sequence[str] = (),
    query: str | None = None,
    limit: int = 5,
) -> ForgetPlan:
    """What forgetting the memories ``memory_ids`` names, or the (at most ``limit``) memories ``query`` selects by
    the ``forget`` tool's rule (:func:`memory_adapter.tools.forgetting.select`), would remove, in the subject's
    banks only."""
    if subject.user is None:
        raise InvalidRequestError("forget memories: name the user whose memories they are")
    if bool(memory_ids) == bool(query and query.strip()):
        raise InvalidRequestError("forget memories: give exactly one of memory ids or a description to match")
    if query is not None and not significant_words(query):
        raise InvalidRequestError(f"forget memories: {query!r} has no significant word to match; describe the memory")
    selected: list[tuple[str, RecalledMemory]] = []
    for bank_id in subject_banks(client, subject):
        if memory_ids:
            found = (client.memory(bank_id, memory_id) for memory_id in dict.fromkeys(memory_ids))
            selected += [(bank_id, fact) for fact in _facts(found)]
        else:
            assert query is not None
            selected += [(bank_id, fact) for fact in select(query, identified(client.recall(bank_id, query)))]
    more = max(len(selected) - limit, 0) if query is not None else 0
    if query is not None:
        selected = selected[:limit]
    documents: list[dict[str, Any]] = []
    invalidations: list[dict[str, Any]] = []
    shared: list[dict[str, Any]] = []
    for bank_id in sorted({b for b, _ in selected}):

        def lookup(memory_id: str, bank_id: str = bank_id) -> RecalledMemory | None:
            found = _facts([client.memory(bank_id, memory_id)])
            return found[0] if found else None

        def live(document_id: str, bank_id: str = bank_id) -> list[RecalledMemory]:
            return _facts(client.memories(bank_id, document_id=document_id))

        removal = plan_removal([f for b, f in selected if b == bank_id], lookup=lookup, live_facts=live)
        for document_id, facts in sorted(removal.delete.items()):
            shown = sorted((_shown(bank_id, f) for f in facts), key=str)
            documents.append({"bank_id": bank_id, "document_id": document_id, "facts": shown})
        for document_id, others in sorted(removal.shared.items()):
            mine = [f for f in removal.invalidate if f.document_id == document_id]
            shared.append(
                {
                    "bank_id": bank_id,
                    "document_id": document_id,
                    "selected": sorted((_shown(bank_id, f) for f in mine), key=str),
                    "others": sorted((_shown(bank_id, f) for f in others), key=str),
                }
            )
        invalidations += [{"bank_id": bank_id, "memory_id": f.id, "text": f.text} for f in removal.invalidate]
    return ForgetPlan(
        matched=[_shown(b, f) for b, f in selected],
        documents=documents,
        invalidations=sorted(invalidations, key=str),
        shared=shared,
        more_matched=more,
    )


def forget_memories(
    client: OperatorClient,
    subject: Subject,
    *,
    confirm: str | None,
    memory_ids: Sequence[str] = (),
    query: str | None = None,
    limit: int = 5,
) -> dict[str, Any]:
    """Preview (``confirm`` ``None``) or carry out (``confirm`` = the preview's digest) a forget of memories; a memory
    that was not selected is never removed (it stays recallable, also when it shares the selected one's turn)."""
    plan = plan_forget_memories(client, subject, memory_ids=memory_ids, query=query, limit=limit)
    if confirm is None:
        return {"preview": True, **plan.as_dict()}
    if confirm != plan.confirmation:
        raise ConfirmationError(
            "the confirmation does not match what would be deleted now (it changed since the preview, or the "
            "digest is wrong): run the preview again and confirm its digest (nothing was deleted)"
        )
    deleted = 0
    for doc in plan.documents:
        deleted += client.delete_document(doc["bank_id"], doc["document_id"]) or 0
    for item in plan.invalidations:
        client.invalidate_memory(item["bank_id"], item["memory_id"], reason="forgotten on request")
    left = [d for d in plan.documents if client.document(d["bank_id"], d["document_id"]) is not None]
    if left:
        raise VerificationError(f"{len(left)} document(s) are still there after the delete: {left}")
    return {"preview": False, **plan.as_dict(), "facts_deleted": deleted, "invalidated": len(plan.invalidations)}

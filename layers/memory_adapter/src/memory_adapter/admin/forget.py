"""Forgetting: a whole user (every bank, verified gone, with an erasure receipt), or chosen memories (previewed).

**A user.** Every bank of the (tenant, user), any agent, is deleted: Hindsight's bank delete removes the
documents, chunks, facts, observations, entities, links, mental models, directives, operations and files. Then
the result is verified from the outside (no bank of the user in the listing, each bank's stats, documents and
memories answer "no such bank", recalls of the deleted documents' own text return nothing), and an erasure receipt
(who asked, which banks, what counts, when, verification, a digest) is written next to the exports. It refuses
unless ``confirm`` repeats the user id; running it again finds nothing and writes a receipt saying so.

**Memories.** By id, or the memories a description recalls, in the user's banks only. A fact is forgotten by
deleting the document it was extracted from (the retained turn: its source, which would give the fact back if it
were reprocessed), so every fact of that document goes too; an observation by deleting the documents of its source
facts. The preview lists exactly what would go and a confirmation digest; the deletion runs only with that digest,
and only if the plan is still exactly what was previewed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from memory_adapter.admin.errors import ConfirmationError, InvalidRequestError, VerificationError
from memory_adapter.admin.inventory import Subject, bank_summary, subject_banks
from memory_adapter.admin.receipts import canonical_digest, seal

if TYPE_CHECKING:
    from memory_adapter.admin.client import OperatorClient
    from memory_adapter.admin.store import ArtifactStore

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
) -> dict[str, Any]:
    """Delete every bank of ``subject`` (a user), verify, and write the erasure receipt; return the receipt."""
    if subject.user is None:
        raise InvalidRequestError("forget a user: name the user (a whole tenant is not forgotten in one call)")
    if confirm != subject.user:
        raise ConfirmationError(
            f"forgetting deletes every memory of user {subject.user!r} for good: repeat the user id as the "
            "confirmation to proceed (nothing was deleted)"
        )
    started = now or datetime.now(UTC)
    banks = subject_banks(client, subject)
    before = [s for s in (bank_summary(client, b) for b in banks) if s is not None]
    probes = _probe_texts(client, banks)
    for bank_id in banks:
        client.delete_bank(bank_id)
    remaining = _remaining(client, subject, banks, probes)
    if remaining:  # a retain landed meanwhile, or a delete did not take: one more pass, then report
        for bank_id in sorted({r["bank_id"] for r in remaining}):
            client.delete_bank(bank_id)
        remaining = _remaining(client, subject, banks, probes)
    totals = {f: sum(getattr(s, f) for s in before) for f in _COUNT_FIELDS}
    receipt = seal(
        {
            "type": "erasure-receipt",
            "version": 1,
            "subject": subject.describe(),
            "requested_by": principal,
            "reason": reason,
            "requested_at": started.isoformat(),
            "completed_at": datetime.now(UTC).isoformat(),
            "banks": [s.as_dict() for s in before],
            "totals": totals,
            "verification": {
                "verified": not remaining,
                "banks_listed_after": len(subject_banks(client, subject)),
                "recall_probes": len(probes) * max(len(banks), 0),
                "remaining": remaining,
            },
            "not_covered": list(_NOT_COVERED),
        }
    )
    key = f"erasure-receipts/{subject.key}/{started.strftime('%Y%m%dT%H%M%S.%fZ')}.json"
    import json

    receipt["location"] = store.put(
        key, json.dumps(receipt, indent=2, sort_keys=True).encode(), content_type="application/json"
    )
    receipt["key"] = key
    if remaining:
        raise VerificationError(f"forgetting {subject.user!r} left {len(remaining)} item(s); receipt at {key}")
    return receipt


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
    """Everything of the subject still reachable: banks listed, stats, documents, memories, recall results."""
    found: list[dict[str, Any]] = [{"bank_id": b, "what": "bank listed"} for b in subject_banks(client, subject)]
    for bank_id in banks:
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
    """What forgetting the matched memories deletes: whole documents (with every fact they gave) or, for a
    memory without a document, an invalidation. ``confirmation`` is the digest to pass back."""

    matched: list[dict[str, Any]]
    documents: list[dict[str, Any]]
    invalidations: list[dict[str, Any]]

    @property
    def confirmation(self) -> str:
        return canonical_digest({"documents": self.documents, "invalidations": self.invalidations})

    def as_dict(self) -> dict[str, Any]:
        return {
            "matched": self.matched,
            "documents": self.documents,
            "invalidations": self.invalidations,
            "confirmation": self.confirmation,
        }


def plan_forget_memories(
    client: OperatorClient,
    subject: Subject,
    *,
    memory_id: str | None = None,
    query: str | None = None,
    limit: int = 5,
) -> ForgetPlan:
    """What forgetting ``memory_id``, or the top ``limit`` memories recalled for ``query``, would delete."""
    if subject.user is None:
        raise InvalidRequestError("forget memories: name the user whose memories they are")
    if (memory_id is None) == (query is None or not query.strip()):
        raise InvalidRequestError("forget memories: give exactly one of a memory id or a description to match")
    matched: list[tuple[str, dict[str, Any]]] = []
    for bank_id in subject_banks(client, subject):
        if memory_id is not None:
            memory = client.memory(bank_id, memory_id)
            if memory is not None:
                matched.append((bank_id, memory))
        else:
            assert query is not None
            matched.extend((bank_id, m) for m in client.recall(bank_id, query)[:limit])
    doc_keys: set[tuple[str, str]] = set()
    invalidations: list[dict[str, Any]] = []
    for bank_id, memory in matched:
        if memory.get("type", memory.get("fact_type")) == "observation":
            for source_id in memory.get("source_memory_ids") or memory.get("source_fact_ids") or []:
                source = client.memory(bank_id, str(source_id))
                if source and source.get("document_id"):
                    doc_keys.add((bank_id, str(source["document_id"])))
        elif memory.get("document_id"):
            doc_keys.add((bank_id, str(memory["document_id"])))
        elif memory.get("id"):
            invalidations.append({"bank_id": bank_id, "memory_id": str(memory["id"]), "text": memory.get("text")})
    documents = []
    for bank_id, document_id in sorted(doc_keys):
        facts = [
            {"id": m.get("id"), "text": m.get("text"), "type": m.get("fact_type")}
            for m in client.memories(bank_id, document_id=document_id)
        ]
        documents.append({"bank_id": bank_id, "document_id": document_id, "facts": sorted(facts, key=str)})
    shown = [
        {"bank_id": b, "id": m.get("id"), "text": m.get("text"), "type": m.get("type", m.get("fact_type"))}
        for b, m in matched
    ]
    return ForgetPlan(matched=shown, documents=documents, invalidations=sorted(invalidations, key=str))


def forget_memories(
    client: OperatorClient,
    subject: Subject,
    *,
    confirm: str | None,
    memory_id: str | None = None,
    query: str | None = None,
    limit: int = 5,
) -> dict[str, Any]:
    """Preview (``confirm`` ``None``) or carry out (``confirm`` = the preview's digest) a forget of memories."""
    plan = plan_forget_memories(client, subject, memory_id=memory_id, query=query, limit=limit)
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
    return {"preview": False, **plan.as_dict(), "facts_deleted": deleted}

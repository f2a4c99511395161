"""The administrative actions as one entry point: a JSON request in, a JSON result out, one audit line each.

The admin function (behind an IAM-authorized function URL) and the CLI's ``--local`` mode both call
:func:`run_action`, so both behave the same. A request is ``{"action": <name>, ...arguments}``; unknown actions
and arguments are refused before anything runs (:class:`~memory_adapter.admin.errors.InvalidRequestError`).

| action | arguments | does |
|---|---|---|
| ``banks`` | ``user`` and/or ``tenant`` | the subject's banks (every agent) with their counts |
| ``export`` | ``user`` and/or ``tenant`` | JSONL of everything the subject's banks hold, to the store |
| ``forget-user`` | ``user``, ``tenant``, ``confirm`` (the user id again), ``reason`` | delete, verify, receipt |
| ``forget-memory`` | ``user``, ``tenant``, ``memory_ids``/``query``, ``limit``, ``confirm`` | forget |
| ``expire`` | ``dry_run``, ``batch_size`` | delete what is past its kind's retention, banks that failed listed |
| ``backup`` | ``banks`` (default: all) | each bank's transfer archive and a manifest, banks that failed listed |
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from memory_adapter.admin.audit import audit
from memory_adapter.admin.backup import backup_banks
from memory_adapter.admin.errors import AdminError, InvalidRequestError
from memory_adapter.admin.expiry import expire
from memory_adapter.admin.export import export_subject
from memory_adapter.admin.forget import forget_memories, forget_user
from memory_adapter.admin.inventory import Subject, bank_summary, subject_banks
from memory_adapter.kinds import RetentionRules
from memory_adapter.observability import short_hash

if TYPE_CHECKING:
    from memory_adapter.admin.client import OperatorClient
    from memory_adapter.admin.store import ArtifactStore

__all__ = ["ACTIONS", "AdminDeps", "run_action"]

#: Arguments each action accepts (besides ``action``).
ACTIONS: Final[Mapping[str, frozenset[str]]] = {
    "banks": frozenset({"user", "tenant"}),
    "export": frozenset({"user", "tenant"}),
    "forget-user": frozenset({"user", "tenant", "confirm", "reason"}),
    "forget-memory": frozenset({"user", "tenant", "memory_id", "memory_ids", "query", "limit", "confirm"}),
    "expire": frozenset({"dry_run", "batch_size"}),
    "backup": frozenset({"banks"}),
}


@dataclass(frozen=True, slots=True)
class AdminDeps:
    """What the actions run against: Hindsight (operator), the artifact store, retention, and the clock."""

    client: OperatorClient
    store: ArtifactStore
    rules: RetentionRules
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    expiry_batch_size: int = 500
    #: A line per step of a long action (a backup's banks): the CLI prints them; the function has its audit line.
    progress: Callable[[str], None] = lambda _line: None


def _text(request: Mapping[str, Any], name: str) -> str | None:
    value = request.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequestError(f"{name!r} must be a non-blank string")
    return value


def _subject(request: Mapping[str, Any]) -> Subject:
    return Subject(tenant=_text(request, "tenant"), user=_text(request, "user"))


def _flag(request: Mapping[str, Any], name: str) -> bool:
    value = request.get(name, False)
    if not isinstance(value, bool):
        raise InvalidRequestError(f"{name!r} must be true or false")
    return value


def _count(request: Mapping[str, Any], name: str, default: int, *, most: int) -> int:
    value = request.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise InvalidRequestError(f"{name!r} must be a whole number from 1 to {most}")
    return value


def _ids(request: Mapping[str, Any]) -> list[str]:
    """``memory_ids`` (a list) and ``memory_id`` (one, the older spelling), together."""
    ids = request.get("memory_ids", [])
    if not isinstance(ids, list) or not all(isinstance(i, str) and i.strip() for i in ids):
        raise InvalidRequestError("'memory_ids' must be a list of memory ids")
    single = _text(request, "memory_id")
    return [*ids, single] if single else list(ids)


def _validate(request: Mapping[str, Any]) -> str:
    if not isinstance(request, Mapping):
        raise InvalidRequestError('the request must be a JSON object {"action": ..., ...}')
    action = request.get("action")
    if not isinstance(action, str) or action not in ACTIONS:
        raise InvalidRequestError(f"unknown action {action!r}; one of: {', '.join(ACTIONS)}")
    unknown = sorted(set(request) - ACTIONS[action] - {"action"})
    if unknown:
        raise InvalidRequestError(
            f"{action}: unknown argument(s) {', '.join(unknown)}; accepted: "
            f"{', '.join(sorted(ACTIONS[action])) or 'none'}"
        )
    return action


def _dispatch(action: str, request: Mapping[str, Any], deps: AdminDeps, principal: str) -> dict[str, Any]:
    client, now = deps.client, deps.clock()
    if action == "banks":
        subject = _subject(request)
        summaries = [bank_summary(client, b) for b in subject_banks(client, subject)]
        return {"subject": subject.describe(), "banks": [s.as_dict() for s in summaries if s is not None]}
    if action == "export":
        return export_subject(client, _subject(request), deps.store, principal=principal, now=now).as_dict()
    if action == "forget-user":
        return forget_user(
            client,
            _subject(request),
            deps.store,
            confirm=request.get("confirm"),
            principal=principal,
            reason=_text(request, "reason"),
            now=now,
        )
    if action == "forget-memory":
        return forget_memories(
            client,
            _subject(request),
            confirm=_text(request, "confirm"),
            memory_ids=_ids(request),
            query=_text(request, "query"),
            limit=_count(request, "limit", 5, most=50),
        )
    if action == "expire":
        batch = _count(request, "batch_size", deps.expiry_batch_size, most=10_000)
        return expire(client, deps.rules, now=now, dry_run=_flag(request, "dry_run"), batch_size=batch).as_dict()
    banks = request.get("banks")
    if banks is not None and (not isinstance(banks, list) or not all(isinstance(b, str) and b for b in banks)):
        raise InvalidRequestError("'banks' must be a list of bank ids")
    return backup_banks(client, deps.store, now=now, principal=principal, bank_ids=banks, progress=deps.progress)


def _audit_fields(action: str, request: Mapping[str, Any], result: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the audit line says: the subject as a short hash (no raw ids in logs), and sizes, never contents."""
    fields: dict[str, Any] = {}
    if request.get("user") or request.get("tenant"):
        fields["subject"] = short_hash(f"{request.get('tenant') or ''}\x00{request.get('user') or ''}")
    if result:
        for key in ("key", "location", "totals", "counts", "expired", "facts_deleted", "more_due", "dry_run"):
            if key in result:
                fields[key] = result[key]
        for key in ("banks", "failed"):  # a backup's banks and the banks it could not archive: how many
            if isinstance(result.get(key), list):
                fields[key] = len(result[key])
        if action == "forget-memory":
            fields["documents"] = len(result.get("documents", []))
            fields["invalidations"] = len(result.get("invalidations", []))
    return fields


def run_action(
    request: Mapping[str, Any], *, deps: AdminDeps, principal: str, actor: str | None = None
) -> dict[str, Any]:
    """Validate and run one action; audit it (also when refused or failed). Raises :class:`AdminError`.

    ``actor`` (default: ``principal``) is what Hindsight's memory events name as the cause of the action's changes
    (``x-memory-actor``); a schedule passes ``schedule:<rule>``.
    """
    action = "invalid"
    try:
        action = _validate(request)
        acting = dataclasses.replace(deps, client=deps.client.acting_as(actor or principal))
        result = _dispatch(action, request, acting, principal)
    except AdminError as exc:
        audit(
            action,
            principal=principal,
            outcome=exc.audit_outcome,
            error=type(exc).__name__,
            **_audit_fields(action, request if isinstance(request, Mapping) else {}, getattr(exc, "result", None)),
        )
        raise
    except Exception as exc:
        audit(action, principal=principal, outcome="failed", error=type(exc).__name__)
        raise
    outcome = "preview" if result.get("preview") else ("dry_run" if result.get("dry_run") else "ok")
    outcome = "partial" if isinstance(result.get("failed"), list) and result["failed"] else outcome  # banks skipped
    audit(action, principal=principal, outcome=outcome, **_audit_fields(action, request, result))
    return result

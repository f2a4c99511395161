"""Hindsight's operation-validator slot: every operation that names a bank is checked against the caller's principal.

Loaded with ``HINDSIGHT_API_OPERATION_VALIDATOR_EXTENSION=hindsight_isolation.validator:IsolationOperationValidator``.
Hindsight's memory engine calls these hooks for every REST route and MCP tool that touches a bank (and again, with
``internal=True``, when the worker runs queued work). Each hook maps its operation to a :class:`~.policy.Action` and
asks :func:`~.policy.authorize`; a refusal is a bare 403 (``"forbidden"``) and a log line with the reason.

Every validation hook of the base class is overridden here (a unit test fails if Hindsight adds one we do not), so
no operation falls through to the base class's accept-everything default.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from hindsight_api.extensions.operation_validator import (
    BankListContext,
    BankListResult,
    BankListScope,
    BankReadContext,
    BankWriteContext,
    ConsolidateContext,
    CreateBankContext,
    ImportContext,
    MemoryUpdateContext,
    MemoryUpdateResult,
    MentalModelGetContext,
    MentalModelRefreshContext,
    OperationValidationError,
    OperationValidatorExtension,
    PrecheckContext,
    RecallContext,
    RecallResult,
    ReflectContext,
    RetainContext,
    RetainResult,
    TagScopeContext,
    ValidationResult,
)

from hindsight_isolation import events, missions, route, usage
from hindsight_isolation.audit import log_denied, logger
from hindsight_isolation.policy import Action, authorize
from hindsight_isolation.principal import Kind, Principal

if TYPE_CHECKING:
    from hindsight_api.models import RequestContext

__all__ = [
    "BANK_READ_ACTIONS",
    "BANK_WRITE_ACTIONS",
    "MCP_GRACE_TOOLS",
    "MCP_UNSCOPED_TOOLS",
    "NOT_FOUND_READS",
    "PRECHECK_ACTIONS",
    "IsolationOperationValidator",
]

#: Bank reads that are not plain reads of the caller's own data (by ``BankReadOperation`` value). Others: READ.
BANK_READ_ACTIONS: dict[str, Action] = {
    "list_bank_aliases": Action.OPERATOR_ONLY,
    "list_webhooks": Action.OPERATOR_ONLY,
    "list_webhook_deliveries": Action.OPERATOR_ONLY,
}

#: Bank writes that are not plain writes to the caller's own data (by ``BankWriteOperation`` value). Others: WRITE.
BANK_WRITE_ACTIONS: dict[str, Action] = {
    # An alias makes another bank id resolve to this bank: a user could capture another user's requests.
    "create_bank_alias": Action.NEVER,
    "delete_bank_alias": Action.OPERATOR_ONLY,
    # Webhooks make the server call arbitrary URLs with bank content.
    "create_webhook": Action.OPERATOR_ONLY,
    "update_webhook": Action.OPERATOR_ONLY,
    "delete_webhook": Action.OPERATOR_ONLY,
    # Bank settings (config: governance, cost knobs, what memory keeps; the profile's mission, name and disposition)
    # are the deployment's policy: the operator's, except the missions, which the agent key may set on its agent's
    # banks (RequestKind.MISSION). Never a user token's.
    "update_bank_config": Action.CONFIG,
    "update_bank": Action.CONFIG,
    "update_bank_disposition": Action.CONFIG,
    "set_bank_mission": Action.CONFIG,
    "merge_bank_mission": Action.CONFIG,
    "reset_bank_config": Action.OPERATOR_ONLY,
    # Queued by every retain (and by POST .../consolidate): part of retaining.
    "submit_async_consolidation": Action.CONSOLIDATE,
    "retry_failed_consolidation": Action.CONSOLIDATE,
    # Re-runs a finished operation from its stored task payload, which a restored transfer archive supplies
    # verbatim (bank id and principal included): only the operator may re-run work.
    "retry_operation": Action.OPERATOR_ONLY,
    # Archives carry rows Hindsight restores verbatim (facts, operations, webhooks): operator only.
    "import_documents": Action.OPERATOR_ONLY,
    # Server maintenance; the server runs it itself (internal) when needed.
    "submit_async_graph_maintenance": Action.OPERATOR_ONLY,
    "submit_async_vector_index_maintenance": Action.OPERATOR_ONLY,
}

#: Lookups by an object id whose route names no bank (the bank is read from the object): Hindsight finds the object
#: before it asks us, so a refusal answers exactly what a missing object answers (status and body), or the answer
#: would tell whether another user's object exists. By ``BankReadOperation`` value.
NOT_FOUND_READS: dict[str, str] = {
    "get_chunk": "Chunk not found",  # GET /v1/default/chunks/{chunk_id}
}

#: Pre-body checks (by ``PrecheckOperation`` value). Unknown ones: WRITE.
PRECHECK_ACTIONS: dict[str, Action] = {
    "retain": Action.RETAIN,
    "files_retain": Action.RETAIN,
    "recall": Action.READ,
    "reflect": Action.READ,
    "dry_run_extract": Action.READ,
    "mental_model_create": Action.WRITE,
    "mental_model_refresh": Action.WRITE,
}

#: Directive writes checked for what Hindsight would fail on (:meth:`IsolationOperationValidator._directive_problem`).
_DIRECTIVE_WRITES = frozenset({"create_directive", "update_directive"})
#: Bank writes that delete memories: the validator snapshots the bank's memory ids first (memory events).
DELETING_WRITES = frozenset({"delete_document", "delete_bank"})
#: Curation action -> memory event change.
CURATION_CHANGES: dict[str, events.Change] = {
    "invalidate": events.Change.INVALIDATED,
    "revert": events.Change.RESTORED,
    "edit": events.Change.UPDATED,
    "reason": events.Change.UPDATED,
}

#: What a refused caller is told (the reason is logged, never sent).
_FORBIDDEN = "forbidden"

#: MCP tools that do not act on the session bank (they take their own bank, which the engine checks).
MCP_UNSCOPED_TOOLS = frozenset({"list_banks", "create_bank"})
#: MCP tools an expired token within the grace window may see on its own bank.
MCP_GRACE_TOOLS = frozenset({"retain", "sync_retain"})


class IsolationOperationValidator(OperationValidatorExtension):  # type: ignore[misc]  # hindsight_api is untyped here
    """Authorizes every bank operation for the principal the tenant extension recorded."""

    def __init__(self, config: dict[str, str]) -> None:
        super().__init__(config)
        if config:
            raise ValueError(
                "hindsight_isolation: the operation validator takes no settings; unknown: "
                + ", ".join("HINDSIGHT_API_OPERATION_VALIDATOR_" + key.upper() for key in sorted(config))
            )
        events.register_lookup(self.remaining)

    # -- the one check -------------------------------------------------------------------------------------------

    @staticmethod
    def check(
        bank_id: str,
        request_context: RequestContext,
        action: Action,
        operation: str,
        *,
        refusal: tuple[str, int] = (_FORBIDDEN, 403),
    ) -> ValidationResult:
        """Authorize ``action`` on ``bank_id`` for the request's principal; log and answer ``refusal`` if refused."""
        principal = _principal(request_context)
        internal = bool(request_context.internal)
        decision = authorize(principal, bank_id, action, internal=internal, request=route.current())
        if decision.allowed:
            return ValidationResult.accept()
        detail, status = refusal
        log_denied(
            principal, operation=operation, bank_id=bank_id, reason=decision.reason, internal=internal, status=status
        )
        return ValidationResult.reject(detail, status)

    # -- core operations -----------------------------------------------------------------------------------------

    async def precheck(self, ctx: PrecheckContext) -> ValidationResult:
        """Refuse before the body is read (cheap; the full validators still run afterwards)."""
        operation = str(ctx.operation)
        action = PRECHECK_ACTIONS.get(operation, Action.WRITE)
        return self.check(ctx.bank_id, ctx.request_context, action, f"precheck:{operation}")

    async def validate_retain(self, ctx: RetainContext) -> ValidationResult:
        """Retain (sync, async, files, and the worker's re-check); a caller's retain first gets the bank its agent's
        configured mission (:mod:`hindsight_isolation.missions`)."""
        result = self.check(ctx.bank_id, ctx.request_context, Action.RETAIN, "retain")
        if result.allowed and not ctx.request_context.internal:
            await missions.before_retain(self.context.get_memory_engine(), ctx.bank_id, ctx.request_context)
        return result

    async def validate_recall(self, ctx: RecallContext) -> ValidationResult:
        """Recall."""
        return self.check(ctx.bank_id, ctx.request_context, Action.READ, "recall")

    async def validate_reflect(self, ctx: ReflectContext) -> ValidationResult:
        """Reflect."""
        return self.check(ctx.bank_id, ctx.request_context, Action.READ, "reflect")

    async def validate_consolidate(self, ctx: ConsolidateContext) -> ValidationResult:
        """Consolidation (usually the worker's, internal)."""
        return self.check(ctx.bank_id, ctx.request_context, Action.CONSOLIDATE, "consolidate")

    async def validate_mental_model_get(self, ctx: MentalModelGetContext) -> ValidationResult:
        """Mental-model reads (these bypass ``validate_bank_read``)."""
        return self.check(ctx.bank_id, ctx.request_context, Action.READ, "mental_model_get")

    async def validate_mental_model_refresh(self, ctx: MentalModelRefreshContext) -> ValidationResult:
        """Mental-model create/refresh."""
        return self.check(ctx.bank_id, ctx.request_context, Action.WRITE, "mental_model_refresh")

    async def validate_memory_update(self, ctx: MemoryUpdateContext) -> ValidationResult:
        """Memory curation (edit, invalidate, revert)."""
        return self.check(ctx.bank_id, ctx.request_context, Action.WRITE, "memory_update")

    # -- bank management -----------------------------------------------------------------------------------------

    async def validate_bank_read(self, ctx: BankReadContext) -> ValidationResult:
        """Every other bank-scoped read: profile, stats, documents, chunks, exports, operations, ..."""
        operation = str(ctx.operation)
        action = BANK_READ_ACTIONS.get(operation, Action.READ)
        not_found = NOT_FOUND_READS.get(operation)
        refusal = (not_found, 404) if not_found is not None else (_FORBIDDEN, 403)
        return self.check(ctx.bank_id, ctx.request_context, action, f"bank_read:{operation}", refusal=refusal)

    async def validate_bank_write(self, ctx: BankWriteContext) -> ValidationResult:
        """Every bank-scoped write: delete bank, documents, mental models, aliases, webhooks, config, ..."""
        operation = str(ctx.operation)
        action = BANK_WRITE_ACTIONS.get(operation, Action.WRITE)
        result = self.check(ctx.bank_id, ctx.request_context, action, f"bank_write:{operation}")
        if result.allowed and operation in _DIRECTIVE_WRITES and not ctx.request_context.internal:
            problem = await self._directive_problem(ctx.bank_id, operation)
            if problem is not None:
                return ValidationResult.reject(*problem)
        watch = events.current_watch()
        if result.allowed and operation in DELETING_WRITES and watch is not None and events.enabled():
            # No completion hook for deletes: remember what is there; the guard reports what is gone afterwards.
            units = await self._units(ctx.bank_id)
            watch.snapshot(ctx.bank_id, operation, _principal(ctx.request_context), units)
        return result

    # -- memory events (hindsight_isolation/events.py) -------------------------------------------------------------

    async def _units(self, bank_id: str, ids: list[str] | None = None) -> dict[str, tuple[str | None, str | None]]:
        """Memory id -> (document id, fact type) of ``bank_id`` (only ``ids`` when given)."""
        rows = await self._rows(bank_id, ids)
        return {str(r["id"]): (r["document_id"], r["fact_type"]) for r in rows}

    async def _rows(self, bank_id: str, ids: list[str] | None) -> list[Any]:
        from hindsight_api.engine.schema import fq_store_table  # the memories store's tables

        pool = await self._pool()
        sql = f"SELECT id, document_id, fact_type, text FROM {fq_store_table('memory_units')} WHERE bank_id = $1"  # noqa: S608 - a table name
        async with pool.acquire() as conn:
            if ids is None:
                return list(await conn.fetch(sql, bank_id))
            return list(await conn.fetch(sql + " AND id = ANY($2::uuid[])", bank_id, ids))

    async def remaining(self, bank_ids: list[str]) -> dict[str, set[str]]:
        """The memory ids still in each bank (the guard calls this once a watched request is over)."""
        return {bank_id: set(await self._units(bank_id)) for bank_id in bank_ids}

    async def _directive_problem(self, bank_id: str, operation: str) -> tuple[str, int] | None:
        """Why Hindsight 1.1.0 would answer this directive write 500, or would store what makes every export of the
        bank's template answer 500: a bank that does not exist yet (it inserts the directive anyway: a foreign-key
        error), or a name another directive of the bank has (the template refuses duplicate names)."""
        from hindsight_api.engine.schema import fq_store_table

        named = route.directive_naming()
        pool = await self._pool()
        async with pool.acquire() as conn:
            banks = f"SELECT 1 FROM {fq_store_table('banks')} WHERE bank_id = $1"  # noqa: S608 - a table name
            if operation == "create_directive" and await conn.fetchval(banks, bank_id) is None:
                where = f"bank {bank_id[:200]!r}"
                return (
                    f"{where} does not exist yet: retain into it, or create it with PUT .../banks/{{bank_id}}, first",
                    404,
                )
            if named is None:
                return None
            name, directive_id = named
            same = f"SELECT 1 FROM {fq_store_table('directives')} WHERE bank_id = $1 AND name = $2 AND id::text <> $3"  # noqa: S608
            if await conn.fetchval(same, bank_id, name, _canonical_uuid(directive_id)) is not None:
                return (
                    f"a directive named {name[:100]!r} exists in this bank already: choose another name or update it",
                    409,
                )
        return None

    async def _pool(self) -> Any:
        return await self.context.get_memory_engine()._get_pool()

    async def on_recall_complete(self, result: RecallResult) -> None:
        """Fading and reinforcement (:mod:`hindsight_isolation.usage`): re-rank what a caller's recall returns."""
        if result.success:
            await usage.after_recall(self._pool, result.bank_id, result.request_context, result.result)

    async def on_retain_complete(self, result: RetainResult) -> None:
        """``created`` for every new memory (``restored`` for an archive import), in the request or the worker."""
        if not events.enabled() or not result.success:
            return
        ids = [str(i) for group in (result.unit_ids or []) for i in group]
        if not ids:
            return
        principal = _principal(result.request_context)
        change = events.Change.RESTORED if str(result.source) == "import" else events.Change.CREATED
        rows = await self._rows(result.bank_id, ids)
        events.emit(
            events.MemoryEvent(
                change,
                result.bank_id,
                str(r["id"]),
                "import" if change is events.Change.RESTORED else "retain",
                principal,
                source_id=r["document_id"] or result.document_id,
                kind=r["fact_type"],
                actor=events.current_actor(principal),
                text=r["text"] if events.include_text() else None,
            )
            for r in rows
        )

    async def on_memory_update_complete(self, result: MemoryUpdateResult) -> None:
        """Curation: ``invalidated`` (the forget tool), ``restored`` (revert) or ``updated`` (edit, reason)."""
        await usage.after_curation(
            self._pool, result.bank_id, str(result.memory_id), str(result.action), result.request_context
        )
        if not events.enabled():
            return
        change = CURATION_CHANGES.get(str(result.action), events.Change.UPDATED)
        principal = _principal(result.request_context)
        rows = await self._rows(result.bank_id, [str(result.memory_id)])
        row = rows[0] if rows else None
        events.emit(
            [
                events.MemoryEvent(
                    change,
                    result.bank_id,
                    str(result.memory_id),
                    f"curate:{result.action}",
                    principal,
                    source_id=row["document_id"] if row else None,
                    kind=row["fact_type"] if row else None,
                    actor=events.current_actor(principal),
                    text=row["text"] if row is not None and events.include_text() else None,
                )
            ]
        )

    async def validate_create_bank(self, ctx: CreateBankContext) -> ValidationResult:
        """Bank creation, explicit or implicit (first retain, clone and import targets)."""
        return self.check(ctx.bank_id, ctx.request_context, Action.CREATE_BANK, "create_bank")

    async def validate_import(self, ctx: ImportContext) -> ValidationResult:
        """Transfer-archive imports (document import, bank restore): operator only (archive rows are kept as they are).

        Hindsight 1.1.0 hands this hook the archive's documents only (no bank rows, webhooks or directives, which are
        written with whatever bank they name), and skips it for a restore without data, so it cannot confine an
        import to the caller's bank; the whole request is the operator's (see :class:`route.RequestKind`).
        """
        return self.check(ctx.bank_id, ctx.request_context, Action.OPERATOR_ONLY, "import")

    async def bank_list_scope(self, request_context: RequestContext) -> BankListScope | None:
        """Operators list every bank directly; everyone else goes through :meth:`filter_bank_list`."""
        principal = _principal(request_context)
        if (
            principal is not None
            and principal.kind is Kind.OPERATOR
            and not request_context.internal
            and route.current() is not None
        ):
            return BankListScope(bank_ids=None)
        return None

    async def filter_bank_list(self, ctx: BankListContext) -> BankListResult:
        """Keep only the banks the caller may read (an expired token within the grace window sees none)."""
        rc = ctx.request_context
        principal = _principal(rc)
        internal = bool(rc.internal)
        request = route.current()
        visible = [
            bank
            for bank in ctx.banks
            if isinstance(bank.get("bank_id"), str)
            and authorize(principal, bank["bank_id"], Action.READ, internal=internal, request=request).allowed
        ]
        return BankListResult(banks=visible)

    async def resolve_write_tag_scope(self, ctx: TagScopeContext) -> list[str] | None:
        """Backstop: a whole-bank operation the caller may not run is refused here (403 ``forbidden``).

        Hindsight asks this for every bank a whole-bank operation names, including one that reaches no validation
        hook (the bank a transfer restore is recorded against), and before a restore or clone looks up whether its
        target bank exists, so a refused restore tells nothing about other banks. Raising (rather than returning an
        empty scope, which Hindsight would turn into a 403 naming tag scopes) keeps the refusal identical to every
        other one. Otherwise unrestricted (no tag scopes): the operation's own hook decides the rest.
        """
        rc = ctx.request_context
        principal = _principal(rc)
        internal = bool(rc.internal)
        decision = authorize(principal, ctx.bank_id, Action.WHOLE_BANK, internal=internal, request=route.current())
        if decision.allowed:
            return None
        log_denied(
            principal, operation="write_tag_scope", bank_id=ctx.bank_id, reason=decision.reason, internal=internal
        )
        raise OperationValidationError(_FORBIDDEN, 403)

    async def filter_mcp_tools(
        self, bank_id: str, request_context: RequestContext, tools: frozenset[str]
    ) -> frozenset[str]:
        """Hide the session-bank tools unless the session bank is the caller's (never raises: it would unfilter)."""
        try:
            principal = _principal(request_context)
            internal = bool(request_context.internal)
            request = route.current()
            if authorize(principal, bank_id, Action.READ, internal=internal, request=request).allowed:
                return tools
            if authorize(principal, bank_id, Action.RETAIN, internal=internal, request=request).allowed:
                return tools & MCP_GRACE_TOOLS
            if principal is not None and principal.kind is not Kind.USER_GRACE and request is not None:
                return tools & MCP_UNSCOPED_TOOLS
        except Exception:  # an exception would make Hindsight show every tool: show none
            logger.exception("hindsight_isolation: filter_mcp_tools failed; hiding every tool")
        return frozenset()


def _principal(request_context: RequestContext) -> Principal | None:
    # A legacy MCP static token (HINDSIGHT_API_MCP_AUTH_TOKEN) skips the tenant slot: such a request has no principal.
    if getattr(request_context, "mcp_authenticated", False):
        return None
    return Principal.decode(request_context.tenant_id)


def _canonical_uuid(value: str | None) -> str:
    """``value`` as PostgreSQL prints a UUID (the guard let only UUIDs through); ``""`` for none."""
    try:
        return str(uuid.UUID(value)) if value else ""
    except ValueError:
        return ""

"""Operator tasks that run *inside Hindsight's environment*: restore banks from backups, re-embed every bank.

Both import transfer archives straight into the database with Hindsight's own engine (what ``hindsight-admin
import-bank`` does): facts are re-embedded with the embedding model this process is configured with and entities
re-resolved, and **no LLM extraction runs**. No HTTP route is involved, so Hindsight's document import API stays
off (``HINDSIGHT_API_ENABLE_DOCUMENT_IMPORT_API=false``): only whoever may run this task (the Hindsight task role
with the database secret, an ``ecs run-task``; locally the operator's shell) can restore.

* ``restore``: the archives of a backup manifest into the configured schema; a bank that already exists with the
  manifest's counts is skipped (so a restore can be re-run after a failure), one that exists otherwise is refused
  unless ``replace`` deletes it first. The banks a partial backup could not archive (its manifest's ``failed``) are
  named in the result's ``not_backed_up``.
* ``reembed``: every bank of ``source_schema`` into a fresh ``target_schema`` with the newly configured embedding
  model (blue/green: the source stays untouched; point the service at the target when done). Resumable and
  stateless: a bank already in the target with the source's counts is done, a partial one is deleted and redone.
  The target records its vector space (provider, model, dimension) as a comment on the schema, and the task refuses
  to put vectors of another space into it, to write into the source, or to use a target it did not create.
* ``rename-bank``: Hindsight's own in-place rename of a bank's id (one transaction; its files and vector indexes
  follow), e.g. to give an ASCII id to a bank whose export Hindsight 1.1.0 cannot download (its id is not Latin-1:
  docs/operating.md, "A partial backup").

Run with the server's environment (``HINDSIGHT_API_*``) plus the target's embedding settings:
``python -m memory_adapter.admin.maintenance {restore,reembed,rename-bank} --help``. This module imports
``hindsight_api`` (only in this process): it is shipped in the Hindsight extension bundle and never imported by the
agent.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memory_adapter.admin.backup import MANIFEST
from memory_adapter.admin.errors import AdminError, InvalidRequestError
from memory_adapter.admin.store import ArtifactStore, DirectoryStore, S3Store

__all__ = ["EmbeddingSpace", "reembed", "rename_bank", "restore"]

_SCHEMA_ENV: Final = "HINDSIGHT_API_DATABASE_SCHEMA"
_SPACE_MARK: Final = "memory-adapter:embedding-space:"
_COUNTED: Final = ("documents", "facts", "observations")

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class EmbeddingSpace:
    """Which vectors a schema holds: the embedding provider, its model and the dimension."""

    provider: str
    model: str
    dimension: int

    def as_dict(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "dimension": self.dimension}


def _quote_ident(name: str) -> str:
    if not name or not all(c.isalnum() or c == "_" for c in name) or name[0].isdigit():
        raise InvalidRequestError(
            f"schema names are letters, digits and underscores (not starting with a digit): {name!r}"
        )
    return f'"{name}"'


async def _connect() -> Any:
    import asyncpg

    url = os.environ.get("HINDSIGHT_API_DATABASE_URL")
    if not url:
        raise InvalidRequestError("HINDSIGHT_API_DATABASE_URL is not set: run with the Hindsight server's environment")
    return await asyncpg.connect(url)


async def _bank_ids(conn: Any, schema: str) -> list[str]:
    exists = await conn.fetchval("SELECT to_regclass($1)", f"{_quote_ident(schema)}.banks")
    if exists is None:
        return []
    rows = await conn.fetch(f"SELECT bank_id FROM {_quote_ident(schema)}.banks ORDER BY bank_id")  # noqa: S608
    return [r["bank_id"] for r in rows]


async def _counts(conn: Any, schema: str, bank_id: str) -> dict[str, int]:
    s = _quote_ident(schema)
    docs = await conn.fetchval(f"SELECT count(*) FROM {s}.documents WHERE bank_id = $1", bank_id)  # noqa: S608
    rows = await conn.fetch(
        f"SELECT fact_type, count(*) AS n FROM {s}.memory_units WHERE bank_id = $1 GROUP BY fact_type",  # noqa: S608
        bank_id,
    )
    by_type = {r["fact_type"]: int(r["n"]) for r in rows}
    observations = by_type.pop("observation", 0)
    return {"documents": int(docs), "facts": sum(by_type.values()), "observations": observations}


async def _recorded_space(conn: Any, schema: str) -> dict[str, Any] | None:
    comment = await conn.fetchval(
        "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1", schema
    )
    if not isinstance(comment, str) or not comment.startswith(_SPACE_MARK):
        return None
    try:
        value = json.loads(comment[len(_SPACE_MARK) :])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


async def _record_space(conn: Any, schema: str, record: Mapping[str, Any]) -> None:
    text = _SPACE_MARK + json.dumps(dict(record), sort_keys=True)
    await conn.execute(f"COMMENT ON SCHEMA {_quote_ident(schema)} IS {_literal(text)}")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class _Engine:
    """Hindsight's memory engine for one schema, with the embedding model of this process's environment."""

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self._engine: Any = None

    async def __aenter__(self) -> _Engine:
        os.environ[_SCHEMA_ENV] = self.schema
        os.environ.setdefault("HINDSIGHT_API_SKIP_LLM_VERIFICATION", "true")  # this task never calls the LLM
        from hindsight_api.config import clear_config_cache
        from hindsight_api.engine.memory_engine import MemoryEngine, _current_schema

        clear_config_cache()
        _current_schema.set(self.schema)
        self._engine = MemoryEngine(run_migrations=True)  # creates the schema at the model's dimension if new
        await self._engine.initialize()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._engine.close()

    def space(self) -> EmbeddingSpace:
        provider, model = configured_model()
        return EmbeddingSpace(provider, model, int(self._engine.embeddings.dimension))

    def _context(self) -> Any:
        """An internal request context, with Hindsight's current schema (a context variable, which Hindsight's
        exporter moves to the source schema) pointed back at this engine's."""
        from hindsight_api.engine.memory_engine import _current_schema
        from hindsight_api.models import RequestContext

        _current_schema.set(self.schema)
        return RequestContext(internal=True, user_initiated=True)

    async def import_archive(self, archive: bytes) -> Any:
        from hindsight_api.engine.transfer import TransferScope

        scope = TransferScope(data=True, bank_config=True, history=False)
        return await self._engine.import_bank_async(io.BytesIO(archive), self._context(), scope=scope)

    async def delete_bank(self, bank_id: str) -> None:
        await self._engine.delete_bank(bank_id, request_context=self._context())


def configured_model() -> tuple[str, str]:
    """The embedding provider and model this process's environment configures (known before any model loads)."""
    from hindsight_api.config import HindsightConfig

    config = HindsightConfig.from_env()
    provider = str(config.embeddings_provider)
    model = getattr(config, f"embeddings_{provider.replace('-', '_')}_model", None)
    return provider, str(model or provider)


def _refuse_mixing(schema: str, recorded: Mapping[str, Any] | None, space: Mapping[str, Any]) -> None:
    """Refuse when ``schema`` records another vector space than ``space`` (only the keys ``space`` has)."""
    if recorded is None:
        return
    held = recorded.get("space") or {}
    if any(held.get(k) != v for k, v in space.items()):
        raise InvalidRequestError(
            f"schema {schema!r} holds vectors of {held}, this process embeds with {dict(space)}: refusing to mix "
            "vector spaces (finish with the same model, or use a fresh schema)"
        )


async def _export_archive(bank_id: str, schema: str) -> bytes:
    """The bank's transfer archive, read straight from ``schema`` (Hindsight's own exporter; no embeddings)."""
    from hindsight_api.admin.cli import _run_export_bank

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bank.zip"
        await _run_export_bank(os.environ["HINDSIGHT_API_DATABASE_URL"], bank_id, path, schema, False)
        return path.read_bytes()


async def restore(
    store: ArtifactStore,
    manifest_key: str,
    *,
    schema: str | None = None,
    bank_ids: list[str] | None = None,
    replace: bool = False,
    progress: Progress = print,
) -> dict[str, Any]:
    """Restore the banks of a backup manifest (all, or ``bank_ids``) into ``schema`` (default: the configured one)."""
    manifest = json.loads(store.get(manifest_key))
    target = schema or os.environ.get(_SCHEMA_ENV) or "public"
    entries = [e for e in manifest["banks"] if bank_ids is None or e["bank_id"] in bank_ids]
    # a partial backup lists the banks it could not archive: they are not in it, so not restored
    failed = {f["bank_id"]: f["error"] for f in manifest.get("failed", ())}
    missing = sorted(set(bank_ids or ()) - {e["bank_id"] for e in entries})
    if missing:
        named = (f"{b} (its backup failed: {failed[b]})" if b in failed else b for b in missing)
        raise InvalidRequestError(f"not in the manifest: {', '.join(named)}")
    result: dict[str, Any] = {"schema": target, "manifest": manifest_key, "restored": [], "skipped": [], "refused": []}
    result["not_backed_up"] = sorted(failed) if bank_ids is None else []
    for bank_id in result["not_backed_up"]:
        progress(f"{bank_id}: not in this backup (its backup failed: {failed[bank_id]}), not restored")
    conn = await _connect()
    try:
        async with _Engine(target) as engine:
            existing = set(await _bank_ids(conn, target))
            for n, entry in enumerate(entries, 1):
                bank_id, expected = entry["bank_id"], _expected(entry)
                archive = store.get(entry["key"])
                if hashlib.sha256(archive).hexdigest() != entry["sha256"]:
                    raise AdminError(f"{entry['key']}: the archive's SHA-256 differs from the manifest: not restored")
                if bank_id in existing:
                    if await _counts(conn, target, bank_id) == expected:
                        result["skipped"].append(bank_id)
                        progress(f"[{n}/{len(entries)}] {bank_id}: already restored, skipped")
                        continue
                    if not replace:
                        result["refused"].append(bank_id)
                        progress(f"[{n}/{len(entries)}] {bank_id}: exists with other contents, refused (--replace)")
                        continue
                    await engine.delete_bank(bank_id)
                await engine.import_archive(archive)
                got = await _counts(conn, target, bank_id)
                if expected and got != expected:
                    raise AdminError(f"{bank_id}: restored {got}, the backup held {expected}")
                result["restored"].append({"bank_id": bank_id, **got})
                progress(f"[{n}/{len(entries)}] {bank_id}: restored {got}")
    finally:
        await conn.close()
    return result


def _expected(entry: Mapping[str, Any]) -> dict[str, int]:
    counts = entry.get("counts") or {}
    return {k: int(counts[k]) for k in _COUNTED if k in counts} if counts else {}


async def reembed(*, source_schema: str, target_schema: str, progress: Progress = print) -> dict[str, Any]:
    """Copy every bank of ``source_schema`` into ``target_schema``, re-embedded with the configured model."""
    if _quote_ident(source_schema) == _quote_ident(target_schema):
        raise InvalidRequestError("the target schema must differ from the source: re-embedding never writes in place")
    conn = await _connect()
    try:
        banks = await _bank_ids(conn, source_schema)
        if not banks:
            raise InvalidRequestError(f"schema {source_schema!r} holds no bank: nothing to re-embed")
        source_space = await _recorded_space(conn, source_schema)
        target_space = await _recorded_space(conn, target_schema)
        target_banks = await _bank_ids(conn, target_schema)
        if target_banks and target_space is None:
            raise InvalidRequestError(
                f"schema {target_schema!r} already holds banks this task did not write: choose a fresh schema"
            )
        provider, model = configured_model()
        _refuse_mixing(target_schema, target_space, {"provider": provider, "model": model})  # before loading it
        async with _Engine(target_schema) as engine:
            space = engine.space()
            _refuse_mixing(target_schema, target_space, space.as_dict())
            if source_space is not None and source_space.get("space") == space.as_dict():
                raise InvalidRequestError(f"schema {source_schema!r} is already embedded with {space.as_dict()}")
            await _record_space(
                conn, target_schema, {"space": space.as_dict(), "source": source_schema, "complete": False}
            )
            done: list[dict[str, Any]] = []
            for n, bank_id in enumerate(banks, 1):
                expected = await _counts(conn, source_schema, bank_id)
                if bank_id in target_banks:
                    if await _counts(conn, target_schema, bank_id) == expected:
                        progress(f"[{n}/{len(banks)}] {bank_id}: already re-embedded, skipped")
                        done.append({"bank_id": bank_id, **expected, "skipped": True})
                        continue
                    await engine.delete_bank(bank_id)  # a partial copy from an interrupted run
                await engine.import_archive(await _export_archive(bank_id, source_schema))
                got = await _counts(conn, target_schema, bank_id)
                if got != expected:
                    raise AdminError(f"{bank_id}: the target holds {got}, the source {expected}: stopped")
                done.append({"bank_id": bank_id, **got})
                progress(f"[{n}/{len(banks)}] {bank_id}: re-embedded {got}")
            extra = sorted(set(await _bank_ids(conn, target_schema)) - set(banks))
            await _record_space(
                conn, target_schema, {"space": space.as_dict(), "source": source_schema, "complete": True}
            )
    finally:
        await conn.close()
    return {
        "source": source_schema,
        "target": target_schema,
        "space": space.as_dict(),
        "banks": done,
        "not_in_source": extra,
    }


async def rename_bank(old_bank_id: str, new_bank_id: str, *, schema: str | None = None) -> dict[str, Any]:
    """Rename ``old_bank_id`` to ``new_bank_id`` in ``schema`` (default: the configured one) with Hindsight's own
    rename (refused while the bank has operations running, or when the new id exists); the rows moved per table."""
    from hindsight_api.admin.cli import RenameBankError, _run_rename_bank

    if not new_bank_id.strip() or new_bank_id == old_bank_id:
        raise InvalidRequestError("--to must be a non-blank id other than --from")
    url = os.environ.get("HINDSIGHT_API_DATABASE_URL")
    if not url:
        raise InvalidRequestError("HINDSIGHT_API_DATABASE_URL is not set: run with the Hindsight server's environment")
    target = schema or os.environ.get(_SCHEMA_ENV) or "public"
    _quote_ident(target)
    try:
        moved = await _run_rename_bank(url, target, old_bank_id, new_bank_id, dry_run=False)
    except RenameBankError as exc:
        raise AdminError(f"{old_bank_id} not renamed: {exc}") from exc
    return {"schema": target, "from": old_bank_id, "to": new_bank_id, "moved": moved}


def _store(location: str) -> tuple[ArtifactStore, str]:
    """``s3://bucket/prefix/manifest.json`` or a local path to a manifest: the store and the manifest's key."""
    if location.startswith("s3://"):
        bucket, _, key = location[5:].partition("/")
        return S3Store(bucket), key
    path = Path(location)
    if path.is_dir():
        path = path / MANIFEST
    # the manifest's keys are relative to the store root: backups/<time>/...
    root = path.parent.parent.parent
    return DirectoryStore(root), path.relative_to(root).as_posix()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memory_adapter.admin.maintenance", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("restore", help="restore banks from a backup manifest (s3://... or a local path)")
    r.add_argument("manifest")
    r.add_argument("--schema", help="target schema (default: HINDSIGHT_API_DATABASE_SCHEMA or public)")
    r.add_argument("--bank", action="append", dest="banks", help="restore only this bank (repeatable)")
    r.add_argument("--replace", action="store_true", help="delete an existing bank with other contents first")
    e = sub.add_parser("reembed", help="re-embed every bank into a fresh schema with the configured model")
    e.add_argument("--source-schema", required=True)
    e.add_argument("--target-schema", required=True)
    n = sub.add_parser("rename-bank", help="give a bank another id in place (Hindsight's own rename)")
    n.add_argument("--from", dest="old", required=True, help="the bank's id now")
    n.add_argument("--to", dest="new", required=True, help="its new id (must not exist)")
    n.add_argument("--schema", help="the bank's schema (default: HINDSIGHT_API_DATABASE_SCHEMA or public)")
    args = parser.parse_args(argv)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        if args.command == "restore":
            store, key = _store(args.manifest)
            result = asyncio.run(
                restore(store, key, schema=args.schema, bank_ids=args.banks, replace=args.replace, progress=progress)
            )
        elif args.command == "rename-bank":
            result = asyncio.run(rename_bank(args.old, args.new, schema=args.schema))
        else:
            result = asyncio.run(
                reembed(source_schema=args.source_schema, target_schema=args.target_schema, progress=progress)
            )
    except AdminError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, sort_keys=True, default=str))  # one line, the last on stdout: the result
    return 1 if result.get("refused") else 0


if __name__ == "__main__":
    raise SystemExit(main())

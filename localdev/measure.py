"""Measure the local Hindsight: cold and warm start to healthy, retain and recall latency, memory (RSS).

    python -m localdev.measure [--embeddings local|hashed] [--retains 20] [--recalls 50]

Starts its own throwaway instance (free ports, temp data dir, no isolation so the numbers are
Hindsight's own), prints a table, and removes everything. The numbers in docs/local.md's
``## Local Hindsight`` section come from this script; they depend on machine load.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from localdev.hindsight import EmbeddingsMode, LocalHindsight, LocalHindsightConfig
from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.constants import DEFAULT_RECALL_BUDGET
from memory_adapter.transport import HttpTransport

_SENTENCES = [
    "Alex prefers email over phone calls.",
    "The quarterly budget review happens in the Berlin office.",
    "My dog is allergic to chicken.",
    "Sam is learning to play the cello on weekends.",
    "The delivery to Oslo was two days late last month.",
]
_QUERIES = ["How should we contact Alex?", "Which food should the pet avoid?", "Where is the finance meeting held?"]


def _timed(call: Callable[..., object], *args: Any, **kwargs: Any) -> float:
    """Run one request; return its wall time in milliseconds."""
    started = time.perf_counter()
    call(*args, **kwargs)
    return (time.perf_counter() - started) * 1000


def _note(i: int) -> str:
    return _SENTENCES[i % len(_SENTENCES)] + f" (note {i})"


def _mem_mb(pid: int, field: str = "Rss") -> float:
    """``Rss`` or ``Pss`` (shared pages divided among their users) of a process, in MB."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def _summary(name: str, values: list[float]) -> str:
    return (
        f"{name:<22} n={len(values):<3} p50={statistics.median(values):7.1f} ms  "
        f"p95={_percentile(values, 95):7.1f} ms  max={max(values):7.1f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localdev.measure", description=__doc__.split("\n\n")[0])
    parser.add_argument("--embeddings", choices=[m.value for m in EmbeddingsMode], default="local")
    parser.add_argument("--retains", type=int, default=20)
    parser.add_argument("--recalls", type=int, default=50)
    args = parser.parse_args(argv)

    config = LocalHindsightConfig.ephemeral(embeddings=EmbeddingsMode(args.embeddings), isolation=False)
    hs = LocalHindsight(config)
    try:
        started = time.monotonic()
        hs.start()
        cold = time.monotonic() - started
        hs.stop()
        started = time.monotonic()
        hs.start()
        warm = time.monotonic() - started

        bank = f"measure-{uuid.uuid4().hex[:8]}"
        api = HindsightApi(HttpTransport(hs.url), timeout=120.0)
        retains = [_timed(api.retain, bank, [{"content": _note(i)}], wait=True) for i in range(args.retains)]
        queries = [_QUERIES[i % len(_QUERIES)] for i in range(args.recalls)]
        recalls = [_timed(api.recall, bank, query, budget=DEFAULT_RECALL_BUDGET, max_tokens=4096) for query in queries]

        pids = hs.pids()
        api_rss = _mem_mb(pids["hindsight-api"])
        pg_pss = sum(_mem_mb(pid, "Pss") for pid in [pids["postgres"], *_children(pids["postgres"])])
        stub_rss = _mem_mb(pids["llm-stub"]) if "llm-stub" in pids else 0.0
        worker_rss = sum(_mem_mb(pid) for name, pid in pids.items() if name.startswith("hindsight-worker"))

        print(f"embeddings: {args.embeddings}")
        print(f"cold start to healthy (initdb + migrations + model load): {cold:5.1f} s")
        print(f"warm start to healthy (existing data dir):                {warm:5.1f} s")
        print(_summary("retain (sync, 1 item)", retains))
        print(_summary("recall", recalls))
        print(f"memory: hindsight-api RSS {api_rss:.0f} MB, workers RSS {worker_rss:.0f} MB, ", end="")
        print(f"PostgreSQL PSS (all processes) {pg_pss:.0f} MB, ", end="")
        print(f"stand-in RSS {stub_rss:.0f} MB")
    finally:
        hs.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

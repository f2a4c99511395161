"""``python -m bench``: run every measurement against a fresh local Hindsight and write ``bench/results/``.

Outputs: ``latest.json`` (every figure and raw sample), ``latest.md`` (tables + targets), ``latencies.png``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
MEASUREMENTS = (
    "recall",
    "first_turn",
    "degraded",
    "spools",
    "outage",
    "invocations",
    "after_turn",
    "working_memory",
    "build",
)
#: Measurements that need no Hindsight (they run in-process, or build).
_SERVERLESS = frozenset({"working_memory", "build"})


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark memory_adapter against hindsight-agentcore 0.1.3 on a real local Hindsight.",
    )
    parser.add_argument(
        "--only", default=",".join(MEASUREMENTS), help=f"comma-separated subset of: {', '.join(MEASUREMENTS)}"
    )
    parser.add_argument("--quick", action="store_true", help="small sample counts (a smoke run, not figures)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="output directory (default: bench/results)")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="update only the selected measurements in an existing <out>/latest.json (re-running one figure)",
    )
    parser.add_argument("--render-only", action="store_true", help="rewrite latest.md and the chart from latest.json")
    return parser


def _log(message: str) -> None:
    print(message, flush=True)


async def _server_measurements(selected: set[str], quick: bool, results: dict[str, Any]) -> None:
    from bench import degraded, first_turn, invocations, outage, recall, retain_path, spools
    from bench.env import BenchEnv

    with BenchEnv(log=_log) as env:
        results["hindsight"] = env.server_info()
        plan: list[tuple[str, Any, dict[str, Any]]] = [
            ("recall", recall.measure, {"calls": 30, "warmup": 3} if quick else {}),
            ("first_turn", first_turn.measure, {"processes": 2} if quick else {}),
            ("degraded", degraded.measure, {"turns": 6, "default_turns": 0} if quick else {}),
            ("spools", spools.measure, {"turns": 20} if quick else {}),
            (
                "outage",
                outage.measure,
                {"turns": 20, "round_s": 0.5, "outage_start_s": 3, "outage_s": 4} if quick else {},
            ),
            ("invocations", invocations.measure, {"calls": 20, "jwt_calls": 100} if quick else {}),
            # Last: the 400 retains it queues keep Hindsight's worker busy for minutes.
            ("after_turn", retain_path.measure, {"calls": 30} if quick else {}),
        ]
        for name, run, kwargs in plan:
            if name not in selected:
                continue
            _log(f"==> {name}")
            started = time.perf_counter()
            results[name] = await run(env, log=_log, **kwargs)
            results[name]["wall_s"] = round(time.perf_counter() - started, 1)
            _log(f"    {name} took {results[name]['wall_s']} s")


def _write(results: dict[str, Any], out: Path, report: Any, chart: Any) -> None:
    results["targets"] = report.targets(results)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    (out / "latest.md").write_text(report.markdown(results))
    chart.draw(results, out / "latencies.png")
    _log(report.markdown(results))
    _log(f"wrote {out}/latest.json, latest.md, latencies.png")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    selected = {name.strip() for name in args.only.split(",") if name.strip()}
    unknown = selected - set(MEASUREMENTS)
    if unknown:
        print(f"unknown measurement(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    from bench import build_sizes, chart, report
    from bench.machine import describe

    log_file = Path(tempfile.gettempdir()) / f"bench-{os.getpid()}.log"
    logging.basicConfig(filename=log_file, level=logging.WARNING, force=True)
    _log(f"benchmark logs (adapters' warnings) go to {log_file}")
    started = time.perf_counter()
    previous = args.out / "latest.json"
    if args.render_only:
        _write(json.loads(previous.read_text()), args.out, report, chart)
        return 0
    merged_into: dict[str, Any] | None = json.loads(previous.read_text()) if args.merge and previous.exists() else None
    results: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": describe(),
        "quick": args.quick,
        "selected": sorted(selected),
    }
    if selected - _SERVERLESS:
        asyncio.run(_server_measurements(selected, args.quick, results))
    if "working_memory" in selected:
        from bench import working_memory

        _log("==> working_memory (in-process: a full conversation, 1,000 held)")
        results["working_memory"] = asyncio.run(working_memory.measure(turns=1_000 if args.quick else 20_000, log=_log))
    if "build" in selected:
        _log("==> build (make build, make synth, bundle sizes)")
        results["build"] = asyncio.run(build_sizes.measure(log=_log))
    results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    results["wall_s"] = round(time.perf_counter() - started, 1)
    results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    if merged_into is not None:
        # Keep the full run's header; record this partial re-run next to the figures it replaced.
        merged_into.setdefault("merged_runs", []).append(
            {k: results[k] for k in ("started_at", "finished_at", "wall_s", "machine", "load_average_end", "selected")}
        )
        merged_into.update({name: results[name] for name in selected if name in results})
        results = merged_into
    _write(results, args.out, report, chart)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m bench.scale``: how a turn's cost grows with the work, on a real local Hindsight; writes bench/results/.

Outputs: ``scale.json`` (every figure and raw sample), ``scale.md`` (the tables BENCHMARKS.md quotes) and
``scale.png`` (recall latency against bank size, turn latency against concurrent sessions).
"""

from __future__ import annotations

import argparse
import dataclasses
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

from hindsight_isolation.settings import tenant_env
from localdev.supervisor import REPO_ROOT

RESULTS = Path(__file__).resolve().parents[1] / "results"
CACHE = REPO_ROOT / ".local" / "bench-scale" / "embeddings"
MEASUREMENTS = ("write", "concurrency", "recall")
#: What a fact extraction takes on a hosted model (an assumption: Bedrock Nova Lite answers a short extraction
#: in one to two seconds); the slow-LLM layouts hold every chat completion this long.
LLM_DELAY_S = 1.5
#: The bounded connection pool under test (per process; Hindsight's default is 100).
POOL_MAX_SIZE = 20
#: The deployed layout with admission control of recalls off, beside ``deployed`` (on, the default).
ADMISSION_OFF = "deployed_admission_off"
#: The layouts of the concurrency part (``deployed_pool``: the deployed one with a bounded connection pool).
LAYOUTS = ("standalone", "deployed", ADMISSION_OFF, "deployed_pool")
#: Open-loop arrival rates (turns/s) on the admission pair: the quiet 2-core VM saturates at ~16 turns/s (closed
#: loop, admission off), so these are half, 1x, 2x and 4x saturation; and how long each rate runs.
OPEN_RATES = (8.0, 16.0, 32.0, 64.0)
OPEN_DURATION_S = 10.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale",
        description="Scale benchmarks on a real local Hindsight: write path, concurrent sessions through the agent, "
        "recall latency against bank size.",
    )
    parser.add_argument(
        "--only", default=",".join(MEASUREMENTS), help=f"comma-separated subset of: {', '.join(MEASUREMENTS)}"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes and samples (a smoke run, not figures)")
    parser.add_argument(
        "--out", type=Path, default=None, help="output directory (default: bench/results; with --quick a temp dir)"
    )
    parser.add_argument("--cache-dir", type=Path, default=CACHE, help="embedding cache (default: .local/bench-scale)")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="update only the selected measurements in an existing <out>/scale.json (re-running one part)",
    )
    parser.add_argument("--render-only", action="store_true", help="rewrite scale.md and scale.png from scale.json")
    parser.add_argument(
        "--layouts",
        default=",".join(LAYOUTS),
        help=f"concurrency: comma-separated subset of the layouts {', '.join(LAYOUTS)}",
    )
    parser.add_argument("--levels", default=None, help="concurrency: closed-loop sessions per level (e.g. 1,8,32)")
    parser.add_argument("--turns", type=int, default=None, help="concurrency: turns per session in the closed loop")
    parser.add_argument(
        "--rates",
        default=",".join(str(r) for r in OPEN_RATES),
        help="concurrency: open-loop arrival rates in turns/s, on the admission pair (empty: no open loop)",
    )
    parser.add_argument("--duration", type=float, default=OPEN_DURATION_S, help="concurrency: seconds per rate")
    parser.add_argument("--no-issue", action="store_true", help="concurrency: skip the issue's 16 x 10 echo run")
    parser.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="lay the processes out as deployed, one CPU for the memory service's recall path (the API and "
        "PostgreSQL), the others for the harness (agents, load generator, LLM stand-in) and the retain worker "
        "(default: on with 2 CPUs or more; --no-pin: the earlier layout, only the API and the worker pinned)",
    )
    return parser


def _log(message: str) -> None:
    print(message, flush=True)


def _concurrency_plan(plan: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The concurrency part's plan with the command line's choices (layouts, levels, turns, open-loop rates)."""
    closed = dict(plan["concurrency"])
    if args.levels:
        closed["levels"] = tuple(int(n) for n in args.levels.split(",") if n.strip())
    if args.turns:
        closed["turns"] = lambda sessions: args.turns
    rates = tuple(float(r) for r in args.rates.split(",") if r.strip())
    return {
        **plan,
        "concurrency": closed,
        "layouts": [name.strip() for name in args.layouts.split(",") if name.strip()],
        "open": {"rates": (2.0,) if args.quick else rates, "duration_s": 2.0 if args.quick else args.duration},
        "issue": None if args.no_issue else plan["issue"],
    }


def _plan(quick: bool) -> dict[str, Any]:
    """Sizes and sample counts: the figures, or a smoke run of every code path."""
    if quick:
        return {
            "write": {"turns": 30, "banks": 3, "idle_markers": 1, "steady_fractions": (0.5,), "steady_s": 4.0},
            "write_slow_llm": {"turns": 20, "banks": 3, "idle_markers": 1, "steady_fractions": ()},
            "concurrency": {"levels": (1, 4), "turns": lambda sessions: 2},
            "concurrency_pool": {"levels": (4,), "turns": lambda sessions: 2},
            "issue": {"sessions": 4, "turns": 3},
            "recall": {
                "sizes": (100, 300),
                "neighbours": {100: 2, 300: 1},
                "many_banks": 20,
                "calls": 10,
                "warmup": 2,
                "spot_checks": 1,
                "needles": 3,
            },
        }
    return {
        "write": {},
        "write_slow_llm": {"turns": 300, "idle_markers": 1, "steady_fractions": ()},
        "concurrency": {},
        "concurrency_pool": {"levels": (32, 64)},
        "issue": {"sessions": 16, "turns": 10},
        "recall": {},
    }


def placement(pin: bool | None) -> dict[str, Any] | None:
    """Which CPUs the memory service and the harness get (``None``: one CPU, nothing pinned).

    Deployed, the agents run on AgentCore microVMs, the API and the retain workers on their own Fargate tasks and the
    database on Aurora; on one machine the harness would otherwise take the API's CPU (it used about twice the API's
    on 2 cores: the closed loop measured the bench as much as the server). So the first CPU serves recalls, the API
    and PostgreSQL (whose queries are half a recall's CPU: apart from the API, they would queue behind the agents),
    and the others run everything else: agents, load generator, LLM stand-in, token issuer and the retain worker
    (the worker's writes still reach PostgreSQL on the first CPU, as deployed they share the database).

    ``pin`` False (``--no-pin``): the earlier layout, only the API (first CPU) and the worker (the others) pinned,
    PostgreSQL and the harness free to run anywhere; ``harness_pinned`` says which."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    return {"service": cpus[:1], "harness": cpus[1:], "harness_pinned": pin is not False}


def pin_harness(layout: dict[str, Any] | None) -> None:
    """Move this process (every thread) to the harness CPUs: what it starts from now on (PostgreSQL, the agents, the
    LLM stand-in, the issuer) inherits them; :class:`~bench.scale.server.Shape` moves the server's processes."""
    from bench.scale.server import pin

    if layout is not None and layout["harness_pinned"]:
        pin(os.getpid(), tuple(layout["harness"]))


def _shapes(layout: dict[str, Any] | None = None) -> dict[str, Any]:
    from bench.scale.recall_size import INDEX_MIN_ROWS
    from bench.scale.server import Shape

    service = tuple(layout["service"]) if layout else None
    harness = tuple(layout["harness"]) if layout else None
    pinned = bool(layout and layout["harness_pinned"])
    everywhere = (*service, *harness) if pinned and service and harness else None  # the standalone API floats
    deployed = Shape(
        "split", workers=1, api_cpus=service, worker_cpus=harness, database_cpus=service if pinned else None
    )

    def tuned(env: dict[str, str]) -> Shape:
        """The deployed layout with extra server settings (the tuning under test)."""
        return dataclasses.replace(deployed, env=env)

    return {
        "standalone": Shape("standalone", api_cpus=everywhere, database_cpus=everywhere),
        "deployed": deployed,
        "deployed_trace_off": tuned({"HINDSIGHT_API_LLM_TRACE_ENABLED": "false"}),
        # Admission control of recalls off (hindsight_isolation.admission): the comparison of the concurrency part.
        ADMISSION_OFF: tuned({tenant_env("recall_concurrency"): "0"}),
        "deployed_pool": tuned({"HINDSIGHT_API_DB_POOL_MAX_SIZE": str(POOL_MAX_SIZE)}),
        **{name: tuned(env) for name, env in _tunings(INDEX_MIN_ROWS).items()},
    }


def _tunings(min_rows: int) -> dict[str, dict[str, str]]:
    """The recall tunings measured on the final data, each on top of the previous index threshold."""
    index = {"HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS": str(min_rows)}
    return {
        "index_threshold": index,
        "bm25_two_terms": {**index, "HINDSIGHT_API_BM25_MAX_QUERY_TERMS": "2"},
        "no_text_search": {**index, "HINDSIGHT_API_ENABLE_TEXT_SEARCH": "false"},
    }


def _timed(results: dict[str, Any], name: str, run: Any) -> None:
    _log(f"==> {name}")
    load_before = [round(x, 2) for x in os.getloadavg()]
    began = time.perf_counter()
    results[name] = run()
    results[name]["wall_s"] = round(time.perf_counter() - began, 1)
    results[name]["load_average_before_after"] = [load_before, [round(x, 2) for x in os.getloadavg()]]
    _log(f"    {name} took {results[name]['wall_s']} s")


def _run(args: argparse.Namespace, selected: set[str], results: dict[str, Any]) -> None:
    from bench.scale import concurrency, open_loop, recall_size, write_path
    from bench.scale.server import ScaleServer, Shape
    from bench.scale.slow_llm import SlowLLM

    quick, cache_dir = args.quick, args.cache_dir
    plan = _concurrency_plan(_plan(quick), args)
    layout = placement(args.pin)
    pin_harness(layout)
    shapes = _shapes(layout)
    results["placement"] = layout
    results["shapes"] = {name: shape.describe() for name, shape in shapes.items()}
    with ScaleServer(log=_log) as server:
        db = server.database()
        if "write" in selected:
            # Deployed, embeddings come from Bedrock (no CPU in the task): the LLM stand-in's hashed vectors stand
            # in for a remote embedding model, so this layout shows the worker's CPU without the local model.
            shapes["deployed_remote_embeddings"] = Shape(
                "split",
                workers=1,
                api_cpus=shapes["deployed"].api_cpus,
                worker_cpus=shapes["deployed"].worker_cpus,
                database_cpus=shapes["deployed"].database_cpus,
                env={
                    "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai",
                    "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": server.llm_base_url,
                    "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": "local-stub",
                    "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL": "hashed-384",
                },
            )
            results["shapes"]["deployed_remote_embeddings"] = shapes["deployed_remote_embeddings"].describe()

            def write() -> dict[str, Any]:
                out = {}
                for name in ("deployed", "deployed_trace_off", "deployed_remote_embeddings", "standalone"):
                    server.apply(shapes[name])
                    out[name] = write_path.measure(server, db, log=_log, **plan["write"])
                with SlowLLM(server.llm_base_url, delay_s=LLM_DELAY_S) as slow:
                    for slots in (10, 30):  # Hindsight's default, and three times that
                        name = f"deployed_llm_{LLM_DELAY_S}s_slots_{slots}"
                        env = {
                            **shapes["deployed_remote_embeddings"].env,
                            "HINDSIGHT_API_LLM_BASE_URL": slow.base_url,
                            "HINDSIGHT_API_WORKER_MAX_SLOTS": str(slots),
                        }
                        deployed = shapes["deployed"]
                        shape = Shape(
                            "split",
                            workers=1,
                            api_cpus=deployed.api_cpus,
                            worker_cpus=deployed.worker_cpus,
                            database_cpus=deployed.database_cpus,
                            env=env,
                        )
                        results["shapes"][name] = shape.describe()
                        server.apply(shape)
                        out[name] = write_path.measure(server, db, log=_log, **plan["write_slow_llm"])
                return out

            _timed(results, "write", write)
        if "concurrency" in selected:

            def sessions() -> dict[str, Any]:
                out: dict[str, Any] = {}
                for name in ("standalone", "deployed", ADMISSION_OFF):  # deployed: admission control on
                    if name not in plan["layouts"]:
                        continue
                    server.apply(shapes[name])
                    out[name] = concurrency.measure(server, db, log=_log, **plan["concurrency"])
                    issue = plan["issue"]
                    if issue is not None:
                        _log(f"  the issue's run: {issue['sessions']} users x {issue['turns']} turns, echo model")
                        out[f"{name}_issue_echo"] = concurrency.run_level(
                            server, db, sessions=issue["sessions"], turns=issue["turns"], model="echo", log=_log
                        )
                    if name in ("deployed", ADMISSION_OFF) and plan["open"]["rates"]:
                        _log(f"  open loop at {plan['open']['rates']} turns/s")
                        out[f"{name}_open"] = open_loop.measure_open(server, db, log=_log, **plan["open"])
                if "deployed_pool" in plan["layouts"]:
                    # The deployed shape with a bounded connection pool per process (Hindsight's default is 100).
                    server.apply(shapes["deployed_pool"])
                    out["deployed_pool"] = concurrency.measure(server, db, log=_log, **plan["concurrency_pool"])
                return out

            _timed(results, "concurrency", sessions)
        if "recall" in selected:
            server.apply(shapes["deployed"])
            _timed(
                results,
                "recall",
                lambda: recall_size.measure(
                    server,
                    db,
                    cache_dir=cache_dir,
                    tuned_shapes={name: shapes[name] for name in _tunings(0)},
                    log=_log,
                    **plan["recall"],
                ),
            )


def _write(results: dict[str, Any], out: Path) -> None:
    from bench.scale import chart, report

    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    (out / "scale.md").write_text(report.markdown(results))
    chart.draw(results, out / "scale.png")
    _log(report.markdown(results))
    _log(f"wrote {out}/scale.json, scale.md, scale.png")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.out is None:
        args.out = Path(tempfile.mkdtemp(prefix="bench-scale-quick-")) if args.quick else RESULTS
    selected = {name.strip() for name in args.only.split(",") if name.strip()}
    unknown = selected - set(MEASUREMENTS)
    if unknown:
        print(f"unknown measurement(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    if args.render_only:
        _write(json.loads((args.out / "scale.json").read_text()), args.out)
        return 0
    from bench.machine import describe

    log_file = Path(tempfile.gettempdir()) / f"bench-scale-{os.getpid()}.log"
    logging.basicConfig(filename=log_file, level=logging.WARNING, force=True)
    _log(f"benchmark logs go to {log_file}")
    began = time.perf_counter()
    results: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": describe(),
        "quick": args.quick,
        "selected": sorted(selected),
    }
    _run(args, selected, results)
    results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    results["wall_s"] = round(time.perf_counter() - began, 1)
    results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    previous = args.out / "scale.json"
    if args.merge and previous.exists():
        merged: dict[str, Any] = json.loads(previous.read_text())
        merged.setdefault("merged_runs", []).append(
            {
                k: results[k]
                for k in ("started_at", "finished_at", "wall_s", "machine", "load_average_end", "selected", "placement")
            }
        )
        merged.update({name: results[name] for name in selected if name in results})
        merged["shapes"] = {**merged.get("shapes", {}), **results.get("shapes", {})}
        results = merged
    _write(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

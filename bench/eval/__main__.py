"""``python -m bench.eval`` (``make eval``): recall quality, side by side, on LoCoMo-format conversations.

Examples:
    make eval                          # every dev conversation, ingested in bulk, two runs on fresh banks (the figures)
    make eval EVAL_ARGS="--ingest turns --conversations 1 --runs 1 --name pace"   # the per-turn pace, smaller
    make eval EVAL_ARGS="--conversations 1 --questions 40 --runs 1"
    make eval EVAL_ARGS="--data synthetic"             # the generated set (what the tests run)
    make eval EVAL_ARGS="--data updates"               # knowledge updates: what is current first? (eval.updates)
    make eval EVAL_ARGS="--url https://hindsight.internal --token $TOKEN --judge bedrock"

Writes ``<out>/<name>.json`` (aggregates only: no question, turn or answer text), ``<name>.md`` (the tables) and
``<name>.png`` (the chart); ``<out>`` is ``bench/results/eval/<data set>`` (``synthetic``, or the data file's name) and
``<name>`` is ``eval`` unless given. A run never replaces results already there (the published ones included) unless
``--replace`` is given: it stops before it starts, naming the file. LoCoMo is CC BY-NC and never enters the
repository: point ``--data`` at your copy.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
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

from bench.eval.data import DataSet, load_locomo, synthetic
from bench.eval.run import SYSTEMS, Evaluation, Target, Variant, evaluate
from memory_adapter.constants import RECALL_BUDGETS

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO.parent / "shared" / "eval" / "data" / "locomo-dev.json"
RESULTS = REPO / "bench" / "results"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="a LoCoMo-format JSON file, 'synthetic' or 'updates'")
    parser.add_argument("--audit", help="evidence corrections (default: <data dir>/locomo-dev-audit-errors.json)")
    parser.add_argument("--conversations", type=int, default=0, help="first N conversations (0, the default: all)")
    parser.add_argument("--questions", type=int, default=0, help="first M questions per conversation (0: all)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated subset of {','.join(SYSTEMS)}")
    parser.add_argument("--url", help="a deployed Hindsight to evaluate instead of a local one")
    parser.add_argument("--token", help="the credential for --url (else HINDSIGHT_API_KEY)")
    parser.add_argument(
        "--variants",
        default="",
        help='our recall again under other settings, same banks: JSON {"name": {"bank": {...}, "adapter": {...}}}',
    )
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an extra HINDSIGHT_API_* setting for the local Hindsight (repeatable)",
    )
    parser.add_argument("--recall-budget", choices=RECALL_BUDGETS, help="override the adapter's budget")
    parser.add_argument("--recall-max-tokens", type=int, help="override the adapter's recall_max_tokens")
    parser.add_argument("--judge", choices=("none", "bedrock", "openai"), default="none", help="score answers too")
    parser.add_argument("--judge-model", help="the answering and judging model (Bedrock model id or OpenAI name)")
    parser.add_argument("--judge-url", help="OpenAI-compatible base URL for --judge openai (e.g. the stand-in)")
    parser.add_argument(
        "--ingest",
        choices=("turns", "bulk"),
        default="bulk",
        help="bulk (default): many turns per request, banks in parallel; turns: one by one as the agent retains them",
    )
    parser.add_argument(
        "--runs", type=int, default=2, help="runs on fresh banks (default 2): the runs' mean, with each figure's spread"
    )
    parser.add_argument("--banks", help="ask again on the banks an earlier ingest left (its suffix, with --url)")
    parser.add_argument(
        "--out", type=Path, help="output directory (default bench/results/eval/<data set>: one folder per data set)"
    )
    parser.add_argument("--name", default="eval", help="output file stem (default eval)")
    parser.add_argument("--replace", action="store_true", help="overwrite results of the same --out and --name")
    return parser


def data_set_name(data: str) -> str:
    """The results folder's name for ``--data``: ``synthetic``, or the file's name without its suffix."""
    return data if data == "synthetic" else Path(data).stem


def outputs(args: argparse.Namespace) -> list[Path]:
    """The files a run writes: ``<out>/<name>.json``, ``.md`` and ``.png``."""
    out: Path = args.out or RESULTS / "eval" / data_set_name(args.data)
    return [out / f"{args.name}{suffix}" for suffix in (".json", ".md", ".png")]


def already_there(args: argparse.Namespace) -> str | None:
    """Why the run must not start: its results would replace existing ones (``--replace`` not given)."""
    existing = [path for path in outputs(args) if path.exists()]
    if args.replace or not existing:
        return None
    return (
        f"{existing[0]} exists (earlier results{', published' if existing[0].parent == RESULTS else ''}): pass "
        "--name <another name> to keep them, or --replace to overwrite them"
    )


def _log(message: str) -> None:
    print(message, flush=True)


def load(args: argparse.Namespace) -> DataSet:
    if args.data == "synthetic":
        data = synthetic()
    else:
        path = Path(args.data)
        audit = Path(args.audit) if args.audit else path.parent / "locomo-dev-audit-errors.json"
        data = load_locomo(path, audit)
    return data.limited(args.conversations or None, args.questions or None)


async def _run(args: argparse.Namespace, data: DataSet) -> dict[str, Any]:
    from bench.eval.helper import VenvHelper
    from localdev.hindsight import LocalHindsightConfig
    from localdev.hindsight.venv import HindsightVenv

    venv = HindsightVenv(LocalHindsightConfig.from_env().venv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    settings = {
        key: value
        for key, value in (("recall_budget", args.recall_budget), ("recall_max_tokens", args.recall_max_tokens))
        if value is not None
    }
    with contextlib.ExitStack() as stack:
        _log("starting the eval helper (MiniLM embeddings, o200k counts) in .venv-hindsight ...")
        helper = stack.enter_context(VenvHelper(venv.path, venv.embedding_model_dir()))
        if args.url:
            target = Target(args.url.rstrip("/"), args.token or os.environ.get("HINDSIGHT_API_KEY"), None, settings)
            server: dict[str, Any] = {"url": "deployment (given by --url)"}
        else:
            from bench.env import BenchEnv

            server_env = dict(item.split("=", 1) for item in args.server_env)
            env = stack.enter_context(BenchEnv(log=_log, server_env=server_env))
            assert env.hindsight is not None
            target = Target(env.url, env.operator_key, env.hindsight.pids, settings)
            server = env.server_info()
            server["extra_env"] = server_env
        variants = [
            Variant(name, dict(spec.get("bank", {})), dict(spec.get("adapter", {})))
            for name, spec in (json.loads(args.variants) if args.variants else {}).items()
        ]
        judge = None
        if args.judge != "none":
            from bench.eval.judge import Judge, make_llm

            judge = Judge(make_llm(args.judge, model=args.judge_model, base_url=args.judge_url))
        results = await evaluate(
            data,
            functools.partial(Evaluation, target, helper, systems=systems, log=_log, variants=variants, judge=judge),
            bulk=args.ingest == "bulk",
            runs=args.runs,
            reuse=args.banks,
        )
        results["hindsight"] = server
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.data == "updates":  # the knowledge-update set: its own scenario and scores (bench.eval.updates)
        from bench.eval.updates import main as updates

        out = args.out or RESULTS / "eval" / "updates"
        existing = out / "eval-updates.json"
        if existing.exists() and not args.replace:
            print(f"{existing} exists (earlier results): pass --out <another folder>, or --replace", file=sys.stderr)
            return 2
        return updates(["--out", str(out)])
    unknown = {s.strip() for s in args.systems.split(",") if s.strip()} - set(SYSTEMS)
    if unknown:
        print(f"unknown system(s) {', '.join(sorted(unknown))}: pick from {', '.join(SYSTEMS)}", file=sys.stderr)
        return 2
    refusal = already_there(args)
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    log_file = Path(tempfile.gettempdir()) / f"eval-{os.getpid()}.log"
    logging.basicConfig(filename=log_file, level=logging.WARNING, force=True)
    data = load(args)
    turns = sum(len(c.turns) for c in data.conversations)
    questions = sum(len(c.questions) for c in data.conversations)
    _log(
        f"{data.name}: {len(data.conversations)} conversations, {turns} turns, {questions} questions "
        f"(adapter warnings go to {log_file})"
    )
    started = time.perf_counter()
    results = asyncio.run(_run(args, data))
    results["started_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    results["wall_s"] = round(time.perf_counter() - started, 1)
    results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    from bench.eval import report

    json_path, md_path, png_path = outputs(args)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(results, indent=1) + "\n")
    markdown = report.markdown(results)
    md_path.write_text(markdown)
    report.chart(results, png_path)
    _log(markdown)
    _log(f"wrote {json_path}, {md_path.name}, {png_path.name} in {results['wall_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

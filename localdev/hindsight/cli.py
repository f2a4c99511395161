"""``python -m localdev.hindsight start|stop|status`` (also ``make hindsight-start|hindsight-stop|hindsight-status``),
and ``maintenance ...``: the operator's maintenance task (restore, re-embed) against the running local server.

Flags override the ``LOCAL_HINDSIGHT_*`` variables, which override the defaults (:class:`LocalHindsightConfig`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from localdev.hindsight.config import (
    DEFAULT_LLM_PORT,
    DEFAULT_PG_PORT,
    DEFAULT_PORT,
    EmbeddingsMode,
    LLMMode,
    LocalHindsightConfig,
)
from localdev.hindsight.server import LocalHindsight
from localdev.supervisor import try_start
from localdev.token_issuer import stop_background as stop_issuer
from memory_adapter.settings_fields import env_names

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m localdev.hindsight",
        description="Run a real Hindsight locally (PostgreSQL + pgvector, loopback, offline).",
        epilog=f"Environment: {', '.join(env_names(LocalHindsightConfig))}. Flags win over them.",
    )
    parser.add_argument("command", choices=["start", "stop", "status", "maintenance"])
    parser.add_argument("--data-dir", type=Path, help="default .local/hindsight")
    parser.add_argument("--port", type=int, help=f"API port (default {DEFAULT_PORT}; 0 = free port)")
    parser.add_argument("--pg-port", type=int, help=f"PostgreSQL port (default {DEFAULT_PG_PORT})")
    parser.add_argument("--llm-port", type=int, help=f"LLM stand-in port (default {DEFAULT_LLM_PORT})")
    parser.add_argument("--llm", choices=[m.value for m in LLMMode], help="default stub")
    parser.add_argument("--llm-model", help="model id for --llm openai|bedrock")
    parser.add_argument("--embeddings", choices=[m.value for m in EmbeddingsMode], help="default local (MiniLM)")
    parser.add_argument("--venv", type=Path, help="the Hindsight virtualenv (default .venv-hindsight)")
    parser.add_argument("--timeout", type=float, dest="startup_timeout", help="seconds to wait for /health")
    parser.add_argument(
        "--observations",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="consolidate facts into observations (default: only with a real LLM)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        help="separate hindsight-worker processes, as deployed (default 1; 0: the API runs the worker in-process)",
    )
    parser.add_argument(
        "--no-isolation",
        dest="isolation",
        action="store_false",
        default=None,
        help="do not load hindsight_isolation (no auth at all: anyone on this machine reaches every bank)",
    )
    parser.add_argument(
        "--keep-issuer", action="store_true", help="stop: leave the local token issuer running (the watchdog does)"
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="extra server environment (repeatable)"
    )
    parser.epilog = (
        f"{parser.epilog} maintenance: the arguments after it are memory_adapter.admin.maintenance's (restore"
        " MANIFEST, reembed ...)."
    )
    return parser


def _config(args: argparse.Namespace) -> LocalHindsightConfig:
    extra = dict(item.split("=", 1) for item in args.env)
    return LocalHindsightConfig.from_env(
        data_dir=args.data_dir,
        port=args.port,
        pg_port=args.pg_port,
        llm_port=args.llm_port,
        llm=LLMMode(args.llm) if args.llm else None,
        llm_model=args.llm_model,
        embeddings=EmbeddingsMode(args.embeddings) if args.embeddings else None,
        venv=args.venv,
        startup_timeout=args.startup_timeout,
        isolation=args.isolation,
        observations=args.observations,
        workers=args.workers,
        extra_env=extra or None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    # The maintenance task's own arguments pass through; any other command takes only this parser's (a REMAINDER
    # positional would swallow `status --data-dir ...`).
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "maintenance":
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    hs = LocalHindsight(_config(args), log=lambda msg: print(msg, flush=True))
    if args.command == "start":
        return _start(hs)
    if args.command == "stop":
        return _stop(hs, keep_issuer=args.keep_issuer)
    if args.command == "maintenance":
        return _maintenance(hs, rest)
    status = hs.status()
    print(json.dumps(status, indent=2))
    return 0 if status["healthy"] else 3


def _start(hs: LocalHindsight) -> int:
    if try_start(hs.start) is None:
        return 1
    print(f"Local Hindsight: {hs.url}  (stop with `make hindsight-stop`)")
    if hs.config.isolation:
        print(f"Per-user isolation is on: use tokens from the local issuer; operator key in {hs.operator_key_file}")
    return 0


def _stop(hs: LocalHindsight, *, keep_issuer: bool) -> int:
    if hs.state_file.exists() or hs.postgres.running():
        hs.stop()
        print("Local Hindsight stopped")
    else:
        print(f"Local Hindsight is not running (data dir {hs.data_dir})")
    if not keep_issuer and hs.config.isolation and hs.config.issuer_discovery_url is None and stop_issuer():
        print("Local token issuer stopped")
    return 0


def _maintenance(hs: LocalHindsight, argv: Sequence[str]) -> int:
    """Run ``memory_adapter.admin.maintenance`` as the deployed maintenance task does: in Hindsight's virtualenv,
    with the running server's environment (its database, embedding model and settings)."""
    if not hs.is_healthy():
        print(f"no local Hindsight answers at {hs.url}: start it first (make hindsight-start)", file=sys.stderr)
        return 1
    python = Path(hs.config.venv) / "bin" / "python"
    command = [str(python), "-m", "memory_adapter.admin.maintenance", *argv]
    return subprocess.run(command, env=hs.server_env(), check=False).returncode

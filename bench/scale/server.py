"""One local Hindsight whose processes can be laid out again on the same database: the scale benchmarks' world.

``standalone`` is Hindsight's default: one ``hindsight-api`` that also runs the queue worker in-process (what
``make local`` and the tests ran before they laid the server out as deployed). ``split`` is the deployed shape
(``infra/constructs/memory_service.py``, and ``make local``'s with ``LOCAL_HINDSIGHT_WORKERS=1``, the default): the
API with ``HINDSIGHT_API_WORKER_ENABLED=false`` plus separate ``hindsight-worker`` processes with stable worker ids,
sharing the database. Either can be pinned to CPUs (``taskset``), and PostgreSQL with them (``database_cpus``),
which is how one 2-core machine stands in for an API task, a worker task and the harness (agents on their microVMs,
the load generator) on their own vCPUs (``python -m bench.scale --pin``). :meth:`ScaleServer.apply` restarts only
the Hindsight processes; PostgreSQL, its data, the LLM stand-in and the token issuer stay up, so banks seeded once
serve every configuration.

``python -m bench.scale.server stop STATE`` stops the worker processes recorded in ``STATE`` (the watchdog's stop
command, should the benchmark be killed).
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.scale.database import Database
from bench.world import World
from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from localdev.hindsight.venv import HindsightVenv
from localdev.supervisor import (
    StateFile,
    free_port,
    http_status,
    pid_alive,
    spawn,
    stop_when_gone,
    terminate,
    wait_until_ready,
)
from localdev.token_issuer import TokenIssuer
from memory_adapter import hindsight_routes as routes

__all__ = ["ScaleServer", "Shape", "cpus_allowed", "pin"]

_CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Shape:
    """How Hindsight's processes are laid out, and the extra ``HINDSIGHT_API_*`` settings they run with.

    Attributes:
        name: ``standalone`` (the API runs the worker in-process) or ``split`` (API + separate workers).
        workers: ``hindsight-worker`` processes (split only), ids ``worker-1`` ... like the deployed services.
        api_cpus: CPUs the API is pinned to (``None``: unpinned).
        worker_cpus: CPUs the workers are pinned to (``None``: unpinned).
        database_cpus: CPUs PostgreSQL (postmaster and every backend) is moved to (``None``: left where it started).
        env: Extra server settings, applied to the API and the workers alike (tuning under test).
    """

    name: str = "standalone"
    workers: int = 0
    api_cpus: tuple[int, ...] | None = None
    worker_cpus: tuple[int, ...] | None = None
    database_cpus: tuple[int, ...] | None = None
    env: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """JSON-ready, for the results."""
        return {
            "name": self.name,
            "workers": self.workers,
            "api_cpus": list(self.api_cpus) if self.api_cpus is not None else None,
            "worker_cpus": list(self.worker_cpus) if self.worker_cpus is not None else None,
            "database_cpus": list(self.database_cpus) if self.database_cpus is not None else None,
            "env": dict(self.env),
        }


def _pinned(command: list[str], cpus: tuple[int, ...] | None) -> list[str]:
    if cpus is None or shutil.which("taskset") is None:
        return command
    return ["taskset", "-c", ",".join(map(str, cpus)), *command]


def process_cpu_s(pid: int | None, *, children: bool = False) -> float:
    """User + system CPU seconds of ``pid`` (all its threads; with ``children``, its reaped children too)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if children else 0)
    return ticks / _CLK_TCK


def cpus_allowed(pid: int | None) -> str | None:
    """The CPUs ``pid`` may run on as the kernel applies them (``/proc/<pid>/status``'s ``Cpus_allowed_list``, e.g.
    ``"0"`` or ``"0-1"``); ``None`` when it is gone. What the results record, so a placement is verified, not
    assumed."""
    if pid is None:
        return None
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    return None


def pin(pid: int, cpus: tuple[int, ...]) -> None:
    """Move every thread of ``pid`` to ``cpus`` (children it forks later inherit them)."""
    try:
        threads = [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        threads = [pid]
    for tid in threads:
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:  # the thread ended meanwhile
            continue


def _live(port: int) -> bool:
    return http_status(f"http://127.0.0.1:{port}{routes.LIVE}", timeout=1.0) == 200


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found


class ScaleServer(World):
    """PostgreSQL + pgvector, the LLM stand-in, the local issuer and Hindsight laid out as a :class:`Shape`.

    Use as a context manager; everything stops (and the data is deleted) on exit, or, if this process is killed,
    through watchdogs.
    """

    def __init__(self, *, log: Callable[[str], None] = print, base_dir: Path | None = None) -> None:
        super().__init__(prefix="bench-scale-", base_dir=base_dir)
        self._log = log
        self.hindsight: LocalHindsight | None = None
        self.issuer: TokenIssuer | None = None
        self.shape = Shape()
        self._workers: list[int] = []
        self._worker_state = StateFile(self.workdir / "workers.json")
        self._api_log = self.workdir / "api.log"

    # --- lifecycle ----------------------------------------------------------------------------------------------

    def _start(self) -> None:
        self.issuer = self._stack.enter_context(TokenIssuer())
        config = LocalHindsightConfig.ephemeral(  # no workers of its own: apply() lays the processes out
            base_dir=self.workdir, issuer_discovery_url=self.issuer.discovery_url, workers=0
        )
        self.hindsight = LocalHindsight(config, log=self._log)
        self._stack.callback(self.hindsight.destroy)
        self._stack.callback(self._stop_workers)
        started = time.monotonic()
        self._log("starting the local Hindsight (embedded PostgreSQL + pgvector, MiniLM embeddings) ...")
        self.hindsight.start()
        self.hindsight.stop_when_gone(delete=True)
        self._log(f"Hindsight ready at {self.url} after {time.monotonic() - started:.1f} s")

    # --- what callers need ---------------------------------------------------------------------------------------

    @property
    def _hs(self) -> LocalHindsight:
        assert self.hindsight is not None, "use ScaleServer as a context manager"
        return self.hindsight

    @property
    def url(self) -> str:
        return self._hs.url

    @property
    def llm_base_url(self) -> str:
        """The LLM stand-in's OpenAI-compatible base URL (it also serves hashed embeddings)."""
        return self._hs.llm_base_url or ""

    @property
    def operator_key(self) -> str:
        return self._hs.operator_key or ""

    @property
    def dsn(self) -> str:
        """The database URL (trust auth on loopback) for the bulk seeder and the query plans."""
        return self._hs.database_url

    def database(self) -> Database:
        """``psql`` and the bulk seeder against this server's PostgreSQL."""
        port = urllib.parse.urlsplit(self.dsn).port or 5432
        python = self.venv.path / "bin" / "python"
        return Database(psql=self.venv.pg_bin("psql"), port=port, log_file=self._hs.pg_log, python=python)

    @property
    def venv(self) -> HindsightVenv:
        return HindsightVenv(self._hs.config.venv)

    def mint(self, user: str) -> str:
        """A token for ``user`` from the issuer Hindsight trusts."""
        assert self.issuer is not None
        return self.issuer.mint(user, ttl=7200)

    @property
    def api_log(self) -> Path:
        """The log of the API process :meth:`apply` started (Hindsight logs each recall's phases in it)."""
        return self._api_log

    def api_pid(self) -> int | None:
        pid = StateFile(self._hs.state_file).read().get("api_pid")
        return pid if isinstance(pid, int) and pid_alive(pid) else None

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds used so far by the API, the workers and PostgreSQL (postmaster, backends, reaped backends)."""
        postmaster = self._hs.postgres.postmaster_pid()
        postgres = process_cpu_s(postmaster, children=True)
        if postmaster is not None:
            postgres += sum(process_cpu_s(pid) for pid in _children(postmaster))
        return {
            "api": process_cpu_s(self.api_pid()),
            "workers": sum(process_cpu_s(pid) for pid in self._workers),
            "postgres": postgres,
        }

    def _postgres_pids(self) -> list[int]:
        postmaster = self._hs.postgres.postmaster_pid()
        return [] if postmaster is None else [postmaster, *_children(postmaster)]

    def placement(self) -> dict[str, Any]:
        """Where each server process may run, as the kernel has it (``Cpus_allowed_list``)."""
        return {
            "api": cpus_allowed(self.api_pid()),
            "workers": sorted({str(cpus_allowed(pid)) for pid in self._workers}),
            "postgres": sorted({str(cpus_allowed(pid)) for pid in self._postgres_pids()}),
        }

    # --- layout --------------------------------------------------------------------------------------------------

    def hindsight_env(self, shape: Shape) -> dict[str, str]:
        """The environment Hindsight's processes get under ``shape`` (the local server's, plus its settings)."""
        env = self._hs.server_env()
        env.update(shape.env)
        return env

    def apply(self, shape: Shape) -> None:
        """Restart Hindsight's processes as ``shape`` (the database and its data stay) and wait until they serve."""
        began = time.monotonic()
        self._stop_workers()
        terminate(self.api_pid(), grace_s=10.0)
        base = self.hindsight_env(shape)
        api_env = dict(base)
        if shape.name == "split":
            api_env["HINDSIGHT_API_WORKER_ENABLED"] = "false"
        command = _pinned([str(self.venv.api_executable())], shape.api_cpus)
        pid = spawn(command, log_file=self._api_log, env=api_env, cwd=self._hs.data_dir)
        state = StateFile(self._hs.state_file)
        state.write({**state.read(), "api_pid": pid})
        # Workers start alongside the API (the database is migrated already): both load their models at once.
        ports = [self._spawn_worker(n, base, shape.worker_cpus) for n in range(1, shape.workers + 1)]
        wait_until_ready(
            self._hs.is_healthy, name="hindsight-api", pid=pid, log_file=self._api_log, timeout_s=240, poll_s=0.25
        )
        for n, (worker_pid, port) in enumerate(ports, start=1):
            wait_until_ready(
                functools.partial(_live, port),
                name=f"hindsight-worker {n}",
                pid=worker_pid,
                log_file=self.workdir / f"worker-{n}.log",
                timeout_s=240,
                poll_s=0.25,
            )
        if shape.database_cpus is not None:
            for database_pid in self._postgres_pids():  # new backends fork from the postmaster: they follow
                pin(database_pid, shape.database_cpus)
        self.shape = shape
        self._log(f"  Hindsight laid out as {shape.describe()} in {time.monotonic() - began:.1f} s")
        self._log(f"  placement (Cpus_allowed_list): {self.placement()}, this harness: {cpus_allowed(os.getpid())}")

    def _spawn_worker(self, index: int, env: Mapping[str, str], cpus: tuple[int, ...] | None) -> tuple[int, int]:
        port = free_port()
        worker_env = {
            **env,
            "HINDSIGHT_API_WORKER_ENABLED": "true",
            "HINDSIGHT_API_WORKER_ID": f"worker-{index}",
            "HINDSIGHT_API_WORKER_HTTP_PORT": str(port),
        }
        executable = self.venv.path / "bin" / "hindsight-worker"
        command = _pinned([str(executable), "--http-port", str(port), "--http-host", "127.0.0.1"], cpus)
        pid = spawn(command, log_file=self.workdir / f"worker-{index}.log", env=worker_env, cwd=self._hs.data_dir)
        self._workers.append(pid)
        if len(self._workers) == 1:
            stop_when_gone(
                [sys.executable, "-m", "bench.scale.server", "stop", str(self._worker_state.path)],
                while_exists=self._worker_state.path,
                log_file=self.workdir / "worker-watchdog.log",
            )
        self._worker_state.write({"pids": self._workers})
        return pid, port

    def _stop_workers(self) -> None:
        for pid in self._workers:
            terminate(pid, grace_s=10.0)
        self._workers = []
        self._worker_state.clear()


def main(argv: list[str]) -> int:
    """``stop STATE``: stop the workers recorded in STATE (the watchdog's stop command)."""
    if len(argv) != 2 or argv[0] != "stop":
        print("usage: python -m bench.scale.server stop STATE", file=sys.stderr)
        return 2
    state = StateFile(Path(argv[1]))
    for pid in state.read().get("pids", []):
        if isinstance(pid, int):
            terminate(pid, grace_s=10.0)
    state.clear()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

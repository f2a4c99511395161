"""One local Hindsight as a unit: PostgreSQL, the LLM stand-in, ``hindsight-api`` and its ``hindsight-worker``
processes (as deployed: the API serves requests, the workers run retain extraction and the rest of the queue),
started in order and stopped.

What each child needs lives elsewhere (:mod:`.postgres`, :mod:`.environment`, :mod:`.keys`); how a child is started,
awaited and stopped is :mod:`localdev.supervisor`. This module decides the order, the ports, and what is recorded in
``<data dir>/state.json``, one start or stop at a time per data dir.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import socket
import ssl
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Self

from localdev import supervisor
from localdev._serving import Lifecycle
from localdev.hindsight.config import EmbeddingsMode, LocalHindsightConfig
from localdev.hindsight.environment import Endpoints, server_env, worker_env
from localdev.hindsight.errors import HindsightStartError
from localdev.hindsight.keys import AGENT_KEY_FILE, OPERATOR_KEY_FILE, ServerKeys
from localdev.hindsight.postgres import LocalPostgres, database_url
from localdev.hindsight.venv import HindsightVenv
from localdev.supervisor import StateFile, child_env, free_port, http_status, pid_alive, spawn, terminate
from localdev.token_issuer import running_during as issuer_running_during
from memory_adapter import hindsight_routes as routes

__all__ = ["LocalHindsight"]

_STATE_FILE = "state.json"
_PORT_FLAGS = {
    "port": "--port (LOCAL_HINDSIGHT_PORT)",
    "pg_port": "--pg-port (LOCAL_HINDSIGHT_PG_PORT)",
    "llm_port": "--llm-port (LOCAL_HINDSIGHT_LLM_PORT)",
}
_START_HINT = (
    "read the log above; check the ports are free and the virtualenv is complete (`make hindsight-venv`); "
    "with a real LLM check its credentials; `python -m localdev.hindsight stop` clears a half-started server; "
    "delete {data_dir} to start afresh."
)


def _all_alive(pids: object) -> bool:
    return isinstance(pids, list) and all(isinstance(pid, int) and pid_alive(pid) for pid in pids)


class LocalHindsight(Lifecycle):
    """One local Hindsight: PostgreSQL + pgvector, the LLM stand-in and ``hindsight-api``.

    ``start()`` is idempotent (a server already running from the same data dir is reused) and
    ``stop()`` stops everything it recorded in ``state.json``. Usable as a context manager::

        with LocalHindsight(LocalHindsightConfig.ephemeral()) as hs:
            Hindsight(base_url=hs.url, api_key=hs.operator_key).retain(...)
    """

    def __init__(
        self,
        config: LocalHindsightConfig | None = None,
        *,
        operator_key: str | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config if config is not None else LocalHindsightConfig.from_env()
        self.keys = ServerKeys.load(self.config, self.data_dir, operator_key=operator_key)
        self._log = log if log is not None else (lambda _msg: None)
        self._venv = HindsightVenv(self.config.venv)
        self.postgres = LocalPostgres(
            pg_data=self.pg_data, log_file=self.pg_log, venv=self._venv, os_user=self.config.pg_os_user, log=self._log
        )
        self._state = StateFile(self.state_file)
        self._ports: dict[str, int] = {}
        self._lock_depth = 0

    # --- keys -----------------------------------------------------------------------------------------------

    @property
    def operator_key(self) -> str | None:
        """Opens every bank: for tests and operators, never for an agent. None without isolation."""
        return self.keys.operator_key

    @property
    def agent_key(self) -> str | None:
        """The per-deployment agent key, limited to ``agent_name``'s banks (in ``agent_tenant``); None unless the
        config names an agent. Give this, never ``operator_key``, to an agent."""
        return self.keys.agent_key

    @property
    def agent_name(self) -> str | None:
        return self.keys.agent_name

    @property
    def agent_tenant(self) -> str | None:
        return self.keys.agent_tenant

    @property
    def extra_env(self) -> Mapping[str, str]:
        """Server settings added last (``LocalHindsightConfig.extra_env``)."""
        return self.config.extra_env

    # --- paths ----------------------------------------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        return self.config.data_dir.resolve()

    @property
    def pg_data(self) -> Path:
        return self.data_dir / "pg"

    @property
    def state_file(self) -> Path:
        return self.data_dir / _STATE_FILE

    @property
    def operator_key_file(self) -> Path:
        """Where the generated operator key is kept (mode 0600), so a later ``start()`` or a CLI user can read it."""
        return self.data_dir / OPERATOR_KEY_FILE

    @property
    def agent_key_file(self) -> Path:
        """Where the generated agent key is kept (mode 0600), next to the operator key."""
        return self.data_dir / AGENT_KEY_FILE

    @property
    def server_log(self) -> Path:
        return self.data_dir / "hindsight-api.log"

    def worker_log(self, index: int) -> Path:
        return self.data_dir / f"hindsight-worker-{index}.log"

    @property
    def pg_log(self) -> Path:
        return self.data_dir / "postgres.log"

    @property
    def llm_log(self) -> Path:
        return self.data_dir / "llm-stub.log"

    # --- ports and URLs -------------------------------------------------------------------------------------

    def _port(self, name: str) -> int:
        """A port in use: chosen by this ``start()``, else recorded by a running one, else configured."""
        return int(self._ports.get(name) or self._state.read().get(name) or getattr(self.config, name))

    @property
    def port(self) -> int:
        return self._port("port")

    @property
    def url(self) -> str:
        """The API base URL, e.g. ``http://127.0.0.1:8888`` (``https://`` with ``config.tls``)."""
        scheme = "https" if self.config.tls else "http"
        return f"{scheme}://{self.config.host}:{self.port}"

    @property
    def llm_base_url(self) -> str | None:
        """The stand-in's OpenAI-compatible base URL (None with a real LLM)."""
        port = self._port("llm_port")
        return f"http://127.0.0.1:{port}/v1" if port and self.config.uses_stub else None

    @property
    def database_url(self) -> str:
        return database_url(self._port("pg_port"))

    def server_env(self) -> dict[str, str]:
        """The environment ``hindsight-api`` runs with (see :func:`localdev.hindsight.environment.server_env`)."""
        endpoints = Endpoints(port=self.port, database_url=self.database_url, llm_port=self._port("llm_port"))
        return server_env(self.config, endpoints, self.keys)

    # --- status ---------------------------------------------------------------------------------------------

    def is_healthy(self) -> bool:
        """True when ``/health`` answers 200 (the API is up and its database reachable)."""
        tls = self.config.tls
        context = ssl.create_default_context(cafile=str(tls.cafile)) if tls else None
        return http_status(self.url + routes.HEALTH, timeout=5.0, context=context) == 200

    def status(self) -> dict[str, Any]:
        """What is running, from ``state.json`` plus live checks."""
        state = self._state.read()
        return {
            "url": self.url if state else None,
            "healthy": bool(state) and self.is_healthy(),
            "api_running": pid_alive(state.get("api_pid")),
            "workers_running": bool(state.get("worker_pids")) and _all_alive(state.get("worker_pids")),
            "postgres_running": self.postgres.running(),
            "llm_stub_running": pid_alive(state.get("llm_pid")),
            "data_dir": str(self.data_dir),
            "server_log": str(self.server_log),
            **{k: state[k] for k in ("port", "pg_port", "llm_port", "llm", "embeddings", "workers") if k in state},
        }

    def pids(self) -> dict[str, int]:
        """The pids of what runs now: ``hindsight-api``, ``hindsight-worker-<n>``, ``postgres`` (the postmaster) and
        ``llm-stub``."""
        state = self._state.read()
        found = {"hindsight-api": state.get("api_pid"), "llm-stub": state.get("llm_pid")}
        for index, pid in enumerate(state.get("worker_pids", []), start=1):
            found[f"hindsight-worker-{index}"] = pid
        if self.postgres.running():
            found["postgres"] = self.postgres.postmaster_pid()
        return {name: pid for name, pid in found.items() if isinstance(pid, int) and pid_alive(pid)}

    # --- start ----------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """One start/stop at a time per data dir, across processes (re-entrant within this object)."""
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with (self.data_dir / ".lock").open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self._log(f"Another start or stop is in progress for {self.data_dir}; waiting for it")
                fcntl.flock(handle, fcntl.LOCK_EX)
            self._lock_depth = 1
            try:
                yield
            finally:
                self._lock_depth = 0
                fcntl.flock(handle, fcntl.LOCK_UN)

    def start(self) -> Self:
        """Start everything (or reuse what already runs from this data dir) and wait until healthy."""
        with self._exclusive():
            return self._start()

    def _start(self) -> Self:
        if self._reuse_running():
            return self
        if self._state.read():
            self._log("Cleaning up a previous local Hindsight that is no longer healthy")
            self.stop()
        self._venv.check(model=self.config.embeddings is not EmbeddingsMode.HASHED)  # before anything starts
        # The isolation extension fetches the issuer's keys at start-up: the issuer must be up first.
        with issuer_running_during(self.config.isolation and self.config.issuer_discovery_url is None, log=self._log):
            return self._start_servers()

    def _start_servers(self) -> Self:
        started = time.monotonic()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._choose_ports()
        state: dict[str, Any] = {
            **self._ports,
            "llm": str(self.config.llm),
            "embeddings": str(self.config.embeddings),
            "workers": self.config.workers,
            "started_at": time.time(),
        }
        self._state.write(state)
        try:
            self.postgres.start(self._ports["pg_port"])
            state["pg_started"] = True
            if self.config.uses_stub:
                state["llm_pid"] = self._start_llm_stub()
            self._state.write(state)
            state["api_pid"] = self._start_api()
            self._state.write(state)
            # The workers start alongside the API (each loads its models at the same time); the API migrates the
            # database, and a worker waits for its tables before it claims work.
            workers = [self._start_worker(index) for index in range(1, self.config.workers + 1)]
            state["worker_pids"] = [pid for pid, _ in workers]
            self._state.write(state)
            self._wait_healthy(state["api_pid"], started)
            for index, (pid, port) in enumerate(workers, start=1):
                self._wait_worker(index, pid, port, started)
        except BaseException:
            self.stop()
            raise
        state["ready_after_s"] = round(time.monotonic() - started, 2)
        self._state.write(state)
        self._log(f"Hindsight is ready at {self.url} after {state['ready_after_s']:.1f} s")
        return self

    def _reuse_running(self) -> bool:
        """True when a server from this data dir runs and answers; a busy one gets 30 s before it is replaced."""
        state = self._state.read()
        if not (state and pid_alive(state.get("api_pid")) and self.postgres.running()):
            return False
        if not _all_alive(state.get("worker_pids", [])):
            self._log("A hindsight-worker of the running Hindsight has stopped: restarting everything")
            return False
        changed = self.changed_settings(state)
        if changed:
            self._log(f"The running Hindsight has other settings ({changed}): restarting it with these")
            return False
        self._ports = {k: int(state[k]) for k in ("port", "pg_port", "llm_port") if state.get(k)}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and pid_alive(state.get("api_pid")):
            if self.is_healthy():
                self._log(f"Hindsight is already running at {self.url} (data dir {self.data_dir})")
                return True
            time.sleep(1.0)
        return False

    def changed_settings(self, state: dict[str, Any]) -> str:
        """How the server recorded in ``state`` differs from this configuration (its LLM, its embeddings), in a few
        words; empty when it matches or a setting was not recorded. Ports are not compared: a running server is
        reused on the ports it has (``status`` shows them)."""
        wanted: dict[str, object] = {
            "llm": str(self.config.llm),
            "embeddings": str(self.config.embeddings),
            "workers": self.config.workers,
        }
        # A server recorded before workers ran apart ran the worker in-process: 0 separate workers.
        recorded = {"workers": 0, **state}
        return ", ".join(
            f"{key} {recorded[key]} instead of {value}"
            for key, value in wanted.items()
            if key in recorded and recorded[key] != value
        )

    def _choose_ports(self) -> None:
        """The configured ports, free ones for 0; each must be free now, or nothing starts."""
        self._ports = {
            "port": self.config.port or free_port(),
            "pg_port": self.config.pg_port or free_port(),
            "llm_port": (self.config.llm_port or free_port()) if self.config.uses_stub else 0,
        }
        for name, port in self._ports.items():
            if not port:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind((self.config.host, port))
                except OSError as err:
                    raise HindsightStartError(
                        f"port {port} ({name}) is in use: {err}. Stop whatever listens there or pick another "
                        f"with {_PORT_FLAGS[name]} (or 0 for a free one)."
                    ) from err

    def _start_llm_stub(self) -> int:
        port = self._ports["llm_port"]
        self._log(f"Starting the deterministic LLM stand-in on 127.0.0.1:{port}")
        command = [sys.executable, "-m", "localdev.llm_stub", "--port", str(port)]
        pid = spawn(command, log_file=self.llm_log, env=child_env(), cwd=self.data_dir)
        supervisor.wait_until_ready(
            lambda: http_status(f"http://127.0.0.1:{port}{routes.HEALTH}", timeout=0.5) == 200,
            name="the LLM stand-in",
            pid=pid,
            log_file=self.llm_log,
            timeout_s=15.0,
            error=HindsightStartError,
            poll_s=0.05,
        )
        return pid

    def _start_api(self) -> int:
        exe = self._venv.api_executable()
        # hindsight-api loads the first .env found walking up from its cwd (this dir), overriding our settings:
        # an empty one here stops a developer's repo-level .env from silently changing the local server.
        (self.data_dir / ".env").write_text("# intentionally empty: see localdev/hindsight/server.py\n")
        self._log(f"Starting hindsight-api on {self.url} (log: {self.server_log})")
        command = [str(exe)]
        if self.config.tls:  # uvicorn's TLS, as a deployed task with hindsight.tls_to_tasks runs it
            command += ["--ssl-keyfile", str(self.config.tls.keyfile), "--ssl-certfile", str(self.config.tls.certfile)]
        return spawn(command, log_file=self.server_log, env=self.server_env(), cwd=self.data_dir)

    def _start_worker(self, index: int) -> tuple[int, int]:
        """Start ``hindsight-worker`` number ``index``; its pid and the port of its health endpoint."""
        port = free_port()
        command = [str(self._venv.worker_executable()), "--http-port", str(port), "--http-host", "127.0.0.1"]
        env = worker_env(self.server_env(), index, port)
        self._log(
            f"Starting hindsight-worker {index} (id {env['HINDSIGHT_API_WORKER_ID']}, log: {self.worker_log(index)})"
        )
        return spawn(command, log_file=self.worker_log(index), env=env, cwd=self.data_dir), port

    def _wait_worker(self, index: int, pid: int, port: int, started: float) -> None:
        live = f"http://127.0.0.1:{port}{routes.LIVE}"

        def ready() -> bool:
            return http_status(live, timeout=1.0) == 200

        self._wait_ready(ready, f"hindsight-worker {index}", pid, self.worker_log(index), started)

    def _wait_healthy(self, pid: int, started: float) -> None:
        self._wait_ready(self.is_healthy, "hindsight-api", pid, self.server_log, started)

    def _wait_ready(self, ready: Callable[[], bool], name: str, pid: int, log_file: Path, started: float) -> None:
        supervisor.wait_until_ready(
            ready,
            name=name,
            pid=pid,
            log_file=log_file,
            timeout_s=self.config.startup_timeout,
            started=started,
            progress=self._log,
            hint=_START_HINT.format(data_dir=self.data_dir),
            error=HindsightStartError,
            poll_s=0.25,
        )

    # --- stop -----------------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the workers and the API (SIGTERM, then SIGKILL), PostgreSQL (``pg_ctl stop``) and the stand-in."""
        with self._exclusive():
            state = self._state.read()
            for index, pid in enumerate(state.get("worker_pids", []), start=1):
                if pid_alive(pid):
                    self._log(f"Stopping hindsight-worker {index} (pid {pid})")
                    terminate(pid, grace_s=10.0)
            if pid_alive(state.get("api_pid")):
                self._log(f"Stopping hindsight-api (pid {state['api_pid']})")
                terminate(state["api_pid"], grace_s=10.0)
            self.postgres.stop()
            if pid_alive(state.get("llm_pid")):
                self._log(f"Stopping the LLM stand-in (pid {state['llm_pid']})")
                terminate(state["llm_pid"], grace_s=5.0)
            self._state.clear()

    def destroy(self) -> None:
        """Stop and delete the data dir (for throwaway instances)."""
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def stop_when_gone(self, pid: int | None = None, *, delete: bool = False) -> None:
        """Stop this server (and delete its data dir when ``delete``) once process ``pid`` has died.

        The servers run in their own sessions so a CLI can leave them running; a test session that is
        killed (SIGKILL, a timeout that exits the interpreter) would leave them running too. A watchdog
        (:func:`localdev.supervisor.stop_when_gone`) polls ``pid`` (default: this process) and cleans up after it.
        """
        stop = ["stop", "--data-dir", str(self.data_dir), "--venv", str(self.config.venv), "--keep-issuer"]
        supervisor.stop_when_gone(
            [sys.executable, "-m", "localdev.hindsight", *stop],
            while_exists=self.state_file,
            log_file=self.data_dir / "watchdog.log",
            owner_pid=pid,
            remove=self.data_dir if delete else None,
        )

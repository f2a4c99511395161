"""The one process supervisor of the localdev tools: start a background child, wait until it is ready, stop it.

The local Hindsight (``hindsight-api``, the LLM stand-in, and PostgreSQL when ``pg_ctl stop`` fails), the token
issuer and the agent runner all run their children through this module:

- :func:`spawn` starts a command detached (its own session, so it outlives the command that started it), appending
  its output to a log file;
- :func:`wait_until_ready` polls a readiness check, reports progress, and raises :class:`StartError` carrying the
  log's tail when the child exits or the deadline passes;
- :class:`StateFile` records pids (and whatever else a tool needs) as a JSON object, written atomically;
- :func:`terminate` stops a process group: SIGTERM, then SIGKILL once the grace period is over;
- :func:`stop_when_gone` starts a watchdog (``python -m localdev.supervisor``) that runs a tool's own stop command
  once the owning process has died, so a killed test run leaves nothing behind.

Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "REPO_ROOT",
    "StartError",
    "StateFile",
    "child_env",
    "free_port",
    "http_status",
    "pid_alive",
    "repo_pythonpath",
    "require_free_port",
    "spawn",
    "stop_when_gone",
    "tail",
    "terminate",
    "try_start",
    "wait_until_ready",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
ADAPTER_SOURCES = REPO_ROOT / "layers" / "memory_adapter" / "src"
LOG_TAIL_LINES = 40

_T = TypeVar("_T")
_N = TypeVar("_N", int, float)
_E = TypeVar("_E", bound=StrEnum)


class StartError(RuntimeError):
    """A child did not become ready; the message carries the tail of its log and, where there is one, a hint."""


class SettingError(SystemExit):
    """A ``LOCAL_*`` variable that cannot be read: the command stops with one line naming it (a SystemExit, so every
    local CLI prints the line, not a traceback, without each catching it)."""


def env_number(env: Mapping[str, str], name: str, default: _N, kind: type[_N]) -> _N:
    """``env[name]`` read as ``kind`` (``int`` or ``float``), or ``default`` when unset or blank."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise SettingError(f"{name} must be {what}, got {raw!r}: fix it or unset it (default {default})") from None


def env_choice(env: Mapping[str, str], name: str, default: _E) -> _E:
    """``env[name]`` read as a member of ``default``'s enum, or ``default`` when unset or blank."""
    raw = env.get(name, "").strip()
    kind = type(default)
    try:
        return kind(raw) if raw else default
    except ValueError:
        known = ", ".join(member.value for member in kind)
        raise SettingError(f"{name} must be one of: {known}; got {raw!r}") from None


# --- children's environment -------------------------------------------------------------------------------------


def repo_pythonpath(*, adapter: bool = False) -> str:
    """``PYTHONPATH`` for a child run from this repository: the repo root (and, with ``adapter``, the
    memory_adapter sources) ahead of the inherited ``PYTHONPATH``, so children import this checkout."""
    sources = [str(REPO_ROOT), *([str(ADAPTER_SOURCES)] if adapter else [])]
    return os.pathsep.join(filter(None, [*sources, os.environ.get("PYTHONPATH")]))


def child_env(extra: Mapping[str, str] | None = None, *, adapter: bool = False) -> dict[str, str]:
    """This process's environment plus ``extra``, with the :func:`repo_pythonpath` a ``python -m localdev...``
    (or, with ``adapter``, ``python -m runtime_handler``) child needs."""
    env = dict(os.environ)
    env.update(extra or {})
    env["PYTHONPATH"] = repo_pythonpath(adapter=adapter)
    return env


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def require_free_port(port: int, *, name: str, setting: str, host: str = "127.0.0.1") -> None:
    """Raise :class:`StartError` naming ``setting`` (the variable that moves the port) when ``port`` is taken."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as err:
            raise StartError(
                f"{name}: port {port} is in use ({err.strerror}): stop whatever listens there, or move {name} to "
                f"another port with {setting}=<port>"
            ) from err


# --- state and logs ---------------------------------------------------------------------------------------------


class StateFile:
    """The JSON object a tool records about its background children (pids, ports, URLs)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any]:
        """What was recorded; ``{}`` when missing, unreadable or not an object."""
        try:
            state = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    def write(self, state: Mapping[str, Any]) -> None:
        """Replace the record atomically (a reader never sees half a file)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2, sort_keys=True))
        tmp.replace(self.path)

    def clear(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def exists(self) -> bool:
        return self.path.exists()

    def live_pid(self, key: str = "pid") -> int | None:
        """The pid recorded under ``key`` while that process runs, else None."""
        pid = self.read().get(key)
        return pid if isinstance(pid, int) and pid_alive(pid) else None

    def live(self, key: str) -> str | None:
        """What was recorded under ``key`` (a URL) while the recorded process runs, else None."""
        value = self.read().get(key)
        return str(value) if value and self.live_pid() else None

    def stop(self, *, grace_s: float) -> bool:
        """Stop the recorded process (SIGTERM, then SIGKILL after ``grace_s``) and forget it; False when it was not
        running."""
        running = terminate(self.live_pid(), grace_s=grace_s)
        self.clear()
        return running


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file (or a note that there is none)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


# --- start ------------------------------------------------------------------------------------------------------


def spawn(args: Sequence[str], *, log_file: Path, env: Mapping[str, str], cwd: Path) -> int:
    """Start ``args`` detached (its own session) with stdout and stderr appended to ``log_file``; return its pid."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as log:
        log.write(f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} {shlex.join(args)} ===\n".encode())
        log.flush()
        process = subprocess.Popen(
            list(args),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env),
            cwd=str(cwd),
            start_new_session=True,
        )
    return process.pid


def wait_until_ready(
    ready: Callable[[], bool],
    *,
    name: str,
    pid: int,
    log_file: Path,
    timeout_s: float,
    started: float | None = None,
    progress: Callable[[str], None] | None = None,
    hint: str = "",
    error: type[StartError] = StartError,
    poll_s: float = 0.1,
) -> None:
    """Poll ``ready()`` until it is true; raise ``error`` once process ``pid`` exits or ``timeout_s`` pass.

    Args:
        ready: The readiness check (e.g. a health URL answering 200).
        name: What is starting, for messages (``"hindsight-api"``).
        pid: The child: its exit ends the wait at once.
        log_file: The child's log, whose tail the error carries.
        timeout_s: Seconds from ``started`` until the child must be ready.
        started: ``time.monotonic()`` when the start began (default: now), so the deadline can cover earlier steps.
        progress: Told every 3 s how long the wait has taken.
        hint: What to try next, appended to the error.
        error: The :class:`StartError` subclass to raise.
        poll_s: Seconds between checks.
    """
    started = time.monotonic() if started is None else started
    last_report = 0.0
    while not ready():
        elapsed = time.monotonic() - started
        if not pid_alive(pid):
            raise error(_failure(name, "it exited during start-up", log_file, hint))
        if elapsed > timeout_s:
            raise error(_failure(name, f"not ready after {timeout_s:.0f} s", log_file, hint))
        if progress is not None and elapsed - last_report >= 3.0:
            last_report = elapsed
            progress(f"  waiting for {name} ... {elapsed:.0f} s")
        time.sleep(poll_s)


def _failure(name: str, reason: str, log_file: Path, hint: str) -> str:
    return (
        f"{name} failed to start: {reason}.\n"
        f"--- last lines of {log_file} ---\n{tail(log_file)}\n"
        f"--- end of log ---" + (f"\nHint: {hint}" if hint else "")
    )


def try_start(start: Callable[[], _T]) -> _T | None:
    """``start()``, or None after printing its :class:`StartError` to stderr: how the CLIs report a failed start."""
    try:
        return start()
    except StartError as err:
        print(err, file=sys.stderr)
        return None


def http_status(url: str, timeout: float = 2.0, *, context: ssl.SSLContext | None = None) -> int | None:
    """The HTTP status ``url`` answers with, or None when nothing answers (the usual readiness check); ``context``
    verifies an ``https://`` server (a local one with a test CA)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as response:  # noqa: S310 - loopback
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
    except (urllib.error.URLError, OSError):
        return None


# --- stop -------------------------------------------------------------------------------------------------------


def pid_alive(pid: int | None) -> bool:
    """True while process ``pid`` runs; False for no pid, a gone one, or one that has exited (a zombie).

    A zombie still answers ``kill(pid, 0)``: an exited child of this process is reaped here, and any other zombie
    (an orphan whose init does not reap, as in some containers) is recognised from ``/proc``.
    """
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # no /proc (or the process just went): kill(pid, 0) said it runs
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def terminate(pid: int | None, *, grace_s: float) -> bool:
    """Stop ``pid``: SIGTERM, then SIGKILL after ``grace_s`` seconds. False when it was not running.

    A process that leads its own group (everything :func:`spawn` starts) is signalled with its group, so its
    children stop with it; any other process is signalled alone.
    """
    if not pid_alive(pid):
        return False
    assert pid is not None

    def send(sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)

    send(signal.SIGTERM)
    if not _wait_gone(pid, grace_s):
        send(signal.SIGKILL)
        _wait_gone(pid, 5.0)
    return True


def _wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# --- the watchdog -----------------------------------------------------------------------------------------------


def stop_when_gone(
    stop_command: Sequence[str],
    *,
    while_exists: Path,
    log_file: Path,
    owner_pid: int | None = None,
    remove: Path | None = None,
) -> int:
    """Start a watchdog that runs ``stop_command`` (then deletes ``remove``) once ``owner_pid`` has died.

    Background children run in their own sessions so that a CLI can leave them running; a test session that is
    killed (SIGKILL, a timeout that exits the interpreter) would leave them running too. The watchdog polls
    ``owner_pid`` (default: this process) every second and gives up quietly once ``while_exists`` (the tool's
    state file) is gone, i.e. the children were stopped normally. Returns the watchdog's pid.
    """
    owner = os.getpid() if owner_pid is None else owner_pid
    args = [sys.executable, "-m", "localdev.supervisor", "--owner-pid", str(owner), "--while-exists", str(while_exists)]
    if remove is not None:
        args += ["--remove", str(remove)]
    return spawn([*args, "--", *stop_command], log_file=log_file, env=child_env(), cwd=REPO_ROOT)


def watch(owner_pid: int, *, while_exists: Path, stop_command: Sequence[str], remove: Path | None) -> int:
    """The watchdog's loop (see :func:`stop_when_gone`)."""
    while while_exists.exists():
        if not pid_alive(owner_pid):
            print(f"owner {owner_pid} is gone: {shlex.join(stop_command)}", flush=True)
            returncode = subprocess.run(list(stop_command), cwd=REPO_ROOT, check=False).returncode
            if remove is not None:
                shutil.rmtree(remove, ignore_errors=True)
            return returncode
        time.sleep(1.0)
    return 0  # stopped normally


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localdev.supervisor",
        description="The watchdog behind stop_when_gone(): run STOP_COMMAND once --owner-pid has died.",
    )
    parser.add_argument("--owner-pid", type=int, required=True)
    parser.add_argument("--while-exists", type=Path, required=True, help="give up once this file is gone")
    parser.add_argument("--remove", type=Path, help="a directory to delete after STOP_COMMAND")
    parser.add_argument("stop_command", nargs="+", metavar="STOP_COMMAND")
    args = parser.parse_args(argv)
    return watch(args.owner_pid, while_exists=args.while_exists, stop_command=args.stop_command, remove=args.remove)


if __name__ == "__main__":
    raise SystemExit(main())

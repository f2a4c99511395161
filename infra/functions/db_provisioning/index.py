"""Prepare Hindsight's database as the master user, so Hindsight itself never needs the master's credentials.

A custom resource (through CDK's provider framework) inside the VPC runs this on every deploy that changes it:

- the extensions Hindsight's migrations need and only the master may create on RDS and Aurora (``vector``,
  ``pg_trgm``, ``btree_gin``), in ``public`` where Hindsight resolves their operators;
- ``hindsight_owner``: a role that cannot log in and owns every Hindsight object (schema rights on ``public``);
- two logins, ``<app>`` and ``<app>_clone``, both members of that role and both switched to it on login
  (``ALTER ROLE ... SET role``), so whatever either creates (migrations at start-up) belongs to the owner role and
  the other login can alter it later. Secrets Manager's alternating-users rotation changes only the login not in
  use and then points the secret at it: running tasks keep a valid password until the next rotation.

The master connects with TLS verified against the RDS certificate bundle (``sslmode=verify-full``). Names and
passwords are quoted by the server (``quote_ident``/``quote_literal``); the statements are idempotent.
"""

from __future__ import annotations

import json
import secrets
import ssl
import string
from typing import Any, Protocol

OWNER_ROLE = "hindsight_owner"
EXTENSIONS = ("vector", "pg_trgm", "btree_gin")
CLONE_SUFFIX = "_clone"  # Secrets Manager's multi-user rotation names the alternate login <username>_clone


class Cursor(Protocol):
    """The slice of a DB-API cursor this module uses."""

    def execute(self, operation: str, args: Any = ...) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Any: ...


def logins_for(username: str) -> tuple[str, str]:
    """The two alternating logins: the secret names either of them."""
    base = username.removesuffix(CLONE_SUFFIX)
    return base, base + CLONE_SUFFIX


def _ident(cur: Cursor, name: str) -> str:
    cur.execute("SELECT quote_ident(%s)", (name,))
    return str(cur.fetchone()[0])


def _literal(cur: Cursor, value: str) -> str:
    cur.execute("SELECT quote_literal(%s)", (value,))
    return str(cur.fetchone()[0])


def _role_exists(cur: Cursor, name: str) -> bool:
    cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,))
    return cur.fetchone() is not None


def random_password(length: int = 40) -> str:
    """A password for a login no credential points at yet (the next rotation sets the real one)."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(length))


def provision(cur: Cursor, *, database: str, username: str, password: str) -> list[str]:
    """Run every step as the master user; returns what was done (for the log). Idempotent."""
    done: list[str] = []
    for extension in EXTENSIONS:
        cur.execute(f"CREATE EXTENSION IF NOT EXISTS {_ident(cur, extension)} SCHEMA public")
    done.append("extensions " + ", ".join(EXTENSIONS))
    owner = _ident(cur, OWNER_ROLE)
    if not _role_exists(cur, OWNER_ROLE):
        cur.execute(f"CREATE ROLE {owner} NOLOGIN")
        done.append(f"created {OWNER_ROLE}")
    # CREATE: Hindsight's migrations create schemas of their own (maintenance routines, tenant schemas).
    cur.execute(f"GRANT CONNECT, TEMPORARY, CREATE ON DATABASE {_ident(cur, database)} TO {owner}")
    cur.execute(f"GRANT USAGE, CREATE ON SCHEMA public TO {owner}")
    for login in logins_for(username):
        quoted = _ident(cur, login)
        if not _role_exists(cur, login):
            secret = password if login == username else random_password()
            cur.execute(f"CREATE ROLE {quoted} LOGIN PASSWORD {_literal(cur, secret)}")
            done.append(f"created {login}")
        elif login == username:
            # The secret's current credentials: make sure they work (never touches the other, possibly in-use, one).
            cur.execute(f"ALTER ROLE {quoted} WITH LOGIN PASSWORD {_literal(cur, password)}")
        cur.execute(f"GRANT {owner} TO {quoted}")
        cur.execute(f"ALTER ROLE {quoted} SET role = {_literal(cur, OWNER_ROLE)}")
    done.append("logins " + ", ".join(logins_for(username)))
    done.extend(_hand_over_objects(cur))
    return done


def _hand_over_objects(cur: Cursor) -> list[str]:
    """Objects in ``public`` that another role created (e.g. migrations an older version ran as the master) go to
    the owner role, so the logins can migrate them; extension members stay with their extension."""
    owner = _ident(cur, OWNER_ROLE)  # before the catalog queries below: each execute replaces the cursor's rows
    # Since PostgreSQL 16 giving an object to a role needs the right to SET ROLE to it, which its creator lacks.
    cur.execute(f"GRANT {owner} TO CURRENT_USER WITH INHERIT FALSE, SET TRUE")
    cur.execute(
        """
        SELECT c.relkind, quote_ident(c.relname)
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
          AND pg_get_userbyid(c.relowner) <> %s
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                          AND d.deptype = 'e')
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                          AND d.deptype IN ('a', 'i') AND c.relkind = 'S')
        """,
        (OWNER_ROLE,),
    )
    kinds = {"r": "TABLE", "p": "TABLE", "v": "VIEW", "m": "MATERIALIZED VIEW", "S": "SEQUENCE", "f": "FOREIGN TABLE"}
    moved = []
    for relkind, name in cur.fetchall():
        cur.execute(f"ALTER {kinds[relkind]} public.{name} OWNER TO {owner}")
        moved.append(name)
    cur.execute(
        """
        SELECT p.oid::regprocedure::text, p.prokind
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> %s
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                          AND d.deptype = 'e')
        """,
        (OWNER_ROLE,),
    )
    for signature, prokind in cur.fetchall():
        cur.execute(f"ALTER {'PROCEDURE' if prokind == 'p' else 'FUNCTION'} {signature} OWNER TO {owner}")
        moved.append(signature)
    return [f"handed {len(moved)} existing objects to {OWNER_ROLE}"] if moved else []


def tls_context(ca_bundle: str) -> ssl.SSLContext:
    """verify-full: the server's certificate must chain to the RDS bundle and name the host we connect to."""
    context = ssl.create_default_context(cadata=ca_bundle)
    context.check_hostname = True
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def _secret(client: Any, arn: str) -> dict[str, Any]:
    return dict(json.loads(client.get_secret_value(SecretId=arn)["SecretString"]))


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Provider-framework ``onEvent``: create/update provision; delete leaves the (retained) database alone."""
    del context
    properties = event["ResourceProperties"]
    physical_id = "hindsight-database-provisioning"
    if event["RequestType"] == "Delete":
        return {"PhysicalResourceId": event.get("PhysicalResourceId", physical_id)}
    import boto3  # the Lambda runtime's; imported here so the SQL tests need neither AWS nor boto3 set up
    import pg8000.dbapi  # bundled into the function by make build

    secrets_client = boto3.client("secretsmanager")
    master = _secret(secrets_client, properties["MasterSecretArn"])
    app = _secret(secrets_client, properties["AppSecretArn"])
    ca_bundle = boto3.client("ssm").get_parameter(Name=properties["CaParameterName"])["Parameter"]["Value"]
    connection = pg8000.dbapi.connect(
        host=properties["Host"],
        port=int(properties["Port"]),
        database=properties["DatabaseName"],
        user=master["username"],
        password=master["password"],
        ssl_context=tls_context(ca_bundle),
        timeout=30,
    )
    try:
        cursor = connection.cursor()
        done = provision(
            cursor, database=properties["DatabaseName"], username=app["username"], password=app["password"]
        )
        connection.commit()
    finally:
        connection.close()
    print(json.dumps({"message": "database provisioned", "steps": done}))
    return {"PhysicalResourceId": physical_id}

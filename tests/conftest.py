"""Session fixtures every test folder can use: the real local Hindsight, a local OIDC issuer, fault servers.

Each is started the first time a test asks for it and stopped when the session ends, so a run that
selects only unit tests never starts Hindsight.

- ``local_hindsight``: a real ``hindsight-api`` on embedded PostgreSQL + pgvector (free ports, a temp
  data dir, the deterministic LLM stand-in, real all-MiniLM-L6-v2 embeddings, per-user isolation
  trusting ``token_issuer``). ``.url``, ``.operator_key``, ``.llm_base_url``, ``.server_log``, and
  ``.agent_key``: a per-deployment agent key limited to the banks of agent ``.agent_name`` (``"support"``) in
  any tenant (``.agent_tenant == "*"``), the credential an IAM-mode agent holds (never the operator key).
  Set ``LOCAL_HINDSIGHT_TEST_URL=http://127.0.0.1:8888`` to reuse the server ``make hindsight-start``
  runs and skip the ~20-30 s start-up while iterating: its operator key is read from
  ``.local/hindsight/operator-key`` (or ``LOCAL_HINDSIGHT_TEST_OPERATOR_KEY``; its agent key, if it has one, from
  ``LOCAL_HINDSIGHT_TEST_AGENT_KEY``, ``..._AGENT_NAME`` and ``..._AGENT_TENANT``) and ``token_issuer``
  then mints with the background issuer's key (``.local/token-issuer``). Never set in CI.
- ``token_issuer``: a :class:`localdev.token_issuer.TokenIssuer` (``.discovery_url``, ``.issuer``,
  ``.jwks_url``, ``.mint(user, tenant=..., ttl=..., ...)``). It is shared by the session and trusted by
  ``local_hindsight``: to test key rotation, make your own ``TokenIssuer()`` rather than rotating this one.
- ``hung_url`` (accepts, never answers), ``refused_url`` (nothing listening), ``failing_url``
  (HTTP 503 to everything): ``http://127.0.0.1:<port>`` strings.
- ``moto_server``: moto in server mode on a free loopback port, a real AWS HTTP API (SQS here) other processes
  reach too: ``.url``, ``.env`` (the ``AWS_*`` variables that point boto3 at it), ``.sqs()`` (a client).

When a test that used ``local_hindsight`` fails, the tail of the server log is attached to its report.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localdev.faults import FailingServer, HungServer, RefusedPort
from localdev.hindsight import HindsightStartError, LocalHindsight, LocalHindsightConfig
from localdev.supervisor import free_port
from localdev.token_issuer import TokenIssuer
from memory_adapter.missions import Mission, Missions

ENV_TEST_URL = "LOCAL_HINDSIGHT_TEST_URL"
#: The session server's agent key opens this agent's banks, in every tenant (IAM tests vary the tenant).
TEST_AGENT_NAME = "support"
TEST_AGENT_TENANT = "*"
#: The session server applies this mission itself to the banks of agent ``steered`` (no other test uses that agent:
#: the stand-in LLM follows a mission, which would change what other tests' banks keep).
TEST_SERVER_MISSIONS = Missions(
    {
        "steered": Mission(
            retain_mission=(
                "Keep the customer's preferences, decisions and the problems they report. "
                "Do not keep small talk: greetings, the weather, the weekend."
            )
        )
    }
)
_LOG_TAIL_LINES = 60


@dataclass(frozen=True)
class ExternalHindsight:
    """A Hindsight someone else started (``LOCAL_HINDSIGHT_TEST_URL``): same attributes, nothing to stop."""

    url: str
    operator_key: str | None = None
    agent_key: str | None = None
    agent_name: str | None = None
    agent_tenant: str | None = None
    llm_base_url: str | None = None
    server_log: Path | None = None


@pytest.fixture(scope="session")
def local_hindsight(token_issuer: TokenIssuer) -> Iterator[LocalHindsight | ExternalHindsight]:
    """A real local Hindsight for the whole session (started on first use).

    It runs with per-user bank isolation (``hindsight_isolation``) trusting ``token_issuer``: send a token minted
    there (``TurnContext(credential=...)``, or ``Hindsight(api_key=token)``) for a bank of that user's
    (``format_bank_id``), or ``.operator_key`` to administer any bank.
    """
    external = os.environ.get(ENV_TEST_URL)
    if external:
        yield ExternalHindsight(
            url=external.rstrip("/"),
            operator_key=_external_operator_key(),
            agent_key=os.environ.get("LOCAL_HINDSIGHT_TEST_AGENT_KEY") or None,
            agent_name=os.environ.get("LOCAL_HINDSIGHT_TEST_AGENT_NAME") or None,
            agent_tenant=os.environ.get("LOCAL_HINDSIGHT_TEST_AGENT_TENANT") or None,
        )
        return
    hindsight = _start_local_hindsight(token_issuer)
    keep = bool(os.environ.get("LOCAL_HINDSIGHT_KEEP_DATA"))
    hindsight.stop_when_gone(delete=not keep)  # even if this session is killed, nothing is left running
    try:
        yield hindsight
    finally:
        hindsight.stop()
        if keep:
            print(f"\nlocal Hindsight data kept in {hindsight.data_dir}")
        else:
            shutil.rmtree(hindsight.data_dir, ignore_errors=True)


def _start_local_hindsight(token_issuer: TokenIssuer) -> LocalHindsight:
    """Start on free ports; once more if another process took one of them between picking and binding."""
    for attempt in (1, 2):
        config = LocalHindsightConfig.ephemeral(
            issuer_discovery_url=token_issuer.discovery_url,
            agent_name=TEST_AGENT_NAME,
            agent_tenant=TEST_AGENT_TENANT,
            missions=TEST_SERVER_MISSIONS.to_json(),
        )
        hindsight = LocalHindsight(config)
        try:
            return hindsight.start()  # HindsightStartError carries the server log tail and a hint
        except HindsightStartError as err:
            hindsight.destroy()
            if attempt == 2 or "in use" not in str(err):
                raise
    raise AssertionError("unreachable")


@contextlib.contextmanager
def throwaway_hindsight(config: LocalHindsightConfig) -> Iterator[LocalHindsight]:
    """Another real Hindsight beside the session's (``config``: its own ports and data dir), started, stopped even if
    this session is killed, and deleted afterwards, also when it fails to start."""
    hindsight = LocalHindsight(config)
    try:
        hindsight.start()
    except HindsightStartError:
        hindsight.destroy()
        raise
    hindsight.stop_when_gone(delete=True)
    try:
        yield hindsight
    finally:
        hindsight.destroy()


def _external_operator_key() -> str | None:
    key = os.environ.get("LOCAL_HINDSIGHT_TEST_OPERATOR_KEY")
    if key:
        return key
    key_file = LocalHindsightConfig.from_env().data_dir / "operator-key"
    return key_file.read_text().strip() if key_file.exists() else None


@pytest.fixture(scope="session")
def token_issuer() -> Iterator[TokenIssuer]:
    """A local OIDC issuer with an in-memory RSA key, serving discovery and JWKS on 127.0.0.1."""
    if os.environ.get(ENV_TEST_URL):  # the external server trusts the background issuer: mint with its key
        yield TokenIssuer.attach()
        return
    with TokenIssuer() as issuer:
        yield issuer


@pytest.fixture(scope="session")
def hung_url() -> Iterator[str]:
    """``http://127.0.0.1:<port>`` of a TCP listener that accepts connections and never answers."""
    with HungServer() as server:
        yield server.url


@pytest.fixture(scope="session")
def refused_url() -> Iterator[str]:
    """``http://127.0.0.1:<port>`` where nothing listens (connections are refused)."""
    with RefusedPort() as port:
        yield port.url


@pytest.fixture(scope="session")
def failing_url() -> Iterator[str]:
    """``http://127.0.0.1:<port>`` of an HTTP server answering 503 to every request."""
    with FailingServer() as server:
        yield server.url


@dataclass(frozen=True)
class MotoServer:
    """moto in server mode: AWS APIs over real HTTP, for this process and for the agent processes tests start."""

    url: str
    region: str = "us-east-1"

    @property
    def env(self) -> dict[str, str]:
        """The variables that point boto3 (in any process) at this server, with throwaway credentials."""
        return {
            "AWS_ENDPOINT_URL_SQS": self.url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }

    def sqs(self) -> Any:
        """A boto3 SQS client on this server."""
        import boto3

        return boto3.client(
            "sqs",
            endpoint_url=self.url,
            region_name=self.region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    """moto's server (``moto[server]``) on 127.0.0.1, started on first use, stopped with the session."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield MotoServer(f"http://{host}:{port}")
    finally:
        server.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach the local Hindsight's log tail to the report of a failed test that used it."""
    report = yield
    if report.failed and "local_hindsight" in getattr(item, "fixturenames", ()):
        hindsight = getattr(item, "funcargs", {}).get("local_hindsight")
        log = getattr(hindsight, "server_log", None)
        if isinstance(log, Path) and log.exists():
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-_LOG_TAIL_LINES:])
            report.sections.append(("local Hindsight server log (tail)", tail))
    return report

"""Memory that outlives its microVM: real agent processes (``python -m runtime_handler``) spooling to the retain queue
(moto's SQS server) while the real local Hindsight is down, killed with SIGKILL mid-outage; after recovery the replay
function (its handler, run locally as the event source mapping would) delivers every turn exactly once."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from infra.functions.retain_replay import index
from localdev.agent import LocalAgent
from localdev.supervisor import free_port
from memory_adapter.identity.bank_ids import format_bank_id
from memory_adapter.queue_replay import QueueReplayer, ReplaySettings
from memory_adapter.sqs_codec import decode_record
from tests.integration.queue_support import RetainQueues, make_queues, replay_handler, run_event_source

from .conftest import Bank
from .switchable_proxy import SwitchableProxy

pytestmark = pytest.mark.integration

TURNS = 100
OUTAGE_STARTS, AGENT_KILLED = 10, 55  # turns 0-9 with Hindsight up; 10-54 on the first agent, 55-99 on a second


@pytest.fixture
def queues(moto_server: Any) -> RetainQueues:
    return make_queues(moto_server.sqs())


@pytest.fixture
def proxy(local_hindsight: Any) -> Iterator[SwitchableProxy]:
    with SwitchableProxy(local_hindsight.url) as running:
        yield running


class RunningAgent:
    """One agent process (one AgentCore session's microVM) and a client for its two routes."""

    def __init__(self, data_dir: Path, env: dict[str, str], hindsight_url: str, issuer_url: str) -> None:
        self.local = LocalAgent(data_dir)
        url = self.local.start(hindsight_url=hindsight_url, issuer_url=issuer_url, port=free_port(), extra_env=env)
        self.local.stop_when_gone()  # even if this test run is killed, no agent is left running
        self.http = httpx.Client(base_url=url, timeout=30)
        self.pid = int(self.local.state()["pid"])

    def turn(self, n: int, token: str) -> dict[str, Any]:
        response = self.http.post(
            "/invocations",
            json={"prompt": f"Turn {n}: the magic number is {1000 + n}."},
            headers={
                "Authorization": f"Bearer {token}",
                "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": f"session-{self.pid}-0123456789-0123456789",
                "X-Amzn-Bedrock-AgentCore-Runtime-Request-Id": f"turn-{n}",
            },
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def wait_until_safe(self, timeout: float = 60) -> None:
        """``/ping`` leaves HealthyBusy once every retain is delivered or queued (what lets AgentCore reclaim it)."""
        deadline = time.monotonic() + timeout
        while self.http.get("/ping").json()["status"] == "HealthyBusy":
            assert time.monotonic() < deadline, "retains never became safe"
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no exit hook, no shutdown, as when the microVM is reclaimed."""
        os.kill(self.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self.local.healthy():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        self.local.stop()  # clears its state file (the process is already gone)


def agent_env(queues: RetainQueues, moto_server: Any, **extra: str) -> dict[str, str]:
    """The deployed agent's memory settings: the queue as its spool; quick to notice the outage."""
    return {
        **moto_server.env,
        "HINDSIGHT_ADAPTER_SPOOL_QUEUE_URL": queues.url,
        "HINDSIGHT_ADAPTER_BREAKER_FAILURE_THRESHOLD": "2",
        "HINDSIGHT_ADAPTER_MAX_RETRIES": "1",
        "HINDSIGHT_ADAPTER_RETRY_BASE_DELAY": "0.05",
        "HINDSIGHT_ADAPTER_RETRY_MAX_DELAY": "0.1",
        "HINDSIGHT_ADAPTER_TIMEOUT": "10",
        "HINDSIGHT_ADAPTER_RECALL_TIMEOUT": "10",
        **extra,
    }


@dataclass(frozen=True)
class Outage:
    """What each test here runs on: the real Hindsight behind a proxy that takes it down, the retain queue (moto's
    SQS), the token issuer, the bank's stored documents, a fresh run id and a folder for the agents' data."""

    hindsight: Any
    issuer: Any
    proxy: SwitchableProxy
    queues: RetainQueues
    moto: Any
    bank: Bank
    run_id: str
    folder: Path

    def agent(self, name: str, **env: str) -> RunningAgent:
        """An agent process (its data in ``folder/name``) spooling to the queue, reaching Hindsight by the proxy."""
        return RunningAgent(
            self.folder / name, agent_env(self.queues, self.moto, **env), self.proxy.url, self.issuer.issuer
        )

    def replay(self) -> list[dict[str, Any]]:
        """The replay function over the queue, as its event source mapping runs it."""
        return run_event_source(self.queues, replay_handler(self.hindsight.url, self.queues))

    def documents(self, user: str, expected: set[str], timeout: float = 90.0) -> list[str]:
        """The ids of ``user``'s documents once every expected one is stored."""
        return self.bank.wait_for_documents(format_bank_id(user=user, agent="support"), expected, timeout=timeout)


@pytest.fixture
def outage(
    local_hindsight: Any,
    token_issuer: Any,
    proxy: SwitchableProxy,
    queues: RetainQueues,
    moto_server: Any,
    bank: Bank,
    run_id: str,
    tmp_path: Path,
) -> Outage:
    return Outage(local_hindsight, token_issuer, proxy, queues, moto_server, bank, run_id, tmp_path)


def test_an_outage_with_the_agent_killed_mid_outage_loses_and_duplicates_no_turn(outage: Outage) -> None:
    queues, proxy = outage.queues, outage.proxy
    user = f"durable-{outage.run_id}"
    token = outage.issuer.mint(user, ttl=3600)
    started = time.monotonic()
    # GIVEN an agent whose turns reach Hindsight (on a loaded machine a slow recall may still degrade one)
    first = outage.agent("first")
    healthy = [first.turn(n, token) for n in range(OUTAGE_STARTS)]
    assert sum(not a["memory"]["degraded"] for a in healthy) > OUTAGE_STARTS // 2
    first.wait_until_safe()
    queued_before = queues.depth()
    # WHEN Hindsight goes down: the turns still answer, and their retains go to the queue
    proxy.set_mode("refused")
    answers = [first.turn(n, token) for n in range(OUTAGE_STARTS, AGENT_KILLED)]
    assert all(a["memory"]["degraded"] for a in answers)
    first.wait_until_safe()
    assert queues.depth() - queued_before == AGENT_KILLED - OUTAGE_STARTS
    # ... and the microVM is reclaimed mid-outage (SIGKILL: no exit hook runs), and a new session's agent takes over
    first.kill()
    second = outage.agent("second")
    for n in range(AGENT_KILLED, TURNS):
        assert second.turn(n, token)["memory"]["degraded"] is True
    second.wait_until_safe()
    second.kill()
    assert queues.depth() - queued_before == TURNS - OUTAGE_STARTS
    outage_s = time.monotonic() - started
    # THEN once Hindsight is back, the replay function delivers the queue; nothing fails, nothing is left anywhere
    proxy.set_mode("up")
    assert all(batch == {"batchItemFailures": []} for batch in outage.replay())
    assert (queues.depth(), queues.depth(dead=True)) == (0, 0)
    expected = {f"turn-{n}" for n in range(TURNS)}
    ids = outage.documents(user, expected, timeout=300)
    assert sorted(ids) == sorted(expected)  # every turn, each exactly once
    # (and nothing went to the microVMs' local disks)
    assert not list((outage.folder / "first" / "spool").rglob("*.json"))
    assert not list((outage.folder / "second" / "spool").rglob("*.json"))
    print(f"\n{TURNS} turns + 2 agent starts: {outage_s:.1f} s; replay + indexing: {time.monotonic() - started:.1f} s")


def test_a_retain_in_flight_when_the_agent_shuts_down_goes_to_the_queue(outage: Outage) -> None:
    queues = outage.queues
    user = f"shutdown-{outage.run_id}"
    token = outage.issuer.mint(user, ttl=3600)
    # GIVEN a hung Hindsight and an agent whose retain waits on it (a long per-attempt timeout, a short exit flush)
    outage.proxy.set_mode("hung")
    agent = outage.agent(
        "agent",
        HINDSIGHT_ADAPTER_TIMEOUT="30",
        HINDSIGHT_ADAPTER_MAX_RETRIES="0",
        HINDSIGHT_ADAPTER_EXIT_FLUSH_TIMEOUT="1",
        HINDSIGHT_ADAPTER_RECALL_TIMEOUT="0.5",
    )
    assert agent.turn(1, token)["memory"]["degraded"] is True
    assert agent.http.get("/ping").json()["status"] == "HealthyBusy"
    assert queues.depth() == 0
    # WHEN the runtime stops it (SIGTERM: the interpreter-exit path runs)
    stopping = time.monotonic()
    assert agent.local.stop()
    assert time.monotonic() - stopping < 10  # it exited by itself, well before the 30 s attempt would have ended
    # THEN the turn is in the queue, not on the local disk, and the replay function delivers it
    (message,) = queues.spool().messages()
    record = decode_record(message)
    assert (record.item["document_id"], record.credential) == ("turn-1", token)
    queues.spool().release([message], dead=False)
    assert not list((outage.folder / "agent" / "spool").rglob("*.json"))
    outage.proxy.set_mode("up")
    assert outage.replay() == [{"batchItemFailures": []}]
    assert outage.documents(user, {"turn-1"}) == ["turn-1"]


def test_an_iam_agent_queues_its_retains_without_the_agent_key_and_the_replay_function_reads_it(
    outage: Outage, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_hindsight, moto_server, queues, run_id = outage.hindsight, outage.moto, outage.queues, outage.run_id
    if not local_hindsight.agent_key:
        pytest.skip("the external Hindsight has no agent key (LOCAL_HINDSIGHT_TEST_AGENT_KEY)")
    # GIVEN the agent key in Secrets Manager (moto's server), read by an IAM-mode agent and by the replay function
    aws = {**moto_server.env, "AWS_ENDPOINT_URL_SECRETS_MANAGER": moto_server.url}
    for name, value in aws.items():
        monkeypatch.setenv(name, value)
    secrets = boto3.client("secretsmanager", endpoint_url=moto_server.url, region_name=moto_server.region)
    arn = secrets.create_secret(Name=f"agent-key-{run_id}", SecretString=local_hindsight.agent_key)["ARN"]
    # The local agent's JWT settings blanked (IAM mode refuses any): its environment is Settings.to_env of JWT mode
    jwt_off = {name: "" for name in ("JWT_DISCOVERY_URL", "JWT_ALLOWED_CLIENTS", "JWT_USER_CLAIM")}
    iam = {"AUTH_MODE": "iam", "HINDSIGHT_API_KEY_SECRET_ARN": arn, **jwt_off}
    agent = outage.agent("agent", **aws, **iam)
    user = f"iam-queued-{run_id}"
    # WHEN Hindsight is down for a turn: its retain goes to the queue
    outage.proxy.set_mode("refused")
    response = agent.http.post(
        "/invocations",
        json={"prompt": "Turn 1: the magic number is 1001."},
        headers={
            "X-Amzn-Bedrock-AgentCore-Runtime-User-Id": user,
            "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": f"session-{agent.pid}-0123456789-0123456789",
            "X-Amzn-Bedrock-AgentCore-Runtime-Request-Id": "turn-1",
        },
    )
    assert response.status_code == 200, response.text
    assert response.json()["memory"]["degraded"] is True
    agent.wait_until_safe()
    agent.local.stop()
    # THEN the message holds no key (the queue and its dead letters keep messages for 14 days), only the mark
    (message,) = queues.spool().messages()
    assert local_hindsight.agent_key not in message.body
    record = decode_record(message)
    assert (record.item["document_id"], record.credential, record.agent_key) == ("turn-1", None, True)
    queues.spool().release([message], dead=False)
    # ... and the replay function, built from its environment as deployed, reads the key and delivers the turn
    outage.proxy.set_mode("up")
    env = {
        "HINDSIGHT_API_URL": local_hindsight.url,
        "RETAIN_DEAD_LETTER_QUEUE_URL": queues.dead_url,
        "HINDSIGHT_API_KEY_SECRET_ARN": arn,
    }
    handler = index.make_handler(lambda: QueueReplayer.from_settings(ReplaySettings.from_env(env)))
    assert run_event_source(queues, handler) == [{"batchItemFailures": []}]
    assert (queues.depth(), queues.depth(dead=True)) == (0, 0)
    assert outage.documents(user, {"turn-1"}) == ["turn-1"]

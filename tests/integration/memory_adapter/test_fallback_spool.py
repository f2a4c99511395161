"""When the retain queue itself cannot be reached, a turn waits on local disk instead of being lost, the AgentCore app
stays HealthyBusy meanwhile, and the backlog reaches the queue once it answers (real SQS API: moto's server, behind
a proxy that can refuse connections; a real directory spool; the real BedrockAgentCoreApp's ping status)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from bedrock_agentcore.runtime import BedrockAgentCoreApp
from bedrock_agentcore.runtime.models import PingStatus
from botocore.config import Config

from memory_adapter import HindsightRuntimeAdapter, RetainOutcome
from memory_adapter.agentcore import RetainWatcher
from memory_adapter.exceptions import SpoolError
from memory_adapter.fallback_spool import FallbackSpool
from memory_adapter.spool import DirectorySpool, RetainRecord
from memory_adapter.sqs_spool import SqsSpool
from tests.integration.memory_adapter.switchable_proxy import SwitchableProxy
from tests.integration.queue_support import RetainQueues, make_queues

pytestmark = pytest.mark.integration


def record(n: int) -> RetainRecord:
    return RetainRecord(operation_id=f"op-{n}", bank_id="tenant:acme:user:u:agent:a", item={"content": f"turn {n}"})


@pytest.fixture
def queues(moto_server: Any) -> RetainQueues:
    return make_queues(moto_server.sqs())


@pytest.fixture
def sqs_proxy(moto_server: Any) -> Iterator[SwitchableProxy]:
    with SwitchableProxy(moto_server.url) as proxy:
        yield proxy


def queue_spool(queues: RetainQueues, proxy: SwitchableProxy, moto_server: Any) -> SqsSpool:
    """The agent's queue spool, reaching SQS through the proxy (one attempt per call, a short send budget)."""
    client = boto3.client(
        "sqs",
        endpoint_url=proxy.url,
        region_name=moto_server.region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"mode": "standard", "max_attempts": 1}, connect_timeout=1, read_timeout=5),
    )
    return SqsSpool(queues.url, client=client, send_budget_s=0.2)


def test_turns_wait_on_disk_while_the_queue_is_unreachable_and_reach_it_once_it_answers(
    queues: RetainQueues, sqs_proxy: SwitchableProxy, moto_server: Any, tmp_path: Path
) -> None:
    # GIVEN the agent's spool, with SQS unreachable, and an AgentCore app following its backlog
    spool = FallbackSpool(
        queue_spool(queues, sqs_proxy, moto_server), DirectorySpool(tmp_path), retry_s=0.05, max_retry_s=0.2
    )
    app = BedrockAgentCoreApp()
    RetainWatcher(wait_s=1).attach(app, spool=spool)
    assert app.get_current_ping_status() is PingStatus.HEALTHY
    sqs_proxy.set_mode("refused")

    # WHEN three turns are spooled
    for n in range(3):
        spool.put(record(n))  # does not raise: the turn is safe on disk

    # THEN they wait on local disk, none in the queue, and the session is kept alive
    assert DirectorySpool(tmp_path).count() == 3
    assert queues.depth() == 0
    assert spool.holding
    assert app.get_current_ping_status() is PingStatus.HEALTHY_BUSY

    # WHEN the queue answers again
    sqs_proxy.set_mode("up")

    # THEN every turn reaches the queue exactly once, the disk is empty and the session may be reclaimed
    assert spool.wait_drained(15)
    assert DirectorySpool(tmp_path).count() == 0
    consumer = queues.spool()
    delivered = consumer.items()
    assert sorted(r.operation_id for r in delivered) == ["op-0", "op-1", "op-2"]
    for item in delivered:
        consumer.remove(item)
    assert app.get_current_ping_status() is PingStatus.HEALTHY

    # AND a turn spooled while the queue answers goes straight to it
    spool.put(record(3))
    assert DirectorySpool(tmp_path).count() == 0
    assert queues.depth() == 1


def test_a_backlog_left_by_an_earlier_process_is_sent_and_holds_the_session_until_then(
    queues: RetainQueues, sqs_proxy: SwitchableProxy, moto_server: Any, tmp_path: Path
) -> None:
    # GIVEN turns an earlier agent process left on this microVM's disk, and the queue still unreachable
    DirectorySpool(tmp_path).put(record(7))
    sqs_proxy.set_mode("refused")
    spool = FallbackSpool(
        queue_spool(queues, sqs_proxy, moto_server), DirectorySpool(tmp_path), retry_s=0.05, max_retry_s=0.2
    )
    app = BedrockAgentCoreApp()

    # WHEN the new process's app starts following the spool
    RetainWatcher(wait_s=1).attach(app, spool=spool)

    # THEN the session is busy until the queue answers and has the turn
    assert app.get_current_ping_status() is PingStatus.HEALTHY_BUSY
    sqs_proxy.set_mode("up")
    assert spool.wait_drained(15)
    assert [r.operation_id for r in queues.spool().items()] == ["op-7"]
    assert app.get_current_ping_status() is PingStatus.HEALTHY


def test_when_the_disk_fails_too_the_loss_is_reported_not_hidden(
    queues: RetainQueues, sqs_proxy: SwitchableProxy, moto_server: Any, tmp_path: Path
) -> None:
    # GIVEN SQS unreachable and a spool directory that cannot be created (a file is in its way)
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    spool = FallbackSpool(queue_spool(queues, sqs_proxy, moto_server), DirectorySpool(blocked / "spool"))
    sqs_proxy.set_mode("refused")
    # WHEN a turn is spooled THEN the spool says it could not keep it (the delivery counts it as dropped)
    with pytest.raises(SpoolError):
        spool.put(record(1))
    assert not spool.holding


def test_the_deployed_adapter_spools_through_the_fallback(
    moto_server: Any, queues: RetainQueues, tmp_path: Path
) -> None:
    # GIVEN the adapter configured as the stack configures the agent: a queue URL, Hindsight unreachable
    adapter = HindsightRuntimeAdapter(
        "support",
        hindsight_api_url="http://127.0.0.1:9",
        spool_queue_url=queues.url,
        spool_dir=str(tmp_path),
        max_retries=0,
    )
    # THEN its spool is the queue with a local fallback, and a turn Hindsight cannot take is queued
    assert isinstance(adapter.spool, FallbackSpool)
    with pytest.MonkeyPatch.context() as env:
        for name, value in moto_server.env.items():
            env.setenv(name, value)
        handle = adapter.retain_for_turn(
            _caller(), result="Noted: the magic number is 42.", query="Remember 42", session_id="s" * 40
        )
        assert handle.result(30) is RetainOutcome.SPOOLED
    assert queues.depth() == 1
    assert DirectorySpool(tmp_path).count() == 0


def _caller() -> Any:
    from memory_adapter.identity import Caller

    return Caller.of(tenant="acme", user="u-1", agent="support")

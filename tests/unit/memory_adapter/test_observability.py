"""Logs never carry raw identities or credentials; metrics work with a real Powertools Metrics instance."""

from __future__ import annotations

import asyncio
import logging

from memory_adapter import TurnContext
from memory_adapter.observability import Metric, short_hash
from memory_adapter.testing import Fault

USER = "alice.secret@example.com"
TOKEN = "eyJsecret.jwt.value"


async def test_logs_carry_hashes_never_raw_user_ids_or_credentials(make_adapter, fake, caplog):
    caplog.set_level(logging.DEBUG, logger="memory_adapter")
    adapter = make_adapter(verbose=True, max_retries=1, breaker_failure_threshold=1)
    ctx = TurnContext(runtime_session_id="s", user_id=USER, agent_name="support", credential=TOKEN)
    await adapter.recall_for_turn(ctx, "hello")
    await adapter.retain_for_turn(ctx, result="ok")
    fake.fault = Fault.DOWN
    await adapter.recall_for_turn(ctx, "hello")
    await adapter.retain_for_turn(ctx, result="ok")
    assert caplog.records
    for record in caplog.records:
        rendered = record.getMessage() + repr(record.__dict__)
        assert USER not in rendered
        assert TOKEN not in rendered
    banks = {getattr(r, "bank", None) for r in caplog.records} - {None}
    assert banks == {short_hash(f"user:{USER}:agent:support")}
    assert {getattr(r, "memory_event", None) for r in caplog.records} >= {"recall.ok", "retain.delivered"}


def test_short_hash_is_stable_and_short():
    assert short_hash("x") == short_hash("x") != short_hash("y")
    assert len(short_hash("x")) == 12


async def test_powertools_metrics_is_a_valid_sink(fake, tmp_path):
    from aws_lambda_powertools import Metrics

    from memory_adapter import HindsightRuntimeAdapter

    metrics = Metrics(namespace="Test", service="memory")
    adapter = HindsightRuntimeAdapter(
        "support",
        hindsight_api_url="http://h",
        transport=fake,
        metrics=metrics,
        spool_dir=str(tmp_path),
        auto_replay=False,
    )
    ctx = TurnContext(runtime_session_id="s", user_id="u", agent_name="support")
    await adapter.recall_for_turn(ctx, "hello")
    await adapter.retain_for_turn(ctx, result="ok")
    names = set(metrics.metric_set)
    assert {Metric.RECALL_LATENCY, Metric.RECALL_HITS, Metric.RETAIN_QUEUED, Metric.RETAIN_DELIVERED} <= names
    metrics.clear_metrics()
    await adapter.aclose()


async def test_a_failing_metrics_sink_never_breaks_a_turn(fake, tmp_path):
    from memory_adapter import HindsightRuntimeAdapter

    class Broken:
        def add_metric(self, name, unit, value):
            raise RuntimeError("boom")

    adapter = HindsightRuntimeAdapter(
        "support", hindsight_api_url="http://h", transport=fake, metrics=Broken(), spool_dir=str(tmp_path)
    )
    ctx = TurnContext(runtime_session_id="s", user_id="u", agent_name="support")
    assert not (await adapter.recall_for_turn(ctx, "hello")).degraded
    await asyncio.wait_for(adapter.aclose(), 5)

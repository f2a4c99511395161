"""Fixtures of the memory adapter's unit tests: a fake Hindsight transport, a metrics recorder, adapter factory."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_adapter import HindsightRuntimeAdapter
from memory_adapter.config import reset_config
from memory_adapter.testing import FakeHindsight

_ENV_PREFIXES = ("HINDSIGHT_API_", "HINDSIGHT_ADAPTER_")


class MetricsRecorder:
    """Collects add_metric calls like Powertools Metrics would."""

    def __init__(self) -> None:
        self.points: list[tuple[str, str, float]] = []

    def add_metric(self, name: str, unit: Any, value: float) -> None:
        self.points.append((name, str(unit), value))

    def total(self, name: str) -> float:
        return sum(v for n, _, v in self.points if n == name)

    def values(self, name: str) -> list[float]:
        return [v for n, _, v in self.points if n == name]


@pytest.fixture(autouse=True)
def clean_config(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No global config and no HINDSIGHT_* variables leak into or out of a test."""
    import os

    for name in list(os.environ):
        if name.startswith(_ENV_PREFIXES) or name == "HINDSIGHT_API_TOKEN":
            monkeypatch.delenv(name)
    reset_config()
    yield
    reset_config()


@pytest.fixture
def fake() -> FakeHindsight:
    return FakeHindsight()


@pytest.fixture
def metrics() -> MetricsRecorder:
    return MetricsRecorder()


@pytest.fixture
def make_adapter(
    fake: FakeHindsight, metrics: MetricsRecorder, tmp_path: Path
) -> Iterator[Callable[..., HindsightRuntimeAdapter]]:
    """Adapters on the fake transport with fast retries and a temp spool; closed after the test."""
    made: list[HindsightRuntimeAdapter] = []

    def make(**kwargs: Any) -> HindsightRuntimeAdapter:
        options: dict[str, Any] = {
            "hindsight_api_url": "http://hindsight.test",
            "transport": fake,
            "spool_dir": str(tmp_path / "spool"),
            "retry_base_delay": 0.0,
            "retry_max_delay": 0.0,
            "metrics": metrics,
            "auto_replay": False,
        }
        agent_name = kwargs.pop("agent_name", "support")
        options.update(kwargs)
        adapter = HindsightRuntimeAdapter(agent_name, **options)
        made.append(adapter)
        return adapter

    yield make
    fake.release()
    for adapter in made:
        asyncio.run(adapter.aclose(timeout=1.0))


@pytest.fixture
def mocked_sqs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An SQS client on moto (fake credentials, no endpoint override): nothing reaches AWS."""
    import boto3
    from moto import mock_aws

    for name, value in {
        "AWS_ACCESS_KEY_ID": "t",
        "AWS_SECRET_ACCESS_KEY": "t",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL_SQS", raising=False)
    with mock_aws():
        yield boto3.client("sqs", region_name="us-east-1")

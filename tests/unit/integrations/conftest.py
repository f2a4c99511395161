"""The wiring and the integrations in unit tests: the real adapter on the in-process fake Hindsight."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from memory_adapter.adapter import HindsightRuntimeAdapter
from memory_adapter.agentcore import AgentCoreMemory, AgentMemorySettings, MemoryTurn
from memory_adapter.formatting import format_memories_as_data
from memory_adapter.identity.caller import Caller
from memory_adapter.testing import FakeHindsight
from memory_adapter.tools.memory_tools import MemoryTools, ToolResult
from tests.unit.runtime_handler.fakes import holding_retains

IAM_ENV = {
    "AGENT_NAME": "support",
    "HINDSIGHT_API_URL": "http://hindsight.test",
    "AUTH_MODE": "iam",
    "HINDSIGHT_API_KEY": "agent-key",
}


def turn_of(user: str, session: str = "session-0123456789-0123456789-0123456789") -> MemoryTurn:
    return MemoryTurn(Caller.of(user=user, agent="support", credential=f"token-{user}"), session, f"req-{user}")


@pytest.fixture
def fake() -> FakeHindsight:
    return FakeHindsight()


@pytest.fixture
def flowing() -> Iterator[threading.Event]:
    """Set while retains reach the fake; clear it to hold them (``/ping`` while a retain is in flight)."""
    event = threading.Event()
    event.set()
    yield event
    event.set()


@pytest.fixture
def make_memory(
    fake: FakeHindsight, flowing: threading.Event, tmp_path: Path
) -> Iterator[Callable[..., AgentCoreMemory]]:
    """``make_memory(**env)``: an IAM-mode ``AgentCoreMemory`` whose adapter talks to ``fake`` (the data-block
    formatter, as the wiring's default adapter has), retains held while ``flowing`` is clear."""
    made: list[HindsightRuntimeAdapter] = []

    def make(env: Mapping[str, str] | None = None, **kwargs: Any) -> AgentCoreMemory:
        settings = AgentMemorySettings.from_env({**IAM_ENV, **(env or {})})
        adapter = HindsightRuntimeAdapter(
            "support",
            transport=holding_retains(fake, flowing),
            formatter=format_memories_as_data,
            hindsight_api_url="http://hindsight.test",
            spool_dir=str(tmp_path / f"spool-{len(made)}"),
            retry_base_delay=0.0,
            retry_max_delay=0.0,
            exit_flush_timeout=0.5,
            auto_replay=False,
        )
        made.append(adapter)
        return AgentCoreMemory(settings, memory=kwargs.pop("memory", adapter), **kwargs)

    yield make
    flowing.set()


class RecordingTools(MemoryTools):
    """The memory tools, recording each call (whose caller, which tool, what arguments) and answering at once."""

    def __init__(self) -> None:
        super().__init__(FakeHindsight())
        self.calls: list[tuple[Caller, str, Any]] = []

    def call(self, caller: Caller, name: str, arguments: object) -> ToolResult:
        self.calls.append((caller, name, arguments))
        return ToolResult(name, {"done": True}, f"{name} done for {caller.bank_id}")

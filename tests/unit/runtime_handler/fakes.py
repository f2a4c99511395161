"""The agent's long-term memory in unit tests: the real memory adapter on ``memory_adapter.testing``'s fake Hindsight.

No twin of the adapter: the turn gets exactly what production gets (``HindsightRuntimeAdapter``), only its transport
is the in-process fake, so tests read what reached "Hindsight" (bank ids, bearers) off ``FakeHindsight.requests``.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memory_adapter.adapter import HindsightRuntimeAdapter, Recollection
from memory_adapter.agentcore.memory import AgentCoreMemory, MemoryTurn
from memory_adapter.agentcore.request import RequestFacts
from memory_adapter.agentcore.settings import AgentMemorySettings
from memory_adapter.identity.bank_ids import BankOwner, parse_bank_id
from memory_adapter.identity.caller import Caller
from memory_adapter.retains import RetainHandle, RetainOutcome
from memory_adapter.testing import FakeHindsight, MockTransport
from memory_adapter.transport import HttpRequest, HttpResponse, Transport
from runtime_handler.main import create_app
from runtime_handler.model import EchoModel
from runtime_handler.settings import Settings
from tests.unit.issuers import LoopbackIssuer

from .serving import serve


def holding_retains(fake: FakeHindsight, flowing: threading.Event) -> MockTransport:
    """``fake`` behind a transport whose retains wait while ``flowing`` is clear (to watch ``/ping`` while a retain
    is in flight); every request reaches ``fake`` and its record."""

    def handler(request: HttpRequest) -> HttpResponse:
        if request.method == "POST" and request.path.endswith("/memories"):
            flowing.wait(request.timeout)
        return fake.send(request)

    return MockTransport(handler)


def memory_on(fake: Transport, spool_dir: Path, **options: Any) -> HindsightRuntimeAdapter:
    """The adapter as the agent builds it (the default ``<recalled_memories>`` block), on ``fake``, with fast
    retries and a short exit flush."""
    settings: dict[str, Any] = {
        "hindsight_api_url": "http://hindsight.test",
        "spool_dir": str(spool_dir),
        "retry_base_delay": 0.0,
        "retry_max_delay": 0.0,
        "exit_flush_timeout": 0.5,
        "auto_replay": False,
    }
    settings.update(options)
    return HindsightRuntimeAdapter("support", transport=fake, **settings)


@contextmanager
def jwt_agent(issuer: LoopbackIssuer, fake: Transport, spool_dir: Path) -> Iterator[str]:
    """The echo agent in JWT mode (``issuer``'s tokens for client ``client-app``) over real HTTP, its memory on
    ``fake``; yields its URL."""
    env = {
        "AGENT_NAME": "support",
        "HINDSIGHT_API_URL": "http://127.0.0.1:9",
        "MODEL_PROVIDER": "echo",
        "AUTH_MODE": "jwt",
        "JWT_DISCOVERY_URL": issuer.discovery_url,
        "JWT_ALLOWED_CLIENTS": "client-app",
    }
    app = create_app(Settings.from_env(env), memory=memory_on(fake, spool_dir), model=EchoModel())
    with serve(app) as url:
        yield url


def owners(fake: FakeHindsight) -> list[BankOwner]:
    """Whose banks the fake was asked about, request by request."""
    found = []
    for request in list(fake.requests):
        if request.path.startswith("/v1/default/banks/"):
            bank = urllib.parse.unquote(request.path.split("/")[4])
            owner = parse_bank_id(bank)
            assert owner is not None, bank
            found.append(owner)
    return found


def bearers(fake: FakeHindsight) -> set[str | None]:
    """Every credential presented to the fake."""
    return {request.bearer for request in list(fake.requests)}


class NullMemory:
    """Long-term memory that recalls nothing and retains nothing (a turn with only its session's conversation)."""

    async def recall_for_turn(self, context: Caller, query: str) -> Recollection:
        return Recollection("", 0, False)

    def retain_for_turn(self, context: Caller, **kwargs: Any) -> RetainHandle:
        return RetainHandle.resolved(RetainOutcome.SKIPPED)

    async def aclose(self, timeout: float | None = None) -> None:  # noqa: ASYNC109 (the TurnMemory protocol)
        return None


def wiring(memory: Any = None, *, recall_timeout: float = 1.0) -> AgentCoreMemory:
    """The memory wiring a turn gets (``AgentCoreMemory``, IAM mode: no verifier) around ``memory`` (a
    ``HindsightRuntimeAdapter`` on the fake, or any ``TurnMemory``; default :class:`NullMemory`)."""
    settings = AgentMemorySettings.from_env(
        {
            "AGENT_NAME": "support",
            "HINDSIGHT_API_URL": "http://127.0.0.1:9",
            "AUTH_MODE": "iam",
            "HINDSIGHT_ADAPTER_RECALL_TIMEOUT": str(recall_timeout),
        }
    )
    return AgentCoreMemory(settings, memory=memory if memory is not None else NullMemory())


def facts(session_id: str, request_id: str = "r-1") -> RequestFacts:
    """The request facts the wiring reads off the runtime's headers."""
    return RequestFacts(session_id=session_id, request_id=request_id)


def turn_of(caller: Caller, request: RequestFacts, *, unavailable: bool = False) -> MemoryTurn:
    """The verified turn ``AgentCoreMemory.admit`` builds for ``caller``."""
    return MemoryTurn(caller, request.session_id, request.request_id, memory_unavailable=unavailable)

"""Helpers for the memory adapter's integration tests against the real local Hindsight (``local_hindsight``)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from memory_adapter import HindsightRuntimeAdapter, TurnContext
from memory_adapter._hindsight_api import HindsightApi, post_retain
from memory_adapter.config import reset_config
from memory_adapter.hindsight_routes import bank_path
from memory_adapter.spool import DirectorySpool, RetainRecord
from memory_adapter.transport import HttpTransport

_ENV_PREFIXES = ("HINDSIGHT_API_", "HINDSIGHT_ADAPTER_")


class _Issuer(Protocol):
    def mint(self, user: str, **kwargs: Any) -> str: ...


@dataclass
class Bank:
    """Operator-side view of the real server: what is really stored (documents), polled, never slept on blindly."""

    url: str
    operator_key: str | None

    def _get(self, path: str) -> Any:
        api = HindsightApi(HttpTransport(self.url), timeout=10, bearer=self.operator_key)
        return api.call("GET", path, missing_ok=True, absent=frozenset({404}))

    def document_ids(self, bank_id: str) -> list[str]:
        """Every document id of ``bank_id`` (an id appearing twice would be listed twice)."""
        body = self._get(bank_path(bank_id, "/documents?limit=1000"))
        return [] if body is None else [item["id"] for item in body["items"]]

    def wait_for_documents(self, bank_id: str, expected: set[str], timeout: float = 90.0) -> list[str]:
        """Poll until every expected document is stored (async retain + worker), then return the listing."""
        deadline = time.monotonic() + timeout
        ids = self.document_ids(bank_id)
        while not expected <= set(ids) and time.monotonic() < deadline:
            time.sleep(0.25)
            ids = self.document_ids(bank_id)
        return ids


def deliver_directly(url: str, record: RetainRecord) -> None:
    """POST a spooled record as the adapter would, from outside it: a delivery whose acknowledgement was lost."""
    post_retain(HttpTransport(url), record, bearer=record.credential, timeout=10)


async def wait_until_spool_empty(adapter: HindsightRuntimeAdapter, polls: int = 300) -> int:
    """Poll the adapter's spool (a background replay may still be removing its last record); return what is left."""
    import asyncio

    for _ in range(polls):
        if not adapter.spooled_retains:
            break
        await asyncio.sleep(0.1)
    return adapter.spooled_retains


@pytest.fixture
def spool(tmp_path: Path) -> DirectorySpool:
    """The spool directory every adapter made by ``make_adapter`` in this test shares."""
    return DirectorySpool(tmp_path / "spool")


@pytest.fixture(autouse=True)
def clean_config(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import os

    for name in list(os.environ):
        if name.startswith(_ENV_PREFIXES):
            monkeypatch.delenv(name)
    reset_config()
    yield
    reset_config()


@pytest.fixture
def bank(local_hindsight: Any) -> Bank:
    return Bank(local_hindsight.url, local_hindsight.operator_key)


@pytest.fixture
def run_id() -> str:
    """A fresh suffix so tests sharing the session's server never see each other's banks."""
    return uuid.uuid4().hex[:8]


@pytest.fixture
def make_adapter(tmp_path: Path) -> Iterator[Callable[..., HindsightRuntimeAdapter]]:
    """Adapters with a temp spool, fast retries and short timeouts; closed (and their threads released) afterwards."""
    made: list[HindsightRuntimeAdapter] = []

    def make(url: str, **kwargs: Any) -> HindsightRuntimeAdapter:
        options: dict[str, Any] = {
            "spool_dir": str(tmp_path / "spool"),
            "retry_base_delay": 0.05,
            "retry_max_delay": 0.2,
            "timeout": 2.0,
            "recall_timeout": 2.0,
            "auto_replay": False,
        }
        options.update(kwargs)
        adapter = HindsightRuntimeAdapter(options.pop("agent_name", "support"), hindsight_api_url=url, **options)
        made.append(adapter)
        return adapter

    yield make
    import asyncio

    for adapter in made:
        asyncio.run(adapter.aclose(timeout=5))


@pytest.fixture
def user_ctx(token_issuer: _Issuer) -> Callable[..., TurnContext]:
    """A TurnContext carrying a token minted for its user (the per-user isolation path)."""

    def make(user: str, session: str, **kwargs: Any) -> TurnContext:
        return TurnContext(
            runtime_session_id=session,
            user_id=user,
            agent_name="support",
            credential=token_issuer.mint(user, ttl=900),
            **kwargs,
        )

    return make

"""Fixtures of the administration tests: the shared local Hindsight seen by the operator tools, users with tokens."""

from __future__ import annotations

import json
import subprocess
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.admin import AdminDeps, DirectoryStore, OperatorClient
from memory_adapter.identity.bank_ids import format_bank_id
from memory_adapter.kinds import RetentionRules, kind_tag
from memory_adapter.testing import MockTransport
from memory_adapter.transport import HttpRequest, HttpResponse, HttpTransport


@dataclass
class Users:
    """Retains as a real user would (their own token, synchronous extraction), on the shared server."""

    url: str
    mint: Callable[..., str]
    run: str

    def name(self, user: str) -> str:
        return f"{user}-{self.run}"

    def bank(self, user: str, agent: str = "support") -> str:
        return format_bank_id(user=self.name(user), agent=agent)

    def retain(
        self, user: str, text: str, *, agent: str = "support", kind: str | None = None, doc: str | None = None
    ) -> str:
        document_id = doc or uuid.uuid4().hex
        item: dict[str, Any] = {"content": text, "document_id": document_id}
        if kind is not None:
            item["tags"] = [kind_tag(kind)]
            item["metadata"] = {"kind": kind}
        api = HindsightApi(HttpTransport(self.url), timeout=60)
        api.retain(self.bank(user, agent), [item], wait=True, bearer=self.mint(self.name(user), ttl=900))
        return document_id

    def recall(self, user: str, query: str, *, agent: str = "support") -> list[str]:
        api = HindsightApi(HttpTransport(self.url), timeout=30)
        bearer = self.mint(self.name(user), ttl=900)
        results = api.recall(self.bank(user, agent), query, budget="mid", max_tokens=4096, bearer=bearer)
        return [r.text for r in results]


class FailingDelete(MockTransport):
    """The real server, except that the first DELETE of ``bank`` answers 500 (a delete Hindsight failed)."""

    def __init__(self, url: str, bank: str) -> None:
        super().__init__(self._answer)
        self.real, self.bank, self.failed = HttpTransport(url), bank, False

    def _answer(self, request: HttpRequest) -> HttpResponse:
        path = urllib.parse.unquote(request.path.split("?")[0])
        if request.method == "DELETE" and path.endswith("/" + self.bank) and not self.failed:
            self.failed = True
            return HttpResponse(500, {"detail": "Internal Server Error"})
        return self.real.send(request)


def extraction_requests(llm_base_url: str | None) -> list[Any]:
    """The fact-extraction requests in the LLM stand-in's log (its last 200 requests of every kind)."""
    assert llm_base_url, "the local Hindsight runs without the LLM stand-in"
    with urllib.request.urlopen(llm_base_url.removesuffix("/v1") + "/_stub/requests", timeout=10) as answer:  # noqa: S310
        log = json.loads(answer.read())
    return [r for r in log if r.get("kind") == "retain"]


def run_maintenance(server: Any, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m memory_adapter.admin.maintenance ...`` in Hindsight's virtualenv with the server's environment,
    as the operator's ECS task runs it."""
    python = Path(server.config.venv) / "bin" / "python"
    return subprocess.run(
        [str(python), "-m", "memory_adapter.admin.maintenance", *args],
        env={**server.server_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture
def users(local_hindsight: Any, token_issuer: Any) -> Users:
    return Users(local_hindsight.url, token_issuer.mint, uuid.uuid4().hex[:8])


@pytest.fixture
def operator(local_hindsight: Any) -> OperatorClient:
    return OperatorClient(local_hindsight.url, local_hindsight.operator_key)


@pytest.fixture
def deps(operator: OperatorClient, tmp_path: Path) -> AdminDeps:
    return AdminDeps(operator, DirectoryStore(tmp_path / "artifacts"), RetentionRules())

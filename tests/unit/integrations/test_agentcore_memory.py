"""AgentCoreMemory: the verified turn of a request, recall and retain for it, the app's 401/400 and /ping busy."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from memory_adapter.adapter import Recollection
from memory_adapter.agentcore import (
    AgentCoreMemory,
    AgentKey,
    AuthError,
    InvocationHooks,
    MemoryTurn,
    PayloadError,
    RequestFacts,
)
from memory_adapter.agentcore.identity import TokenVerifier, default_verifier
from memory_adapter.agentcore.settings import AgentMemorySettings
from memory_adapter.identity.caller import Caller
from memory_adapter.identity.verifier import VerifiedIdentity
from memory_adapter.testing import FakeHindsight
from tests.unit.issuers import CLIENT_ID, LoopbackIssuer
from tests.unit.runtime_handler.serving import serve

from .conftest import IAM_ENV, turn_of

USER_ID = "X-Amzn-Bedrock-AgentCore-Runtime-User-Id"
SESSION = "session-0123456789-0123456789-0123456789"


class _Headers:
    def __init__(self, headers: dict[str, str]) -> None:
        self.raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


def context(**headers: str) -> Any:
    """What the SDK hands an entrypoint: a context whose raw request carries ``headers``."""
    return SimpleNamespace(request=SimpleNamespace(headers=_Headers(headers)))


async def test_an_iam_turn_is_the_user_header_with_the_agent_key(make_memory: Callable[..., AgentCoreMemory]) -> None:
    memory = make_memory({"TENANT_ID": "acme"})
    turn = await memory.authenticate(
        context(**{USER_ID: "user-alex", "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": SESSION})
    )
    assert turn is not None
    assert (turn.caller.user, turn.caller.tenant, turn.caller.agent) == ("user-alex", "acme", "support")
    assert turn.caller.credential == "agent-key"
    assert turn.session_id == SESSION
    assert turn.memory_unavailable is False


async def test_no_identity_is_refused_unless_anonymous_is_allowed(make_memory: Callable[..., AgentCoreMemory]) -> None:
    with pytest.raises(AuthError):
        await make_memory().authenticate(context())
    with pytest.raises(AuthError):
        await make_memory().authenticate(SimpleNamespace())  # no request at all
    assert await make_memory({"ALLOW_ANONYMOUS": "true"}).authenticate(context()) is None


async def test_an_unreadable_agent_key_means_a_turn_without_memory(
    make_memory: Callable[..., AgentCoreMemory], fake: FakeHindsight
) -> None:
    def fetch(arn: str) -> str:
        raise RuntimeError("secrets manager unreachable")

    memory = make_memory(agent_key=AgentKey(secret_arn="arn:aws:secretsmanager:r:1:secret:k", fetch=fetch))
    turn = await memory.authenticate(context(**{USER_ID: "user-alex"}))
    assert turn is not None
    assert turn.memory_unavailable
    assert await memory.recall(turn, "anything") == Recollection("", 0, True, "unavailable")
    assert memory.retain(turn, query="q", result="an answer") is None
    assert fake.requests == []  # nothing reached Hindsight


async def test_recall_and_retain_without_a_turn_do_nothing(
    make_memory: Callable[..., AgentCoreMemory], fake: FakeHindsight
) -> None:
    memory = make_memory()
    assert await memory.recall(None, "anything") == Recollection("", 0, False)
    assert memory.retain(None, query="q", result="an answer") is None
    assert memory.retain(turn_of("user-alex"), query="q", result="   ") is None
    assert fake.requests == []


async def test_a_memory_that_hangs_is_cut_off_by_the_backstop(make_memory: Callable[..., AgentCoreMemory]) -> None:
    class Hanging:
        async def recall_for_turn(self, context: Caller, query: str) -> Recollection:
            await asyncio.sleep(60)
            raise AssertionError("unreachable")

        def retain_for_turn(self, context: Caller, **kwargs: Any) -> Any:
            raise RuntimeError("down")

        async def aclose(self, timeout: float | None = None) -> None:  # noqa: ASYNC109
            return None

    memory = make_memory({"HINDSIGHT_ADAPTER_RECALL_TIMEOUT": "0.05"}, memory=Hanging())
    recollection = await memory.recall(turn_of("user-alex"), "anything")
    assert recollection.degraded
    assert memory.retain(turn_of("user-alex"), query="q", result="a") is None  # scheduling failed: logged, no raise


def test_entrypoint_needs_an_app(make_memory: Callable[..., AgentCoreMemory]) -> None:
    with pytest.raises(RuntimeError, match="create_app"):
        make_memory().entrypoint(lambda payload, turn: {})


def test_the_app_refuses_unverified_callers_and_stays_busy_while_a_retain_is_pending(
    make_memory: Callable[..., AgentCoreMemory], flowing: threading.Event, loopback_issuer: LoopbackIssuer
) -> None:
    jwt_env = {"AUTH_MODE": "jwt", "JWT_DISCOVERY_URL": loopback_issuer.discovery_url, "JWT_ALLOWED_CLIENTS": CLIENT_ID}
    memory = make_memory({**jwt_env, "HINDSIGHT_API_KEY": ""})
    app = memory.create_app()
    seen: list[MemoryTurn | None] = []

    @memory.entrypoint
    def invoke(payload: Any, turn: MemoryTurn | None) -> dict[str, Any]:  # a sync handler works too
        seen.append(turn)
        assert turn is not None
        memory.retain(turn, query=payload["prompt"], result="noted")
        return {"output": "noted"}

    token = loopback_issuer.mint("user-alex")
    headers = {"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": SESSION}
    with serve(app) as url:
        http = httpx.Client(base_url=url, timeout=10)
        refused = http.post("/invocations", json={"prompt": "hi"}, headers=headers)
        assert refused.status_code == 401
        assert refused.json() == {"error": "unauthorized", "code": "unauthorized"}
        assert refused.headers["WWW-Authenticate"] == "Bearer"
        forged = http.post("/invocations", json={"prompt": "hi"}, headers={**headers, USER_ID: "user-alex"})
        assert forged.status_code == 401  # a user-id header is no identity on a JWT runtime
        bad_session = http.post(
            "/invocations",
            json={"prompt": "hi"},
            headers={"Authorization": f"Bearer {token}", "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": "a b"},
        )
        assert bad_session.status_code == 400
        authorized = {**headers, "Authorization": f"Bearer {token}"}
        assert http.post("/invocations", content=b"{nope", headers=authorized).status_code == 400  # body guard
        # identity first: an unverified caller gets the 401 whatever its body (malformed, oversized)
        assert http.post("/invocations", content=b"{nope", headers=headers).status_code == 401
        oversized = b'{"prompt": "' + b"x" * (2 << 20) + b'"}'
        assert http.post("/invocations", content=oversized, headers=headers).status_code == 401
        assert http.post("/invocations", content=oversized, headers=authorized).json()["code"] == "payload_too_large"
        assert seen == []  # nothing reached the handler so far

        flowing.clear()
        answer = http.post(
            "/invocations", json={"prompt": "hi"}, headers={**headers, "Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 200
        assert answer.json() == {"output": "noted"}
        assert http.get("/ping").json()["status"] == "HealthyBusy"
        flowing.set()
        deadline = time.monotonic() + 10
        while http.get("/ping").json()["status"] == "HealthyBusy":
            assert time.monotonic() < deadline, "the retain never completed"
            time.sleep(0.01)
    assert len(seen) == 1
    assert seen[0] is not None
    assert seen[0].caller.user == "user-alex"
    assert seen[0].caller.credential == token  # the caller's own token goes to Hindsight


class RecordingHooks(InvocationHooks):
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def started(self, request: RequestFacts) -> None:
        self.events.append(("started", request.session_id))

    def identified(self, caller: Caller | None) -> None:
        self.events.append(("identified", caller.user if caller is not None else "anonymous"))

    def rejected(self, error: AuthError) -> None:
        self.events.append(("rejected", error.reason))

    def invalid(self, error: PayloadError) -> None:
        self.events.append(("invalid", error.code))

    def key_unavailable(self, error: Exception) -> None:
        raise RuntimeError("a broken hook never fails the turn")


class CountingVerifier:
    """A verifier stand-in that counts the tokens it is asked to verify (the real verifier does the work)."""

    def __init__(self, inner: TokenVerifier) -> None:
        self.inner = inner
        self.calls = 0

    def verify(self, token: str) -> VerifiedIdentity:
        self.calls += 1
        return self.inner.verify(token)


def test_each_invocation_verifies_its_token_once(
    make_memory: Callable[..., AgentCoreMemory], loopback_issuer: LoopbackIssuer
) -> None:
    jwt_env = {"AUTH_MODE": "jwt", "JWT_DISCOVERY_URL": loopback_issuer.discovery_url, "JWT_ALLOWED_CLIENTS": CLIENT_ID}
    real = default_verifier(AgentMemorySettings.from_env({**IAM_ENV, **jwt_env, "HINDSIGHT_API_KEY": ""}))
    assert real is not None
    counting = CountingVerifier(real)
    memory = make_memory({**jwt_env, "HINDSIGHT_API_KEY": ""}, verifier=counting)
    app = memory.create_app()
    seen: list[str] = []

    @memory.entrypoint
    def invoke(payload: Any, turn: MemoryTurn | None) -> dict[str, Any]:
        assert turn is not None
        seen.append(turn.caller.user)
        return {"output": "ok"}

    headers = {"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": SESSION}
    with serve(app) as url:
        http = httpx.Client(base_url=url, timeout=10)
        # WHEN a caller with a good token invokes THEN its token is verified once (the gate's verdict is reused)
        good = {**headers, "Authorization": f"Bearer {loopback_issuer.mint('user-alex')}"}
        assert http.post("/invocations", json={"prompt": "hi"}, headers=good).json() == {"output": "ok"}
        assert (counting.calls, seen) == (1, ["user-alex"])
        # AND a bad token is verified once and refused before the handler (fail closed, the same 401)
        bad = http.post("/invocations", json={"prompt": "hi"}, headers={**headers, "Authorization": "Bearer x.y.z"})
        assert (bad.status_code, bad.json()) == (401, {"error": "unauthorized", "code": "unauthorized"})
        assert (counting.calls, seen) == (2, ["user-alex"])


def test_the_hooks_are_told_each_step_and_the_handler_gets_the_request_facts(
    make_memory: Callable[..., AgentCoreMemory],
) -> None:
    def unreadable(arn: str) -> str:
        raise ConnectionError("no route to Secrets Manager")

    hooks = RecordingHooks()
    key = AgentKey(secret_arn="arn:aws:secretsmanager:us-east-1:1:secret:k", fetch=unreadable)
    memory = make_memory(hooks=hooks, agent_key=key)
    app = memory.create_app()
    seen: list[tuple[str, bool]] = []

    @memory.entrypoint
    async def invoke(payload: Any, turn: MemoryTurn | None, request: RequestFacts) -> dict[str, Any]:
        ask = memory.read_turn(payload)
        assert turn is not None
        seen.append((request.session_id, turn.memory_unavailable))
        return {"output": ask.prompt}

    headers = {"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": SESSION}
    with serve(app) as url:
        http = httpx.Client(base_url=url, timeout=10)
        assert http.post("/invocations", json={"prompt": "hi"}, headers=headers).status_code == 401
        answer = http.post("/invocations", json={"prompt": "hi"}, headers={**headers, USER_ID: "user-alex"})
        assert answer.json() == {"output": "hi"}  # the key hook raised: logged, the turn went on without memory
        bad = http.post("/invocations", json={"prompt": "hi", "user": "x"}, headers={**headers, USER_ID: "user-alex"})
        assert bad.status_code == 400
        assert bad.json() == {"error": "unknown field(s): user; allowed: prompt, stream", "code": "bad_request"}
    assert seen == [(SESSION, True)]
    assert hooks.events == [
        ("rejected", "missing"),  # the body guard's gate
        ("started", SESSION),
        ("identified", "user-alex"),
        ("started", SESSION),
        ("identified", "user-alex"),
        ("invalid", "bad_request"),
    ]

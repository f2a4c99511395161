"""The agent over real HTTP (uvicorn on a loopback port): status codes, identity, streaming, ping, degradation.

Memory is the real adapter on the in-process fake Hindsight (the same scenarios against the real local Hindsight live
in tests/integration/runtime_handler).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization

from memory_adapter.testing import FakeHindsight, Fault
from runtime_handler.main import create_app
from runtime_handler.model import EchoModel, ModelTurn
from runtime_handler.settings import Settings
from tests.unit.issuers import LoopbackIssuer

from .fakes import bearers, holding_retains, memory_on, owners
from .serving import serve

UNAUTHORIZED = {"error": "unauthorized", "code": "unauthorized"}
SESSION = "session-0123456789-0123456789-0123456789"


def _settings(issuer: LoopbackIssuer | None = None, **env: str) -> Settings:
    base = {"AGENT_NAME": "support", "HINDSIGHT_API_URL": "http://127.0.0.1:9", "MODEL_PROVIDER": "echo"}
    if issuer is not None:
        base |= {"AUTH_MODE": "jwt", "JWT_DISCOVERY_URL": issuer.discovery_url, "JWT_ALLOWED_CLIENTS": "client-app"}
    else:
        base |= {"AUTH_MODE": "iam"}
    return Settings.from_env(base | env)


class Agent:
    """A running app plus the fake Hindsight behind its memory (its retains wait while ``flowing`` is clear), and a
    small client."""

    def __init__(self, url: str, hindsight: FakeHindsight, flowing: threading.Event) -> None:
        self.url = url
        self.hindsight = hindsight
        self.flowing = flowing
        self.http = httpx.Client(base_url=url, timeout=10)

    def settle(self) -> None:
        """Wait until /ping leaves HealthyBusy: every retain delivered (the next turn can recall it)."""
        deadline = time.monotonic() + 10
        while self.http.get("/ping").json()["status"] == "HealthyBusy":
            assert time.monotonic() < deadline, "retain never delivered"
            time.sleep(0.01)

    def invoke(
        self, body: Any = None, *, token: str | None = None, session: str = SESSION, **headers: str
    ) -> httpx.Response:
        all_headers = {"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": session, **headers}
        if token is not None:
            all_headers["Authorization"] = f"Bearer {token}"
        content = body if isinstance(body, bytes | str) else json.dumps(body)
        return self.http.post(
            "/invocations", content=content, headers={"Content-Type": "application/json", **all_headers}
        )


@contextlib.contextmanager
def running(settings: Settings, spool: Path, **memory_options: Any) -> Iterator[Agent]:
    hindsight, flowing = FakeHindsight(), threading.Event()
    flowing.set()
    memory = memory_on(holding_retains(hindsight, flowing), spool, **memory_options)
    try:
        with serve(create_app(settings, memory=memory, model=EchoModel())) as url:
            yield Agent(url, hindsight, flowing)
    finally:
        flowing.set()
        hindsight.release()  # hung requests fail now (the app has closed its adapter)


@pytest.fixture(scope="module")
def jwt_agent(loopback_issuer: LoopbackIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    with running(_settings(loopback_issuer, MAX_PROMPT_CHARS="1000"), tmp_path_factory.mktemp("spool")) as agent:
        yield agent


@pytest.fixture
def agent(jwt_agent: Agent) -> Agent:
    jwt_agent.settle()  # the previous test's retains have landed
    jwt_agent.hindsight.reset()
    return jwt_agent


def test_turn_answers_and_remembers_across_sessions(agent: Agent, loopback_issuer: LoopbackIssuer) -> None:
    token = loopback_issuer.mint("user-alex")
    first = agent.invoke({"prompt": "I prefer email over phone."}, token=token, session="s1" * 20)
    assert first.status_code == 200
    assert first.json() == {
        "output": first.json()["output"],
        "session_id": "s1" * 20,
        "memory": {"recalled": 0, "degraded": False},
    }
    agent.settle()
    second = agent.invoke({"prompt": "How should you contact me?"}, token=token, session="s2" * 20)
    assert second.json()["memory"] == {"recalled": 1, "degraded": False}
    assert "I prefer email over phone." in second.json()["output"]


def test_the_callers_token_is_the_memory_credential(agent: Agent, loopback_issuer: LoopbackIssuer) -> None:
    token = loopback_issuer.mint("user-alex")
    assert agent.invoke({"prompt": "hi"}, token=token).status_code == 200
    agent.settle()
    assert bearers(agent.hindsight) == {token}


def test_user_id_header_is_ignored_on_a_jwt_runtime(agent: Agent, loopback_issuer: LoopbackIssuer) -> None:
    token = loopback_issuer.mint("user-alex")
    response = agent.invoke({"prompt": "hi"}, token=token, **{"X-Amzn-Bedrock-AgentCore-Runtime-User-Id": "user-bob"})
    assert response.status_code == 200
    assert {owner.user for owner in owners(agent.hindsight)} == {"user-alex"}


def test_users_do_not_see_each_others_memory(agent: Agent, loopback_issuer: LoopbackIssuer) -> None:
    agent.invoke({"prompt": "my secret is 42"}, token=loopback_issuer.mint("user-alex"))
    agent.settle()
    bob = agent.invoke({"prompt": "what is my secret?"}, token=loopback_issuer.mint("user-bob"))
    assert bob.json()["memory"]["recalled"] == 0
    assert "42" not in bob.json()["output"]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _forged(issuer: LoopbackIssuer, alg: str, secret: bytes | None) -> str:
    head = _b64(json.dumps({"alg": alg, "kid": issuer.kid, "typ": "JWT"}).encode())
    body = _b64(json.dumps(issuer.claims("user-alex")).encode())
    if secret is None:
        return f"{head}.{body}."
    return f"{head}.{body}." + _b64(hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest())


def _bad_tokens(issuer: LoopbackIssuer) -> dict[str, str]:
    now = time.time()
    good = issuer.mint("user-alex")
    header, payload, signature = good.split(".")
    pem = issuer.key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return {
        "expired": issuer.mint(exp=now - 3600),
        "not yet valid": issuer.mint(nbf=now + 3600),
        "wrong issuer": issuer.mint(iss="https://evil.example/pool"),
        "wrong client": issuer.mint(client_id="someone-else"),
        "wrong audience (id token)": issuer.mint(token_use="id", client_id=None, aud="someone-else"),
        "wrong token_use": issuer.mint(token_use="refresh"),
        "alg none": _forged(issuer, "none", None),
        "HS256 with the public key": _forged(issuer, "HS256", pem),
        "unknown kid": issuer.mint(kid="made-up"),
        "tampered payload": f"{header}.{_b64(json.dumps(issuer.claims('user-bob')).encode())}.{signature}",
        "tampered signature": f"{header}.{payload}.{signature[::-1]}",
        "garbage": "not-a-token",
        "oversized": issuer.mint(padding="x" * 9000),
    }


@pytest.mark.parametrize(
    "case",
    [
        "expired",
        "not yet valid",
        "wrong issuer",
        "wrong client",
        "wrong audience (id token)",
        "wrong token_use",
        "alg none",
        "HS256 with the public key",
        "unknown kid",
        "tampered payload",
        "tampered signature",
        "garbage",
        "oversized",
    ],
)
def test_every_jwt_failure_answers_401(agent: Agent, loopback_issuer: LoopbackIssuer, case: str) -> None:
    response = agent.invoke({"prompt": "hi"}, token=_bad_tokens(loopback_issuer)[case])
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED
    assert response.headers["www-authenticate"] == "Bearer"
    assert agent.hindsight.requests == []


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Basic dXNlcjpwYXNz"}, {"Authorization": "Bearer"}, {"Authorization": ""}],
)
def test_missing_or_non_bearer_authorization_answers_401(agent: Agent, headers: dict[str, str]) -> None:
    response = agent.invoke({"prompt": "hi"}, **headers)
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED


def test_two_authorization_headers_answer_401(agent: Agent, loopback_issuer: LoopbackIssuer) -> None:
    token = loopback_issuer.mint("user-alex")
    response = agent.http.post(
        "/invocations",
        content=json.dumps({"prompt": "hi"}),
        headers=[("Authorization", f"Bearer {token}"), ("Authorization", f"Bearer {token}")],
    )
    assert response.status_code == 401


def test_identity_is_checked_before_the_payload(agent: Agent) -> None:
    response = agent.invoke({"nonsense": True})
    assert response.status_code == 401


@pytest.mark.parametrize("body", [b'{"prompt": "' + b"x" * 20000 + b'"}', b"{not json", b"[" * 5000 + b"]" * 5000])
@pytest.mark.parametrize("token", [None, "not-a-token"])
def test_an_unauthenticated_caller_gets_the_401_whatever_the_body(agent: Agent, body: bytes, token: str | None) -> None:
    # GIVEN no token or a bad one, WHEN the body is oversized or malformed, THEN the uniform 401, not the body's 400
    response = agent.invoke(body, token=token)
    assert response.status_code == 401
    assert response.json() == {"error": "unauthorized", "code": "unauthorized"}


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", "bad_request"),
        (b"\xff\xfe\x00", "bad_request"),
        (b"[" * 5000 + b"]" * 5000, "bad_request"),
        ([1, 2], "bad_request"),
        ("just a string", "bad_request"),
        ({}, "bad_request"),
        ({"prompt": 42}, "bad_request"),
        ({"prompt": None}, "bad_request"),
        ({"prompt": ""}, "bad_request"),
        ({"prompt": " \n\t "}, "bad_request"),
        ({"prompt": "x" * 1001}, "payload_too_large"),
        ({"prompt": "hi", "stream": "yes"}, "bad_request"),
        ({"prompt": "hi", "user_id": "user-bob"}, "bad_request"),
        (b'{"prompt": "\\ud800"}', "bad_request"),
        (b'{"prompt": "a\\u0000b"}', "bad_request"),
        (b'{"prompt": "' + b"x" * 20000 + b'"}', "payload_too_large"),
    ],
)
def test_bad_payloads_answer_400(agent: Agent, loopback_issuer: LoopbackIssuer, body: Any, code: str) -> None:
    if isinstance(body, str):
        body = json.dumps(body)
    response = agent.invoke(body, token=loopback_issuer.mint("user-alex"))
    assert response.status_code == 400
    assert response.json()["code"] == code
    assert set(response.json()) == {"error", "code"}


def test_streaming_answers_server_sent_events(agent: Agent, loopback_issuer: LoopbackIssuer) -> None:
    token = loopback_issuer.mint("user-alex")
    agent.invoke({"prompt": "I prefer email."}, token=token)
    agent.settle()
    response = agent.invoke({"prompt": "How do you contact me?", "stream": True}, token=token)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[len("data: ") :]) for line in response.text.splitlines() if line.startswith("data: ")]
    assert [e["type"] for e in events[:-1]] == ["delta"] * (len(events) - 1)
    done = events[-1]
    assert done["type"] == "done"
    assert done["memory"] == {"recalled": 1, "degraded": False}
    assert done["output"] == "".join(e["text"] for e in events[:-1])
    assert "I prefer email." in done["output"]


def test_ping_is_busy_until_the_retain_is_delivered(agent: Agent, loopback_issuer: LoopbackIssuer) -> None:
    agent.flowing.clear()
    assert agent.http.get("/ping").json()["status"] == "Healthy"
    response = agent.invoke({"prompt": "remember this"}, token=loopback_issuer.mint("user-alex"))
    assert response.status_code == 200  # the answer did not wait for the retain
    assert agent.http.get("/ping").json()["status"] == "HealthyBusy"
    agent.flowing.set()
    deadline = time.monotonic() + 10
    while agent.http.get("/ping").json()["status"] != "Healthy":
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_ping_stays_busy_past_the_retain_wait_until_the_turn_is_safe(
    loopback_issuer: LoopbackIssuer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A turn counts as safe once delivered or spooled; MEMORY_RETAIN_WAIT_SECONDS only says when to warn.
    with running(_settings(loopback_issuer, MEMORY_RETAIN_WAIT_SECONDS="0.1"), tmp_path) as agent:
        agent.flowing.clear()
        assert agent.invoke({"prompt": "remember this"}, token=loopback_issuer.mint("user-alex")).status_code == 200
        time.sleep(0.5)
        assert agent.http.get("/ping").json()["status"] == "HealthyBusy"
        agent.flowing.set()
        agent.settle()
        assert agent.hindsight.calls("/memories")
    assert "/ping stays HealthyBusy until it is" in caplog.text


@pytest.mark.parametrize("fault", [Fault.DOWN, Fault.HANG])
def test_memory_down_or_hung_still_answers_degraded(
    loopback_issuer: LoopbackIssuer, tmp_path: Path, fault: Fault
) -> None:
    with running(_settings(loopback_issuer), tmp_path, recall_timeout=0.2) as agent:
        agent.hindsight.fault = fault
        response = agent.invoke({"prompt": "hello"}, token=loopback_issuer.mint("user-alex"))
    assert response.status_code == 200
    reason = "unavailable" if fault is Fault.DOWN else "timeout"
    assert response.json()["memory"] == {"recalled": 0, "degraded": True, "reason": reason}
    assert response.json()["output"].startswith("You said: hello")


@pytest.fixture(scope="module")
def iam_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    settings = _settings(None, TENANT_ID="acme", HINDSIGHT_API_KEY="k" * 40)
    with running(settings, tmp_path_factory.mktemp("spool")) as agent:
        yield agent


def test_iam_mode_takes_the_user_from_the_runtime_header(iam_agent: Agent) -> None:
    response = iam_agent.invoke({"prompt": "hi"}, **{"X-Amzn-Bedrock-AgentCore-Runtime-User-Id": "user-alex"})
    assert response.status_code == 200
    iam_agent.settle()
    owner = owners(iam_agent.hindsight)[-1]
    assert (owner.user, owner.tenant, bearers(iam_agent.hindsight)) == ("user-alex", "acme", {"k" * 40})


def test_iam_mode_without_the_header_answers_401(iam_agent: Agent) -> None:
    response = iam_agent.invoke({"prompt": "hi"})
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED
    assert "www-authenticate" not in response.headers


def test_anonymous_turns_get_no_memory_when_allowed(tmp_path: Path) -> None:
    with running(_settings(None, ALLOW_ANONYMOUS="true"), tmp_path) as agent:
        response = agent.invoke({"prompt": "hi"})
    assert response.status_code == 200
    assert response.json()["memory"] == {"recalled": 0, "degraded": False}
    assert agent.hindsight.requests == []


def test_iam_tenant_from_an_allowlisted_custom_header(tmp_path: Path) -> None:
    header = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Tenant-Id"
    with running(_settings(None, TENANT_HEADER=header), tmp_path) as agent:
        user = {"X-Amzn-Bedrock-AgentCore-Runtime-User-Id": "user-alex"}
        assert agent.invoke({"prompt": "hi"}, **user).status_code == 401
        assert agent.invoke({"prompt": "hi"}, **user, **{header: "acme"}).status_code == 200
    assert owners(agent.hindsight)[-1].tenant == "acme"


def test_model_failure_answers_502(loopback_issuer: LoopbackIssuer, tmp_path: Path) -> None:
    class Broken(EchoModel):
        async def reply(self, turn: ModelTurn) -> str:
            from runtime_handler.errors import ModelError

            raise ModelError("throttled")

    hindsight, flowing = FakeHindsight(), threading.Event()
    app = create_app(_settings(loopback_issuer), memory=memory_on(hindsight, tmp_path), model=Broken())
    with serve(app) as url:
        response = Agent(url, hindsight, flowing).invoke({"prompt": "hi"}, token=loopback_issuer.mint())
    assert response.status_code == 502
    assert response.json() == {"error": "the model is unavailable", "code": "model_unavailable"}

"""The whole loop over HTTP: the agent app (uvicorn, loopback) -> the real local Hindsight (local tokens).

The echo model makes recalled memory visible in the answer, so each test asserts on what the user would see.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from localdev.token_issuer import LOCAL_CLIENT_ID, TokenIssuer
from memory_adapter.adapter import HindsightRuntimeAdapter
from memory_adapter.identity import format_bank_id
from memory_adapter.identity.caller import Caller
from memory_adapter.identity.settings import JwtSettings
from memory_adapter.identity.verifier import JwtVerifier
from memory_adapter.tools.memory_tools import MemoryTools
from memory_adapter.transport import HttpTransport
from runtime_handler.main import create_app
from runtime_handler.model import EchoModel
from runtime_handler.settings import Settings
from tests.unit.gateway_emulator import gateway_app
from tests.unit.issuers import non_numeric_time_claims
from tests.unit.runtime_handler.serving import serve

pytestmark = pytest.mark.integration

AGENT = "support"
PREFERENCE = "I prefer email over phone."


def _settings(hindsight_url: str, issuer: TokenIssuer | None, **env: str) -> Settings:
    base = {"AGENT_NAME": AGENT, "HINDSIGHT_API_URL": hindsight_url, "MODEL_PROVIDER": "echo"}
    if issuer is not None:
        base |= {
            "AUTH_MODE": "jwt",
            "JWT_DISCOVERY_URL": issuer.discovery_url,
            "JWT_ALLOWED_CLIENTS": LOCAL_CLIENT_ID,
        }
    else:
        base |= {"AUTH_MODE": "iam"}
    return Settings.from_env(base | env)


def _memory(settings: Settings, spool: Path) -> HindsightRuntimeAdapter:
    """The adapter as the agent builds it (its settings, the default block), with a test spool and quick retries."""
    memory = dataclasses.replace(
        settings.memory, spool_dir=str(spool), max_retries=1, retry_base_delay=0.05, timeout=3.0
    )
    return HindsightRuntimeAdapter(settings.agent_name, settings=memory)


class Client:
    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=30)

    def turn(
        self,
        prompt: str,
        *,
        session: str,
        token: str | None = None,
        stream: bool = False,
        headers: dict[str, str] | None = None,
    ) -> Any:
        all_headers = {"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": session, **(headers or {})}
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        body: dict[str, Any] = {"prompt": prompt}
        if stream:
            body["stream"] = True
        response = self.http.post("/invocations", json=body, headers=all_headers)
        assert response.status_code == 200, response.text
        if stream:
            events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
            return events[-1]
        return response.json()

    def settle(self, timeout: float = 30) -> None:
        """Wait until /ping leaves HealthyBusy (every retain delivered or spooled)."""
        deadline = time.monotonic() + timeout
        while self.http.get("/ping").json()["status"] == "HealthyBusy":
            assert time.monotonic() < deadline, "retain never delivered"
            time.sleep(0.05)


def wait_for_memory(hindsight_url: str, bank: str, token: str | None, query: str, timeout: float = 90) -> None:
    """Hindsight extracts facts asynchronously after accepting a retain: poll recall until something is there."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + timeout
    while True:
        response = httpx.post(
            f"{hindsight_url}/v1/default/banks/{bank}/memories/recall",
            json={"query": query, "max_tokens": 1024},
            headers=headers,
            timeout=10,
        )
        if response.status_code == 200 and response.json().get("results"):
            return
        assert time.monotonic() < deadline, f"nothing recallable in time: {response.status_code} {response.text[:200]}"
        time.sleep(0.5)


def session_id(label: str) -> str:
    return f"{label}-{time.time_ns()}-0123456789abcdef0123456789"


@pytest.fixture(scope="module")
def jwt_agent(
    local_hindsight: Any, token_issuer: TokenIssuer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Client]:
    settings = _settings(local_hindsight.url, token_issuer)
    app = create_app(settings, memory=_memory(settings, tmp_path_factory.mktemp("spool")), model=EchoModel())
    with serve(app) as url:
        yield Client(url)


def test_memory_carries_across_sessions(jwt_agent: Client, local_hindsight: Any, token_issuer: TokenIssuer) -> None:
    user = f"user-alex-{time.time_ns()}"
    token = token_issuer.mint(user)
    first = jwt_agent.turn(PREFERENCE, session=session_id("s1"), token=token)
    assert first["memory"] == {"recalled": 0, "degraded": False}
    jwt_agent.settle()
    wait_for_memory(local_hindsight.url, format_bank_id(user=user, agent=AGENT), token, "contact preference email")

    second = jwt_agent.turn("How should you contact me?", session=session_id("s2"), token=token)
    assert second["memory"]["degraded"] is False
    assert second["memory"]["recalled"] >= 1
    assert "email over phone" in second["output"]

    streamed = jwt_agent.turn("How should you contact me?", session=session_id("s3"), token=token, stream=True)
    assert streamed["memory"]["recalled"] >= 1
    assert "email over phone" in streamed["output"]


def test_the_session_remembers_its_own_conversation_at_once(jwt_agent: Client, token_issuer: TokenIssuer) -> None:
    # GIVEN a statement, asked about at once (its retain is still being processed by Hindsight)
    alex = token_issuer.mint(f"user-alex-{time.time_ns()}")
    session = session_id("wm")
    jwt_agent.turn("My project codename is Bluebird.", session=session, token=alex)
    # WHEN alex asks in the same session, streamed or not
    answer = jwt_agent.turn("What is my project codename?", session=session, token=alex)
    streamed = jwt_agent.turn("And what was it again?", session=session, token=alex, stream=True)
    # THEN the agent was given the conversation
    assert "Earlier in this session you said:\n- My project codename is Bluebird." in answer["output"]
    assert "- What is my project codename?" in streamed["output"]
    # AND another user presenting the same session id is not
    bob = token_issuer.mint(f"user-bob-{time.time_ns()}")
    other = jwt_agent.turn("What is my project codename?", session=session, token=bob)
    assert "Bluebird" not in other["output"]
    assert "Earlier in this session" not in other["output"]
    jwt_agent.settle()


def test_users_are_isolated(jwt_agent: Client, local_hindsight: Any, token_issuer: TokenIssuer) -> None:
    alex = f"user-alex-{time.time_ns()}"
    token = token_issuer.mint(alex)
    jwt_agent.turn("My locker code is 4711.", session=session_id("a"), token=token)
    jwt_agent.settle()
    wait_for_memory(local_hindsight.url, format_bank_id(user=alex, agent=AGENT), token, "locker code")

    bob = token_issuer.mint(f"user-bob-{time.time_ns()}")
    answer = jwt_agent.turn("What is my locker code?", session=session_id("b"), token=bob)
    assert answer["memory"] == {"recalled": 0, "degraded": False}
    assert "4711" not in answer["output"]
    assert "4711" in jwt_agent.turn("What is my locker code?", session=session_id("c"), token=token)["output"]


def test_a_user_id_header_cannot_redirect_a_jwt_turn(
    jwt_agent: Client, local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    victim = f"user-victim-{time.time_ns()}"
    victim_token = token_issuer.mint(victim)
    jwt_agent.turn("My PIN is 9876.", session=session_id("v"), token=victim_token)
    jwt_agent.settle()
    wait_for_memory(local_hindsight.url, format_bank_id(user=victim, agent=AGENT), victim_token, "PIN")

    attacker = token_issuer.mint(f"user-mallory-{time.time_ns()}")
    answer = jwt_agent.turn(
        "What is my PIN?",
        session=session_id("m"),
        token=attacker,
        headers={"X-Amzn-Bedrock-AgentCore-Runtime-User-Id": victim},
    )
    assert "9876" not in answer["output"]


TENANT_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Tenant-Id"


def test_iam_runtime_user_header_and_tenant_isolation(local_hindsight: Any, tmp_path: Path) -> None:
    # The agent holds the session server's per-deployment agent key (its agent's banks, any tenant), as in an IAM
    # deployment; never the operator key. This test is about the agent's side (which bank each IAM turn uses); the
    # server's own refusal of other agents' and tenants' banks is tested in tests/integration/isolation.
    if not local_hindsight.agent_key:
        pytest.skip("the external Hindsight has no agent key (LOCAL_HINDSIGHT_TEST_AGENT_KEY)")
    assert local_hindsight.agent_name == AGENT
    assert local_hindsight.agent_tenant == "*"
    assert local_hindsight.agent_key != local_hindsight.operator_key
    settings = _settings(
        local_hindsight.url, None, TENANT_HEADER=TENANT_HEADER, HINDSIGHT_API_KEY=local_hindsight.agent_key
    )
    app = create_app(settings, memory=_memory(settings, tmp_path / "spool"), model=EchoModel())
    user = f"user-iam-{time.time_ns()}"
    acme = {"X-Amzn-Bedrock-AgentCore-Runtime-User-Id": user, TENANT_HEADER: "acme"}
    globex = {"X-Amzn-Bedrock-AgentCore-Runtime-User-Id": user, TENANT_HEADER: "globex"}
    with serve(app) as url:
        client = Client(url)
        client.turn("I like tea.", session=session_id("i1"), headers=acme)
        client.settle()
        bank = format_bank_id(user=user, agent=AGENT, tenant="acme")
        wait_for_memory(local_hindsight.url, bank, local_hindsight.operator_key, "tea")
        assert "I like tea." in client.turn("What do I like?", session=session_id("i2"), headers=acme)["output"]
        other = client.turn("What do I like?", session=session_id("i3"), headers=globex)
        assert other["memory"]["recalled"] == 0
        assert "tea" not in other["output"]
        assert client.http.post("/invocations", json={"prompt": "hi"}).status_code == 401


@pytest.mark.parametrize("fault", ["refused_url", "hung_url", "failing_url"])
def test_hindsight_down_or_hung_answers_degraded(
    fault: str, request: pytest.FixtureRequest, token_issuer: TokenIssuer, tmp_path: Path
) -> None:
    url = request.getfixturevalue(fault)
    settings = _settings(url, token_issuer, HINDSIGHT_ADAPTER_RECALL_TIMEOUT="1")
    app = create_app(settings, memory=_memory(settings, tmp_path / "spool"), model=EchoModel())
    with serve(app) as agent_url:
        client = Client(agent_url)
        answer = client.turn("hello there", session=session_id("f"), token=token_issuer.mint("user-alex"))
        assert answer["output"].startswith("You said: hello there")
        assert answer["memory"] == {
            "recalled": 0,
            "degraded": True,
            "reason": "timeout" if fault == "hung_url" else "unavailable",
        }
        client.settle(timeout=60)  # the retain ends up spooled, and the session stops being busy
    assert list((tmp_path / "spool").rglob("*")), "the undeliverable retain was spooled"


def _forged_none(token_issuer: TokenIssuer) -> str:
    good = token_issuer.mint("user-alex")
    header = base64.urlsafe_b64encode(json.dumps({"alg": "none", "typ": "JWT"}).encode()).rstrip(b"=").decode()
    return f"{header}.{good.split('.')[1]}."


def test_forged_and_invalid_tokens_never_reach_memory(jwt_agent: Client, token_issuer: TokenIssuer) -> None:
    good = token_issuer.mint("user-alex")
    head, body, signature = good.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["sub"] = "user-bob"
    tampered = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    bad = {
        "expired": token_issuer.mint("user-alex", ttl=-120),
        "unknown kid": token_issuer.mint("user-alex", kid="not-published"),
        "wrong client": token_issuer.mint("user-alex", client_id="someone-else"),
        "wrong token_use": token_issuer.mint("user-alex", token_use="refresh"),
        "alg none": _forged_none(token_issuer),
        "tampered payload": f"{head}.{tampered}.{signature}",
        "garbage": "garbage",
        **{
            case: token_issuer.mint("user-alex", extra_claims=claims)
            for case, claims in non_numeric_time_claims().items()
        },
    }
    for case, token in bad.items():
        response = jwt_agent.http.post(
            "/invocations", json={"prompt": "What is my PIN?"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 401, case
        assert response.json() == {"error": "unauthorized", "code": "unauthorized"}, case


def _recall_texts(hindsight_url: str, bank: str, token: str, query: str) -> list[str]:
    response = httpx.post(
        f"{hindsight_url}/v1/default/banks/{bank}/memories/recall",
        json={"query": query, "max_tokens": 4096},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return [result["text"] for result in response.json()["results"]]


def test_forget_removes_that_users_memory_and_nothing_else(
    jwt_agent: Client, local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    # GIVEN alex's preference and locker code, and bob's same preference, in long-term memory
    alex_user, bob_user = f"user-alex-{time.time_ns()}", f"user-bob-{time.time_ns()}"
    alex, bob = token_issuer.mint(alex_user), token_issuer.mint(bob_user)
    alex_bank, bob_bank = format_bank_id(user=alex_user, agent=AGENT), format_bank_id(user=bob_user, agent=AGENT)
    jwt_agent.turn("I prefer email over phone, so please do not call me.", session=session_id("f1"), token=alex)
    jwt_agent.turn("My locker code is 4711.", session=session_id("f2"), token=alex)
    jwt_agent.turn("I prefer email over phone, so please do not call me.", session=session_id("f3"), token=bob)
    jwt_agent.settle()
    wait_for_memory(local_hindsight.url, alex_bank, alex, "email")
    wait_for_memory(local_hindsight.url, bob_bank, bob, "email")

    # WHEN alex asks the agent to forget it
    session = session_id("forget")
    answer = jwt_agent.turn("forget that I prefer email", session=session, token=alex)

    # THEN the agent says what it forgot, and a new session no longer recalls it
    assert answer["memory"]["tools"] == ["forget"]
    assert 'Forgot 1 memory:\n- "I prefer email over phone, so please do not call me." (deleted' in answer["output"]
    assert all("email" not in text for text in _recall_texts(local_hindsight.url, alex_bank, alex, "email phone"))
    later = jwt_agent.turn("How should you contact me?", session=session_id("f4"), token=alex)
    assert "email" not in later["output"]
    # AND alex's other memory, and bob's, are untouched
    assert "4711" in jwt_agent.turn("What is my locker code?", session=session_id("f5"), token=alex)["output"]
    assert "email over phone" in jwt_agent.turn("How to contact me?", session=session_id("f6"), token=bob)["output"]
    # AND the forget turn itself was not retained (it would bring the forgotten text back)
    jwt_agent.settle()
    texts = _recall_texts(local_hindsight.url, alex_bank, alex, "forget email prefer")
    assert all("email" not in text and "forget" not in text.lower() for text in texts)


def test_remember_and_list_recent_through_the_agent(
    jwt_agent: Client, local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    alex = token_issuer.mint(f"user-alex-{time.time_ns()}")
    stored = jwt_agent.turn(
        "remember as preference: I drink green tea in the morning", session=session_id("r"), token=alex
    )
    assert stored["memory"]["tools"] == ["remember"]
    assert 'Remembered (preference): "I drink green tea in the morning".' in stored["output"]
    # a new session recalls it at once (remember waits for the extraction) and lists it with its kind
    recalled = jwt_agent.turn("What do I drink in the morning?", session=session_id("r2"), token=alex)
    assert "I drink green tea in the morning" in recalled["output"]
    listed = jwt_agent.turn("list my memories", session=session_id("r3"), token=alex)
    assert "I drink green tea in the morning [preference]" in listed["output"]
    # another user's forget cannot reach it, not even by its id
    memory_id = listed["output"].split("id ")[1].split(")")[0]
    mallory = f"user-mallory-{time.time_ns()}"
    tools = MemoryTools(HttpTransport(local_hindsight.url))
    caller = Caller.of(user=mallory, agent=AGENT, credential=token_issuer.mint(mallory))
    assert tools.call(caller, "forget", {"memory_ids": [memory_id]}).data == {"forgotten": []}
    again = jwt_agent.turn("list my memories", session=session_id("r4"), token=alex)
    assert memory_id in again["output"]


@pytest.fixture(scope="module")
def gateway_agent(
    local_hindsight: Any, token_issuer: TokenIssuer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Client, list[dict[str, Any]]]]:
    """The agent with MEMORY_TOOLS_GATEWAY_URL: its model's tools go through an emulated AgentCore Gateway around
    the real interceptor and target, which act on the real local Hindsight."""
    verifier = JwtVerifier(JwtSettings(discovery_url=token_issuer.discovery_url, allowed_clients=(LOCAL_CLIENT_ID,)))
    gateway, invocations = gateway_app(
        verifier=verifier, tools=MemoryTools(HttpTransport(local_hindsight.url)), agent=AGENT
    )
    with serve(gateway) as gateway_url:
        settings = _settings(
            local_hindsight.url,
            token_issuer,
            MEMORY_TOOLS_GATEWAY_URL=gateway_url + "/mcp",
            MEMORY_TOOLS_GATEWAY_TARGET="memory",
        )
        app = create_app(settings, memory=_memory(settings, tmp_path_factory.mktemp("spool")), model=EchoModel())
        with serve(app) as url:
            yield Client(url), invocations


def test_the_agents_tools_go_through_the_gateway_with_the_callers_own_token(
    gateway_agent: tuple[Client, list[dict[str, Any]]], local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    agent, invocations = gateway_agent
    alex_user, bob_user = f"user-alex-{time.time_ns()}", f"user-bob-{time.time_ns()}"
    alex, bob = token_issuer.mint(alex_user), token_issuer.mint(bob_user)
    # WHEN alex asks the agent to remember something
    stored = agent.turn("remember as plan: I take the 7:40 train on Mondays", session=session_id("g1"), token=alex)
    # THEN the model's remember ran through the gateway, as memory___remember with alex's own token
    assert stored["memory"]["tools"] == ["remember"]
    assert 'Remembered (plan): "I take the 7:40 train on Mondays".' in stored["output"]
    assert invocations[-1]["bedrockAgentCoreToolName"] == "memory___remember"
    assert list(invocations[-1]["bedrockAgentCorePropagatedHeaders"].values()) == [alex]
    # AND it is alex's memory: the agent recalls it in a new session (the same bank as the direct path)
    assert "7:40" in agent.turn("What train do I take?", session=session_id("g2"), token=alex)["output"]
    # AND bob, through the same gateway, can neither list nor forget it
    assert "7:40" not in agent.turn("list my memories", session=session_id("g3"), token=bob)["output"]
    refused = agent.turn("forget that I take the 7:40 train", session=session_id("g4"), token=bob)
    assert refused["memory"]["tools"] == ["forget"]
    assert "Nothing was forgotten: no memory of yours matched" in refused["output"]
    # AND alex can forget it through the gateway, after which it is gone
    forgot = agent.turn("forget that I take the 7:40 train", session=session_id("g5"), token=alex)
    assert "Forgot 1 memory" in forgot["output"]
    alex_bank = format_bank_id(user=alex_user, agent=AGENT)
    assert all("7:40" not in text for text in _recall_texts(local_hindsight.url, alex_bank, alex, "train Monday"))

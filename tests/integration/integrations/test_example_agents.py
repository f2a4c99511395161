"""The agents you bring, as they run: the example agents (``examples/strands_agent/agent.py``,
``examples/langgraph_agent/agent.py``) and the snippet of
``docs/own-agent.md``, each served over real HTTP (uvicorn, loopback) against the real local Hindsight with tokens
from the local issuer. What the user would see: memory across sessions, users apart, 401 without a verified
caller, 400 for bad input (the same answers as the reference agent's, one table against both), streaming, ``/ping``
busy until the retain is delivered, one conversation per caller.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from localdev.token_issuer import TokenIssuer
from memory_adapter.identity import format_bank_id
from memory_adapter.tools.echo import NOTHING_RECALLED
from tests.integration.runtime_handler.test_agent_loop import wait_for_memory
from tests.unit.runtime_handler.serving import free_port, serve

from .conftest import AGENT, session_id, wiring_env

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
#: The example projects (``examples/<name>/agent.py``), each tested as the same agent would be.
EXAMPLES = {name: ROOT / "examples" / name / "agent.py" for name in ("strands_agent", "langgraph_agent")}
SESSION = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"


def docs_snippet() -> str:
    """The first ``python`` block of "Use your own agent" (``docs/own-agent.md``)."""
    match = re.search(r"```python\n(.*?)```", (ROOT / "docs" / "own-agent.md").read_text(), re.DOTALL)
    assert match, "docs/own-agent.md: no python snippet"
    return match.group(1)


class Client:
    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=30)

    def post(self, body: Any, *, token: str | None, session: str | list[str]) -> httpx.Response:
        """``session``: the session id header's value, or its values when sent more than once."""
        headers = [("Content-Type", "application/json")]
        headers += [(SESSION, value) for value in ([session] if isinstance(session, str) else session)]
        if token:
            headers.append(("Authorization", f"Bearer {token}"))
        content = body if isinstance(body, bytes) else httpx.Request("POST", "/", json=body).content
        return self.http.post("/invocations", content=content, headers=headers)

    def turn(self, prompt: str, *, token: str, session: str) -> dict[str, Any]:
        response = self.post({"prompt": prompt}, token=token, session=session)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    def settle(self, timeout: float = 30) -> list[str]:
        """Poll /ping until it leaves HealthyBusy; returns the statuses seen."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            status = self.http.get("/ping").json()["status"]
            seen.append(status)
            if status != "HealthyBusy":
                return seen
            assert time.monotonic() < deadline, "retain never delivered"
            time.sleep(0.02)


def _serve_file(namespace: dict[str, Any]) -> Iterator[Client]:
    with serve(namespace["app"]) as url:
        yield Client(url)


@pytest.fixture(scope="module")
def env(local_hindsight: Any, token_issuer: TokenIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        variables = wiring_env(local_hindsight.url, token_issuer, tmp_path_factory.mktemp("spool"))
        for name, value in {**variables, "MODEL_PROVIDER": "echo"}.items():
            patch.setenv(name, value)
        yield


@pytest.fixture(scope="module", params=sorted(EXAMPLES))
def example(env: None, request: pytest.FixtureRequest) -> Iterator[Client]:
    yield from _serve_file(runpy.run_path(str(EXAMPLES[request.param]), run_name="example_agent"))


@pytest.fixture(scope="module")
def reference(env: None) -> Iterator[Client]:
    """The reference agent (``runtime_handler``) on the same environment, for the answers both must give alike."""
    from runtime_handler.main import app_from_env

    with serve(app_from_env()) as url:
        yield Client(url)


@pytest.fixture(scope="module", params=[*sorted(EXAMPLES), "snippet"])
def your_agent(env: None, request: pytest.FixtureRequest) -> Iterator[Client]:
    """Each example, and the snippet of docs/own-agent.md as written."""
    if request.param in EXAMPLES:
        yield from _serve_file(runpy.run_path(str(EXAMPLES[request.param]), run_name="example_agent"))
        return
    namespace: dict[str, Any] = {"__name__": "docs_snippet"}
    exec(compile(docs_snippet(), "docs/own-agent.md", "exec"), namespace)  # noqa: S102 - our own docs, as a user runs them
    yield from _serve_file(namespace)


def test_your_agent_remembers_across_sessions_and_keeps_users_apart(
    your_agent: Client, local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    client = your_agent
    user = f"user-alex-{time.time_ns()}"
    token = token_issuer.mint(user)
    first = client.turn("I prefer email over phone.", token=token, session=session_id("s1"))
    assert NOTHING_RECALLED in first["output"]
    assert client.settle()[-1] == "Healthy"
    wait_for_memory(local_hindsight.url, format_bank_id(user=user, agent=AGENT), token, "email")

    second = client.turn("How should you contact me?", token=token, session=session_id("s2"))
    assert "From earlier conversations I remember:" in second["output"]
    assert "email over phone" in second["output"]

    bob = client.turn("How should you contact me?", token=token_issuer.mint(f"bob-{time.time_ns()}"), session="s3" * 20)
    assert "email over phone" not in bob["output"]
    assert NOTHING_RECALLED in bob["output"]


def test_your_agent_refuses_unverified_callers(your_agent: Client) -> None:
    client = your_agent
    for token in (None, "not-a-jwt"):
        response = client.post({"prompt": "hi"}, token=token, session=session_id("x"))
        assert response.status_code == 401
        assert response.json() == {"error": "unauthorized", "code": "unauthorized"}
        assert response.headers["WWW-Authenticate"] == "Bearer"


def test_the_example_forgets_when_asked(example: Client, local_hindsight: Any, token_issuer: TokenIssuer) -> None:
    user = f"user-forget-{time.time_ns()}"
    token = token_issuer.mint(user)
    example.turn("I prefer email over phone.", token=token, session=session_id("f1"))
    example.turn("My locker code is 4711.", token=token, session=session_id("f1"))
    example.settle()
    wait_for_memory(local_hindsight.url, format_bank_id(user=user, agent=AGENT), token, "email over phone")
    wait_for_memory(local_hindsight.url, format_bank_id(user=user, agent=AGENT), token, "locker code")
    forgot = example.turn("forget that I prefer email", token=token, session=session_id("f2"))
    assert "email over phone" in forgot["output"]  # the answer says what was forgotten
    example.settle()
    after = example.turn("How should you contact me? email?", token=token, session=session_id("f3"))
    assert "email over phone" not in after["output"]
    assert "4711" in example.turn("What is my locker code?", token=token, session=session_id("f4"))["output"]


def test_the_example_answers_bad_input_with_400(example: Client, token_issuer: TokenIssuer) -> None:
    token = token_issuer.mint(f"user-bad-{time.time_ns()}")
    bodies: list[Any] = [{"prompt": ""}, {"prompt": 7}, [], b"{not json", b"[" * 100_000 + b"]" * 100_000]
    for body in bodies:
        response = example.post(body, token=token, session=session_id("bad"))
        assert response.status_code == 400, (body[:20] if isinstance(body, bytes) else body, response.text)
        assert response.json()["code"] in {"bad_request", "payload_too_large"}
    assert example.post({"prompt": "x"}, token=token, session="bad session id").status_code == 400


def test_the_example_keeps_one_conversation_per_caller_and_session(example: Client, token_issuer: TokenIssuer) -> None:
    session = session_id("shared")
    alex = token_issuer.mint(f"user-alex-{time.time_ns()}")
    example.turn("My project is called Bluebird.", token=alex, session=session)
    again = example.turn("What is my project called?", token=alex, session=session)
    assert "Earlier in this session you said:\n- My project is called Bluebird." in again["output"]  # Strands' own
    eve = example.turn("What is my project called?", token=token_issuer.mint(f"eve-{time.time_ns()}"), session=session)
    assert "Earlier in this session" not in eve["output"]  # same session id, another caller: a conversation of its own
    assert "Bluebird" not in eve["output"]
    later = example.turn("What is my project called?", token=alex, session=session_id("later"))
    assert "Earlier in this session" not in later["output"]  # a new session starts a new conversation


#: Bad input and what both agents answer: (label, body, session header value(s), status, code).
BAD_INPUT: list[tuple[str, Any, str | list[str] | None, int, str]] = [
    ("unknown field", {"prompt": "hi", "user": "x"}, None, 400, "bad_request"),
    ("no prompt", {}, None, 400, "bad_request"),
    ("prompt not text", {"prompt": 7}, None, 400, "bad_request"),
    ("blank prompt", {"prompt": "  "}, None, 400, "bad_request"),
    ("prompt too long", {"prompt": "x" * 16_001}, None, 400, "payload_too_large"),
    ("NUL in prompt", {"prompt": "a\x00b"}, None, 400, "bad_request"),
    ("lone surrogate", b'{"prompt": "\\ud800"}', None, 400, "bad_request"),
    ("stream not a boolean", {"prompt": "hi", "stream": "yes"}, None, 400, "bad_request"),
    ("array body", [], None, 400, "bad_request"),
    ("not JSON", b"{not json", None, 400, "bad_request"),
    ("not UTF-8", b'{"prompt": "caf\xe9"}', None, 400, "bad_request"),
    ("body over the limit", {"prompt": "hi", "pad": "x" * 300_000}, None, 400, "payload_too_large"),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000, None, 400, "payload_too_large"),
    ("malformed session id", {"prompt": "hi"}, "bad session id", 400, "bad_request"),
    (
        "session id sent twice",
        {"prompt": "hi"},
        ["s-one-0123456789abcdef0123456789", "s-two-0123456789abcdef01234"],
        400,
        "bad_request",
    ),
]


@pytest.mark.parametrize(
    ("body", "session", "status", "code"), [row[1:] for row in BAD_INPUT], ids=[row[0] for row in BAD_INPUT]
)
def test_the_example_and_the_reference_agent_answer_bad_input_alike(
    example: Client,
    reference: Client,
    token_issuer: TokenIssuer,
    body: Any,
    session: str | list[str] | None,
    status: int,
    code: str,
) -> None:
    token = token_issuer.mint(f"user-bad-{time.time_ns()}")
    answers = [agent.post(body, token=token, session=session or session_id("bad")) for agent in (reference, example)]
    for agent, response in zip(("reference", "example"), answers, strict=True):
        assert (response.status_code, response.json().get("code")) == (status, code), (agent, response.text[:300])
    assert answers[0].json() == answers[1].json()  # the same message too


def _events(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: ") :]) for line in response.text.splitlines() if line.startswith("data: ")]


def test_the_example_and_the_reference_agent_both_stream(
    example: Client, reference: Client, token_issuer: TokenIssuer
) -> None:
    token = token_issuer.mint(f"user-stream-{time.time_ns()}")
    for agent in (reference, example):
        session = session_id("stream")
        response = agent.post({"prompt": "hello there", "stream": True}, token=token, session=session)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/event-stream")
        events = _events(response)
        assert len(events) >= 2, response.text
        assert [event["type"] for event in events] == ["delta"] * (len(events) - 1) + ["done"]
        assert events[-1]["session_id"] == session
        assert "".join(event["text"] for event in events[:-1]).strip() == events[-1]["output"]
        assert set(events[-1]["memory"]) >= {"recalled", "degraded"}
        agent.settle()


@pytest.mark.parametrize("agent", [*sorted(EXAMPLES), "snippet"])
def test_no_memory_reaches_your_agents_logs(
    agent: str, local_hindsight: Any, token_issuer: TokenIssuer, tmp_path: Path
) -> None:
    """The agent run as its own process, as AgentCore runs it (``python agent.py``): what it writes to stdout and
    stderr is CloudWatch Logs once deployed, and holds neither the user's words nor the memories recalled for them
    (Strands' default callback handler would print every answer)."""
    source = tmp_path / "agent.py"
    source.write_text(docs_snippet() if agent == "snippet" else EXAMPLES[agent].read_text())
    port = free_port()
    env = {
        **os.environ,
        **wiring_env(local_hindsight.url, token_issuer, tmp_path / "spool"),
        "MODEL_PROVIDER": "echo",
        "PORT": str(port),
    }
    user = f"user-logs-{time.time_ns()}"
    secret = f"Zephyrquill{time.time_ns() % 10**6}"
    token = token_issuer.mint(user)
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, str(source)], env=env, stdout=stdout, stderr=stderr)
        try:
            client = Client(f"http://127.0.0.1:{port}")
            deadline = time.monotonic() + 60
            while True:
                assert process.poll() is None, err.read_text()
                try:
                    client.http.get("/ping")
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the agent did not start"
                    time.sleep(0.2)
            client.turn(f"My project codename is {secret}.", token=token, session=session_id("l1"))
            client.settle()
            wait_for_memory(local_hindsight.url, format_bank_id(user=user, agent=AGENT), token, "project codename")
            answer = client.turn("What is my project codename?", token=token, session=session_id("l2"))
            assert secret in answer["output"]  # recalled and answered ...
            client.settle()
        finally:
            process.terminate()
            process.wait(timeout=30)
    logs = out.read_text() + err.read_text()
    assert secret not in logs, logs[-2000:]  # ... and never written to the logs


def test_the_example_and_the_reference_agent_report_the_memory_tools_alike(
    example: Client, reference: Client, token_issuer: TokenIssuer
) -> None:
    for agent in (reference, example):
        token = token_issuer.mint(f"user-tools-{time.time_ns()}")
        wrote = agent.turn("remember that my locker code is 4711", token=token, session=session_id("tools"))
        assert wrote["memory"]["tools"] == ["remember"], wrote
        plain = agent.turn("hello there", token=token, session=session_id("plain"))
        assert "tools" not in plain["memory"], plain  # only when the model called one
        agent.settle()

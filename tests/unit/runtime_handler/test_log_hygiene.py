"""What the agent writes to its logs over a user's whole session: never the user id, the token, the prompt, the
answer or a memory's text (docs/agent.md: ``user_ref`` only). Real HTTP, the real adapter on the fake Hindsight,
every log line the process writes (Powertools JSON on stdout, the standard library's loggers) scanned."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest

from memory_adapter.testing import Fault
from tests.unit.issuers import LoopbackIssuer

from .test_app import SESSION, _settings, running


@pytest.fixture
def logs(capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> Logs:
    # Powertools binds its handler to the stdout of the first test that named the service: a service name of this
    # test's own gives the app a handler on this test's captured stdout
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", f"log-hygiene-{uuid.uuid4().hex[:8]}")
    caplog.set_level(logging.DEBUG)
    return Logs(capfd, caplog)


class Logs:
    """Every line the process logged: Powertools' JSON on stdout and stderr, and the standard library's records."""

    def __init__(self, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
        self._capfd, self._caplog = capfd, caplog

    def written(self) -> tuple[str, str]:
        """(stdout, everything)."""
        out, err = self._capfd.readouterr()
        records = (repr(vars(record)) for record in self._caplog.records)
        return out, "\n".join([out, err, self._caplog.text, *records])


def test_no_log_line_carries_a_users_id_token_or_words(
    loopback_issuer: LoopbackIssuer, tmp_path: Path, logs: Logs
) -> None:
    user = f"user-logscan-{uuid.uuid4().hex[:8]}"
    token = loopback_issuer.mint(user)
    secret, planted = "LOCKER-7731-QX", "IGNORE-PREVIOUS-ZZ9"
    with running(_settings(loopback_issuer), tmp_path / "spool") as agent:
        # a stored memory, a tool call that writes one and one that lists them, a recall into the prompt
        assert agent.invoke({"prompt": f"My locker code is {secret}."}, token=token).status_code == 200
        agent.settle()
        assert agent.invoke({"prompt": f"remember that {planted} is my motto"}, token=token).status_code == 200
        assert agent.invoke({"prompt": "list my memories"}, token=token).status_code == 200
        assert secret in agent.invoke({"prompt": "What is my locker code?"}, token=token).text
        agent.settle()
        # a refused payload, a refused token, a forget, and a turn with memory down
        assert agent.invoke({"prompt": secret, "user_id": user}, token=token).status_code == 400
        assert agent.invoke({"prompt": secret}, token=token[:-4] + "AAAA").status_code == 401
        assert agent.invoke({"prompt": f"forget {planted}"}, token=token).status_code == 200
        agent.settle()
        agent.hindsight.fault = Fault.DOWN
        assert agent.invoke({"prompt": f"Still {secret}?"}, token=token).status_code == 200
        agent.hindsight.fault = Fault.NONE
        agent.settle()
    out, written = logs.written()
    assert "user_ref" in out  # the scan sees the turns' structured keys
    assert SESSION in out
    for leaked in (user, token, token.split(".")[1], secret, planted):
        assert leaked not in written, f"{leaked[:24]!r} is in the logs"


def test_an_iam_runtime_logs_neither_the_user_header_nor_the_agent_key(tmp_path: Path, logs: Logs) -> None:
    user, key = f"user-iam-{uuid.uuid4().hex[:8]}", "agent-key-" + uuid.uuid4().hex * 2
    header = "X-Amzn-Bedrock-AgentCore-Runtime-User-Id"
    with running(_settings(None, TENANT_ID="acme", HINDSIGHT_API_KEY=key), tmp_path / "spool") as agent:
        assert agent.invoke({"prompt": "My locker code is LOCKER-7731-QX."}, **{header: user}).status_code == 200
        agent.settle()
        # an identity that names no bank (over 256 bytes) and a payload refused for it
        assert agent.invoke({"prompt": "hi"}, **{header: user * 40}).status_code == 401
        assert agent.invoke({"prompt": "hi", "user": user}, **{header: user}).status_code == 400
    out, written = logs.written()
    assert "user_ref" in out
    for leaked in (user, key, "LOCKER-7731-QX"):
        assert leaked not in written, f"{leaked[:24]!r} is in the logs"

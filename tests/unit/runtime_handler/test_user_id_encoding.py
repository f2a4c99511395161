"""A non-ASCII user id names the same bank through the IAM user-id header as through a verified token, over real
HTTP; a header value that is not UTF-8 is refused (401 for identity, 400 for the session id), never a 500 and never
another user's bank.

HTTP servers hand header values to the app as Latin-1 text: read that way, the UTF-8 bytes of ``José`` became
``JosÃ©``, a different bank from the token's ``José``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from memory_adapter.agentcore.identity import USER_ID_HEADER
from tests.unit.issuers import LoopbackIssuer

from .fakes import owners
from .test_app import SESSION, UNAUTHORIZED, _settings, running

SESSION_HEADER = b"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
USERS = ["José", "李小龙", "Zoë 🙂"]


@pytest.mark.parametrize("user", USERS)
def test_the_header_and_the_token_name_the_same_bank(
    user: str, loopback_issuer: LoopbackIssuer, tmp_path: Path
) -> None:
    # GIVEN the same user id as a verified token's subject, and as the IAM runtime's header (UTF-8 bytes on the wire)
    with running(_settings(loopback_issuer), tmp_path / "jwt") as agent:
        assert agent.invoke({"prompt": "hi"}, token=loopback_issuer.mint(user)).status_code == 200
        agent.settle()
        by_token = owners(agent.hindsight)[-1]
    with running(_settings(None, TENANT_ID="", HINDSIGHT_API_KEY="k" * 40), tmp_path / "iam") as agent:
        response = agent.http.post(
            "/invocations",
            json={"prompt": "hi"},
            headers={SESSION_HEADER: SESSION.encode(), USER_ID_HEADER.encode(): user.encode("utf-8")},
        )
        assert response.status_code == 200, response.text
        agent.settle()
        by_header = owners(agent.hindsight)[-1]
    # THEN both turns used the bank of that user, spelled as sent
    assert by_header.user == by_token.user == user
    assert (by_header.tenant, by_header.agent) == (by_token.tenant, by_token.agent)


@pytest.mark.parametrize("raw", [b"Jos\xe9", b"\xff\xfe", b"user-\xc3"])
def test_a_user_id_that_is_not_utf8_is_refused_401(
    raw: bytes, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN an IAM runtime and a user-id header whose bytes are not UTF-8 (a Latin-1 client's José, or garbage)
    with caplog.at_level(logging.INFO), running(_settings(None, TENANT_ID="acme"), tmp_path) as agent:
        response = agent.http.post(
            "/invocations",
            json={"prompt": "hi"},
            headers={SESSION_HEADER: SESSION.encode(), USER_ID_HEADER.encode(): raw},
        )
        # THEN the caller is refused like any unverified one, no memory is touched, and the log says why
        assert response.status_code == 401, response.text
        assert response.json() == UNAUTHORIZED
        assert agent.hindsight.requests == []
    assert [r for r in caplog.records if getattr(r, "reason", None) == "header_encoding"]


def test_a_session_id_that_is_not_utf8_is_a_400(tmp_path: Path) -> None:
    with running(_settings(None, TENANT_ID="acme"), tmp_path) as agent:
        response = agent.http.post(
            "/invocations",
            json={"prompt": "hi"},
            headers={SESSION_HEADER: SESSION.encode() + b"\xe9", USER_ID_HEADER.encode(): b"user-alex"},
        )
    assert response.status_code == 400, response.text

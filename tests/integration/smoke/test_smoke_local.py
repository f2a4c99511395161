"""``python -m smoke --local`` against a real local agent (``python -m runtime_handler``) and a real Hindsight."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from localdev.agent import LocalAgent
from localdev.token_issuer import TokenIssuer
from smoke.__main__ import main
from tests.unit.runtime_handler.serving import free_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def agent_url(local_hindsight: Any, token_issuer: TokenIssuer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    agent = LocalAgent(tmp_path_factory.mktemp("smoke-agent"))
    url = agent.start(hindsight_url=local_hindsight.url, issuer_url=token_issuer.issuer, port=free_port())
    yield url
    agent.stop()


def test_smoke_passes_against_the_local_agent_and_prints_each_step(agent_url: str, token_issuer: TokenIssuer) -> None:
    out = io.StringIO()
    code = main(["--local", "--agent-url", agent_url, "--recall-timeout", "90"], out=out, mint=token_issuer.mint)
    report = out.getvalue()
    print(report)  # the step timings, in the test log
    assert code == 0, report
    assert "[1/3] user A, session 1: tell a code word ... ok in" in report
    assert "[2/3] user A, session 2: recall it ... ok in" in report
    assert "the code word came back" in report
    assert "[3/3] user B, session 3: must not recall it ... ok in" in report
    assert "recalled nothing of user A" in report
    assert report.rstrip().splitlines()[-1].startswith("SMOKE PASSED")


def test_a_token_the_agent_refuses_fails_the_smoke_and_says_where_to_look(
    agent_url: str, token_issuer: TokenIssuer
) -> None:
    out = io.StringIO()
    code = main(
        ["--local", "--agent-url", agent_url, "--agent-log", "/x/agent.log"],
        out=out,
        mint=lambda user: token_issuer.mint(user, ttl=-3600),  # expired: refused with 401
    )
    report = out.getvalue()
    assert code == 1
    assert "SMOKE FAILED: session 1: the agent answered HTTP 401" in report
    assert "What to look at:" in report
    assert "  - Agent log: /x/agent.log" in report


def test_an_unreachable_agent_fails_the_smoke(refused_url: str, token_issuer: TokenIssuer) -> None:
    out = io.StringIO()
    assert main(["--local", "--agent-url", refused_url], out=out, mint=token_issuer.mint) == 1
    assert "cannot reach the agent" in out.getvalue()


def test_local_tokens_come_from_the_running_issuers_key(tmp_path: Path) -> None:
    import argparse

    import jwt

    from smoke.__main__ import local_minter

    issuer = TokenIssuer(tmp_path, serve=False)  # writes the key the CLI reads
    url, mint = local_minter(argparse.Namespace(issuer_data_dir=tmp_path, issuer_url="http://127.0.0.1:1"))
    public = issuer.key.private_key.public_key()
    claims = jwt.decode(mint("user-x"), public, algorithms=["RS256"], options={"verify_aud": False})
    assert (url, claims["iss"], claims["sub"]) == ("http://127.0.0.1:1", "http://127.0.0.1:1", "user-x")

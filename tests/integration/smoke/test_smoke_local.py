"""``python -m smoke --local`` against a real local agent (``python -m runtime_handler``), the real local MCP server
(``localdev.mcp_server``) and a real Hindsight."""

from __future__ import annotations

import io
import os
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localdev.agent import LocalAgent
from localdev.mcp_server import LocalMcpServer
from localdev.token_issuer import TokenIssuer
from smoke.__main__ import main
from tests.unit.runtime_handler.serving import free_port

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _no_make_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The local services' state files are where nothing runs: a `make local` on this machine must not join."""
    monkeypatch.setenv("LOCAL_AGENT_DATA_DIR", str(tmp_path / "no-agent"))
    monkeypatch.setenv("LOCAL_MCP_DATA_DIR", str(tmp_path / "no-mcp"))


@pytest.fixture(scope="module")
def local_agent(
    local_hindsight: Any, token_issuer: TokenIssuer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalAgent]:
    """The agent as ``make local`` runs it (a background process with its state file), on a port not the default."""
    agent = LocalAgent(tmp_path_factory.mktemp("smoke-agent"))
    agent.start(hindsight_url=local_hindsight.url, issuer_url=token_issuer.issuer, port=free_port())
    yield agent
    agent.stop()


@pytest.fixture(scope="module")
def agent_url(local_agent: LocalAgent) -> str:
    assert local_agent.url is not None
    return local_agent.url


def test_smoke_passes_through_the_agent_and_over_mcp_and_prints_each_step(
    agent_url: str, mcp_url: str, token_issuer: TokenIssuer
) -> None:
    out = io.StringIO()
    args = ["--local", "--agent-url", agent_url, "--mcp-url", mcp_url, "--recall-timeout", "90"]
    code = main(args, out=out, mint=token_issuer.mint)
    report = out.getvalue()
    print(report)  # the step timings, in the test log
    assert code == 0, report
    assert f"smoke: then over MCP, the MCP server at {mcp_url}" in report
    assert "[1/5] user A, session 1: tell a code word ... ok in" in report
    assert "[2/5] user A, session 2: recall it ... ok in" in report
    assert "the code word came back" in report
    assert "[3/5] user B, session 3: must not recall it ... ok in" in report
    assert "recalled nothing of user A" in report
    # The MCP tools act on the agent's banks for the token's user: A's recall finds what the agent was told
    assert "[4/5] user A over MCP (recall): recall the code word ... ok in" in report
    assert "recall found the code word after" in report
    assert "[5/5] user B over MCP (recall): must not recall it ... ok in" in report
    assert "recall found nothing of user A" in report
    assert (
        report.rstrip()
        .splitlines()[-1]
        .startswith("SMOKE PASSED: memory carries across sessions and stays per user, through the agent and over MCP")
    )


def test_smoke_finds_the_local_services_where_make_local_moved_them(
    local_agent: LocalAgent,
    local_hindsight: Any,
    token_issuer: TokenIssuer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN make local's agent and MCP server on ports moved off the defaults (LOCAL_AGENT_PORT, LOCAL_MCP_PORT in the
    # shell that ran make local, not in this one), each recorded in its state file
    mcp = LocalMcpServer(tmp_path / "mcp")
    mcp_url = mcp.start(hindsight_url=local_hindsight.url, issuer_url=token_issuer.issuer, port=free_port())
    try:
        monkeypatch.setenv("LOCAL_AGENT_DATA_DIR", str(local_agent.data_dir))
        monkeypatch.setenv("LOCAL_MCP_DATA_DIR", str(mcp.data_dir))
        # WHEN the smoke runs with no URL given
        out = io.StringIO()
        code = main(["--local", "--recall-timeout", "90"], out=out, mint=token_issuer.mint)
    finally:
        mcp.stop()
    # THEN it tests both, where they really are
    report = out.getvalue()
    assert code == 0, report
    assert f"smoke: the local agent at {local_agent.url} (" in report
    assert f"smoke: then over MCP, the MCP server at {mcp_url}" in report
    assert urllib.parse.urlsplit(mcp_url).port != 8891
    assert "[5/5] user B over MCP (recall): must not recall it ... ok in" in report
    assert "through the agent and over MCP" in report.rstrip().splitlines()[-1]


def test_without_an_mcp_server_the_smoke_fails_before_it_starts(agent_url: str, token_issuer: TokenIssuer) -> None:
    out = io.StringIO()
    code = main(["--local", "--agent-url", agent_url], out=out, mint=token_issuer.mint)
    assert code == 2
    assert out.getvalue() == (
        "SMOKE SETUP FAILED: no local MCP server is running (none recorded in "
        f"{os.environ['LOCAL_MCP_DATA_DIR']}/mcp.json; make local starts it): pass --mcp-url, or --skip-mcp to test "
        "the agent only\n"
    )


def test_skip_mcp_tests_the_agent_only_and_says_so(agent_url: str, token_issuer: TokenIssuer) -> None:
    out = io.StringIO()
    args = ["--local", "--agent-url", agent_url, "--skip-mcp", "--recall-timeout", "90"]
    code = main(args, out=out, mint=token_issuer.mint)
    report = out.getvalue()
    assert code == 0, report
    assert "[3/3] user B, session 3: must not recall it ... ok in" in report
    assert "\nMCP: skipped (--skip-mcp)\n" in report
    assert "over MCP" not in report
    assert report.rstrip().splitlines()[-1].startswith("SMOKE PASSED: memory carries across sessions")


def test_without_a_local_agent_the_smoke_fails_before_it_starts(token_issuer: TokenIssuer) -> None:
    out = io.StringIO()
    assert main(["--local", "--skip-mcp"], out=out, mint=token_issuer.mint) == 2
    assert out.getvalue() == (
        "SMOKE SETUP FAILED: no local agent is running (none recorded in "
        f"{os.environ['LOCAL_AGENT_DATA_DIR']}/agent.json): start the services with make local, or pass --agent-url\n"
    )


def test_an_explicit_mcp_url_that_refuses_connections_fails_the_smoke_naming_it(
    agent_url: str, token_issuer: TokenIssuer, refused_url: str
) -> None:
    out = io.StringIO()
    url = refused_url + "/mcp"
    args = ["--local", "--agent-url", agent_url, "--mcp-url", url, "--recall-timeout", "90"]
    code = main(args, out=out, mint=token_issuer.mint)
    report = out.getvalue()
    assert code == 1, report
    assert "[3/5] user B, session 3: must not recall it ... ok in" in report
    assert "SMOKE FAILED: MCP recall as smoke-a-" in report
    assert f"cannot reach the MCP server at {url}" in report
    assert "  - MCP server log: " in report


def test_a_token_the_agent_refuses_fails_the_smoke_and_says_where_to_look(
    agent_url: str, token_issuer: TokenIssuer
) -> None:
    out = io.StringIO()
    code = main(
        ["--local", "--agent-url", agent_url, "--agent-log", "/x/agent.log", "--skip-mcp"],
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
    assert main(["--local", "--agent-url", refused_url, "--skip-mcp"], out=out, mint=token_issuer.mint) == 1
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

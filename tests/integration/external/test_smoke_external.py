"""``python -m smoke --local --hindsight-url``: the agent runs against a second local Hindsight started as the
customer's "external" server; the smoke passes where that server runs our isolation extension and fails, naming the
leak, where it does not (the scenario alone passes there: bank naming is no boundary)."""

from __future__ import annotations

import io
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localdev.agent import LocalAgent
from localdev.hindsight import LocalHindsight
from localdev.token_issuer import TokenIssuer
from smoke.__main__ import main
from tests.unit.runtime_handler.serving import free_port

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _no_default_mcp_server(refused_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default MCP port points where nothing listens: a `make local` on this machine must not join the tests."""
    monkeypatch.setenv("LOCAL_MCP_PORT", str(urllib.parse.urlsplit(refused_url).port))


def _agent(hindsight_url: str, issuer: TokenIssuer, folder: Path) -> Iterator[str]:
    agent = LocalAgent(folder)
    url = agent.start(hindsight_url=hindsight_url, issuer_url=issuer.issuer, port=free_port())
    try:
        yield url
    finally:
        agent.stop()


def _smoke(agent_url: str, hindsight_url: str, key_file: Path, issuer: TokenIssuer) -> tuple[int, str]:
    out = io.StringIO()
    args = ["--local", "--agent-url", agent_url, "--recall-timeout", "90", "--skip-mcp"]  # no MCP server here
    args += ["--hindsight-url", hindsight_url, "--operator-key-file", str(key_file)]
    code = main(args, out=out, mint=issuer.mint)
    return code, out.getvalue()


def test_smoke_passes_on_an_external_hindsight_with_the_extension(
    local_hindsight: Any, token_issuer: TokenIssuer, tmp_path: Path
) -> None:
    key_file = tmp_path / "operator-key"
    key_file.write_text(local_hindsight.operator_key)
    for agent_url in _agent(local_hindsight.url, token_issuer, tmp_path / "agent"):
        code, report = _smoke(agent_url, local_hindsight.url, key_file, token_issuer)
        assert code == 0, report
        assert "smoke: isolation probe: foreign identities must be refused another's bank ... ok" in report
        assert "SMOKE PASSED" in report


def test_smoke_catches_an_external_hindsight_without_the_extension(
    unisolated_hindsight: LocalHindsight, token_issuer: TokenIssuer, tmp_path: Path
) -> None:
    key_file = tmp_path / "operator-key"
    key_file.write_text("any-key-the-stock-server-accepts")
    for agent_url in _agent(unisolated_hindsight.url, token_issuer, tmp_path / "agent"):
        code, report = _smoke(agent_url, unisolated_hindsight.url, key_file, token_issuer)
        assert code == 1, report
        assert "[2/3] user A, session 2: recall it ... ok" in report  # memory works: only isolation is missing
        assert "SMOKE FAILED: isolation probe FAILED: " in report
        assert "another user's token" in report
        assert "does not run the hindsight_isolation extension" in report


def test_smoke_needs_the_operator_key_for_the_probe(token_issuer: TokenIssuer, tmp_path: Path) -> None:
    out = io.StringIO()
    args = ["--local", "--hindsight-url", "http://127.0.0.1:1", "--operator-key-file", str(tmp_path / "missing")]
    assert main(args, out=out, mint=token_issuer.mint) == 2
    assert "SMOKE SETUP FAILED: --hindsight-url needs that server's operator key" in out.getvalue()

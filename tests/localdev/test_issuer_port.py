"""The local Hindsight trusts the background token issuer on whatever port it serves, not only the default 8890."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from localdev.hindsight import EmbeddingsMode, LocalHindsight, LocalHindsightConfig, free_port
from localdev.token_issuer import TokenIssuer, ensure_running, stop_background, stop_when_gone
from memory_adapter.identity import format_bank_id

DISCOVERY_ENV = "HINDSIGHT_API_TENANT_JWT_DISCOVERY_URL"


@pytest.fixture
def issuer_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private background-issuer data dir (never the developer's ``.local/token-issuer``), stopped afterwards."""
    data_dir = tmp_path / "issuer"
    monkeypatch.setenv("LOCAL_ISSUER_DATA_DIR", str(data_dir))
    monkeypatch.delenv("LOCAL_ISSUER_PORT", raising=False)
    yield data_dir
    stop_background(data_dir)


def _offline_config(tmp_path: Path) -> LocalHindsightConfig:
    return LocalHindsightConfig(data_dir=tmp_path / "hindsight", port=1, pg_port=2, llm_port=3)


def test_server_trusts_a_running_issuer_started_on_another_port(tmp_path: Path, issuer_dir: Path) -> None:
    # GIVEN the background issuer started on a non-default port (`python -m localdev.token_issuer start --port N`)
    port = free_port()
    issuer_url = ensure_running(issuer_dir, port=port)
    stop_when_gone(issuer_dir)  # even if this session is killed, no issuer is left running
    assert issuer_url == f"http://127.0.0.1:{port}"
    # WHEN the local Hindsight builds its environment, without LOCAL_ISSUER_PORT set
    env = LocalHindsight(_offline_config(tmp_path)).server_env()
    # THEN the isolation extension trusts that issuer
    assert env[DISCOVERY_ENV] == f"{issuer_url}/.well-known/openid-configuration"


def test_server_trusts_the_configured_issuer_port(
    tmp_path: Path, issuer_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN no issuer running yet and LOCAL_ISSUER_PORT configured
    port = free_port()
    monkeypatch.setenv("LOCAL_ISSUER_PORT", str(port))
    # WHEN / THEN the server is configured for the issuer start() will bring up on that port
    env = LocalHindsight(_offline_config(tmp_path)).server_env()
    assert env[DISCOVERY_ENV] == f"http://127.0.0.1:{port}/.well-known/openid-configuration"


@pytest.mark.integration
def test_tokens_from_an_issuer_on_a_non_default_port_open_their_own_bank(issuer_dir: Path) -> None:
    # GIVEN the background issuer on a non-default port, then a local Hindsight with isolation on
    port = free_port()
    ensure_running(issuer_dir, port=port)
    stop_when_gone(issuer_dir)  # even if this session is killed, no issuer is left running
    hindsight = LocalHindsight(LocalHindsightConfig.ephemeral(embeddings=EmbeddingsMode.HASHED))
    try:
        hindsight.start()
        hindsight.stop_when_gone(delete=True)
        issuer = TokenIssuer.attach(issuer_dir)
        assert issuer.issuer == f"http://127.0.0.1:{port}"
        alex = {"Authorization": f"Bearer {issuer.mint('user-alex')}"}
        own = format_bank_id(user="user-alex", agent="support")
        other = format_bank_id(user="user-bob", agent="support")
        with httpx.Client(base_url=hindsight.url, timeout=60) as client:
            # WHEN a user calls with a token from that issuer
            created = client.put(f"/v1/default/banks/{own}", json={}, headers=alex)
            mine = client.post(f"/v1/default/banks/{own}/memories/recall", json={"query": "anything"}, headers=alex)
            theirs = client.put(f"/v1/default/banks/{other}", json={}, headers=alex)
        # THEN the token is accepted for the caller's own bank, and isolation still refuses another user's
        assert created.status_code == 200, created.text
        assert mine.status_code == 200, mine.text
        assert theirs.status_code == 403, theirs.text
    finally:
        hindsight.destroy()

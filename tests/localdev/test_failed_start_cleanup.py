"""A failed ``LocalHindsight`` start (``python -m localdev.hindsight start``) leaves nothing running that it started:
the virtualenv is checked before anything starts, and a local token issuer the start started is stopped again.

Each test has its own issuer data dir (``LOCAL_ISSUER_DATA_DIR``) on a free port, apart from the session's."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localdev.hindsight import EmbeddingsMode, HindsightStartError, LocalHindsight, LocalHindsightConfig
from localdev.token_issuer import ensure_running, stop_background
from localdev.token_issuer.background import ENV_DATA_DIR, ENV_PORT, state_file


@pytest.fixture
def issuer_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The data dir of the issuer a start with isolation uses (a free port); stopped afterwards whatever happened."""
    data_dir = tmp_path / "issuer"
    monkeypatch.setenv(ENV_DATA_DIR, str(data_dir))
    monkeypatch.setenv(ENV_PORT, "0")
    yield data_dir
    stop_background(data_dir)


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def _isolated(**overrides: Any) -> LocalHindsight:
    """A start that trusts the local issuer (isolation on, no discovery URL given)."""
    return LocalHindsight(LocalHindsightConfig.ephemeral(embeddings=EmbeddingsMode.HASHED, isolation=True, **overrides))


def _issuer_running(data_dir: Path) -> bool:
    return state_file(data_dir).live_pid() is not None


def test_a_missing_virtualenv_is_reported_before_the_issuer_starts(issuer_dir: Path, tmp_path: Path) -> None:
    # GIVEN a start with isolation whose virtualenv does not exist
    hs = _isolated(venv=tmp_path / "no-venv")
    try:
        # WHEN it is started THEN it fails naming the virtualenv
        with pytest.raises(HindsightStartError, match="make hindsight-venv"):
            hs.start()
        # AND no issuer was started (before, the issuer started first and stayed up after the failure)
        assert not _issuer_running(issuer_dir)
        assert not hs.status()["postgres_running"]
    finally:
        hs.destroy()


def test_a_start_failing_after_it_started_the_issuer_stops_it(issuer_dir: Path, busy_port: int) -> None:
    # GIVEN a start with isolation and a complete virtualenv whose port is taken (it fails after the issuer is up)
    hs = _isolated(port=busy_port)
    try:
        # WHEN it is started THEN it fails on the port
        with pytest.raises(HindsightStartError, match=f"port {busy_port} .* is in use"):
            hs.start()
        # AND the issuer it started is stopped again (before, it was left running)
        assert not _issuer_running(issuer_dir)
    finally:
        hs.destroy()


def test_a_failed_start_leaves_an_issuer_that_ran_before_it_running(issuer_dir: Path, busy_port: int) -> None:
    # GIVEN an issuer already running (another server or a developer's tokens use it)
    ensure_running(issuer_dir)
    hs = _isolated(port=busy_port)
    try:
        # WHEN a start fails
        with pytest.raises(HindsightStartError):
            hs.start()
        # THEN that issuer still runs: the start did not start it
        assert _issuer_running(issuer_dir)
    finally:
        hs.destroy()

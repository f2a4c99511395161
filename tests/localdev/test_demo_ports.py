"""``make local`` (``localdev.demo``) checks every port it will listen on before it starts anything: a clash is
reported at once, naming the variable that moves the port, not after Hindsight's ~20 s start (issue 33 item 7)."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from localdev import demo
from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from localdev.supervisor import free_port


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port something else listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.fixture(autouse=True)
def _own_ports_and_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Free ports and empty state directories: neither the defaults nor a running `make local` joins the test."""
    for name in ("HINDSIGHT", "HINDSIGHT_PG", "HINDSIGHT_LLM", "ISSUER", "AGENT", "MCP"):
        monkeypatch.setenv(f"LOCAL_{name}_PORT", str(free_port()))
    for name in ("HINDSIGHT", "ISSUER", "AGENT", "MCP"):
        monkeypatch.setenv(f"LOCAL_{name}_DATA_DIR", str(tmp_path / name.lower()))


def test_a_port_clash_stops_make_local_before_anything_starts(
    taken: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN something listening where the agent and the MCP server would
    monkeypatch.setenv("LOCAL_AGENT_PORT", str(taken))
    monkeypatch.setenv("LOCAL_MCP_PORT", str(taken))
    # WHEN make local starts
    code = demo.main([])
    # THEN it fails at once, one line per clash naming the setting that moves it, and started nothing
    out, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines()[0] == "make local cannot start: a port it needs is in use"
    assert err.splitlines()[1].startswith(f"the agent: port {taken} is in use (")
    assert err.splitlines()[1].endswith("or move the agent to another port with LOCAL_AGENT_PORT=<port>")
    assert err.splitlines()[2].endswith("or move the MCP server to another port with LOCAL_MCP_PORT=<port>")
    assert out == ""
    assert list(Path(os.environ["LOCAL_HINDSIGHT_DATA_DIR"]).glob("*.json")) == []  # no state: nothing started


def test_hindsight_and_issuer_ports_are_checked_too(taken: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_HINDSIGHT_PG_PORT", str(taken))
    monkeypatch.setenv("LOCAL_ISSUER_PORT", str(taken))
    clashes = demo.port_clashes(LocalHindsight(LocalHindsightConfig.from_env()), agent_and_mcp=True)
    assert [line.split(":")[0] for line in clashes] == ["Hindsight's PostgreSQL", "the token issuer"]
    assert "LOCAL_HINDSIGHT_PG_PORT=<port>" in clashes[0]
    assert "LOCAL_ISSUER_PORT=<port>" in clashes[1]


def test_a_port_make_local_itself_holds_is_no_clash(taken: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the MCP server of an earlier make local, still running on its port (it is reused)
    monkeypatch.setenv("LOCAL_MCP_PORT", str(taken))
    state = Path(os.environ["LOCAL_MCP_DATA_DIR"]) / "mcp.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"pid": os.getpid(), "url": f"http://127.0.0.1:{taken}/mcp"}))
    # THEN its port is not reported
    assert demo.port_clashes(LocalHindsight(LocalHindsightConfig.from_env()), agent_and_mcp=True) == []


def test_a_mistyped_agent_project_stops_make_local_before_anything_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # WHEN make local starts with AGENT= a folder that is not there (one letter off the example's)
    examples = Path(__file__).resolve().parents[2] / "examples"
    code = demo.main(["--agent-project", str(examples / "strand_agent")])
    # THEN it fails at once, naming the folder it probably meant, and started nothing (before: after Hindsight's start)
    out, err = capsys.readouterr()
    assert code == 1
    assert f"(did you mean {examples / 'strands_agent'}?)" in err
    assert out == ""
    assert list(Path(os.environ["LOCAL_HINDSIGHT_DATA_DIR"]).glob("*.json")) == []

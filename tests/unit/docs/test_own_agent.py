"""The line docs/own-agent.md gives to run its snippet against ``make local`` sets what ``make local``'s own agent is
given (``localdev.agent.agent_env``): the same agent name, Hindsight, auth mode, issuer and client, on another port."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from localdev.agent import DEFAULT_HINDSIGHT_URL, DEFAULT_PORT, agent_env
from localdev.token_issuer import default_issuer_url
from memory_adapter.agentcore import AgentMemorySettings, SettingsError

ROOT = Path(__file__).resolve().parents[3]


def documented_run() -> tuple[dict[str, str], list[str]]:
    """(the variables, the command) of the line that runs the snippet."""
    (line,) = re.findall(r"^AGENT_NAME=.*$", (ROOT / "docs" / "own-agent.md").read_text(), re.MULTILINE)
    words = shlex.split(line)
    assignments = [w for w in words if re.match(r"^[A-Z_]+=", w)]
    return dict(w.split("=", 1) for w in assignments), words[len(assignments) :]


def test_the_line_that_runs_the_snippet_against_make_local_sets_what_make_locals_agent_gets(tmp_path: Path) -> None:
    variables, command = documented_run()
    local = agent_env(
        hindsight_url=DEFAULT_HINDSIGHT_URL, issuer_url=default_issuer_url(), port=DEFAULT_PORT, spool_dir=tmp_path
    )
    port = variables.pop("PORT")
    assert {name: local[name] for name in variables} == variables
    assert int(port) != DEFAULT_PORT  # make local's agent holds that one
    assert command == [".venv/bin/python", "my_agent.py"]
    # and they are what the wiring needs: it starts with exactly these, and refuses to without any one of them
    AgentMemorySettings.from_env(variables)
    for name in variables:
        with pytest.raises(SettingsError, match=name):
            AgentMemorySettings.from_env({k: v for k, v in variables.items() if k != name})


def test_the_snippet_started_without_a_setting_says_which_without_a_traceback(tmp_path: Path) -> None:
    # GIVEN the snippet saved as my_agent.py, started as the doc says but without JWT_DISCOVERY_URL (a newcomer's slip)
    (snippet,) = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "own-agent.md").read_text(), re.DOTALL)[:1]
    (tmp_path / "my_agent.py").write_text(snippet)
    variables, _ = documented_run()
    del variables["JWT_DISCOVERY_URL"]
    inherited = {k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "HOME")}
    done = subprocess.run(  # our own doc's code, as a user runs it
        [sys.executable, "my_agent.py"],
        cwd=tmp_path,
        env={**inherited, **variables},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # THEN it stops with the problem and nothing else (before: a SettingsError traceback ending in the same words)
    assert done.returncode != 0
    assert "JWT_DISCOVERY_URL is required" in done.stderr
    assert "Traceback" not in done.stderr, done.stderr

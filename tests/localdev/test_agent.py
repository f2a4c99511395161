"""``localdev.agent``: the local agent runner's stop paths (starting the agent itself is covered by
``tests/integration/runtime_handler/test_local_agent.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from localdev.agent import LocalAgent

REPO_ROOT = Path(__file__).resolve().parents[2]


def _stand_in_agent(agent: LocalAgent) -> subprocess.Popen[bytes]:
    """A process recorded as the agent, as ``LocalAgent.start`` records it (own session)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    agent.data_dir.mkdir(parents=True)
    agent.state_file.write_text(json.dumps({"pid": process.pid, "url": "http://127.0.0.1:1"}))
    return process


def test_cli_stop_stops_the_agent_of_the_given_data_dir(tmp_path: Path) -> None:
    agent = LocalAgent(tmp_path / "agent")
    process = _stand_in_agent(agent)
    stop = [sys.executable, "-m", "localdev.agent", "--data-dir", str(agent.data_dir), "stop"]
    stopped = subprocess.run(stop, capture_output=True, text=True, timeout=60, cwd=REPO_ROOT, check=False)
    assert (stopped.returncode, stopped.stdout.strip()) == (0, "agent stopped")
    assert process.poll() is not None
    assert not agent.state_file.exists()
    again = subprocess.run(stop, capture_output=True, text=True, timeout=60, cwd=REPO_ROOT, check=False)
    assert again.stdout.strip() == "agent was not running"


def test_watchdog_stops_the_agent_once_its_owner_dies(tmp_path: Path) -> None:
    # GIVEN an agent watched on behalf of a short-lived owner
    agent = LocalAgent(tmp_path / "agent")
    process = _stand_in_agent(agent)
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    agent.stop_when_gone(owner.pid)

    # WHEN the owner dies without stopping it
    owner.kill()
    owner.wait()

    # THEN the watchdog stops the agent
    deadline = time.monotonic() + 30
    while agent.state_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert process.poll() is not None, (agent.data_dir / "watchdog.log").read_text()
    assert not agent.state_file.exists()

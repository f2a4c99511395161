"""``localdev.agent``: the local agent runner's stop paths (starting the agent itself is covered by
``tests/integration/runtime_handler/test_local_agent.py``)."""

from __future__ import annotations

import json
import os
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


def test_the_local_runner_loads_no_cdk_code() -> None:
    # GIVEN the local agent runner (it checks a project you bring with the same rule the bundler uses)
    code = "import sys, localdev.agent; print(sorted(m for m in sys.modules if m == 'infra' or m.startswith('infra.')))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    # WHEN it is imported, THEN nothing of infra (the CDK app and its bundler) is
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert loaded.stdout.strip() == "[]"


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


_PING_SERVER = """
import json, os
from http.server import BaseHTTPRequestHandler, HTTPServer

class Ping(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"status": "Healthy", "who": os.environ.get("WHO", "project")}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

HTTPServer(("127.0.0.1", int(os.environ["PORT"])), Ping).serve_forever()
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _who(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(f"{url}/ping", timeout=5) as answer:  # noqa: S310 - loopback
        return str(json.load(answer)["who"])


def test_start_replaces_an_agent_running_other_settings(tmp_path: Path) -> None:
    # GIVEN an agent left by an earlier run (recorded without settings) answering /ping on the port
    import os

    port = _free_port()
    agent = LocalAgent(tmp_path / "agent")
    script = tmp_path / "old.py"
    script.write_text(_PING_SERVER)
    old = subprocess.Popen(
        [sys.executable, str(script)], env={**os.environ, "PORT": str(port), "WHO": "old"}, start_new_session=True
    )
    agent.data_dir.mkdir(parents=True)
    agent.state_file.write_text(json.dumps({"pid": old.pid, "url": f"http://127.0.0.1:{port}"}))
    deadline = time.monotonic() + 20
    while not agent.healthy() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _who(f"http://127.0.0.1:{port}") == "old"
    project = tmp_path / "project"
    project.mkdir()
    (project / "agent.py").write_text(_PING_SERVER)
    try:
        # WHEN an agent project is started on that port
        url = agent.start(
            hindsight_url="http://127.0.0.1:1", issuer_url="http://127.0.0.1:2", port=port, project=project
        )
        # THEN the old agent was stopped and the project answers
        old.wait(timeout=20)
        assert _who(url) == "project"
        pid = agent.state()["pid"]
        # WHEN it is started again with the same settings, THEN it is kept
        again = agent.start(
            hindsight_url="http://127.0.0.1:1", issuer_url="http://127.0.0.1:2", port=port, project=project
        )
        assert again == url
        assert agent.state()["pid"] == pid
    finally:
        agent.stop()
        if old.poll() is None:
            old.kill()


def test_a_port_taken_by_something_else_names_the_setting(tmp_path: Path) -> None:
    import socket

    import pytest

    from localdev.supervisor import StartError

    # GIVEN something else listening on the agent's port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        agent = LocalAgent(tmp_path / "agent")
        # WHEN the agent starts there, THEN the error names the variable that moves it, and nothing was started
        with pytest.raises(StartError, match=f"port {port} is in use.*LOCAL_AGENT_PORT=<port>"):
            agent.start(hindsight_url="http://127.0.0.1:1", issuer_url="http://127.0.0.1:2", port=port)
        assert not agent.state_file.exists()


def test_starting_the_agent_with_no_hindsight_warns_what_to_do(tmp_path: Path) -> None:
    # GIVEN no Hindsight at the URL (the agent started alone, before make hindsight-start)
    port, down = _free_port(), f"http://127.0.0.1:{_free_port()}"
    project = tmp_path / "project"
    project.mkdir()
    (project / "agent.py").write_text(_PING_SERVER)
    data_dir = tmp_path / "agent"
    cli = [sys.executable, "-m", "localdev.agent", "--data-dir", str(data_dir)]
    start = [*cli, "start", "--port", str(port), "--hindsight-url", down, "--issuer-url", "http://127.0.0.1:2"]
    try:
        # WHEN the agent is started from the command line
        started = subprocess.run(
            [*start, "--project", str(project)], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT, check=False
        )
        # THEN it starts, and says that it answers without memory until Hindsight runs, and how to start it
        assert started.returncode == 0, started.stderr
        assert f"warning: no Hindsight answers at {down}" in started.stderr
        assert "make hindsight-start" in started.stderr
    finally:
        subprocess.run([*cli, "stop"], capture_output=True, timeout=60, cwd=REPO_ROOT, check=False)

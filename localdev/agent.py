"""The agent (``python -m runtime_handler``) as a local background server, pointed at the local Hindsight and issuer.

It runs exactly the code AgentCore Runtime runs, on 127.0.0.1, in JWT mode trusting the local token issuer, with the
deterministic echo model (it shows what it recalled) instead of Bedrock::

    python -m localdev.agent start [--port 8080] [--hindsight-url URL] [--issuer-url URL]
    python -m localdev.agent status
    python -m localdev.agent stop

State (pid, URL), the log and the adapter's spool live in ``.local/agent`` (``LOCAL_AGENT_DATA_DIR``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localdev._process import REPO_ROOT as REPO_ROOT  # re-exported: bench builds agent commands from it
from localdev._process import pid_alive, repo_pythonpath
from localdev.token_issuer import LOCAL_CLIENT_ID, running_issuer_url

__all__ = ["DEFAULT_PORT", "AgentStartError", "LocalAgent", "agent_env"]

DEFAULT_DATA_DIR = REPO_ROOT / ".local" / "agent"
DEFAULT_PORT = 8080
DEFAULT_HINDSIGHT_URL = "http://127.0.0.1:8888"
AGENT_NAME = "support"
ENV_DATA_DIR = "LOCAL_AGENT_DATA_DIR"
ENV_PORT = "LOCAL_AGENT_PORT"
_STATE_FILE = "agent.json"
_START_TIMEOUT_S = 30.0


class AgentStartError(RuntimeError):
    """The agent did not come up; the message carries the tail of its log."""


def agent_env(*, hindsight_url: str, issuer_url: str, port: int, spool_dir: Path) -> dict[str, str]:
    """The agent's environment for local runs: JWT mode against the local issuer, echo model, loopback port."""
    return {
        "AGENT_NAME": AGENT_NAME,
        "HINDSIGHT_API_URL": hindsight_url,
        "AUTH_MODE": "jwt",
        "JWT_DISCOVERY_URL": issuer_url.rstrip("/") + "/.well-known/openid-configuration",
        "JWT_ALLOWED_CLIENTS": LOCAL_CLIENT_ID,
        "MODEL_PROVIDER": "echo",
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "HINDSIGHT_ADAPTER_SPOOL_DIR": str(spool_dir),
        "POWERTOOLS_SERVICE_NAME": "local-agent",
        "POWERTOOLS_METRICS_NAMESPACE": "LocalAgent",
    }


@dataclass
class LocalAgent:
    """One local agent server, identified by its data directory."""

    data_dir: Path = DEFAULT_DATA_DIR

    @property
    def state_file(self) -> Path:
        return self.data_dir / _STATE_FILE

    @property
    def log_file(self) -> Path:
        return self.data_dir / "agent.log"

    def state(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.state_file.read_text())
        except (FileNotFoundError, ValueError):
            return {}
        return data

    @property
    def url(self) -> str | None:
        state = self.state()
        return str(state["url"]) if state.get("url") and pid_alive(int(state.get("pid") or 0)) else None

    def healthy(self) -> bool:
        url = self.url
        if url is None:
            return False
        try:
            with urllib.request.urlopen(f"{url}/ping", timeout=2) as response:  # noqa: S310 - loopback http
                return bool(json.load(response).get("status"))
        except (OSError, ValueError):
            return False

    def start(
        self,
        *,
        hindsight_url: str,
        issuer_url: str,
        port: int = DEFAULT_PORT,
        extra_env: Mapping[str, str] | None = None,
    ) -> str:
        """Start the agent in the background unless it already runs; return its URL."""
        if self.healthy():
            assert self.url is not None
            return self.url
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(agent_env(hindsight_url=hindsight_url, issuer_url=issuer_url, port=port, spool_dir=self.spool_dir))
        env.update(extra_env or {})
        env["PYTHONPATH"] = repo_pythonpath(adapter=True)
        with self.log_file.open("ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "runtime_handler"],
                cwd=REPO_ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        url = f"http://127.0.0.1:{port}"
        self.state_file.write_text(json.dumps({"pid": process.pid, "url": url, "hindsight_url": hindsight_url}))
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not self.healthy():
            if process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AgentStartError(f"the agent did not start; log tail:\n{self._tail()}")
            time.sleep(0.1)
        return url

    @property
    def spool_dir(self) -> Path:
        return self.data_dir / "spool"

    def stop(self) -> bool:
        """Stop the agent (SIGTERM, then SIGKILL); False when it was not running."""
        pid = int(self.state().get("pid") or 0)
        running = pid_alive(pid)
        if running:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(FileNotFoundError):
            self.state_file.unlink()
        return running

    def _tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"


def default_agent() -> LocalAgent:
    return LocalAgent(Path(os.environ.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR))


def default_port() -> int:
    return int(os.environ.get(ENV_PORT) or DEFAULT_PORT)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localdev.agent", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start the agent in the background")
    start.add_argument("--port", type=int, default=default_port())
    start.add_argument("--hindsight-url", default=DEFAULT_HINDSIGHT_URL)
    start.add_argument("--issuer-url", default=running_issuer_url())
    sub.add_parser("status", help="is the agent running?")
    sub.add_parser("stop", help="stop the agent")
    args = parser.parse_args(argv)
    agent = default_agent()
    if args.command == "start":
        try:
            url = agent.start(hindsight_url=args.hindsight_url, issuer_url=args.issuer_url, port=args.port)
        except AgentStartError as err:
            print(err, file=sys.stderr)
            return 1
        print(f"agent running at {url} (log: {agent.log_file})")
        return 0
    if args.command == "status":
        print(f"agent running at {agent.url}" if agent.healthy() else "agent not running")
        return 0 if agent.healthy() else 3
    print("agent stopped" if agent.stop() else "agent was not running")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

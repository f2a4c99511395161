"""The agent (``python -m runtime_handler``) as a local background server, pointed at the local Hindsight and issuer.

It runs exactly the code AgentCore Runtime runs, on 127.0.0.1, in JWT mode trusting the local token issuer, with the
deterministic echo model (it shows what it recalled) instead of Bedrock. ``--project`` runs an agent you bring instead
(``python <project>/<entrypoint>``, as its bundle runs on AgentCore), with the same environment::

    python -m localdev.agent start [--port 8080] [--hindsight-url URL] [--issuer-url URL] [--project DIR]
    python -m localdev.agent status
    python -m localdev.agent stop

State (pid, URL), the log and the adapter's spool live in ``.local/agent`` (``--data-dir``, before the command, or
``LOCAL_AGENT_DATA_DIR``). Starting, awaiting and stopping the process is :mod:`localdev.supervisor`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localdev.hindsight.config import LOCAL_AGENT_NAME, deployed_mission_json
from localdev.local_server import LocalServer, service_command
from localdev.supervisor import (
    REPO_ROOT,
    StartError,
    child_env,
    env_number,
    require_free_port,
    spawn,
)
from localdev.supervisor import stop_when_gone as _stop_when_gone
from localdev.token_issuer import LOCAL_CLIENT_ID, running_issuer_url
from memory_adapter.agentcore.project import DEFAULT_PROJECT_ENTRYPOINT, project_problems
from memory_adapter.agentcore.settings import IdentitySource
from memory_adapter.config import HindsightAgentCoreConfig
from memory_adapter.identity.settings import JwtSettings, discovery_url_for
from runtime_handler.settings import ModelProvider, Settings

__all__ = ["DEFAULT_PORT", "AgentStartError", "LocalAgent", "agent_env", "agent_settings"]

DEFAULT_DATA_DIR = REPO_ROOT / ".local" / "agent"
DEFAULT_PORT = 8080
DEFAULT_HINDSIGHT_URL = "http://127.0.0.1:8888"
ENV_DATA_DIR = "LOCAL_AGENT_DATA_DIR"
ENV_PORT = "LOCAL_AGENT_PORT"
_STATE_FILE = "agent.json"


class AgentStartError(StartError):
    """The agent did not come up; the message carries the tail of its log."""


def agent_settings(*, hindsight_url: str, issuer_url: str, spool_dir: Path) -> Settings:
    """The agent's settings for local runs: JWT mode against the local issuer, echo model, a spool in the data dir."""
    return Settings(
        agent_name=LOCAL_AGENT_NAME,
        auth_mode=IdentitySource.JWT,
        memory=HindsightAgentCoreConfig(
            hindsight_api_url=hindsight_url, spool_dir=str(spool_dir), missions=deployed_mission_json(LOCAL_AGENT_NAME)
        ),
        jwt=JwtSettings(discovery_url=discovery_url_for(issuer_url), allowed_clients=(LOCAL_CLIENT_ID,)),
        model_provider=ModelProvider.ECHO,
    )


def agent_env(*, hindsight_url: str, issuer_url: str, port: int, spool_dir: Path) -> dict[str, str]:
    """The agent's environment for local runs (:func:`agent_settings` written by ``Settings.to_env``), on a loopback
    port, with Powertools' names."""
    settings = agent_settings(hindsight_url=hindsight_url, issuer_url=issuer_url, spool_dir=spool_dir)
    return {
        **settings.to_env(),
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "POWERTOOLS_SERVICE_NAME": "local-agent",
        "POWERTOOLS_METRICS_NAMESPACE": "LocalAgent",
    }


@dataclass
class LocalAgent(LocalServer):
    """One local agent server, identified by its data directory."""

    data_dir: Path = DEFAULT_DATA_DIR
    state_name = _STATE_FILE
    log_name = "agent.log"

    @property
    def spool_dir(self) -> Path:
        return self.data_dir / "spool"

    def state(self) -> dict[str, Any]:
        return self._state.read()

    def answers(self, url: str) -> bool:
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
        project: Path | None = None,
        entrypoint: str = DEFAULT_PROJECT_ENTRYPOINT,
    ) -> str:
        """Start the agent (``runtime_handler``, or the agent ``project``) in the background; return its URL.

        One already running with exactly these settings (what :func:`_settings` records: the command, the port, the
        environment) is kept; one running with other settings (another project, another Hindsight) is stopped and
        started again with these, saying so on stderr, so what answers is always what was asked for."""
        env = agent_env(hindsight_url=hindsight_url, issuer_url=issuer_url, port=port, spool_dir=self.spool_dir)
        env.update(extra_env or {})
        command = [sys.executable, "-m", "runtime_handler"]
        if project is not None:
            problems = project_problems(project, entrypoint)
            if problems:
                raise AgentStartError("; ".join(problems))
            command = [sys.executable, str((project / entrypoint).resolve())]
        settings = _settings(command, port, env)
        if self.healthy():
            assert self.url is not None
            running = self.state().get("settings")
            if running == settings:
                return self.url
            print(
                f"the agent at {self.url} runs {_describe(running)}; restarting it with {_describe(settings)}",
                file=sys.stderr,
            )
            self.stop()
        require_free_port(port, name="the agent", setting=ENV_PORT)
        pid = spawn(
            command,
            log_file=self.log_file,
            env=child_env(env, adapter=True),
            cwd=REPO_ROOT,
        )
        url = f"http://127.0.0.1:{port}"
        self._state.write({"pid": pid, "url": url, "hindsight_url": hindsight_url, "settings": settings})
        self.await_start(pid, name="the agent", error=AgentStartError)
        return url

    def stop_when_gone(self, pid: int | None = None) -> None:
        """Stop the agent once process ``pid`` (default: this one) has died: a killed test run leaves no agent."""
        _stop_when_gone(
            [sys.executable, "-m", "localdev.agent", "--data-dir", str(self.data_dir), "stop"],
            while_exists=self.state_file,
            log_file=self.data_dir / "watchdog.log",
            owner_pid=pid,
        )


def _settings(command: Sequence[str], port: int, env: Mapping[str, str]) -> dict[str, Any]:
    """What makes one agent run differ from another: recorded in the state file, compared on the next start."""
    return {"command": list(command[1:]), "port": port, "env": dict(sorted(env.items()))}


def _describe(settings: object) -> str:
    """The settings in a few words: which agent, which Hindsight (or that nothing was recorded)."""
    if not isinstance(settings, dict):
        return "unrecorded settings (started by an earlier version)"
    command = settings.get("command") or []
    env = settings.get("env") or {}
    which = "the reference agent" if command[:2] == ["-m", "runtime_handler"] else f"{' '.join(map(str, command))}"
    return f"{which} (Hindsight {env.get('HINDSIGHT_API_URL')})"


def hindsight_warning(url: str) -> str | None:
    """What to say when no Hindsight answers at ``url``: the agent still starts (and answers "degraded": true), so a
    newcomer who started it alone learns why nothing is remembered, and how to fix it."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2):  # noqa: S310 - the local Hindsight, http
            return None
    except urllib.error.HTTPError:  # it answers (even with an error status): it runs
        return None
    except (OSError, ValueError):
        return (
            f'warning: no Hindsight answers at {url}: the agent answers without memory ("degraded": true) until one '
            "does; start it with make hindsight-start (or make local), or pass --hindsight-url"
        )


def default_agent() -> LocalAgent:
    return LocalAgent(Path(os.environ.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR))


def default_port() -> int:
    return env_number(os.environ, ENV_PORT, DEFAULT_PORT, int)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localdev.agent", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, help=f"default .local/agent ({ENV_DATA_DIR})")
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start the agent in the background")
    start.add_argument("--port", type=int, default=default_port())
    start.add_argument("--hindsight-url", default=DEFAULT_HINDSIGHT_URL)
    start.add_argument("--issuer-url", default=running_issuer_url())
    start.add_argument("--project", type=Path, help="run this agent project instead of runtime_handler")
    start.add_argument("--entrypoint", default=DEFAULT_PROJECT_ENTRYPOINT, help="the project's entrypoint file")
    sub.add_parser("status", help="is the agent running?")
    sub.add_parser("stop", help="stop the agent")
    args = parser.parse_args(argv)
    agent = LocalAgent(args.data_dir) if args.data_dir else default_agent()
    warning = hindsight_warning(args.hindsight_url) if args.command == "start" else None
    if warning:
        print(warning, file=sys.stderr)
    return service_command(
        args.command,
        agent,
        name="agent",
        start=lambda: agent.start(
            hindsight_url=args.hindsight_url,
            issuer_url=args.issuer_url,
            port=args.port,
            project=args.project,
            entrypoint=args.entrypoint,
        ),
    )


if __name__ == "__main__":
    raise SystemExit(main())

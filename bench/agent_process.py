"""An agent process a benchmark starts: its settings (:func:`bench_agent_env`, written by the agent's own ``to_env``),
and ready once its ``/ping`` answers 200 (the runtime's health check)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx

from localdev.token_issuer import LOCAL_CLIENT_ID
from memory_adapter.agentcore.settings import IdentitySource
from memory_adapter.config import HindsightAgentCoreConfig
from memory_adapter.identity.settings import JwtSettings
from runtime_handler.settings import ModelProvider, Settings

__all__ = ["bench_agent_env", "wait_for_ping"]


def bench_agent_env(
    *, agent: str, hindsight_url: str, discovery_url: str, spool_dir: Path, verbose: bool = False
) -> dict[str, str]:
    """The reference agent's environment for a benchmark: JWT mode against the local issuer, the echo model, its own
    spool (``Settings.to_env``: the variables the agent reads, as the stack writes them)."""
    settings = Settings(
        agent_name=agent,
        auth_mode=IdentitySource.JWT,
        memory=HindsightAgentCoreConfig(hindsight_api_url=hindsight_url, spool_dir=str(spool_dir), verbose=verbose),
        jwt=JwtSettings(discovery_url=discovery_url, allowed_clients=(LOCAL_CLIENT_ID,)),
        model_provider=ModelProvider.ECHO,
    )
    return settings.to_env()


def wait_for_ping(url: str, process: subprocess.Popen[bytes], *, poll_s: float, timeout_s: float | None = None) -> None:
    """Poll ``{url}/ping`` every ``poll_s`` until it answers 200; raise ``RuntimeError`` once ``process`` exits or
    ``timeout_s`` pass (``None``: no deadline). The poll interval bounds how precisely a start time is measured."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{url}/ping", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            raise RuntimeError(f"the agent at {url} exited during start-up")
        if deadline is not None and time.monotonic() > deadline:
            raise RuntimeError(f"the agent at {url} did not answer /ping within {timeout_s:g} s")
        time.sleep(poll_s)

"""An agent process a benchmark starts: ready once its ``/ping`` answers 200 (the runtime's health check)."""

from __future__ import annotations

import subprocess
import time

import httpx

__all__ = ["wait_for_ping"]


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

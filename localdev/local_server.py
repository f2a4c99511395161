"""A local background server (the agent, the MCP server) known by its data directory, and the ``start``/``status``/
``stop`` commands of its CLI. Starting, awaiting and stopping the process is :mod:`localdev.supervisor`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from localdev.supervisor import StartError, StateFile, try_start, wait_until_ready

__all__ = ["BackgroundService", "LocalServer", "service_command"]


class BackgroundService(Protocol):
    """What :func:`service_command` needs from a local background service (the agent, the MCP server)."""

    @property
    def url(self) -> str | None: ...

    @property
    def log_file(self) -> Path: ...

    def healthy(self) -> bool: ...

    def stop(self) -> bool: ...


@dataclass
class LocalServer:
    """A local background server (the agent, the MCP server), identified by its data directory: its state file (pid,
    URL, what it was started with) and its log. A subclass names them and says how the server answers when up."""

    data_dir: Path
    state_name: ClassVar[str]
    log_name: ClassVar[str]
    #: Seconds a start waits for the server to answer.
    start_timeout_s: ClassVar[float] = 30.0

    @property
    def state_file(self) -> Path:
        return self.data_dir / self.state_name

    @property
    def log_file(self) -> Path:
        return self.data_dir / self.log_name

    @property
    def _state(self) -> StateFile:
        return StateFile(self.state_file)

    @property
    def url(self) -> str | None:
        """Where the server answers, while it runs."""
        return self._state.live("url")

    def healthy(self) -> bool:
        url = self.url
        return url is not None and self.answers(url)

    def answers(self, url: str) -> bool:
        """Whether the server at ``url`` answers as a running one does."""
        raise NotImplementedError

    def stop(self) -> bool:
        """Stop the server (SIGTERM, then SIGKILL); False when it was not running."""
        return self._state.stop(grace_s=10.0)

    def await_start(self, pid: int, *, name: str, error: type[StartError] = StartError) -> None:
        """Wait until the server ``pid`` just spawned answers; stop it and raise ``error`` if it does not."""
        try:
            wait_until_ready(
                self.healthy, name=name, pid=pid, log_file=self.log_file, timeout_s=self.start_timeout_s, error=error
            )
        except StartError:
            self.stop()
            raise


def service_command(command: str, service: BackgroundService, *, name: str, start: Callable[[], str]) -> int:
    """Run a service CLI's ``start``, ``status`` or ``stop``, printing what happened; the exit code (status: 3 when
    the service is not running, like ``systemctl status``)."""
    if command == "start":
        url = try_start(start)
        if url is None:
            return 1
        print(f"{name} running at {url} (log: {service.log_file})")
        return 0
    if command == "status":
        running = service.healthy()
        print(f"{name} running at {service.url}" if running else f"{name} not running")
        return 0 if running else 3
    print(f"{name} stopped" if service.stop() else f"{name} was not running")
    return 0

"""Which code the AgentCore Runtime runs: the reference agent's bundle, or the bundle of an agent project you bring.

``agent.project`` (a folder: your code, its ``requirements.txt``, its entrypoint ``agent.entrypoint``) replaces the
reference agent; ``python -m infra.build project <folder>`` (``make build AGENT=<folder>``) writes its bundle where
:func:`agent_code` looks for it. Everything else about the runtime (role, network, authorizer, environment) is the
same for both. Pure logic, no CDK: the configuration check and the construct share it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from infra.build import project_bundle_dir
from memory_adapter.agentcore.project import DEFAULT_PROJECT_ENTRYPOINT, project_problems

__all__ = ["REFERENCE_ENTRYPOINT", "AgentCode", "agent_code", "agent_code_problems"]

#: The reference agent's bundle root holds ``main.py``, which runs ``python -m runtime_handler`` (see ``infra.build``).
REFERENCE_ENTRYPOINT = ("main.py",)


@dataclass(frozen=True, slots=True)
class AgentCode:
    """The folder deployed as the runtime's code asset and the file AgentCore runs from its root."""

    path: Path
    entrypoint: tuple[str, ...]
    project: Path | None = None

    def missing(self) -> str | None:
        """Why this code cannot be deployed yet (its bundle is not built), else ``None``."""
        if self.path.is_dir() and (self.path / self.entrypoint[0]).is_file():
            return None
        build = f"make build AGENT={self.project}" if self.project is not None else "make build"
        return f"the agent bundle {self.path} is not built (or has no {self.entrypoint[0]}): run {build}"


def agent_code(*, bundle_path: Path, project: Path | None, entrypoint: str = DEFAULT_PROJECT_ENTRYPOINT) -> AgentCode:
    """The reference agent's bundle (``bundle_path``), or ``project``'s bundle with its ``entrypoint``."""
    if project is None:
        return AgentCode(path=bundle_path, entrypoint=REFERENCE_ENTRYPOINT)
    return AgentCode(path=project_bundle_dir(project), entrypoint=(entrypoint,), project=project)


def agent_code_problems(*, project: Path | None, entrypoint: str = DEFAULT_PROJECT_ENTRYPOINT) -> list[str]:
    """What is wrong with ``agent.project`` / ``agent.entrypoint`` (the folder, its entrypoint), as settings."""
    if project is None:
        return []
    return [f"agent.project: {problem}" for problem in project_problems(project, entrypoint)]

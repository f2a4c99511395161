"""What an agent project you bring must look like to run with this wiring, deployed or locally: a folder with a
``.py`` entrypoint inside it, and no ``memory_adapter`` folder of its own (the bundle provides the wiring).

Standard library only: the bundler (``infra.build``) and the local runner (``localdev.agent``) both check a project
with it, so neither imports the other.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Final

__all__ = ["DEFAULT_PROJECT_ENTRYPOINT", "project_problems"]

#: The file AgentCore runs from the project bundle's root, unless ``agent.entrypoint`` names another.
DEFAULT_PROJECT_ENTRYPOINT: Final = "agent.py"


def project_problems(project: str | Path, entrypoint: str = DEFAULT_PROJECT_ENTRYPOINT) -> list[str]:
    """What keeps ``project`` from being bundled (empty when it can be): its folder, its entrypoint, its names."""
    folder = Path(project)
    if not folder.is_dir():
        return [f"the agent project {str(project)!r} is not a folder{_closest_folder(folder)}"]
    problems = []
    entry = Path(entrypoint)
    if entry.is_absolute() or ".." in entry.parts or entry.suffix != ".py":
        problems.append(f"the entrypoint {entrypoint!r} must be a .py file inside the project")
    elif not (folder / entry).is_file():
        problems.append(f"the agent project {str(project)!r} has no entrypoint {entrypoint!r}")
    if (folder / "memory_adapter").exists():
        problems.append("the agent project must not contain a memory_adapter folder (the bundle provides it)")
    return problems


def _closest_folder(folder: Path) -> str:
    """`` (did you mean <sibling>?)`` for a mistyped project folder (``examples/strand_agent``), else ``""``."""
    parent = folder.parent
    if not parent.is_dir():
        return ""
    siblings = [child.name for child in parent.iterdir() if child.is_dir() and not child.name.startswith(".")]
    close = difflib.get_close_matches(folder.name, siblings, n=1, cutoff=0.8)
    return f" (did you mean {parent / close[0]}?)" if close else ""

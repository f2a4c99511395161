"""Process helpers shared by the localdev tools that run servers in the background.

The agent, the token issuer and the local Hindsight each record a pid and start children with
``python -m localdev...`` from this repository: one liveness check and one child ``PYTHONPATH`` serve them all.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
ADAPTER_SOURCES = REPO_ROOT / "layers" / "memory_adapter" / "src"


def pid_alive(pid: int | None) -> bool:
    """True while process ``pid`` runs; False for no pid, a gone one, or an exited child of ours.

    A zombie child still answers ``kill(pid, 0)``, so an exited child of this process is reaped here.
    """
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    return True


def repo_pythonpath(*, adapter: bool = False) -> str:
    """``PYTHONPATH`` for a child run from this repository: the repo root (and, with ``adapter``, the
    memory_adapter sources) ahead of the inherited ``PYTHONPATH``, so children import this checkout."""
    sources = [str(REPO_ROOT), *([str(ADAPTER_SOURCES)] if adapter else [])]
    return os.pathsep.join(filter(None, [*sources, os.environ.get("PYTHONPATH")]))


def read_state(path: Path) -> dict[str, Any]:
    """The JSON object a background tool recorded at ``path``; ``{}`` when missing, unreadable or not an object."""
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}

"""``python -m localdev.hindsight maintenance ...`` (docs/operating.md, Restore) runs the maintenance task against the
running local server; with none running it says so instead of failing inside the task. The restore itself, in the
server's environment, is ``tests/integration/admin/test_backup_restore.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from localdev.supervisor import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_maintenance_without_a_running_server_says_to_start_it(tmp_path: Path) -> None:
    # GIVEN no local Hindsight (an empty data dir, a free port)
    port = free_port()
    command = [sys.executable, "-m", "localdev.hindsight", "--data-dir", str(tmp_path), "--port", str(port)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    # WHEN a restore is asked for as docs/operating.md shows
    done = subprocess.run(
        [*command, "maintenance", "restore", str(tmp_path / "manifest.json")],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # THEN one line says no server answers and how to start one, and the task was not run
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == f"no local Hindsight answers at http://127.0.0.1:{port}: start it first (make hindsight-start)"
    )

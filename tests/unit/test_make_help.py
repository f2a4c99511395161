"""``make help`` (the README points to it) lists the two targets a newcomer starts with first: ``local``, ``test``."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_help_lists_local_and_test_first_and_every_target_once() -> None:
    done = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    listed = [line.split()[1] for line in done.stdout.splitlines()]
    assert listed[:2] == ["local", "test"]
    documented = re.findall(r"^([a-zA-Z_-]+):.*## ", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert sorted(listed) == sorted(documented)


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
@pytest.mark.parametrize(("version", "says"), [(None, "is not found"), ("v18.19.0", "is v18.19.0")])
def test_a_missing_or_old_node_says_what_to_install(tmp_path: Path, version: str | None, says: str) -> None:
    """``make local`` and ``make test`` install the CDK CLI with npm first: without Node 20 a newcomer is told so, not
    ``npm: command not found``."""
    node = tmp_path / "node"
    if version is not None:
        node.write_text(f"#!/bin/sh\necho {version}\n")
        node.chmod(0o755)
    done = subprocess.run(
        ["make", "-s", "check-node", f"NODE={node}"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "Node.js 20 or newer is needed" in done.stdout
    assert says in done.stdout
    assert "nvm install 20" in done.stdout

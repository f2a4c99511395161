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


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_a_python_without_venv_says_which_debian_package_to_install(tmp_path: Path) -> None:
    """Debian and Ubuntu ship ``venv``'s ``ensurepip`` apart (``python3-venv``): without it the first ``make`` would
    fail half-way through ``python3 -m venv``; it is told what to install instead."""
    # GIVEN a Python 3.11+ that cannot import ensurepip (as Debian's python3 without python3-venv)
    python = tmp_path / "python3"
    python.write_text(f'#!/bin/sh\ncase "$2" in *ensurepip*) exit 1;; esac\nexec {shutil.which("python3")} "$@"\n')
    python.chmod(0o755)
    done = subprocess.run(
        ["make", "-s", "check-python", f"PYTHON={python}"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "cannot create virtualenvs" in done.stdout
    assert "apt-get install python3-venv" in done.stdout


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("node") is None, reason="no make or node here")
def test_node_without_npm_says_what_to_install(tmp_path: Path) -> None:
    # GIVEN Node 20+ but no npm (a distribution's nodejs package without its npm)
    done = subprocess.run(
        ["make", "-s", "check-node", f"NPM={tmp_path / 'npm'}"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "npm is needed to install the CDK CLI" in done.stdout

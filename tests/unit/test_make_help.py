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

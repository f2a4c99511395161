"""The benchmark's command line is importable and documented (benchmarks themselves run with `make bench`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_help_lists_every_measurement() -> None:
    # GIVEN the project virtualenv (no prior-art package, no matplotlib needed for --help)
    # WHEN the benchmark's help is printed
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    # THEN it succeeds and names the measurements
    assert done.returncode == 0, done.stderr
    for name in ("recall", "first_turn", "degraded", "spools", "outage", "invocations", "after_turn", "build"):
        assert name in done.stdout

"""A ``LOCAL_*`` variable a local command cannot read stops it with one line naming the variable, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("module", "variable", "value", "must_be"),
    [
        ("localdev.hindsight", "LOCAL_HINDSIGHT_PORT", "88 88", "an integer, got '88 88'"),
        ("localdev.hindsight", "LOCAL_HINDSIGHT_STARTUP_TIMEOUT", "3m", "a number"),
        ("localdev.hindsight", "LOCAL_HINDSIGHT_LLM", "gpt", "one of: stub, openai, bedrock"),
        ("localdev.agent", "LOCAL_AGENT_PORT", "eighty", "a whole number"),
        ("localdev.mcp_server", "LOCAL_MCP_PORT", "x", "a whole number"),
    ],
)
def test_an_unreadable_variable_is_one_line_naming_it(
    tmp_path: Path, module: str, variable: str, value: str, must_be: str
) -> None:
    # GIVEN a mistyped variable (WHEN a local command reads it: status, which starts nothing)
    env = {**os.environ, variable: value, "PYTHONPATH": os.pathsep.join(sys.path)}
    env |= {f"LOCAL_{name}_DATA_DIR": str(tmp_path / name.lower()) for name in ("HINDSIGHT", "AGENT", "MCP", "ISSUER")}
    done = subprocess.run(
        [sys.executable, "-m", module, "status"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    # THEN it stops with one line that names the variable and what it must be (before: a ValueError traceback)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith(f"{variable} must be {must_be}")

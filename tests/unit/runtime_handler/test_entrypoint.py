"""``python -m runtime_handler``: refuses a bad configuration with every problem, serves /ping with a good one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .serving import free_port

ROOT = Path(__file__).resolve().parents[3]


def _env(**extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    pythonpath = os.pathsep.join([str(ROOT), str(ROOT / "layers" / "memory_adapter" / "src")])
    return keep | {"PYTHONPATH": pythonpath} | extra


def test_bad_configuration_exits_2_listing_every_problem() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "runtime_handler"],
        cwd=ROOT,
        env=_env(AUTH_MODE="bogus"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    for name in ("AGENT_NAME", "HINDSIGHT_API_URL", "AUTH_MODE", "MODEL_ID"):
        assert name in result.stderr


def test_serves_ping_on_the_configured_loopback_port(tmp_path: Path) -> None:
    port = free_port()
    env = _env(
        AGENT_NAME="support",
        HINDSIGHT_API_URL="http://127.0.0.1:9",
        AUTH_MODE="iam",
        MODEL_PROVIDER="echo",
        ALLOW_ANONYMOUS="true",
        PORT=str(port),
        HINDSIGHT_ADAPTER_SPOOL_DIR=str(tmp_path / "spool"),
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "runtime_handler"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                ping = httpx.get(f"http://127.0.0.1:{port}/ping", timeout=1)
                break
            except httpx.HTTPError:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert ping.json()["status"] in ("Healthy", "HealthyBusy")
        answer = httpx.post(f"http://127.0.0.1:{port}/invocations", json={"prompt": "hi"}, timeout=10)
        assert answer.status_code == 200
        assert answer.json()["memory"] == {"recalled": 0, "degraded": False}
    finally:
        process.terminate()
        process.wait(15)

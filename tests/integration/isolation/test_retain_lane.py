"""Hindsight 1.1.0's own retain lane as the product runs it (``memory_adapter.constants.RETAIN_SERVER_SETTINGS``, set
locally and on every deployed task): resolved by Hindsight's own code, retains are queued (the lane keeps its bound
on retains in flight) and are not refused before any caller of ours stops waiting.

Hindsight's stock lane refuses a retain that waited 2 s for a permit with 503: this test fails on that default.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from localdev.hindsight.config import LocalHindsightConfig
from memory_adapter.constants import RETAIN_SERVER_SETTINGS
from memory_adapter.settings_fields import env_name

pytestmark = pytest.mark.integration

#: Longest a caller of ours waits for a retain: the Python client's default timeout (the adapter waits 15 s).
LONGEST_RETAIN_CALLER_S = 300.0

_RESOLVE = """
import json
from hindsight_api.config import HindsightConfig
from hindsight_api.api.admission import build_controller_from_config
lane = build_controller_from_config(HindsightConfig.from_env()).lane_config("retain")
print(json.dumps({"in_flight": lane.max_in_flight, "wait_s": lane.max_wait_seconds, "on": lane.enabled}))
"""


def _retain_lane(env: dict[str, str]) -> dict[str, float]:
    venv = Path(os.environ.get(env_name(LocalHindsightConfig, "venv"), ".venv-hindsight"))
    python = venv / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no Hindsight virtualenv at {venv}")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_API_")}
    out = subprocess.run(
        [str(python), "-c", _RESOLVE], env={**clean, **env}, capture_output=True, text=True, timeout=120, check=True
    )
    lane: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return lane


def test_retains_queue_in_hindsights_lane_and_are_not_refused_for_load() -> None:
    stock = _retain_lane({})
    ours = _retain_lane(dict(RETAIN_SERVER_SETTINGS))
    assert stock["wait_s"] < LONGEST_RETAIN_CALLER_S  # the stock lane refuses retains callers still wait for
    assert ours["on"]  # the bound on retains in flight stays (the recalls' pooled connections)
    assert ours["in_flight"] == stock["in_flight"]
    assert ours["wait_s"] > LONGEST_RETAIN_CALLER_S  # a retain queues for as long as anyone waits for it

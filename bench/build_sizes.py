"""7. ``make synth`` wall time and the sizes of the deployable bundles (the infra helper's ``make build`` outputs).

``make build`` runs first (untimed: it only rebuilds what changed), then ``make synth`` is timed end to end, writing
to a scratch output directory so the project's ``cdk.out`` is untouched. Sizes: unpacked bytes, and the bytes of a
deflate zip of the same tree (what would be uploaded as the code asset).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["measure"]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = {
    "agent_bundle": ROOT / "build" / "agent",
    "memory_adapter_layer": ROOT / "build" / "layer",
    "hindsight_extension": ROOT / "build" / "hindsight_ext.zip",
}


def _make(target: str, *args: str) -> tuple[int, float, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    started = time.perf_counter()
    done = subprocess.run(["make", "-s", target, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return done.returncode, time.perf_counter() - started, (done.stdout + done.stderr)[-1500:]


def _size(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"present": False}
    if path.is_file():
        return {"present": True, "files": 1, "bytes": path.stat().st_size, "zip_bytes": path.stat().st_size}
    files = [p for p in path.rglob("*") if p.is_file()]
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "bundle.zip"
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for file in files:
                zf.write(file, file.relative_to(path))
        zipped = archive.stat().st_size
    return {"present": True, "files": len(files), "bytes": sum(p.stat().st_size for p in files), "zip_bytes": zipped}


async def measure(env: Any = None, *, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Build (untimed), then time ``make synth``; report sizes."""
    log("  make build (untimed; rebuilds only what changed) ...")
    build_rc, build_s, build_out = _make("build")
    result: dict[str, Any] = {"make_build": {"returncode": build_rc, "wall_s": round(build_s, 1)}}
    if build_rc != 0:
        result["make_build"]["output_tail"] = build_out
    with tempfile.TemporaryDirectory(prefix="bench-cdk-out-") as out:
        log("  make synth (timed) ...")
        rc, wall_s, output = _make("synth", f"CDK_ARGS=--output {out}")
        stacks = sorted(os.listdir(out))
        stacks = [name for name in stacks if name.endswith(".template.json")]
        result["make_synth"] = {"returncode": rc, "wall_s": round(wall_s, 2), "templates": stacks}
        if rc != 0:
            result["make_synth"]["output_tail"] = output
    result["sizes"] = {name: _size(path) for name, path in ARTIFACTS.items()}
    return result

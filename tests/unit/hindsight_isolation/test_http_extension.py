"""The HTTP-extension slot puts the guard in front of a FastAPI app as Hindsight builds it (in the server's
virtualenv: FastAPI and ``hindsight_api`` are installed only there). The real server: tests/integration/isolation."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
HINDSIGHT_PYTHON = Path(os.environ.get("HINDSIGHT_VENV", REPO / ".venv-hindsight")) / "bin" / "python"

_PROBE = textwrap.dedent(
    """
    import asyncio, json
    from fastapi import FastAPI
    from hindsight_api.extensions import load_extension, HttpExtension
    from hindsight_isolation import route
    from hindsight_isolation.guard import RequestGuard

    seen = {}
    app = FastAPI()

    @app.get("/v1/default/banks/{bank_id}/memories/list")
    async def memories(bank_id: str, offset: int = 0):
        seen["kind"] = str(route.current())
        return {"offset": offset}

    # As hindsight_api.api.http.create_app does with the slot's extension.
    extension = load_extension("HTTP", HttpExtension)
    app.include_router(extension.get_router(None), prefix="/ext")
    app.include_router(extension.get_root_router(None))

    async def request(path, query=b""):
        sent = []
        messages = [{"type": "http.request", "body": b"", "more_body": False}]
        async def receive():
            return messages.pop(0) if messages else {"type": "http.disconnect"}
        async def send(message):
            sent.append(message)
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "path": path,
                 "raw_path": path.encode(), "query_string": query, "headers": [], "root_path": "",
                 "scheme": "http", "server": ("t", 80), "client": ("c", 1)}
        await app(scope, receive, send)
        return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))

    async def main():
        started = asyncio.Event()
        stop = asyncio.Event()
        lifespan_messages = [{"type": "lifespan.startup"}]
        async def receive():
            if lifespan_messages:
                return lifespan_messages.pop(0)
            await stop.wait()
            return {"type": "lifespan.shutdown"}
        async def send(message):
            if message["type"] == "lifespan.startup.complete":
                started.set()
        task = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send))
        await started.wait()
        result = {"wrapped": isinstance(app.middleware_stack, RequestGuard),
                  "integers": sorted(app.middleware_stack.integer_parameters)}
        result["good"] = await request("/v1/default/banks/b/memories/list", b"offset=5")
        result["kind"] = seen.get("kind")
        result["nul"] = await request("/v1/default/banks/a\\x00b/memories/list")
        result["huge"] = await request("/v1/default/banks/b/memories/list", b"offset=" + str(2**70).encode())
        stop.set()
        await task
        print(json.dumps(result))

    asyncio.run(main())
    """
)


@pytest.fixture(scope="module")
def probe() -> dict[str, Any]:
    if not HINDSIGHT_PYTHON.exists():
        pytest.fail(f"the Hindsight virtualenv is missing ({HINDSIGHT_PYTHON}): run `make hindsight-venv`")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "layers/memory_adapter/src")]),
        "HINDSIGHT_API_HTTP_EXTENSION": "hindsight_isolation.http_extension:RequestGuardExtension",
    }
    done = subprocess.run(
        [str(HINDSIGHT_PYTHON), "-c", _PROBE], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_slot_wraps_the_whole_app_once_it_starts(probe: dict[str, Any]) -> None:
    assert probe["wrapped"] is True
    assert probe["integers"] == ["offset"]  # read from the app's own OpenAPI document
    assert probe["good"] == [200, {"offset": 5}]
    assert probe["kind"] == "other"  # the route ran inside the guard's label


def test_bad_input_never_reaches_the_route(probe: dict[str, Any]) -> None:
    status, body = probe["nul"]
    assert status == 400
    assert "NUL" in body["detail"]
    status, body = probe["huge"]
    assert status == 400
    assert "out of range" in body["detail"]

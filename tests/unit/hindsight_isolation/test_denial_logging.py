"""A refused credential is logged once per request, though Hindsight asks the tenant extension twice per request.

Runs the extension in the server's virtualenv (``hindsight_api`` is installed only there), against Hindsight's own
``RequestContext``: the REST route class resolves bank aliases with the request's context before the endpoint
authenticates with that same context, and Hindsight remembers only successful authentications.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

from hindsight_isolation.settings import SERVER_REQUIRED_ENV

REPO = Path(__file__).resolve().parents[3]
HINDSIGHT_PYTHON = Path(os.environ.get("HINDSIGHT_VENV", REPO / ".venv-hindsight")) / "bin" / "python"
OPERATOR_KEY = "operator-key-0123456789abcdef0123456789abcdef"

_PROBE = textwrap.dedent(
    """
    import asyncio, json, logging, sys
    from hindsight_api.extensions.tenant import AuthenticationError
    from hindsight_api.models import RequestContext
    from hindsight_isolation.tenant import IsolationTenantExtension

    lines = []

    class Capture(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    log = logging.getLogger("hindsight_isolation")
    log.addHandler(Capture())
    log.setLevel(logging.INFO)
    operator_key = sys.argv[1]
    extension = IsolationTenantExtension({"operator_key": operator_key})

    async def request(context, times):
        refused = 0
        for _ in range(times):
            try:
                await extension.authenticate(context)
            except AuthenticationError:
                refused += 1
        return refused

    def denials():
        found = [line for line in lines if "denied" in line]
        lines.clear()
        return found

    async def main():
        result = {}
        # One REST request: alias resolution, then the endpoint, with the same context.
        result["refused"] = await request(RequestContext(api_key="unknown-credential"), 2)
        result["one_request"] = denials()
        # The next request with the same credential is a new denial, logged again.
        result["next_refused"] = await request(RequestContext(api_key="unknown-credential"), 1)
        result["next_request"] = denials()
        # A request without any credential: refused both times, logged once.
        result["anonymous_refused"] = await request(RequestContext(api_key=None), 2)
        result["anonymous"] = denials()
        # The operator key still authenticates.
        operator = RequestContext(api_key=operator_key)
        await extension.authenticate(operator)
        result["operator_principal"] = operator.tenant_id is not None
        print(json.dumps(result))

    asyncio.run(main())
    """
)


def _probe() -> dict[str, Any]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "layers" / "memory_adapter" / "src")]),
        **SERVER_REQUIRED_ENV,
    }
    done = subprocess.run(
        [str(HINDSIGHT_PYTHON), "-c", _PROBE, OPERATOR_KEY],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_refused_credential_is_logged_once_per_request() -> None:
    # GIVEN one request whose unknown credential the tenant extension is asked about twice
    result = _probe()
    # THEN it is refused both times, with one log line
    assert result["refused"] == 2
    assert len(result["one_request"]) == 1
    assert "status=401" in result["one_request"][0]
    assert "transport=http" in result["one_request"][0]
    # AND every request is still logged (one line per denial, not per credential), anonymous ones included
    assert result["next_refused"] == 1
    assert len(result["next_request"]) == 1
    assert result["anonymous_refused"] == 2
    assert len(result["anonymous"]) == 1
    assert result["operator_principal"] is True

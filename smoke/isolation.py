"""The smoke test's isolation step: the Hindsight the agent uses refuses a real user's token another user's bank.

It matters most with ``hindsight.mode=external`` (a server this app does not build, docs/deploying.md "Bring your
own Hindsight"), where isolation is only as good as that server:

- ``--local --hindsight-url URL``: ``memory_adapter.isolation_probe`` runs from here with user A's token and the
  operator key of that server (``--operator-key-file``);
- deployed with ``hindsight.mode=external``: the stack's probe function (output ``IsolationProbeFunctionName`` of
  the ``-ExternalMemory`` stack) is invoked in the VPC, with user A's token where there is one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from memory_adapter.isolation_probe import ProbeError, ProbeTarget, run_probe

#: The probe function's request type for a direct invocation (``infra/functions/isolation_probe``).
REQUEST_PROBE = "Probe"


@dataclass(frozen=True)
class IsolationVerdict:
    """Whether every foreign identity was refused, and the probe's one line."""

    passed: bool
    verdict: str


def probe_local(url: str, *, operator_key: str, user_token: str) -> IsolationVerdict:
    """Run the probe from this machine against ``url`` with a real user's token."""
    try:
        report = run_probe(ProbeTarget(url, operator_key=operator_key, user_token=user_token, agent_name="assistant"))
    except ProbeError as err:
        return IsolationVerdict(False, f"isolation probe could not run: {err}")
    return IsolationVerdict(report.passed, report.summary())


def probe_deployed(lambda_client: Any, function_name: str, *, user_token: str | None) -> IsolationVerdict:
    """Invoke the stack's probe function inside the VPC (it reads the keys from their secrets)."""
    event: dict[str, Any] = {"RequestType": REQUEST_PROBE}
    if user_token is not None:
        event["UserToken"] = user_token
    answer = lambda_client.invoke(FunctionName=function_name, Payload=json.dumps(event).encode())
    body = json.loads(answer["Payload"].read() or b"{}")
    if answer.get("FunctionError"):
        return IsolationVerdict(False, f"the probe function {function_name} failed: {body.get('errorMessage', body)}")
    return IsolationVerdict(bool(body.get("passed")), str(body.get("verdict")))

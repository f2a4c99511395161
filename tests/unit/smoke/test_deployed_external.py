"""``python -m smoke`` against a ``hindsight.mode=external`` deployment: after the scenario it invokes the
``-ExternalMemory`` stack's probe function in the VPC, and fails when that says a foreign identity read a bank."""

from __future__ import annotations

import io
import json
from typing import Any

from smoke.__main__ import main
from tests.infra.external_variant import EXTERNAL_IAM
from tests.unit.smoke.test_deployed import FakeAgentCore, FakeRuntime, FakeSession, _agent_outputs, _stack

FUNCTION = "HindsightMemory-dev-ExternalMem-MemoryIsolationProbeFunc-abc123"
CONTEXT = [arg for key, value in EXTERNAL_IAM.items() for arg in ("-c", f"{key}={value}")]


class FakeProbeFunction:
    """The probe function as ``lambda:Invoke`` answers: the verdict the handler returns for ``RequestType: Probe``."""

    def __init__(self, *, passed: bool) -> None:
        self.passed = passed
        self.events: list[dict[str, Any]] = []

    def invoke(self, *, FunctionName: str, Payload: bytes) -> dict[str, Any]:
        assert FunctionName == FUNCTION
        self.events.append(json.loads(Payload))
        verdict = (
            "isolation probe passed: 3 foreign identities were refused"
            if self.passed
            else ("isolation probe FAILED: no credential read the probe's bank")
        )
        return {"Payload": io.BytesIO(json.dumps({"passed": self.passed, "verdict": verdict}).encode())}


def _run(probe: FakeProbeFunction) -> tuple[int, str]:
    with FakeSession("cloudformation") as aws:
        _stack(aws.stubs["cloudformation"], "HindsightMemory-dev-Agent", _agent_outputs("iam"))
        _stack(
            aws.stubs["cloudformation"],
            "HindsightMemory-dev-ExternalMemory",
            {
                "HindsightUrl": "https://memory.corp.example.com:8443",
                "MemoryIsolationProbeFunctionName1A2B3C": FUNCTION,
            },
        )
        aws.clients["bedrock-agentcore"] = FakeAgentCore(FakeRuntime())
        aws.clients["lambda"] = probe
        out = io.StringIO()
        code = main(CONTEXT, out=out, session=aws)
    return code, out.getvalue()


def test_an_external_deployment_ends_with_the_isolation_probe() -> None:
    probe = FakeProbeFunction(passed=True)
    code, report = _run(probe)
    assert code == 0, report
    assert probe.events == [{"RequestType": "Probe"}]  # IAM mode: no user token to add
    assert "smoke: isolation probe: foreign identities must be refused another's bank ... ok" in report


def test_a_leak_on_the_external_server_fails_the_smoke() -> None:
    code, report = _run(FakeProbeFunction(passed=False))
    assert code == 1, report
    assert "SMOKE FAILED: isolation probe FAILED: no credential read the probe's bank" in report

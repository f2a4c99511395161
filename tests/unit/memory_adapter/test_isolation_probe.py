"""The isolation probe's verdicts on scripted servers (handlers of ``memory_adapter.testing.MockTransport``): it speaks
the package's one wire (bank paths as ``bank_path`` encodes them), counts only a read as a leak, and says so when it
could not judge. The real servers are in ``tests/integration/external/test_isolation_probe.py``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_adapter.exceptions import HindsightUnavailableError
from memory_adapter.hindsight_routes import bank_path
from memory_adapter.isolation_probe import ProbeError, ProbeTarget, run_probe
from memory_adapter.testing import MockTransport
from memory_adapter.transport import HttpRequest, HttpResponse

OPERATOR = "operator-key-" + "o" * 20
TARGET = ProbeTarget("http://hindsight.test", operator_key=OPERATOR, agent_key="agent-key", agent_name="support")


def server(foreign: Callable[[HttpRequest], HttpResponse]) -> MockTransport:
    """The operator is served; every other identity's request is answered by ``foreign``."""

    def handler(request: HttpRequest) -> HttpResponse:
        if request.bearer != OPERATOR:
            return foreign(request)
        if request.method == "GET" and request.path.startswith("/v1/default/banks?"):
            return HttpResponse(200, {"banks": [], "total": 0})
        return HttpResponse(200, {})

    return MockTransport(handler)


def test_refusals_and_server_errors_are_no_read_and_the_canary_goes() -> None:
    transport = server(lambda r: HttpResponse(500 if r.bearer == "agent-key" else 401, {"detail": "no"}))
    report = run_probe(TARGET, transport=transport)
    assert report.passed, report.checks
    canary = bank_path(report.canary_bank)
    assert [r.method for r in transport.requests if r.path == canary and r.bearer == OPERATOR] == ["PUT", "DELETE"]
    assert transport.calls(bank_path(report.canary_bank, "/config"), "GET")  # the wire's encoding of the bank


def test_a_configuration_read_or_a_listed_canary_is_a_leak() -> None:
    def foreign(request: HttpRequest) -> HttpResponse:
        if request.bearer is None:
            return HttpResponse(200, {"overrides": {}})
        if request.bearer == "agent-key" and request.path.startswith("/v1/default/banks?"):
            listed = [{"bank_id": "user:isolation-probe-owner:agent:isolation-probe-agent"}]
            return HttpResponse(200, {"banks": listed, "total": 1})
        return HttpResponse(403, {"detail": "forbidden"})

    report = run_probe(TARGET, transport=server(foreign))
    assert report.leaks == ["no credential", "the agent key"]
    assert report.checks["the agent key"] == "saw the bank in its bank list"


def test_an_unreachable_server_or_a_refused_operator_key_is_no_verdict() -> None:
    def down(request: HttpRequest) -> HttpResponse:
        raise HindsightUnavailableError("cannot reach Hindsight: ConnectionRefusedError")

    with pytest.raises(ProbeError, match=r"cannot reach Hindsight at http://hindsight\.test"):
        run_probe(TARGET, transport=MockTransport(down))
    with pytest.raises(ProbeError, match="operator key got 401"):
        run_probe(TARGET, transport=MockTransport(lambda r: HttpResponse(401, {"detail": "who?"})))

"""The isolation probe (``memory_adapter.isolation_probe``) against real servers: it passes on a Hindsight running
``hindsight_isolation`` and catches one that does not."""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest

from localdev.hindsight import LocalHindsight
from localdev.token_issuer import TokenIssuer
from memory_adapter.isolation_probe import ProbeError, ProbeTarget, run_probe

pytestmark = pytest.mark.integration


def _bank_exists(url: str, operator_key: str, bank: str) -> bool:
    request = urllib.request.Request(  # noqa: S310 (loopback)
        f"{url}/v1/default/banks", headers={"Authorization": f"Bearer {operator_key}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (loopback)
        return bank in response.read().decode()


def test_probe_passes_where_the_extension_runs_and_leaves_no_bank(local_hindsight: Any) -> None:
    # GIVEN the server with our extension and this deployment's agent key
    target = ProbeTarget(
        local_hindsight.url,
        operator_key=local_hindsight.operator_key,
        agent_key=local_hindsight.agent_key,
        agent_name=local_hindsight.agent_name,
    )
    # WHEN the deploy-time probe runs
    report = run_probe(target)
    # THEN every foreign identity, the agent key included, was refused, and the canary is gone
    assert report.passed, report.checks
    assert set(report.checks) == {
        "no credential",
        "an unsigned token (alg=none)",
        "a token signed with a key of our own (HS256)",
        "the agent key",
    }
    assert not _bank_exists(local_hindsight.url, local_hindsight.operator_key, report.canary_bank)


def test_probe_with_a_real_user_token_passes_where_the_extension_runs(
    local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    # GIVEN a real user's token (what make smoke holds): the canary is another user's bank of the same agent
    token = token_issuer.mint("probe-user-a")
    report = run_probe(
        ProbeTarget(
            local_hindsight.url, operator_key=local_hindsight.operator_key, agent_name="assistant", user_token=token
        )
    )
    # THEN that token cannot read it either
    assert report.passed, report.checks
    assert report.checks["another user's token"] == "refused"
    assert report.canary_bank == "user:isolation-probe-reader:agent:assistant"


def test_probe_catches_a_server_without_the_extension(unisolated_hindsight: LocalHindsight) -> None:
    # GIVEN stock Hindsight without our extension (any bearer is accepted; nothing is checked)
    target = ProbeTarget(unisolated_hindsight.url, operator_key="any-key", agent_key="agent-key", agent_name="support")
    # WHEN the probe runs
    report = run_probe(target)
    # THEN it names every identity that read the other agent's bank, and says what to do
    assert not report.passed
    assert "no credential" in report.leaks
    assert "the agent key" in report.leaks
    assert "does not run the hindsight_isolation extension" in report.summary()
    assert not _bank_exists(unisolated_hindsight.url, "any-key", report.canary_bank)


def test_probe_refuses_to_judge_with_a_wrong_operator_key(local_hindsight: Any) -> None:
    # GIVEN an operator key that is not the server's
    target = ProbeTarget(local_hindsight.url, operator_key="not-the-operator-key-" + "x" * 20)
    # THEN the probe says so instead of passing or failing
    with pytest.raises(ProbeError, match="operator key got 401"):
        run_probe(target)


def test_probe_reports_an_unreachable_endpoint(refused_url: str) -> None:
    with pytest.raises(ProbeError, match="cannot reach Hindsight"):
        run_probe(ProbeTarget(refused_url, operator_key="k"))

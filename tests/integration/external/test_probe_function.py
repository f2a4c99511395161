"""The deploy-time probe function (``infra/functions/isolation_probe``) as CloudFormation's provider framework and
``python -m smoke`` call it: keys from Secrets Manager (moto), the verdict against real servers with and without the
isolation extension, the deploy failed or warned by ``ON_LEAK``."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import boto3
import pytest

from infra.functions.isolation_probe import index
from localdev.hindsight import LocalHindsight
from smoke.isolation import probe_deployed
from tests.conftest import MotoServer

pytestmark = pytest.mark.integration


def _client(moto: MotoServer, service: Literal["secretsmanager", "cloudwatch"]) -> Any:
    return boto3.client(
        service,
        endpoint_url=moto.url,
        region_name=moto.region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def make_event(moto_server: MotoServer) -> Callable[..., dict[str, Any]]:
    secrets = _client(moto_server, "secretsmanager")

    def secret(value: str) -> str:
        arn: str = secrets.create_secret(Name=f"probe-{uuid.uuid4().hex}", SecretString=value)["ARN"]
        return arn

    def make(url: str, operator_key: str, agent_key: str | None, agent_name: str, on_leak: str) -> dict[str, Any]:
        props = {
            "HINDSIGHT_API_URL": url,
            "OPERATOR_KEY_SECRET_ARN": secret(operator_key),
            "AGENT_NAME": agent_name,
            "ON_LEAK": on_leak,
        }
        if agent_key is not None:
            props["HINDSIGHT_API_KEY_SECRET_ARN"] = secret(agent_key)
        return {"RequestType": "Create", "ResourceProperties": props}

    return make


def _run(moto: MotoServer, event: dict[str, Any]) -> dict[str, Any]:
    return index.handler(event, None, secrets=_client(moto, "secretsmanager"), cloudwatch=_client(moto, "cloudwatch"))


def test_the_deploy_goes_on_where_the_extension_runs(
    local_hindsight: Any, moto_server: MotoServer, make_event: Callable[..., dict[str, Any]]
) -> None:
    event = make_event(
        local_hindsight.url, local_hindsight.operator_key, local_hindsight.agent_key, local_hindsight.agent_name, "fail"
    )
    answer = _run(moto_server, event)
    assert answer["Data"][index.ATTR_RESULT].startswith("isolation probe passed: 4 foreign identities were refused")


def test_the_deploy_fails_where_it_does_not(
    unisolated_hindsight: LocalHindsight, moto_server: MotoServer, make_event: Callable[..., dict[str, Any]]
) -> None:
    event = make_event(unisolated_hindsight.url, "any-key", "agent-key", "support", "fail")
    with pytest.raises(RuntimeError, match=r"isolation probe FAILED: no credential, .*the agent key read .*warn"):
        _run(moto_server, event)


def test_warn_deploys_anyway_and_counts_the_leak(
    unisolated_hindsight: LocalHindsight, moto_server: MotoServer, make_event: Callable[..., dict[str, Any]]
) -> None:
    event = make_event(unisolated_hindsight.url, "any-key", None, "support", "warn")
    answer = _run(moto_server, event)
    assert answer["Data"][index.ATTR_RESULT].startswith("isolation probe FAILED")
    cloudwatch = _client(moto_server, "cloudwatch")
    metrics = cloudwatch.list_metrics(Namespace=index.METRICS_NAMESPACE)["Metrics"]
    assert {m["MetricName"] for m in metrics} == {index.METRIC_LEAKS}
    stats = cloudwatch.get_metric_statistics(
        Namespace=index.METRICS_NAMESPACE,
        MetricName=index.METRIC_LEAKS,
        StartTime=datetime.now(UTC) - timedelta(hours=1),
        EndTime=datetime.now(UTC) + timedelta(minutes=1),
        Period=3600,
        Statistics=["Maximum"],
    )["Datapoints"]
    assert max(d["Maximum"] for d in stats) >= 2  # no credential and the forged tokens at least


def test_an_unreachable_endpoint_fails_the_deploy(
    refused_url: str, moto_server: MotoServer, make_event: Callable[..., dict[str, Any]]
) -> None:
    with pytest.raises(Exception, match="cannot reach Hindsight"):
        _run(moto_server, make_event(refused_url, "k", None, "assistant", "fail"))


def test_a_failed_update_rolls_back_without_probing_again(
    local_hindsight: Any, moto_server: MotoServer, make_event: Callable[..., dict[str, Any]]
) -> None:
    # GIVEN a deploy the probe passed
    event = make_event(
        local_hindsight.url, local_hindsight.operator_key, local_hindsight.agent_key, local_hindsight.agent_name, "fail"
    )
    created = _run(moto_server, event)
    old = event["ResourceProperties"]
    assert created["PhysicalResourceId"] == index.proved_id(old)
    # AND then the operator key in Secrets Manager went stale (the server no longer takes it)
    _client(moto_server, "secretsmanager").put_secret_value(SecretId=old["OPERATOR_KEY_SECRET_ARN"], SecretString="x")
    # WHEN an update changes a setting, its probe fails the deploy
    new = {**old, "AGENT_NAME": "billing"}
    assert new != old
    update = {"RequestType": "Update", "PhysicalResourceId": created["PhysicalResourceId"]}
    with pytest.raises(Exception, match="operator key"):
        _run(moto_server, {**update, "ResourceProperties": new, "OldResourceProperties": old})
    # THEN CloudFormation's rollback (the old properties, the physical id they earned) succeeds without a probe
    rollback = _run(moto_server, {**update, "ResourceProperties": old, "OldResourceProperties": new})
    assert rollback == {
        "PhysicalResourceId": created["PhysicalResourceId"],
        "Data": {index.ATTR_RESULT: index.ROLLED_BACK},
    }
    # AND an ordinary update back to settings another deploy proved earlier is probed again (and fails here)
    later = {"RequestType": "Update", "PhysicalResourceId": index.proved_id(new)}
    with pytest.raises(Exception, match="operator key"):
        _run(moto_server, {**later, "ResourceProperties": old, "OldResourceProperties": new})


def test_delete_does_nothing() -> None:
    assert index.handler({"RequestType": "Delete", "PhysicalResourceId": "isolation-probe"}, None) == {
        "PhysicalResourceId": "isolation-probe"
    }


def test_smoke_invokes_the_function_with_a_user_token(
    local_hindsight: Any, moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch, token_issuer: Any
) -> None:
    # GIVEN the function's environment (what the stack sets) and a Lambda client that runs the handler in-process
    secrets = _client(moto_server, "secretsmanager")
    arn = secrets.create_secret(Name="smoke-op", SecretString=local_hindsight.operator_key)["ARN"]
    monkeypatch.setenv("HINDSIGHT_API_URL", local_hindsight.url)
    monkeypatch.setenv("OPERATOR_KEY_SECRET_ARN", arn)
    monkeypatch.setenv("AGENT_NAME", "assistant")
    monkeypatch.setenv("ON_LEAK", "fail")

    class InProcessLambda:
        def invoke(self, *, FunctionName: str, Payload: bytes) -> dict[str, Any]:
            import io
            import json

            body = _run(moto_server, json.loads(Payload))
            return {"Payload": io.BytesIO(json.dumps(body).encode())}

    # WHEN smoke asks it to probe with user A's real token
    verdict = probe_deployed(InProcessLambda(), "probe-fn", user_token=token_issuer.mint("smoke-a-user"))
    # THEN the token could not read the other user's canary
    assert verdict.passed, verdict.verdict
    assert verdict.verdict.startswith("isolation probe passed: 4 foreign identities")

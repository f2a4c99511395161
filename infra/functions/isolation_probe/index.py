"""Deploy-time isolation probe of an external Hindsight (``hindsight.mode=external``), behind the provider framework.

On create and update it reads the operator key (and, in IAM mode, the agent key) from the given secrets and runs
``memory_adapter.isolation_probe.run_probe`` (on the memory adapter layer) from inside the isolated subnets, so it
also proves the endpoint is reachable from where the agent runs. A leak, or a probe that cannot run, fails the
deploy with the probe's one-line reason; with ``ON_LEAK=warn`` the deploy goes on, the function logs an ERROR line,
puts a metric its alarm watches, and the verdict becomes the stack's output. Delete does nothing (the probe leaves
no bank behind).

Rollback-safe: the stack gives the probe a new logical id whenever its properties change
(:class:`infra.constructs.external_memory.IsolationProbe`), so a probe that fails is a failed Create, which the
rollback deletes (Delete does nothing). An Update reaches it only when nothing it checks changed (the provider's
service token did); each answer's physical id names the settings it proved (:func:`proved_id`), and an Update
carrying those settings with that id (such an update, or CloudFormation's rollback of it) answers at once instead of
probing again (a second probe of the same unhealthy server would fail the rollback too: UPDATE_ROLLBACK_FAILED).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Literal

from memory_adapter.constants import HINDSIGHT_API_KEY_SECRET_ARN_ENV
from memory_adapter.settings_fields import HindsightClientSettings, secret_arn, setting

ATTR_RESULT = "Result"
METRICS_NAMESPACE = "HindsightMemory/IsolationProbe"
METRIC_LEAKS = "IdentitiesThatReadAnotherBank"


#: ``python -m smoke``'s direct invocation: probe with the function's own settings (and ``UserToken`` if given),
#: answer ``{"passed", "verdict", "checks"}`` and never raise for a leak.
REQUEST_PROBE = "Probe"
#: The verdict of a rollback to settings an earlier deploy proved (not probed again).
ROLLED_BACK = "isolation probe not run again: rolled back to settings that passed at an earlier deploy"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeSettings(HindsightClientSettings):
    """What the probe checks: the custom resource's properties, and the function's environment for ``python -m
    smoke``'s direct invocation (the same keys)."""

    operator_key_secret_arn: str = setting(
        "OPERATOR_KEY_SECRET_ARN", required="the operator key's secret", parse=secret_arn
    )
    agent_key_secret_arn: str | None = setting(HINDSIGHT_API_KEY_SECRET_ARN_ENV, parse=secret_arn)
    agent_name: str = setting("AGENT_NAME", required="the agent whose banks are probed")
    tenant_id: str | None = setting("TENANT_ID")
    on_leak: str = setting("ON_LEAK", "fail", choices=("fail", "warn"), always=True)
    """``fail`` the deploy on a leak, or ``warn`` and go on."""


def handler(event: dict[str, Any], context: Any, *, secrets: Any = None, cloudwatch: Any = None) -> dict[str, Any]:
    """The provider framework's on-event handler: an exception fails the deploy with its message."""
    del context
    request = event.get("RequestType")
    if request == "Delete":
        return {"PhysicalResourceId": event.get("PhysicalResourceId", "isolation-probe")}
    if request == "Update" and event.get("PhysicalResourceId") == proved_id(event["ResourceProperties"]):
        _log("INFO", ROLLED_BACK, {})
        return {"PhysicalResourceId": event["PhysicalResourceId"], "Data": {ATTR_RESULT: ROLLED_BACK}}
    from memory_adapter.isolation_probe import ProbeError, ProbeTarget, run_probe

    smoke = request == REQUEST_PROBE
    props = dict(os.environ) if smoke else event["ResourceProperties"]
    settings = ProbeSettings.from_env(props)
    warn_only = smoke or settings.on_leak == "warn"
    secrets = secrets or _client("secretsmanager")
    agent_key_arn = settings.agent_key_secret_arn
    target = ProbeTarget(
        settings.hindsight_api_url,
        operator_key=_secret(secrets, settings.operator_key_secret_arn),
        agent_key=_secret(secrets, agent_key_arn) if agent_key_arn else None,
        agent_name=settings.agent_name,
        tenant=settings.tenant_id,
        user_token=event.get("UserToken") if smoke else None,
    )
    try:
        report = run_probe(target)
        verdict, leaks, checks = report.summary(), len(report.leaks), report.checks
    except ProbeError as exc:
        verdict, leaks, checks = f"isolation probe could not run: {exc}", 0, {}
        if not warn_only:
            raise
    _log("ERROR" if leaks or not checks else "INFO", verdict, checks)
    (cloudwatch or _client("cloudwatch")).put_metric_data(
        Namespace=METRICS_NAMESPACE, MetricData=[{"MetricName": METRIC_LEAKS, "Value": leaks, "Unit": "Count"}]
    )
    if smoke:
        return {"passed": bool(checks) and not leaks, "verdict": verdict, "checks": checks}
    if leaks and not warn_only:
        raise RuntimeError(verdict + " (set hindsight.external_probe=warn to deploy anyway)")
    return {"PhysicalResourceId": proved_id(props), "Data": {ATTR_RESULT: verdict[:1000]}}


def proved_id(props: dict[str, Any]) -> str:
    """The physical id of an answer that proved ``props``: a digest of them (the provider's token aside), so an
    Update carrying the same properties and this id is the rollback to them."""
    settings = {k: v for k, v in props.items() if k != "ServiceToken"}
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()
    return f"isolation-probe-{digest[:16]}"


def _secret(client: Any, arn: str) -> str:
    value: str = client.get_secret_value(SecretId=arn)["SecretString"]
    return value.strip()


def _client(service: Literal["secretsmanager", "cloudwatch"]) -> Any:
    import boto3

    return boto3.client(service)


def _log(level: str, message: str, checks: dict[str, str]) -> None:
    print(json.dumps({"level": level, "message": message, "checks": checks}))

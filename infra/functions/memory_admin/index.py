"""The memory administration functions (inside the VPC, holding the operator credential; never the agent's).

Three entry points over one module, all running :func:`memory_adapter.admin.run_action` from the
``memory_adapter`` layer:

* ``index.handler``: the admin function behind an IAM-authorized function URL (``python -m memory_adapter.admin``
  signs its requests). The caller's principal is the one AWS verified (``requestContext.authorizer.iam``), never a
  field of the request; a request without it is refused.
* ``index.expire_handler``: the scheduled expiry (EventBridge); emits ``MemoriesExpired`` per kind and
  ``ExpiryBanksFailed`` (banks skipped because Hindsight failed on them); a run that failed for every bank fails.
* ``index.backup_handler``: the scheduled logical export of every bank (EventBridge); emits ``BanksBackedUp`` and
  ``BanksBackupFailed`` (banks skipped because their export failed); a run that archived no bank fails.

Settings (environment, read once per cold start): :class:`FunctionSettings`, each field naming its variable.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from memory_adapter.admin import AdminDeps, AdminError, OperatorClient, S3Store, run_action
from memory_adapter.admin.errors import (
    BatchFailedError,
    ConfirmationError,
    ErasureIncompleteError,
    InvalidRequestError,
    VerificationError,
)
from memory_adapter.constants import METRICS_NAMESPACE
from memory_adapter.exceptions import HindsightRequestError, HindsightUnavailableError
from memory_adapter.kinds import RetentionRules, RetentionRulesError
from memory_adapter.settings_fields import RecallClientSettings, secret_arn, setting
from memory_adapter.settings_reader import SettingsReader

#: Banks' memories expired per scheduled run when ``EXPIRY_BATCH_SIZE`` is unset.
DEFAULT_EXPIRY_BATCH_SIZE: Final = 500
_MAX_BODY: Final = 64 * 1024
#: The Powertools service (the metrics' ``service`` dimension) and the metrics the scheduled runs emit: the
#: dashboard and the alarms (infra/constructs/memory_admin.py) read these names.
SERVICE: Final = "memory-admin"
METRIC_EXPIRED: Final = "MemoriesExpired"
METRIC_DUE: Final = "MemoriesDue"
METRIC_MORE_DUE: Final = "ExpiryMoreDue"
METRIC_EXPIRY_FAILED: Final = "ExpiryBanksFailed"
METRIC_BACKED_UP: Final = "BanksBackedUp"
METRIC_BACKUP_FAILED: Final = "BanksBackupFailed"

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or METRICS_NAMESPACE, service=SERVICE)


def _retention(reader: SettingsReader, env: str) -> RetentionRules:
    try:
        return RetentionRules.from_json(reader.text(env))
    except RetentionRulesError as exc:
        reader.problem(f"{env}: {exc}")
        return RetentionRules()


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionSettings(RecallClientSettings):
    """The functions' settings, parsed once: each field names its variable (the stack states every one)."""

    operator_key_secret_arn: str = setting(
        "OPERATOR_KEY_SECRET_ARN", required="the operator key's secret", parse=secret_arn
    )
    bucket: str = setting("ADMIN_BUCKET", required="the administration bucket")
    bucket_key_arn: str | None = setting("ADMIN_BUCKET_KEY_ARN")
    rules: RetentionRules = setting(
        "MEMORY_RETENTION_DAYS", RetentionRules(), parse=_retention, write=RetentionRules.to_json, always=True
    )
    expiry_batch_size: int = setting("EXPIRY_BATCH_SIZE", DEFAULT_EXPIRY_BATCH_SIZE, low=1, high=10_000, always=True)
    expiry_dry_run: bool = setting("EXPIRY_DRY_RUN", False, always=True)


@cache
def _deps() -> AdminDeps:
    """Built on first use and reused while the execution environment lives (the key is re-read every 5 min)."""
    from aws_lambda_powertools.utilities import parameters

    settings = FunctionSettings.from_env(os.environ)
    key = parameters.get_secret(settings.operator_key_secret_arn, max_age=300)
    client = OperatorClient(settings.hindsight_api_url, str(key), timeout=60, recall_budget=settings.recall_budget)
    store = S3Store(settings.bucket, kms_key_id=settings.bucket_key_arn)
    return AdminDeps(client, store, settings.rules, expiry_batch_size=settings.expiry_batch_size)


def _answer(status: int, body: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(body, default=str),
    }


def _principal(event: Mapping[str, Any]) -> str | None:
    """The IAM principal AWS verified for this function-URL request, or ``None``."""
    context = event.get("requestContext")
    iam = ((context or {}).get("authorizer") or {}).get("iam") if isinstance(context, Mapping) else None
    arn = iam.get("userArn") if isinstance(iam, Mapping) else None
    return arn if isinstance(arn, str) and arn else None


def _request_body(event: Mapping[str, Any]) -> Any:
    raw = event.get("body") or ""
    if event.get("isBase64Encoded"):
        import base64

        raw = base64.b64decode(raw).decode("utf-8", "replace")
    if len(raw) > _MAX_BODY:
        raise InvalidRequestError(f"the request body is larger than {_MAX_BODY} bytes")
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidRequestError(f'the request body is not JSON ({exc.msg}): send {{"action": ...}}') from exc
    except RecursionError:  # nested past the parser's depth: no request, and never a crash of the function
        raise InvalidRequestError('the request body is nested too deeply: send {"action": ...}') from None


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The function URL: one action per request, for the principal AWS verified."""
    principal = _principal(event)
    if principal is None:
        logger.warning("refused: no IAM principal (not an IAM-authorized function URL request)")
        return _answer(403, {"error": "forbidden", "message": "call through the IAM-authorized function URL"})
    try:
        result = run_action(_request_body(event), deps=_deps(), principal=principal)
    except InvalidRequestError as exc:
        return _answer(400, {"error": "bad_request", "message": str(exc)})
    except ConfirmationError as exc:
        return _answer(409, {"error": "confirmation_required", "message": str(exc)})
    except ErasureIncompleteError as exc:  # the receipt (written) names the banks deleted and the ones that failed
        return _answer(502, {"error": "erasure_incomplete", "message": str(exc), "receipt": exc.result})
    except VerificationError as exc:
        return _answer(502, {"error": "verification_failed", "message": str(exc)})
    except HindsightUnavailableError as exc:
        return _answer(503, {"error": "hindsight_unavailable", "message": str(exc)})
    except (HindsightRequestError, AdminError) as exc:
        return _answer(502, {"error": "hindsight_refused", "message": str(exc)})
    return _answer(200, result)


def _schedule(event: Mapping[str, Any]) -> str:
    resources = event.get("resources")
    if isinstance(resources, list) and resources and isinstance(resources[0], str):
        return resources[0]
    return "schedule"


@metrics.log_metrics
@logger.inject_lambda_context
def expire_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The scheduled expiry: one batch per run (the next run continues), a metric per kind."""
    deps = _deps()
    dry_run = FunctionSettings.from_env(os.environ).expiry_dry_run
    schedule = _schedule(event)
    try:
        report = run_action(
            {"action": "expire", "dry_run": dry_run}, deps=deps, principal=schedule, actor=f"schedule:{schedule}"
        )
    except BatchFailedError as exc:
        metrics.add_metric(name=METRIC_EXPIRY_FAILED, unit=MetricUnit.Count, value=len(exc.result["failed"]))
        raise  # the run failed: Lambda's Errors (ExpiryFailing)
    metrics.add_metric(name=METRIC_EXPIRY_FAILED, unit=MetricUnit.Count, value=len(report["failed"]))
    counts = report["due"] if dry_run else report["expired"]
    for kind, count in counts.items():  # one metric per kind: EMF dimensions are shared by a whole flush
        metrics.add_metric(name=f"{METRIC_EXPIRED}_{kind}", unit=MetricUnit.Count, value=0 if dry_run else count)
    metrics.add_metric(name=METRIC_EXPIRED, unit=MetricUnit.Count, value=0 if dry_run else sum(counts.values()))
    metrics.add_metric(name=METRIC_DUE, unit=MetricUnit.Count, value=sum(report["due"].values()))
    metrics.add_metric(name=METRIC_MORE_DUE, unit=MetricUnit.Count, value=int(report["more_due"]))
    return {k: report[k] for k in ("now", "dry_run", "due", "expired", "facts_deleted", "more_due", "failed")}


@metrics.log_metrics
@logger.inject_lambda_context
def backup_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The scheduled logical export: every bank's archive and a manifest under ``backups/<time>/``."""
    schedule = _schedule(event)
    try:
        manifest = run_action({"action": "backup"}, deps=_deps(), principal=schedule, actor=f"schedule:{schedule}")
    except BatchFailedError as exc:
        _count_backup(exc.result)
        raise  # the run failed: Lambda's Errors (BackupFailing)
    _count_backup(manifest)
    return {k: manifest[k] for k in ("location", "outcome")} | {
        "banks": len(manifest["banks"]),
        "failed": manifest["failed"],
    }


def _count_backup(manifest: Mapping[str, Any]) -> None:
    metrics.add_metric(name=METRIC_BACKED_UP, unit=MetricUnit.Count, value=len(manifest["banks"]))
    metrics.add_metric(name=METRIC_BACKUP_FAILED, unit=MetricUnit.Count, value=len(manifest["failed"]))

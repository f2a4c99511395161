"""The memory administration functions (inside the VPC, holding the operator credential; never the agent's).

Three entry points over one module, all running :func:`memory_adapter.admin.run_action` from the
``memory_adapter`` layer:

* ``index.handler``: the admin function behind an IAM-authorized function URL (``python -m memory_adapter.admin``
  signs its requests). The caller's principal is the one AWS verified (``requestContext.authorizer.iam``), never a
  field of the request; a request without it is refused.
* ``index.expire_handler``: the scheduled expiry (EventBridge); emits ``MemoriesExpired`` per kind.
* ``index.backup_handler``: the scheduled logical export of every bank (EventBridge); emits ``BanksBackedUp``.

Settings (environment, read once per cold start with the shared settings reader): ``HINDSIGHT_API_URL``,
``OPERATOR_KEY_SECRET_ARN``, ``ADMIN_BUCKET``, ``ADMIN_BUCKET_KEY_ARN``, ``MEMORY_RETENTION_DAYS`` (JSON, kind ->
days or null), ``EXPIRY_BATCH_SIZE``, ``EXPIRY_DRY_RUN``.
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
from memory_adapter.admin.errors import ConfirmationError, InvalidRequestError, VerificationError
from memory_adapter.constants import HINDSIGHT_API_URL_ENV
from memory_adapter.exceptions import HindsightRequestError, HindsightUnavailableError
from memory_adapter.kinds import RetentionRules, RetentionRulesError
from memory_adapter.settings_reader import SettingsReader, env_dict

ENV_HINDSIGHT_URL: Final = HINDSIGHT_API_URL_ENV
ENV_OPERATOR_KEY_SECRET_ARN: Final = "OPERATOR_KEY_SECRET_ARN"  # noqa: S105 - a variable name
ENV_BUCKET: Final = "ADMIN_BUCKET"
ENV_BUCKET_KEY_ARN: Final = "ADMIN_BUCKET_KEY_ARN"
ENV_RETENTION: Final = "MEMORY_RETENTION_DAYS"
ENV_EXPIRY_BATCH_SIZE: Final = "EXPIRY_BATCH_SIZE"
ENV_EXPIRY_DRY_RUN: Final = "EXPIRY_DRY_RUN"
#: Every variable the functions read (the stack sets exactly these; an infra test compares).
ENV_NAMES: Final = (
    ENV_HINDSIGHT_URL,
    ENV_OPERATOR_KEY_SECRET_ARN,
    ENV_BUCKET,
    ENV_BUCKET_KEY_ARN,
    ENV_RETENTION,
    ENV_EXPIRY_BATCH_SIZE,
    ENV_EXPIRY_DRY_RUN,
)
#: Banks' memories expired per scheduled run when ``EXPIRY_BATCH_SIZE`` is unset.
DEFAULT_EXPIRY_BATCH_SIZE: Final = 500
_MAX_BODY: Final = 64 * 1024
#: The Powertools service (the metrics' ``service`` dimension) and the metrics the scheduled runs emit: the
#: dashboard and the alarms (infra/constructs/memory_admin.py) read these names.
SERVICE: Final = "memory-admin"
METRIC_EXPIRED: Final = "MemoriesExpired"
METRIC_DUE: Final = "MemoriesDue"
METRIC_MORE_DUE: Final = "ExpiryMoreDue"
METRIC_BACKED_UP: Final = "BanksBackedUp"

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "HindsightMemory"), service=SERVICE)


@dataclass(frozen=True, slots=True)
class FunctionSettings:
    """The functions' settings, parsed once."""

    hindsight_url: str
    operator_key_secret_arn: str
    bucket: str
    bucket_key_arn: str | None
    rules: RetentionRules
    expiry_batch_size: int
    expiry_dry_run: bool

    def to_env(self) -> dict[str, str]:
        """The environment :meth:`from_env` reads back as these settings (the stack states every one)."""
        return env_dict(
            {
                ENV_HINDSIGHT_URL: self.hindsight_url,
                ENV_OPERATOR_KEY_SECRET_ARN: self.operator_key_secret_arn,
                ENV_BUCKET: self.bucket,
                ENV_BUCKET_KEY_ARN: self.bucket_key_arn,
                ENV_RETENTION: self.rules.to_json(),
                ENV_EXPIRY_BATCH_SIZE: self.expiry_batch_size,
                ENV_EXPIRY_DRY_RUN: self.expiry_dry_run,
            }
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> FunctionSettings:
        """Parse ``env``; raise ``ValueError`` listing every problem."""
        reader = SettingsReader(env)
        url = reader.url(ENV_HINDSIGHT_URL)
        required = {name: reader.text(name) for name in (ENV_OPERATOR_KEY_SECRET_ARN, ENV_BUCKET)}
        for name, value in required.items():
            if value is None:
                reader.problem(f"{name} is required")
        try:
            rules = RetentionRules.from_json(reader.text(ENV_RETENTION))
        except RetentionRulesError as exc:
            reader.problem(f"{ENV_RETENTION}: {exc}")
            rules = RetentionRules()
        batch = reader.integer(ENV_EXPIRY_BATCH_SIZE, DEFAULT_EXPIRY_BATCH_SIZE, low=1, high=10_000)
        dry_run = reader.flag(ENV_EXPIRY_DRY_RUN, False)
        if reader.problems:
            raise ValueError("memory admin: invalid configuration: " + "; ".join(reader.problems))
        return cls(
            hindsight_url=url,
            operator_key_secret_arn=str(required[ENV_OPERATOR_KEY_SECRET_ARN]),
            bucket=str(required[ENV_BUCKET]),
            bucket_key_arn=reader.text(ENV_BUCKET_KEY_ARN),
            rules=rules,
            expiry_batch_size=batch,
            expiry_dry_run=dry_run,
        )


@cache
def _deps() -> AdminDeps:
    """Built on first use and reused while the execution environment lives (the key is re-read every 5 min)."""
    from aws_lambda_powertools.utilities import parameters

    settings = FunctionSettings.from_env(os.environ)
    key = parameters.get_secret(settings.operator_key_secret_arn, max_age=300)
    client = OperatorClient(settings.hindsight_url, str(key), timeout=60)
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
    report = run_action(
        {"action": "expire", "dry_run": dry_run}, deps=deps, principal=schedule, actor=f"schedule:{schedule}"
    )
    counts = report["due"] if dry_run else report["expired"]
    for kind, count in counts.items():  # one metric per kind: EMF dimensions are shared by a whole flush
        metrics.add_metric(name=f"{METRIC_EXPIRED}_{kind}", unit=MetricUnit.Count, value=0 if dry_run else count)
    metrics.add_metric(name=METRIC_EXPIRED, unit=MetricUnit.Count, value=0 if dry_run else sum(counts.values()))
    metrics.add_metric(name=METRIC_DUE, unit=MetricUnit.Count, value=sum(report["due"].values()))
    metrics.add_metric(name=METRIC_MORE_DUE, unit=MetricUnit.Count, value=int(report["more_due"]))
    return {k: report[k] for k in ("now", "dry_run", "due", "expired", "facts_deleted", "more_due")}


@metrics.log_metrics
@logger.inject_lambda_context
def backup_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The scheduled logical export: every bank's archive and a manifest under ``backups/<time>/``."""
    schedule = _schedule(event)
    manifest = run_action({"action": "backup"}, deps=_deps(), principal=schedule, actor=f"schedule:{schedule}")
    metrics.add_metric(name=METRIC_BACKED_UP, unit=MetricUnit.Count, value=len(manifest["banks"]))
    return {"location": manifest["location"], "banks": len(manifest["banks"])}

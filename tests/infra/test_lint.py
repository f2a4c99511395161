"""cfn-lint (AWS resource schemas) and checkov (in its own virtualenv) on every template of every variant."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.infra.conftest import ROOT, Synth

#: cfn-lint warnings CDK itself generates: redundant DependsOn next to a Ref/GetAtt.
ALLOWED_CFN_LINT_WARNINGS = {"W3005"}

#: checkov checks skipped for this design, with the reason (the same reasoning as the cdk-nag acknowledgements).
CHECKOV_SKIPS = {
    "CKV_AWS_115": "function-level concurrency: reserved concurrency fails the first deploy in accounts at the "
    "default 10-execution limit; the functions (ours and CDK providers) run rarely and briefly (the memory admin "
    "functions: hourly or daily schedules and a few operators' calls), and the retain replay's concurrency is capped "
    "by its event source mapping",
    "CKV_AWS_116": "Lambda DLQ: the functions are invoked by CloudFormation/EventBridge with retries; failures raise "
    "an alarm or fail the deploy, and there is no payload worth keeping; the retain replay is invoked by the SQS "
    "event source mapping, so what it does not process stays on the queue, whose dead-letter queue is alarmed; the "
    "memory admin function URL answers its operator synchronously (a failed request is repeated, and alarmed)",
    "CKV_AWS_117": "Lambda in VPC: the JWKS mirror and the image mirror must reach the internet, which the isolated "
    "VPC cannot; the redeploy function and CDK's providers call only AWS control-plane APIs",
    "CKV_AWS_173": "Lambda environment encryption: the variables hold only names and ARNs, no secrets",
    "CKV_AWS_51": "ECR tag immutability: the mirror repository is IMMUTABLE_WITH_EXCLUSION for the one tag the mirror "
    "rewrites (a repeated copy must not fail a deploy or its rollback); every task pulls by digest, so no tag decides "
    "what runs",
    "CKV_AWS_157": "RDS Multi-AZ: the dev environment sets database.multi_az=false for cost; prod sets it true",
    "CKV_AWS_18": "S3 access logging: the flagged buckets are access-log buckets themselves (the load balancer's, "
    "the administration bucket's)",
    "CKV_AWS_2": "ALB HTTPS: without hindsight.certificate_arn the internal listener is HTTP inside the VPC; TLS "
    "when a certificate is configured",
    "CKV_AWS_103": "ALB TLS 1.2: same listener as CKV_AWS_2; the HTTPS listener uses the recommended TLS policy",
}


def _templates(synths: dict[str, Synth]) -> list[Path]:
    return sorted(p for s in synths.values() for p in s.outdir.glob("*.template.json"))


def test_cfn_lint_has_no_errors_and_only_documented_warnings(synths: dict[str, Synth]) -> None:
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    result = subprocess.run(
        [str(cfn_lint), "--format", "json", *map(str, _templates(synths))], capture_output=True, text=True, check=False
    )
    findings = json.loads(result.stdout or "[]")
    unexpected = [f for f in findings if f["Rule"]["Id"] not in ALLOWED_CFN_LINT_WARNINGS]
    assert unexpected == [], [(f["Rule"]["Id"], f["Message"][:200], f["Filename"]) for f in unexpected]


def _checkov() -> Path:
    venv = Path(os.environ.get("CHECKOV_VENV", ROOT / ".venv-checkov"))
    binary = venv / "bin" / "checkov"
    if not binary.exists():
        if os.environ.get("CI"):
            pytest.fail(f"checkov is not installed in {venv}: run `make checkov-venv`")
        pytest.skip(f"checkov is not installed in {venv}: run `make checkov-venv`")
    return binary


def test_checkov_passes_with_only_documented_skips(synths: dict[str, Synth]) -> None:
    args = [str(_checkov())]
    for template in _templates(synths):
        args += ["-f", str(template)]
    args += [
        "--framework",
        "cloudformation",
        "--compact",
        "--quiet",
        "--skip-download",
        "-o",
        "json",
        "--skip-check",
        ",".join(sorted(CHECKOV_SKIPS)),
    ]
    result = subprocess.run(args, capture_output=True, text=True, check=False, env={**os.environ, "LOG_LEVEL": "ERROR"})
    reports = json.loads(result.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    failed = [
        (f["check_id"], f["resource"], Path(f["file_path"]).name)
        for report in reports
        for f in report.get("results", {}).get("failed_checks", [])
    ]
    assert failed == []
    assert all(r["summary"]["parsing_errors"] == 0 for r in reports)
    assert sum(r["summary"]["passed"] for r in reports) > 100  # the scan really ran over the templates

"""``make synth``'s command: the project-local CDK CLI runs app.py offline, with no AWS credentials at all."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.infra.conftest import ROOT, asset_overrides

#: ``make synth CDK_ARGS=...`` variants the docs promise (the in-process synths cover the other modes).
CLI_VARIANTS: dict[str, list[str]] = {
    "default": [],
    "prod-with-certificate": [
        "env=prod",
        "hindsight.certificate_arn=arn:aws:acm:us-east-1:111122223333:certificate/abcd-1234",
        "hindsight.domain_name=memory.internal.example.com",
    ],
    "custom-bootstrap-qualifier": ["@aws-cdk/core:bootstrapQualifier=corp12345"],
}


@pytest.mark.parametrize("variant", list(CLI_VARIANTS))
def test_cdk_cli_synthesizes_every_stack_without_credentials(tmp_path: Path, variant: str) -> None:
    cli = ROOT / "node_modules" / ".bin" / "cdk"
    if not cli.exists():
        if os.environ.get("CI"):
            pytest.fail("the CDK CLI is not installed: run `make node`")
        pytest.skip("the CDK CLI is not installed: run `make node`")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        CDK_DISABLE_VERSION_CHECK="true",
        CDK_DISABLE_CLI_TELEMETRY="true",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
    )
    context = [arg for key, value in asset_overrides().items() for arg in ("-c", f"{key}={value}")]
    context += [arg for setting in CLI_VARIANTS[variant] for arg in ("-c", setting)]
    out = tmp_path / "cdk.out"
    result = subprocess.run(
        [str(cli), "synth", "--quiet", "--output", str(out), *context],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # a newcomer's synth prints no unexplained warnings (feature flags are pinned in cdk.json, no deprecated calls)
    assert "WARNING" not in result.stderr + result.stdout, result.stderr[-3000:]
    assert "feature flags are not configured" not in result.stderr + result.stdout
    names = sorted(p.name for p in out.glob("*.template.json"))
    env_name = "prod" if variant.startswith("prod") else "dev"
    assert names == [
        f"HindsightMemory-{env_name}-{s}.template.json"
        for s in ("Agent", "Data", "Gateway", "Identity", "MemoryService", "Network", "Operations")
    ]


def _refused_synth(tmp_path: Path, *settings: str) -> str:
    """``cdk synth -c <setting> ...`` that the configuration refuses: its stderr (the problems, not a stack)."""
    cli = ROOT / "node_modules" / ".bin" / "cdk"
    if not cli.exists():
        pytest.skip("the CDK CLI is not installed: run `make node`")
    context = [arg for setting in settings for arg in ("-c", setting)]
    result = subprocess.run(
        [str(cli), "synth", "--quiet", "--output", str(tmp_path / "out"), *context],
        cwd=ROOT,
        env={**os.environ, "CDK_DISABLE_VERSION_CHECK": "true", "CDK_DISABLE_CLI_TELEMETRY": "true"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    return result.stderr


def test_prod_without_a_certificate_is_refused_with_the_settings_named(tmp_path: Path) -> None:
    stderr = _refused_synth(tmp_path, "env=prod")
    assert "hindsight.certificate_arn, hindsight.domain_name: required because hindsight.require_tls" in stderr


def test_a_gateway_asked_for_without_user_tokens_is_refused_with_what_to_do(tmp_path: Path) -> None:
    stderr = _refused_synth(tmp_path, "auth.mode=iam", "gateway.enabled=true")
    assert "gateway.enabled=true: the gateway's tools act for the user a verified token names" in stderr
    assert "leave gateway.enabled null (no gateway with iam)" in stderr


def test_a_mistyped_setting_is_refused_not_ignored(tmp_path: Path) -> None:
    # GIVEN -c hindsight.cpuu=2048 (meant: hindsight.cpu): before, the CDK app ignored it and synthesized cpu 1024
    stderr = _refused_synth(tmp_path, "hindsight.cpuu=2048")
    assert "hindsight.cpuu is not a setting: did you mean hindsight.cpu?" in stderr


def test_a_synth_before_make_build_says_to_run_it(tmp_path: Path) -> None:
    # GIVEN no agent bundle where the configuration points (a fresh clone, npx cdk synth before make build)
    stderr = _refused_synth(tmp_path, f"agent.bundle_path={tmp_path / 'build' / 'agent'}")
    # THEN one line says what is missing and what to run (before: a jsii traceback ending in the same words)
    assert "is not built (or has no main.py): run make build" in stderr

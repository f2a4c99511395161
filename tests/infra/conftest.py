"""Synthesize each configuration variant once per session (one jsii process), with both cdk-nag packs applied."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.infra import name_check, permission_check, reach_check

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_VERSION_CHECK", "true")

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
FIXTURES = ROOT / "tests" / "fixtures" / "asset"

#: An imported VPC (``network.mode=import``) as the customer names it: its id, CIDR, two subnets, their AZs and
#: route tables. The variants and the tests that import a VPC use this one.
IMPORTED_NETWORK: dict[str, str] = {
    "network.mode": "import",
    "network.vpc_id": "vpc-0123456789abcdef0",
    "network.vpc_cidr": "10.20.0.0/16",
    "network.subnet_ids": "subnet-0aaaaaaaaaaaaaaa1,subnet-0bbbbbbbbbbbbbbb2",
    "network.availability_zones": "us-east-1a,us-east-1b",
    "network.route_table_ids": "rtb-0aaaaaaaaaaaaaaa1,rtb-0bbbbbbbbbbbbbbb2",
}

#: Configuration variants: every VPC mode and every auth mode is covered, plus the alternative engines/sources; the
#: gateway exists in both user-token variants (the agent's tools go through it in jwt-import), not with iam.
VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "jwt-import": {
        "env": "prod",
        **IMPORTED_NETWORK,
        "auth.mode": "jwt",
        "auth.discovery_url": "https://login.example.com/tenant-1/.well-known/openid-configuration",
        "auth.allowed_audience": "api://memory-agent",
        "auth.tenant_claim": "tid",
        "agent.tools_via_gateway": "true",
        "gateway.name": "memory-tools",
        "hindsight.image_source": "ecr",
        "hindsight.ecr_repository_arn": "arn:aws:ecr:us-east-1:111122223333:repository/mirror/hindsight-api",
        "hindsight.certificate_arn": "arn:aws:acm:us-east-1:111122223333:certificate/abcd-1234",
        "hindsight.domain_name": "memory.internal.example.com",
    },
    "iam-aurora": {
        # An enterprise bootstrap with its own qualifier: no name may assume the default one.
        "@aws-cdk/core:bootstrapQualifier": "corp12345",
        "auth.mode": "iam",
        "auth.tenant_id": "acme",
        "database.engine": "aurora-serverless",
        "hindsight.image_source": "registry",
        "hindsight.llm_provider": "openai",
        "hindsight.llm_model": "gpt-4o-mini",
        "hindsight.llm_base_url": "https://llm.example.com/v1",
        # Operations settings that reach the resources (tests/infra/test_operations.py), given as -c text.
        "retention.plan": "7",
        "retention.turn": "null",
        "operations.expiry_dry_run": "true",
        "operations.expiry_schedule": "rate(6 hours)",
        "hindsight.database_schema": "emb_v2",
        "hindsight.maintenance_embeddings_model": "bedrock/cohere.embed-english-v3",
    },
}


def asset_overrides() -> dict[str, str]:
    """The real build when it exists (``make test`` builds it first), else the small fixtures."""
    agent = BUILD / "agent"
    layer = BUILD / "layer"
    extension = BUILD / "hindsight_ext.zip"
    provisioning = BUILD / "db_provisioning"
    replay = BUILD / "retain_replay"
    admin = BUILD / "memory_admin"
    if all(p.exists() for p in (agent, layer, extension, provisioning, replay, admin)):
        return {
            "agent.bundle_path": str(agent),
            "layer.path": str(layer),
            "hindsight.extension_path": str(extension),
            "database.provisioning_path": str(provisioning),
            "retain_queue.replay_path": str(replay),
            "operations.admin_function_path": str(admin),
        }
    return {
        "agent.bundle_path": str(FIXTURES / "agent"),
        "layer.path": str(FIXTURES / "layer"),
        "hindsight.extension_path": str(FIXTURES / "hindsight_ext.zip"),
        "database.provisioning_path": str(FIXTURES / "db_provisioning"),
        "retain_queue.replay_path": str(FIXTURES / "retain_replay"),
        "operations.admin_function_path": str(FIXTURES / "memory_admin"),
    }


@dataclass
class Synth:
    """One synthesized configuration."""

    config: Any
    stacks: Any
    outdir: Path
    templates: dict[str, dict[str, Any]]
    nag_report: dict[str, Any] | None
    nag_error: str | None

    def template(self, suffix: str) -> dict[str, Any]:
        """The template of the stack whose name ends with suffix (e.g. ``-Agent``)."""
        (name,) = [n for n in self.templates if n.endswith(suffix)]
        return self.templates[name]


#: Each synthesis of this session by its inputs: test files asking for the same variant share one (in the first
#: caller's outdir). Only successful ones: a synthesis that raises is asked for again, and raises again.
_SYNTHESIZED: dict[tuple[str, bool, bool], Synth] = {}


def synthesize(outdir: Path, overrides: dict[str, Any], *, nag: bool = True, acknowledge: bool = True) -> Synth:
    """Build the app exactly as app.py does (config, stacks, acknowledgements, nag packs) and synthesize it; once per
    session for the same overrides and packs (a value may be a whole section: the key is their JSON)."""
    key = (json.dumps({**asset_overrides(), **overrides}, sort_keys=True, default=str), nag, acknowledge)
    if key not in _SYNTHESIZED:
        _SYNTHESIZED[key] = _synthesize(outdir, overrides, nag=nag, acknowledge=acknowledge)
    return _SYNTHESIZED[key]


def _synthesize(outdir: Path, overrides: dict[str, Any], *, nag: bool, acknowledge: bool) -> Synth:
    from aws_cdk import App, Validations
    from cdk_nag import AwsSolutionsChecks, NIST80053R5Checks

    from infra.app_builder import build_stacks
    from infra.config import context_from_cdk_json, load_config
    from infra.nag import acknowledge_findings

    app = App(context=context_from_cdk_json({**asset_overrides(), **overrides}), outdir=str(outdir))
    config = load_config(app.node)
    stacks = build_stacks(app, config)
    if acknowledge:
        acknowledge_findings(stacks, config)
    if nag:
        Validations.of(app).add_plugins(AwsSolutionsChecks(app), NIST80053R5Checks(app))
    error = None
    try:
        app.synth()
    except RuntimeError as exc:  # cdk-nag findings fail synthesis; the report says which
        error = str(exc)
    templates = {
        p.name.removesuffix(".template.json"): json.loads(p.read_text()) for p in outdir.glob("*.template.json")
    }
    report_path = outdir / "validation-report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    # Every synthesis in the suite is checked as the account would: a function calling what its role lacks fails it.
    missing = permission_check.findings(templates, outdir, region=config.region, account=config.account)
    assert not missing, "functions whose role lacks what their code calls:\n" + "\n".join(missing)
    # Every synthesis in the suite is checked as the services would: names they refuse, conditions that never match.
    names = name_check.check(templates, region=config.region).findings
    assert not names, "names or ARN conditions the services would refuse or never match:\n" + "\n".join(names)
    # ... and as the network would: a call from the VPC to an AWS API no endpoint serves hangs until it times out.
    unreachable = reach_check.check(templates, outdir, config, ROOT).findings
    assert not unreachable, "calls from the VPC nothing serves:\n" + "\n".join(unreachable)
    return Synth(config=config, stacks=stacks, outdir=outdir, templates=templates, nag_report=report, nag_error=error)


@pytest.fixture(scope="session")
def synths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Synth]:
    """Every variant, synthesized once."""
    return {name: synthesize(tmp_path_factory.mktemp(f"cdk-{name}"), overrides) for name, overrides in VARIANTS.items()}


@pytest.fixture(scope="session")
def unacknowledged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Synth]:
    """Every variant with the nag packs but no acknowledgements: the findings each acknowledgement must match."""
    return {
        name: synthesize(tmp_path_factory.mktemp(f"cdk-raw-{name}"), overrides, acknowledge=False)
        for name, overrides in VARIANTS.items()
    }


@pytest.fixture(scope="session")
def with_text(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The default configuration with memory events on, carrying text, both cdk-nag packs (the events tests, and the
    update check's events on, off, on)."""
    overrides = {"events.enabled": "true", "events.include_text": "true", "events.archive_retention_days": "90"}
    return synthesize(tmp_path_factory.mktemp("cdk-events"), overrides)


@pytest.fixture(scope="session")
def default(synths: dict[str, Synth]) -> Synth:
    return synths["default"]


def resources(template: dict[str, Any], type_name: str) -> dict[str, dict[str, Any]]:
    """Logical id -> resource, for one CloudFormation type."""
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_name}


def role_policy_statements(template: dict[str, Any], role: str) -> list[dict[str, Any]]:
    """Every statement of the inline policies (``AWS::IAM::Policy``) attached to the role whose logical id is
    ``role``."""
    found: list[dict[str, Any]] = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    return found


def statement_actions(statement: dict[str, Any]) -> list[str]:
    """A policy statement's ``Action``, as a list (CloudFormation allows one action as a string)."""
    action = statement["Action"]
    return action if isinstance(action, list) else [action]

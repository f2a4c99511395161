"""Typed deployment configuration, read once from CDK context and validated before any resource exists.

Sources, lowest precedence first (one source, parsed once):

1. ``context.defaults`` in ``cdk.json``: every setting with its default.
2. ``context.envs.<env>`` in ``cdk.json``: the overlay of the environment picked with ``-c env=<name>``.
3. ``-c <section>.<key>=<value>`` on the command line (strings, coerced to the setting's type; lists are
   comma-separated, mappings are JSON).

``load_config`` collects every problem and raises one :class:`ConfigError` listing all of them, so a user fixes a
bad configuration in one round. ``python -m infra.config [-c key=value ...]`` checks a configuration without AWS.
"""

from __future__ import annotations

import dataclasses
import json
import re
import string
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from infra.agentcore_zones import SOURCE as AGENTCORE_ZONES_SOURCE
from infra.agentcore_zones import supported_az_ids

PROJECT_ROOT = Path(__file__).resolve().parent.parent

#: Characters kept out of generated passwords: Hindsight's Alembic config breaks on ``%`` and the database URL on
#: ``@:/?#``; excluding all punctuation keeps the URL assembly trivially safe.
PASSWORD_EXCLUDED_CHARACTERS = string.punctuation + " "

_AZ_ID = re.compile(r"^[a-z]{2,5}\d-az\d{1,2}$")
_AZ_NAME = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_ROUTE_TABLE_ID = re.compile(r"^rtb-[0-9a-f]{8,17}$")
_CIDR = re.compile(r"^(\d{1,3}\.){3}\d{1,3}/(1[6-9]|2[0-8])$")
_AGENT_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
_ENV_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
_PREFIX = re.compile(r"^[A-Z][A-Za-z0-9]{0,23}$")
_IMAGE_TAG = re.compile(r"^\d+\.\d+\.\d+(-[a-z0-9]+)?$")
_ARN = re.compile(r"^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:\d{0,12}:.+$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_ACCOUNT = re.compile(r"^\d{12}$")
_CLAIM = re.compile(r"^[A-Za-z_][A-Za-z0-9_:.-]{0,63}$")
_SSM_NAME = re.compile(r"^/[A-Za-z0-9_./-]{1,1000}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.IGNORECASE)
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")
_ZONE_ID = re.compile(r"^Z[0-9A-Z]{1,31}$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
#: The VPC endpoints the network stack creates (``network.skip_endpoints`` names them).
ENDPOINT_NAMES = (
    "S3",
    "EcrApi",
    "EcrDocker",
    "Logs",
    "Monitoring",
    "SecretsManager",
    "Kms",
    "Sts",
    "Ssm",
    "BedrockRuntime",
    "XRay",
    "CognitoIdp",
)
_FARGATE_CPU_MEMORY = {
    256: range(512, 2049, 512),
    512: range(1024, 4097, 1024),
    1024: range(2048, 8193, 1024),
    2048: range(4096, 16385, 1024),
    4096: range(8192, 30721, 1024),
}


class ConfigError(ValueError):
    """The deployment configuration is invalid; the message lists every problem found."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        super().__init__("invalid configuration:\n" + "\n".join(f"  - {e}" for e in self.errors))


class VpcMode(StrEnum):
    """Where the network comes from."""

    CREATE = "create"
    IMPORT = "import"


class AuthMode(StrEnum):
    """How callers of the agent are authenticated (and so how Hindsight authorizes the agent's calls)."""

    COGNITO = "cognito"
    JWT = "jwt"
    IAM = "iam"


class ImageSource(StrEnum):
    """Where Fargate pulls the Hindsight image from."""

    MIRROR = "mirror"  # copied at deploy time into an ECR repository of this stack (works without egress)
    REGISTRY = "registry"  # pulled straight from the public registry (needs egress: NAT or proxy)
    ECR = "ecr"  # an ECR repository the customer already maintains


class LlmProvider(StrEnum):
    """Hindsight's LLM provider."""

    BEDROCK = "bedrock"  # Amazon Bedrock through the VPC endpoint, credentials from the task role
    OPENAI = "openai"  # any OpenAI-compatible endpoint, key in Secrets Manager (needs egress to reach it)


class DatabaseEngine(StrEnum):
    """The PostgreSQL flavour."""

    POSTGRES = "postgres"  # RDS for PostgreSQL instance
    AURORA_SERVERLESS = "aurora-serverless"  # Aurora PostgreSQL Serverless v2, for larger fleets


class DataRemoval(StrEnum):
    """What happens to stateful data when its stack or resource is deleted."""

    RETAIN = "retain"
    SNAPSHOT = "snapshot"
    DESTROY = "destroy"


@dataclass(frozen=True)
class NetworkConfig:
    """The VPC: created isolated (no IGW, no NAT) or imported by id with no lookups."""

    mode: VpcMode
    cidr: str
    az_ids: tuple[str, ...]
    vpc_id: str | None
    vpc_cidr: str | None
    subnet_ids: tuple[str, ...]
    availability_zones: tuple[str, ...]
    route_table_ids: tuple[str, ...]
    create_endpoints: bool
    skip_endpoints: tuple[str, ...]
    supported_az_ids: tuple[str, ...]
    flow_log_retention_days: int


@dataclass(frozen=True)
class AuthConfig:
    """Caller authentication, shared by the AgentCore authorizer, the agent and the Hindsight extension."""

    mode: AuthMode
    discovery_url: str | None
    allowed_clients: tuple[str, ...]
    allowed_audience: tuple[str, ...]
    user_claim: str
    tenant_claim: str | None
    tenant_id: str | None
    jwks_refresh_minutes: int
    retain_grace_seconds: int


@dataclass(frozen=True)
class AgentConfig:
    """The AgentCore Runtime agent."""

    name: str
    model_id: str
    bundle_path: Path
    allow_anonymous: bool
    idle_timeout_seconds: int
    max_lifetime_seconds: int
    log_retention_days: int


@dataclass(frozen=True)
class LayerConfig:
    """The memory-adapter Lambda layer."""

    path: Path
    parameter_name: str | None


@dataclass(frozen=True)
class HindsightConfig:
    """The Hindsight memory service on ECS Fargate."""

    image_repository: str
    image_tag: str
    image_source: ImageSource
    image_digest: str | None
    ecr_repository_arn: str | None
    extension_path: Path
    cpu: int
    memory_mib: int
    api_min_count: int
    api_max_count: int
    cpu_target_percent: int
    worker_count: int
    worker_max_slots: int  # retains one worker runs at once: with a hosted LLM this, not CPU, bounds it (docs/capacity.md)
    db_pool_max_size: int  # connections per Hindsight process; the fleet must fit the database (docs/capacity.md)
    port: int
    mcp_enabled: bool
    certificate_arn: str | None
    domain_name: str | None
    hosted_zone_id: str | None
    require_tls: bool
    readonly_root_filesystem: bool
    llm_provider: LlmProvider
    llm_model: str
    llm_base_url: str | None
    llm_api_key_secret_arn: str | None
    embeddings_model: str
    log_retention_days: int


@dataclass(frozen=True)
class DatabaseConfig:
    """Hindsight's PostgreSQL (pgvector)."""

    engine: DatabaseEngine
    instance_type: str
    allocated_storage_gb: int
    max_allocated_storage_gb: int
    multi_az: bool
    min_capacity_acu: float
    max_capacity_acu: float
    backup_retention_days: int
    rotation_days: int
    port: int
    provisioning_path: Path


@dataclass(frozen=True)
class AlarmsConfig:
    """Where the stacks' alarms notify (an SNS topic is always created; the e-mail subscription is optional)."""

    email: str | None


@dataclass(frozen=True)
class AppConfig:
    """Everything a deployment needs; built only by :func:`load_config`."""

    env_name: str
    prefix: str
    account: str | None
    region: str
    removal: DataRemoval
    tags: Mapping[str, str]
    network: NetworkConfig
    auth: AuthConfig
    agent: AgentConfig
    layer: LayerConfig
    hindsight: HindsightConfig
    database: DatabaseConfig
    alarms: AlarmsConfig

    @property
    def stack_prefix(self) -> str:
        """Stack names start with this, e.g. ``HindsightMemory-dev``."""
        return f"{self.prefix}-{self.env_name}"


class ContextSource(typing.Protocol):
    """What ``load_config`` needs from a CDK App: ``node.try_get_context``."""

    def try_get_context(self, key: str) -> Any:
        """Return the context value for key, or None."""


_SECTIONS: dict[str, type[Any]] = {
    "network": NetworkConfig,
    "auth": AuthConfig,
    "agent": AgentConfig,
    "layer": LayerConfig,
    "hindsight": HindsightConfig,
    "database": DatabaseConfig,
    "alarms": AlarmsConfig,
}
_TOP_LEVEL = ("prefix", "account", "region", "removal", "tags")

T = TypeVar("T")


def load_config(node: ContextSource) -> AppConfig:
    """Build and validate the configuration from CDK context (``app.node``); raise one :class:`ConfigError`."""
    errors: list[str] = []
    defaults = node.try_get_context("defaults")
    envs = node.try_get_context("envs") or {}
    env_name = str(node.try_get_context("env") or "dev")
    if not isinstance(defaults, Mapping):
        raise ConfigError(["context 'defaults' is missing: run from the project folder so cdk.json is read"])
    if not isinstance(envs, Mapping) or env_name not in envs:
        known = ", ".join(sorted(envs)) if isinstance(envs, Mapping) else ""
        raise ConfigError([f"env '{env_name}' is not defined under context 'envs' (known: {known})"])
    merged = _deep_merge(defaults, envs[env_name] or {})
    for key in _override_keys(merged):
        value = node.try_get_context(key)
        if value is not None:
            section, _, name = key.partition(".")
            if name:
                merged[section] = {**merged.get(section, {}), name: value}
            else:
                merged[section] = value
    raw_top = {k: merged.get(k) for k in _TOP_LEVEL}
    sections = {
        name: _build(cls, merged.get(name), name, errors, fallback=defaults.get(name))
        for name, cls in _SECTIONS.items()
    }
    cfg_top: dict[str, Any] = {
        "prefix": _coerce(str, raw_top["prefix"], "prefix", errors),
        "account": _coerce(str | None, raw_top["account"], "account", errors),
        "region": _coerce(str, raw_top["region"], "region", errors),
        "removal": _coerce(DataRemoval, raw_top["removal"], "removal", errors),
        "tags": _coerce(dict[str, str], raw_top["tags"], "tags", errors),
    }
    if not _ENV_NAME.match(env_name):
        errors.append(f"env: '{env_name}' must be lowercase letters and digits, at most 12")
    # A value that could not even be read (a bad enum, a non-number) must not hide the other problems: every part
    # that was read is still checked, so one run lists everything.
    errors.extend(_validate_parts(cfg_top, sections))
    if errors:
        raise ConfigError(errors)
    return AppConfig(env_name=env_name, **cfg_top, **sections)  # type: ignore[arg-type]


def validate(cfg: AppConfig) -> list[str]:
    """Every cross-field rule; returns the problems (empty when the configuration is deployable)."""
    top = {k: getattr(cfg, k) for k in _TOP_LEVEL}
    return _validate_parts(top, {name: getattr(cfg, name) for name in _SECTIONS})


def _validate_parts(top: Mapping[str, Any], sections: Mapping[str, Any]) -> list[str]:
    """The rules of every part that was read (None marks a part that could not be read)."""
    errors: list[str] = []
    prefix, account, region, tags = top["prefix"], top["account"], top["region"], top["tags"]
    if prefix is not None:
        _check(errors, bool(_PREFIX.match(prefix)), "prefix: PascalCase letters and digits, at most 24")
    _check(errors, account is None or bool(_ACCOUNT.match(account)), "account: 12 digits")
    if region is not None:
        _check(errors, bool(_REGION.match(region)), "region: an AWS region like us-east-1 (AZ ids, ALB logs)")
    for key, value in (tags or {}).items():
        _check(errors, 0 < len(key) <= 128 and not key.startswith("aws:"), f"tags: bad key '{key}'")
        _check(errors, len(value) <= 256, f"tags: value of '{key}' longer than 256")
    network, auth, agent, hindsight = (sections[k] for k in ("network", "auth", "agent", "hindsight"))
    database, layer, alarms = (sections[k] for k in ("database", "layer", "alarms"))
    if network is not None:
        errors.extend(_validate_network(network))
        if region is not None:
            errors.extend(_validate_az_ids(network, region))
    if auth is not None:
        errors.extend(_validate_auth(auth))
    if agent is not None:
        errors.extend(_validate_agent(agent))
    if hindsight is not None:
        errors.extend(_validate_hindsight(hindsight))
    if database is not None:
        errors.extend(_validate_database(database))
    if layer is not None and layer.parameter_name is not None:
        _check(errors, bool(_SSM_NAME.match(layer.parameter_name)), "layer.parameter_name: an SSM path like /a/b")
    if alarms is not None and alarms.email is not None:
        _check(errors, bool(_EMAIL.match(alarms.email)), "alarms.email: an e-mail address (or null for none)")
    return errors


def _validate_az_ids(n: NetworkConfig, region: str) -> list[str]:
    """Subnets only in zones AgentCore supports (AZ *ids*: names map to different zones in every account)."""
    errors: list[str] = []
    for az in n.supported_az_ids:
        _check(errors, bool(_AZ_ID.match(az)), f"network.supported_az_ids: '{az}' is not an AZ id like use1-az1")
    supported = supported_az_ids(region, n.supported_az_ids)
    if supported is None:
        errors.append(
            f"network.az_ids: the AgentCore-supported AZ ids of region '{region}' are not in this project's table; "
            f"look them up ({AGENTCORE_ZONES_SOURCE}, 'Supported Availability Zones') and set "
            "network.supported_az_ids to that region's list"
        )
        return errors
    for az in n.az_ids:
        if _AZ_ID.match(az) and az not in supported:
            errors.append(
                f"network.az_ids: '{az}' is not an AgentCore-supported AZ id in {region} "
                f"(supported: {', '.join(sorted(supported))}; source: {AGENTCORE_ZONES_SOURCE}); a subnet there makes "
                "the agent runtime's creation fail"
            )
    return errors


def _validate_network(n: NetworkConfig) -> list[str]:
    errors: list[str] = []
    _check(errors, n.flow_log_retention_days in LOG_RETENTION_DAYS, _retention_msg("network.flow_log_retention_days"))
    if n.mode is VpcMode.CREATE:
        _check(errors, bool(_CIDR.match(n.cidr)), "network.cidr: an IPv4 CIDR between /16 and /28")
        _check(errors, len(n.az_ids) == 2, "network.az_ids: exactly two AgentCore-supported AZ ids (e.g. use1-az1)")
        for az in n.az_ids:
            _check(errors, bool(_AZ_ID.match(az)), f"network.az_ids: '{az}' is not an AZ id like use1-az1")
        _check(errors, len(set(n.az_ids)) == len(n.az_ids), "network.az_ids: must be distinct")
        _check(errors, n.create_endpoints, "network.create_endpoints: a created VPC has no egress and needs them")
        _check(
            errors,
            not n.skip_endpoints,
            "network.skip_endpoints: only for an imported VPC (a created VPC has no endpoints of its own)",
        )
        return errors
    _check(errors, n.vpc_id is not None and bool(_VPC_ID.match(n.vpc_id)), "network.vpc_id: like vpc-0123abcd")
    _check(errors, n.vpc_cidr is not None and bool(_CIDR.match(n.vpc_cidr)), "network.vpc_cidr: the VPC's CIDR")
    _check(errors, len(n.subnet_ids) >= 2, "network.subnet_ids: at least two private subnets in different AZs")
    for s in n.subnet_ids:
        _check(errors, bool(_SUBNET_ID.match(s)), f"network.subnet_ids: '{s}' is not a subnet id")
    _check(
        errors,
        len(n.availability_zones) == len(n.subnet_ids),
        "network.availability_zones: one AZ name per subnet id, in the same order",
    )
    for az in n.availability_zones:
        _check(errors, bool(_AZ_NAME.match(az)), f"network.availability_zones: '{az}' is not an AZ name")
    _check(errors, len(set(n.availability_zones)) >= 2, "network.availability_zones: at least two distinct AZs")
    if n.route_table_ids:
        _check(
            errors,
            len(n.route_table_ids) == len(n.subnet_ids),
            "network.route_table_ids: one route table id per subnet id, in the same order",
        )
        for r in n.route_table_ids:
            _check(errors, bool(_ROUTE_TABLE_ID.match(r)), f"network.route_table_ids: '{r}' is not a route table id")
    _check(
        errors,
        len(n.az_ids) == len(n.subnet_ids),
        "network.az_ids: the AZ id of each subnet, in the same order (aws ec2 describe-subnets --subnet-ids ... "
        "--query 'Subnets[].AvailabilityZoneId'); they are checked against AgentCore's supported zones",
    )
    for az in n.az_ids:
        _check(errors, bool(_AZ_ID.match(az)), f"network.az_ids: '{az}' is not an AZ id like use1-az1")
    needs_route_tables = n.create_endpoints and "S3" not in n.skip_endpoints
    _check(
        errors,
        not needs_route_tables or bool(n.route_table_ids),
        "network.route_table_ids: required with create_endpoints (the S3 gateway endpoint attaches to them)",
    )
    for name in n.skip_endpoints:
        _check(
            errors,
            name in ENDPOINT_NAMES,
            f"network.skip_endpoints: '{name}' is not an endpoint of this stack (one of: {', '.join(ENDPOINT_NAMES)})",
        )
    _check(
        errors,
        n.create_endpoints or not n.skip_endpoints,
        "network.skip_endpoints: only with create_endpoints=true (false already skips every endpoint)",
    )
    return errors


def _validate_auth(a: AuthConfig) -> list[str]:
    errors: list[str] = []
    _check(errors, bool(_CLAIM.match(a.user_claim)), "auth.user_claim: a claim name")
    _check(errors, a.tenant_claim is None or bool(_CLAIM.match(a.tenant_claim)), "auth.tenant_claim: a claim name")
    _check(errors, 5 <= a.jwks_refresh_minutes <= 1440, "auth.jwks_refresh_minutes: between 5 and 1440")
    _check(errors, 0 <= a.retain_grace_seconds <= 86400, "auth.retain_grace_seconds: between 0 and 86400")
    if a.mode is AuthMode.JWT:
        url = a.discovery_url or ""
        _check(
            errors,
            url.startswith("https://") and url.endswith("/.well-known/openid-configuration"),
            "auth.discovery_url: an https URL ending in /.well-known/openid-configuration "
            "(required with auth.mode=jwt)",
        )
        _check(
            errors,
            bool(a.allowed_clients or a.allowed_audience),
            "auth.allowed_clients / auth.allowed_audience: at least one is required with auth.mode=jwt",
        )
    elif a.mode is AuthMode.COGNITO:
        _check(errors, a.discovery_url is None, "auth.discovery_url: not used with auth.mode=cognito (leave it null)")
    else:
        _check(errors, a.discovery_url is None, "auth.discovery_url: not used with auth.mode=iam (leave it null)")
        _check(errors, a.tenant_claim is None, "auth.tenant_claim: IAM callers carry no claims; use auth.tenant_id")
    return errors


def _validate_agent(a: AgentConfig) -> list[str]:
    errors: list[str] = []
    _check(errors, bool(_AGENT_NAME.match(a.name)), "agent.name: lowercase letters, digits and '-', at most 31")
    _check(errors, 0 < len(a.model_id) <= 200 and " " not in a.model_id, "agent.model_id: a Bedrock model id")
    _check(errors, 60 <= a.idle_timeout_seconds <= 28800, "agent.idle_timeout_seconds: between 60 and 28800")
    _check(
        errors,
        a.idle_timeout_seconds <= a.max_lifetime_seconds <= 28800,
        "agent.max_lifetime_seconds: between idle_timeout_seconds and 28800",
    )
    _check(errors, a.log_retention_days in LOG_RETENTION_DAYS, _retention_msg("agent.log_retention_days"))
    return errors


def _validate_hindsight(h: HindsightConfig) -> list[str]:
    errors: list[str] = []
    _check(errors, bool(_IMAGE_TAG.match(h.image_tag)), "hindsight.image_tag: a pinned version like 1.1.0-slim")
    _check(errors, "/" in h.image_repository and ":" not in h.image_repository, "hindsight.image_repository: no tag")
    if h.image_source is ImageSource.ECR:
        _check(
            errors,
            h.ecr_repository_arn is not None
            and h.ecr_repository_arn.startswith("arn:")
            and ":ecr:" in h.ecr_repository_arn,
            "hindsight.ecr_repository_arn: the ARN of the mirror repository (required with image_source=ecr)",
        )
    memory_ok = h.cpu in _FARGATE_CPU_MEMORY and h.memory_mib in _FARGATE_CPU_MEMORY[h.cpu]
    _check(errors, memory_ok, f"hindsight.cpu/memory_mib: {h.cpu}/{h.memory_mib} is not a Fargate size")
    _check(errors, h.memory_mib >= 1024, "hindsight.memory_mib: at least 1024 (Hindsight needs 0.5-1 GB)")
    _check(
        errors, 1 <= h.api_min_count <= h.api_max_count <= 50, "hindsight.api_min_count/api_max_count: 1<=min<=max<=50"
    )
    _check(errors, 10 <= h.cpu_target_percent <= 90, "hindsight.cpu_target_percent: between 10 and 90")
    _check(errors, 1 <= h.worker_count <= 10, "hindsight.worker_count: between 1 and 10")
    _check(errors, 1 <= h.worker_max_slots <= 100, "hindsight.worker_max_slots: between 1 and 100")
    _check(
        errors,
        5 <= h.db_pool_max_size <= 200,
        "hindsight.db_pool_max_size: between 5 (Hindsight's minimum pool) and 200",
    )
    _check(errors, 1024 <= h.port <= 65535, "hindsight.port: between 1024 and 65535 (the container runs as non-root)")
    _check(
        errors, h.certificate_arn is None or bool(_ARN.match(h.certificate_arn)), "hindsight.certificate_arn: an ARN"
    )
    _check(
        errors,
        (h.certificate_arn is None) == (h.domain_name is None),
        "hindsight.domain_name: required with certificate_arn (the name the certificate covers), and only with it",
    )
    _check(
        errors,
        not h.require_tls or (h.certificate_arn is not None and h.domain_name is not None),
        "hindsight.certificate_arn, hindsight.domain_name: required because hindsight.require_tls is true (the "
        "prod default): callers' tokens travel from the agent to Hindsight, so prod refuses plain HTTP. Set an ACM "
        "certificate ARN and the DNS name it covers (the stack creates the private DNS record), or set "
        "hindsight.require_tls=false to accept HTTP inside the VPC",
    )
    _check(
        errors,
        h.domain_name is None or bool(_DOMAIN.match(h.domain_name)),
        "hindsight.domain_name: a DNS name like memory.internal.example.com",
    )
    _check(
        errors,
        h.hosted_zone_id is None or (h.domain_name is not None and bool(_ZONE_ID.match(h.hosted_zone_id))),
        "hindsight.hosted_zone_id: a Route 53 private hosted zone id (Z...) holding domain_name, and only with it",
    )
    _check(
        errors,
        h.image_digest is None or bool(_DIGEST.match(h.image_digest)),
        "hindsight.image_digest: sha256:<64 hex digits> (the arm64 image's manifest digest), or null",
    )
    _check(errors, h.log_retention_days in LOG_RETENTION_DAYS, _retention_msg("hindsight.log_retention_days"))
    _check(errors, bool(h.llm_model), "hindsight.llm_model: required")
    _check(errors, h.embeddings_model.startswith("bedrock/"), "hindsight.embeddings_model: a bedrock/<model id>")
    if h.llm_provider is LlmProvider.OPENAI:
        _check(
            errors,
            (h.llm_base_url or "").startswith("https://"),
            "hindsight.llm_base_url: an https URL (required with llm_provider=openai)",
        )
        _check(
            errors,
            h.llm_api_key_secret_arn is None or bool(_ARN.match(h.llm_api_key_secret_arn)),
            "hindsight.llm_api_key_secret_arn: a Secrets Manager ARN, or null to create an empty secret",
        )
    else:
        _check(errors, h.llm_base_url is None, "hindsight.llm_base_url: only with llm_provider=openai")
        _check(
            errors, h.llm_api_key_secret_arn is None, "hindsight.llm_api_key_secret_arn: only with llm_provider=openai"
        )
    return errors


def _validate_database(d: DatabaseConfig) -> list[str]:
    errors: list[str] = []
    _check(
        errors, bool(re.match(r"^[a-z0-9]+\.[a-z0-9]+$", d.instance_type)), "database.instance_type: like t4g.medium"
    )
    _check(errors, 20 <= d.allocated_storage_gb <= 65536, "database.allocated_storage_gb: between 20 and 65536")
    _check(
        errors,
        d.allocated_storage_gb <= d.max_allocated_storage_gb <= 65536,
        "database.max_allocated_storage_gb: at least allocated_storage_gb",
    )
    _check(
        errors, 0 <= d.min_capacity_acu <= d.max_capacity_acu <= 256, "database.min/max_capacity_acu: 0<=min<=max<=256"
    )
    _check(errors, d.max_capacity_acu >= 1, "database.max_capacity_acu: at least 1")
    _check(errors, 1 <= d.backup_retention_days <= 35, "database.backup_retention_days: between 1 and 35")
    _check(errors, 1 <= d.rotation_days <= 365, "database.rotation_days: between 1 and 365")
    _check(errors, 1150 <= d.port <= 65535, "database.port: between 1150 and 65535")
    return errors


LOG_RETENTION_DAYS = frozenset(
    {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)


def _retention_msg(key: str) -> str:
    return f"{key}: one of CloudWatch's retention values ({', '.join(map(str, sorted(LOG_RETENTION_DAYS)))})"


def _check(errors: list[str], ok: bool, message: str) -> None:
    if not ok:
        errors.append(message)


def _deep_merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) and key != "tags":
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _override_keys(merged: Mapping[str, Any]) -> list[str]:
    keys = list(_TOP_LEVEL)
    for section, cls in _SECTIONS.items():
        keys.extend(f"{section}.{f.name}" for f in dataclasses.fields(cls))
        del section
    return keys


def _build(cls: type[T], raw: Any, section: str, errors: list[str], *, fallback: Any = None) -> T | None:
    """The section's dataclass; a value that cannot be read is reported and replaced by its default (from
    ``fallback``), so the section's other rules still run. None when the section cannot be built at all."""
    if not isinstance(raw, Mapping):
        errors.append(f"{section}: missing section")
        return None
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    for unknown in sorted(set(raw) - names):
        errors.append(f"{section}.{unknown}: unknown setting")
    values: dict[str, Any] = {}
    before = len(errors)
    for name in sorted(names):
        optional = type(None) in typing.get_args(hints[name])
        if name not in raw and not optional:  # CDK drops null context values, so a missing optional is None
            errors.append(f"{section}.{name}: missing (add it to cdk.json 'defaults')")
            continue
        field_errors: list[str] = []
        values[name] = _coerce(hints[name], raw.get(name), f"{section}.{name}", field_errors)
        if field_errors:
            errors.extend(field_errors)
            default = fallback.get(name) if isinstance(fallback, Mapping) else None
            values[name] = _coerce(hints[name], default, f"{section}.{name}", []) if default is not None else None
            if values[name] is None and not optional:
                return None
    if len(errors) > before and any(n not in values for n in names):
        return None
    return cls(**values)


def _coerce(tp: Any, value: Any, key: str, errors: list[str]) -> Any:
    """Turn a JSON or command-line string value into the declared type; note a problem and return None if not."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        if value is None or value == "" or value == "null":
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _coerce(inner, value, key, errors)
    if value is None:
        errors.append(f"{key}: required")
        return None
    converter = _CONVERTERS.get(origin or tp)
    try:
        if converter is not None:
            return converter(value, args)
        if isinstance(tp, type) and issubclass(tp, StrEnum):
            return tp(str(value))
    except (ValueError, TypeError) as exc:
        allowed = (
            f" (one of: {', '.join(m.value for m in tp)})" if isinstance(tp, type) and issubclass(tp, StrEnum) else ""
        )
        errors.append(f"{key}: {exc}{allowed}")
        return None
    raise TypeError(f"no converter for {tp}")  # a programming error, not a config error


def _to_bool(value: Any, _: tuple[Any, ...]) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"expected true or false, got {value!r}")


def _to_int(value: Any, _: tuple[Any, ...]) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"expected an integer, got {value!r}")
    return int(value)


def _to_float(value: Any, _: tuple[Any, ...]) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


def _to_str(value: Any, _: tuple[Any, ...]) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value


def _to_tuple(value: Any, _: tuple[Any, ...]) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a list of strings, got {value!r}")
    return tuple(value)


def _to_dict(value: Any, _: tuple[Any, ...]) -> dict[str, str]:
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError(f"expected a mapping of strings, got {value!r}")
    return dict(value)


def _to_path(value: Any, _: tuple[Any, ...]) -> Path:
    path = Path(_to_str(value, ()))
    return path if path.is_absolute() else PROJECT_ROOT / path


_CONVERTERS: dict[Any, Callable[[Any, tuple[Any, ...]], Any]] = {
    bool: _to_bool,
    int: _to_int,
    float: _to_float,
    str: _to_str,
    tuple: _to_tuple,
    dict: _to_dict,
    Path: _to_path,
}


class _DictContext:
    """A ContextSource over a plain dict (for the command-line check and tests)."""

    def __init__(self, context: Mapping[str, Any]) -> None:
        self._context = context

    def try_get_context(self, key: str) -> Any:
        return self._context.get(key)


def context_from_cdk_json(
    overrides: Mapping[str, Any] | None = None, *, path: Path = PROJECT_ROOT / "cdk.json"
) -> dict[str, Any]:
    """The context the CDK CLI would pass: cdk.json's ``context`` plus ``-c`` style overrides."""
    context: dict[str, Any] = dict(json.loads(path.read_text())["context"])
    context.update(overrides or {})
    return context


def main(argv: Sequence[str]) -> int:
    """``python -m infra.config [-c key=value ...]``: validate a configuration offline and print it."""
    overrides: dict[str, str] = {}
    args = list(argv)
    while args:
        flag = args.pop(0)
        if flag not in ("-c", "--context") or not args or "=" not in args[0]:
            print("usage: python -m infra.config [-c key=value ...]", file=sys.stderr)
            return 2
        key, _, value = args.pop(0).partition("=")
        overrides[key] = value
    try:
        cfg = load_config(_DictContext(context_from_cdk_json(overrides)))
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(json.dumps(dataclasses.asdict(cfg), indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

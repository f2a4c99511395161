"""What makes a configuration deployable: every rule of every section, each problem named after its setting.

Each function returns the problems of one part (empty when it is fine); :func:`problems` runs them all, skipping a
part that could not be read at all, so one run lists everything. The JWT rules are the identity contract's
(:func:`memory_adapter.identity.settings.jwt_settings_problems`, the same the agent and the Hindsight extension
apply); this module adds only what the deployment needs beyond them (an https issuer, claim names AgentCore and
CloudFormation accept).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from hindsight_isolation.settings import MAX_EXPIRY_GRACE_S
from infra.agent_code import agent_code_problems
from infra.agentcore_zones import SOURCE as AGENTCORE_ZONES_SOURCE
from infra.agentcore_zones import supported_az_ids
from infra.config.model import (
    ENDPOINT_NAMES,
    LOG_RETENTION_DAYS,
    SUPPORTED_KUBERNETES_VERSIONS,
    AgentConfig,
    AlarmsConfig,
    AuthConfig,
    AuthMode,
    DatabaseConfig,
    EksConfig,
    EventsConfig,
    GatewayConfig,
    HindsightConfig,
    ImageSource,
    LayerConfig,
    LlmProvider,
    NetworkConfig,
    OperationsConfig,
    Platform,
    RetainQueueConfig,
    VpcMode,
)
from memory_adapter.config import read_settings
from memory_adapter.gateway import MAX_TOOL_NAME_CHARS, prefixed_tool_name
from memory_adapter.identity.settings import DISCOVERY_SUFFIX, jwt_settings_problems
from memory_adapter.settings_reader import Naming, SettingsReader, out_of_range
from memory_adapter.tools.specs import TOOL_NAMES

#: How the identity contract names the ``auth`` section's JWT settings: ``cdk.json`` keys, "auth.<key>" in messages.
AUTH_NAMING = Naming(seconds="_seconds", shown_prefix="auth.")

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
_INSTANCE_TYPE = re.compile(r"^[a-z0-9]+\.[a-z0-9]+$")
#: EventBridge schedule expressions: ``rate(<n> <unit>)`` or a six-field ``cron(...)``.
_RATE = re.compile(r"^rate\((1 (minute|hour|day)|([2-9]|[1-9]\d+) (minutes|hours|days))\)$")
_CRON = re.compile(r"^cron\(\S+( \S+){5}\)$")
#: A PostgreSQL schema Hindsight may use (the maintenance task's rule: letters, digits, underscores).
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
#: AgentCore's names of gateways (at most 48) and gateway targets: letters and digits, a hyphen only after one. A
#: gateway's in lower case only: AgentCore forms its id and ARN in lower case, and the role's trust condition is built
#: from the name (``infra/constructs/memory_gateway.py``).
_GATEWAY_NAME = re.compile(r"^([0-9a-z]-?){1,48}$")
_TARGET_NAME = re.compile(r"^([0-9a-zA-Z]-?){1,100}$")
#: Fargate's CPU units -> the memory sizes (MiB) it allows with them.
FARGATE_CPU_MEMORY = {
    256: range(512, 2049, 512),
    512: range(1024, 4097, 1024),
    1024: range(2048, 8193, 1024),
    2048: range(4096, 16385, 1024),
    4096: range(8192, 30721, 1024),
}


def problems(env_name: str, top: Mapping[str, Any] | None, sections: Mapping[str, Any]) -> list[str]:
    """The problems of every part that was read (None marks a part that could not be read)."""
    errors: list[str] = []
    _require(
        errors, bool(_ENV_NAME.match(env_name)), f"env '{env_name}' must be lowercase letters and digits, at most 12"
    )
    region = top.get("region") if top is not None else None
    auth = sections.get("auth")
    if top is not None:
        errors.extend(top_level_problems(top))
    part_rules: dict[str, Any] = {
        "network": lambda n: network_problems(n, region),
        "auth": auth_problems,
        "agent": agent_problems,
        "layer": layer_problems,
        "retain_queue": retain_queue_problems,
        "hindsight": lambda h: external_problems(h, auth, region) if h.external else hindsight_problems(h),
        "database": database_problems,
        "gateway": lambda g: gateway_problems(g, auth.mode if auth is not None else None),
        "alarms": alarms_problems,
        "operations": operations_problems,
        "events": events_problems,
    }
    for name, rule in part_rules.items():
        if sections.get(name) is not None:
            errors.extend(rule(sections[name]))
    if sections.get("agent") is not None and sections.get("missions") is not None:
        agent_name = sections["agent"].name
        errors.extend(
            f"missions.{name} names no agent of this deployment (agent.name is {agent_name!r}): fix its spelling"
            for name in sorted(sections["missions"].missions.by_agent)
            if name != agent_name
        )
    if sections.get("agent") is not None and sections.get("gateway") is not None:
        errors.extend(
            agent_gateway_problems(sections["agent"], sections["gateway"], auth.mode if auth is not None else None)
        )
    hindsight, network = sections.get("hindsight"), sections.get("network")
    events = sections.get("events")
    _require(
        errors,
        not (hindsight is not None and hindsight.external and events is not None and events.enabled),
        "events.enabled needs hindsight.mode=managed: memory events come from the isolation extension in the "
        "Hindsight this stack runs (see docs/events.md); unset one of them",
    )
    fading = sections.get("fading")
    _require(
        errors,
        not (hindsight is not None and hindsight.external and fading is not None and fading.enabled),
        "fading.enabled needs hindsight.mode=managed: fading runs in the isolation extension of the Hindsight this "
        "stack runs; configure it on your own server (docs/operating.md#fading-and-reinforcement) and unset it here",
    )
    if network is not None and hindsight is not None and not network.optional_endpoints:
        _require(
            errors,
            not hindsight.external,
            "network.optional_endpoints=false applies to hindsight.mode=managed only: the external-mode probe "
            "publishes its result to CloudWatch's API (the Monitoring endpoint)",
        )
    if sections.get("eks") is not None and hindsight is not None:
        errors.extend(eks_problems(sections["eks"], hindsight, network.mode if network is not None else None))
    return errors


def top_level_problems(top: Mapping[str, Any]) -> list[str]:
    """``prefix``, ``account``, ``region`` and ``tags``."""
    errors: list[str] = []
    prefix, account, region, tags = top["prefix"], top["account"], top["region"], top["tags"]
    if prefix is not None:
        _require(errors, bool(_PREFIX.match(prefix)), "prefix must be PascalCase letters and digits, at most 24")
    _require(errors, account is None or bool(_ACCOUNT.match(account)), "account must be 12 digits (or null)")
    if region is not None:
        _require(errors, bool(_REGION.match(region)), "region must be an AWS region like us-east-1")
    for key, value in (tags or {}).items():
        _require(errors, 0 < len(key) <= 128 and not key.startswith("aws:"), f"tags: '{key}' is not a usable tag key")
        _require(errors, len(value) <= 256, f"tags: the value of '{key}' must be at most 256 characters")
    return errors


def network_problems(n: NetworkConfig, region: str | None) -> list[str]:
    """The VPC (created or imported) and, when the region is known, its zones against AgentCore's."""
    errors: list[str] = []
    _retention(errors, "network.flow_log_retention_days", n.flow_log_retention_days)
    if n.mode is VpcMode.CREATE:
        errors.extend(_created_network_problems(n))
    else:
        errors.extend(_imported_network_problems(n))
    if region is not None:
        errors.extend(_az_support_problems(n, region))
    errors.extend(_lean_endpoint_problems(n))
    return errors


def _lean_endpoint_problems(n: NetworkConfig) -> list[str]:
    """The lean dev option: endpoints in fewer zones, the optional ones left out (only where endpoints are created)."""
    errors: list[str] = []
    zones = len(n.az_ids) if n.mode is VpcMode.CREATE else len(n.subnet_ids)
    if n.endpoint_az_count is not None:
        _require(
            errors,
            1 <= n.endpoint_az_count <= zones,
            f"network.endpoint_az_count must be null (every zone) or 1 to {zones} (the zones of the subnets)",
        )
    _require(
        errors,
        n.create_endpoints or (n.endpoint_az_count is None and n.optional_endpoints),
        "network.endpoint_az_count and network.optional_endpoints apply only with create_endpoints=true",
    )
    return errors


def _created_network_problems(n: NetworkConfig) -> list[str]:
    errors: list[str] = []
    _require(errors, bool(_CIDR.match(n.cidr)), "network.cidr must be an IPv4 CIDR between /16 and /28")
    _require(errors, len(n.az_ids) == 2, "network.az_ids must be exactly two AgentCore-supported AZ ids (use1-az1)")
    _az_id_format(errors, "network.az_ids", n.az_ids)
    _require(errors, len(set(n.az_ids)) == len(n.az_ids), "network.az_ids must be distinct")
    _require(
        errors, n.create_endpoints, "network.create_endpoints must be true: a created VPC has no egress and needs them"
    )
    _require(
        errors,
        not n.skip_endpoints,
        "network.skip_endpoints applies to an imported VPC only (a created VPC has no endpoints of its own)",
    )
    return errors


def _imported_network_problems(n: NetworkConfig) -> list[str]:
    errors: list[str] = []
    _require(errors, n.vpc_id is not None and bool(_VPC_ID.match(n.vpc_id)), "network.vpc_id must be like vpc-0123abcd")
    _require(
        errors, n.vpc_cidr is not None and bool(_CIDR.match(n.vpc_cidr)), "network.vpc_cidr must be the VPC's CIDR"
    )
    _require(errors, len(n.subnet_ids) >= 2, "network.subnet_ids must name at least two private subnets in two AZs")
    _each_matches(errors, "network.subnet_ids", n.subnet_ids, _SUBNET_ID, "a subnet id")
    _require(
        errors,
        len(n.availability_zones) == len(n.subnet_ids),
        "network.availability_zones must give one AZ name per subnet id, in the same order",
    )
    _each_matches(errors, "network.availability_zones", n.availability_zones, _AZ_NAME, "an AZ name")
    _require(errors, len(set(n.availability_zones)) >= 2, "network.availability_zones must hold two distinct AZs")
    if n.route_table_ids:
        _require(
            errors,
            len(n.route_table_ids) == len(n.subnet_ids),
            "network.route_table_ids must give one route table id per subnet id, in the same order",
        )
        _each_matches(errors, "network.route_table_ids", n.route_table_ids, _ROUTE_TABLE_ID, "a route table id")
    _require(
        errors,
        len(n.az_ids) == len(n.subnet_ids),
        "network.az_ids must give the AZ id of each subnet, in the same order (aws ec2 describe-subnets "
        "--subnet-ids ... --query 'Subnets[].AvailabilityZoneId'); they are checked against AgentCore's zones",
    )
    _az_id_format(errors, "network.az_ids", n.az_ids)
    needs_route_tables = n.create_endpoints and "S3" not in n.skip_endpoints
    _require(
        errors,
        not needs_route_tables or bool(n.route_table_ids),
        "network.route_table_ids is required with create_endpoints (the S3 gateway endpoint attaches to them)",
    )
    for name in n.skip_endpoints:
        _require(
            errors,
            name in ENDPOINT_NAMES,
            f"network.skip_endpoints: '{name}' is not an endpoint of this stack (one of: {', '.join(ENDPOINT_NAMES)})",
        )
    _require(
        errors,
        n.create_endpoints or not n.skip_endpoints,
        "network.skip_endpoints applies only with create_endpoints=true (false already skips every endpoint)",
    )
    return errors


def _az_support_problems(n: NetworkConfig, region: str) -> list[str]:
    """Subnets only in zones AgentCore supports (AZ *ids*: names map to different zones in every account)."""
    errors: list[str] = []
    _az_id_format(errors, "network.supported_az_ids", n.supported_az_ids)
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


def auth_problems(a: AuthConfig) -> list[str]:
    """Caller authentication; with ``mode=jwt`` the identity contract's token rules, plus the deployment's own."""
    errors: list[str] = []
    _require(errors, bool(_CLAIM.match(a.user_claim)), "auth.user_claim must be a claim name like sub")
    _require(
        errors, a.tenant_claim is None or bool(_CLAIM.match(a.tenant_claim)), "auth.tenant_claim must be a claim name"
    )
    _bounded(errors, "auth.jwks_refresh_minutes", a.jwks_refresh_minutes, low=5, high=1440)
    _bounded(errors, "auth.retain_grace_seconds", a.grace_seconds, low=0, high=MAX_EXPIRY_GRACE_S)
    if a.mode is AuthMode.JWT:
        values = dataclasses.asdict(a)
        if a.discovery_url is None:
            # The contract also accepts an issuer with a JWKS URL, a static JWKS or a parameter; the deployment
            # mirrors the keys from the discovery document, so it needs exactly that (a placeholder lets the
            # contract check the other settings in the same run).
            errors.append(
                "auth.discovery_url is required with auth.mode=jwt: your issuer's "
                "https://.../.well-known/openid-configuration"
            )
            values["discovery_url"] = f"https://issuer.invalid{DISCOVERY_SUFFIX}"
        errors.extend(jwt_settings_problems(values, AUTH_NAMING))
        # AgentCore's authorizer and the key mirror fetch the discovery document over the internet: https only.
        _require(
            errors,
            not (a.discovery_url or "").startswith("http://"),
            "auth.discovery_url must be an https URL (AgentCore and the key mirror fetch it over the internet)",
        )
    else:
        _require(errors, a.discovery_url is None, "auth.discovery_url is used only with auth.mode=jwt (leave it null)")
    if a.mode is AuthMode.IAM:
        _require(errors, a.tenant_claim is None, "auth.tenant_claim: IAM callers carry no claims; use auth.tenant_id")
    return errors


def agent_problems(a: AgentConfig) -> list[str]:
    """The AgentCore Runtime agent."""
    errors: list[str] = []
    _require(
        errors, bool(_AGENT_NAME.match(a.name)), "agent.name must be lowercase letters, digits and '-', at most 31"
    )
    _require(errors, 0 < len(a.model_id) <= 200 and " " not in a.model_id, "agent.model_id must be a Bedrock model id")
    _bounded(errors, "agent.idle_timeout_seconds", a.idle_timeout_seconds, low=60, high=28800)
    _require(
        errors,
        a.idle_timeout_seconds <= a.max_lifetime_seconds <= 28800,
        "agent.max_lifetime_seconds must be between agent.idle_timeout_seconds and 28800",
    )
    _retention(errors, "agent.log_retention_days", a.log_retention_days)
    errors.extend(agent_code_problems(project=a.project, entrypoint=a.entrypoint))
    errors.extend(_memory_setting_problems(a))
    return errors


#: cdk.json ``agent`` key of each memory adapter setting it may give.
_MEMORY_KEYS: Mapping[str, str] = {
    "recall_budget": "recall_budget",
    "recall_max_tokens": "recall_max_tokens",
    "recall_timeout": "recall_timeout_seconds",
}


def _memory_setting_problems(a: AgentConfig) -> list[str]:
    """The memory adapter's own checks of the recall settings the agent is given (its rules, named as in cdk.json)."""
    reader = SettingsReader({})
    read_settings(reader, a.memory_settings, require_url=False)
    named: list[str] = []
    for problem in reader.problems:
        field_name = next((f for f in _MEMORY_KEYS if problem.startswith(f"{f} ")), None)
        named.append(f"agent.{_MEMORY_KEYS[field_name]}{problem[len(field_name) :]}" if field_name else problem)
    return named


def layer_problems(layer: LayerConfig) -> list[str]:
    """The memory-adapter layer."""
    errors: list[str] = []
    _require(
        errors,
        layer.parameter_name is None or bool(_SSM_NAME.match(layer.parameter_name)),
        "layer.parameter_name must be an SSM parameter path like /a/b (or null for the default)",
    )
    return errors


def retain_queue_problems(q: RetainQueueConfig) -> list[str]:
    """The retain queue and its replay function (Lambda's limits; a batch's deliveries must fit an invocation)."""
    errors: list[str] = []
    _bounded(errors, "retain_queue.replay_timeout_seconds", q.replay_timeout_seconds, low=10, high=900)
    _bounded(errors, "retain_queue.delivery_timeout_seconds", q.delivery_timeout_seconds, low=1, high=120)
    _require(
        errors,
        q.delivery_timeout_seconds < q.replay_timeout_seconds,
        "retain_queue.delivery_timeout_seconds must be less than retain_queue.replay_timeout_seconds",
    )
    _bounded(errors, "retain_queue.batch_size", q.batch_size, low=1, high=100)
    _bounded(errors, "retain_queue.max_concurrency", q.max_concurrency, low=2, high=1000)
    _bounded(errors, "retain_queue.oldest_message_alarm_minutes", q.oldest_message_alarm_minutes, low=1, high=1440)
    return errors


def hindsight_problems(h: HindsightConfig) -> list[str]:
    """The Hindsight service: image, size, scaling, TLS, LLM."""
    errors: list[str] = []
    given = [
        name
        for name, value in (
            ("external_url", h.external_url),
            ("external_operator_key_secret_arn", h.external_operator_key_secret_arn),
            ("external_agent_key_secret_arn", h.external_agent_key_secret_arn),
            ("external_secrets_key_arn", h.external_secrets_key_arn),
            ("external_egress_cidrs", h.external_egress_cidrs or None),
        )
        if value is not None
    ]
    _require(
        errors,
        not given,
        f"hindsight.{', hindsight.'.join(given)}: used only with hindsight.mode=external; set the mode or unset them",
    )
    _require(errors, bool(_IMAGE_TAG.match(h.image_tag)), "hindsight.image_tag must be a pinned version (1.1.0-slim)")
    _require(
        errors,
        "/" in h.image_repository and ":" not in h.image_repository,
        "hindsight.image_repository must be a repository without a tag (the tag is hindsight.image_tag)",
    )
    if h.image_source is ImageSource.ECR:
        _require(
            errors,
            h.ecr_repository_arn is not None
            and h.ecr_repository_arn.startswith("arn:")
            and ":ecr:" in h.ecr_repository_arn,
            "hindsight.ecr_repository_arn must be the ARN of your mirror repository (required with image_source=ecr)",
        )
    _require(
        errors,
        h.cpu in FARGATE_CPU_MEMORY and h.memory_mib in FARGATE_CPU_MEMORY[h.cpu],
        f"hindsight.cpu/memory_mib: {h.cpu}/{h.memory_mib} is not a Fargate size (cpu 256-4096 with its memory sizes)",
    )
    _require(errors, h.memory_mib >= 1024, "hindsight.memory_mib must be at least 1024 (Hindsight needs 0.5-1 GB)")
    _require(
        errors,
        1 <= h.api_min_count <= h.api_max_count <= 50,
        "hindsight.api_min_count/api_max_count must satisfy 1 <= min <= max <= 50",
    )
    _bounded(errors, "hindsight.cpu_target_percent", h.cpu_target_percent, low=10, high=90)
    _bounded(errors, "hindsight.worker_count", h.worker_count, low=1, high=10)
    _bounded(errors, "hindsight.worker_max_slots", h.worker_max_slots, low=1, high=100)
    _bounded(errors, "hindsight.db_pool_max_size", h.db_pool_max_size, low=5, high=200)
    _require(
        errors,
        1024 <= h.port <= 65535,
        "hindsight.port must be between 1024 and 65535 (the container is not root)",
    )
    _require(
        errors,
        h.certificate_arn is None or bool(_ARN.match(h.certificate_arn)),
        "hindsight.certificate_arn must be an ACM certificate ARN",
    )
    _require(
        errors,
        (h.certificate_arn is None) == (h.domain_name is None),
        "hindsight.domain_name goes with certificate_arn (the name the certificate covers): set both or neither",
    )
    _require(
        errors,
        not h.require_tls or (h.certificate_arn is not None and h.domain_name is not None),
        "hindsight.certificate_arn, hindsight.domain_name: required because hindsight.require_tls is true (the "
        "prod default): callers' tokens travel from the agent to Hindsight, so prod refuses plain HTTP. Set an ACM "
        "certificate ARN and the DNS name it covers (the stack creates the private DNS record), or set "
        "hindsight.require_tls=false to accept HTTP inside the VPC",
    )
    _require(
        errors,
        not h.tls_to_tasks or h.certificate_arn is not None,
        "hindsight.tls_to_tasks needs hindsight.certificate_arn and domain_name: encrypting the hop from the load "
        "balancer to the tasks protects nothing while the agent reaches the load balancer over plain HTTP. Set both, "
        "or hindsight.tls_to_tasks=false",
    )
    _require(
        errors,
        h.domain_name is None or bool(_DOMAIN.match(h.domain_name)),
        "hindsight.domain_name must be a DNS name like memory.internal.example.com",
    )
    _require(
        errors,
        h.hosted_zone_id is None or (h.domain_name is not None and bool(_ZONE_ID.match(h.hosted_zone_id))),
        "hindsight.hosted_zone_id must be the id (Z...) of a private hosted zone holding domain_name, or null",
    )
    errors.extend(ca_bundle_problems(h))
    _require(
        errors,
        h.image_digest is None or bool(_DIGEST.match(h.image_digest)),
        "hindsight.image_digest must be sha256:<64 hex digits> (the arm64 image's manifest digest), or null",
    )
    _retention(errors, "hindsight.log_retention_days", h.log_retention_days)
    _require(errors, bool(h.llm_model), "hindsight.llm_model is required")
    _require(
        errors,
        h.embeddings_model.startswith("bedrock/"),
        "hindsight.embeddings_model must be bedrock/<model id> (embeddings run on Bedrock)",
    )
    _require(
        errors,
        bool(_SCHEMA.match(h.database_schema)),
        "hindsight.database_schema must be a PostgreSQL schema name (lowercase letters, digits, _), e.g. public",
    )
    _require(
        errors,
        h.maintenance_embeddings_model is None or h.maintenance_embeddings_model.startswith("bedrock/"),
        "hindsight.maintenance_embeddings_model must be bedrock/<model id> (the model a re-embedding moves to), or "
        "null",
    )
    _require(
        errors,
        h.reranker_model is None or h.reranker_model.startswith("bedrock/"),
        "hindsight.reranker_model must be bedrock/<rerank model id> (e.g. bedrock/amazon.rerank-v1:0), or null",
    )
    if h.llm_provider is LlmProvider.OPENAI:
        _require(
            errors,
            (h.llm_base_url or "").startswith("https://"),
            "hindsight.llm_base_url must be an https URL (required with llm_provider=openai)",
        )
        _require(
            errors,
            h.llm_api_key_secret_arn is None or bool(_ARN.match(h.llm_api_key_secret_arn)),
            "hindsight.llm_api_key_secret_arn must be a Secrets Manager ARN, or null to create an empty secret",
        )
    else:
        _require(errors, h.llm_base_url is None, "hindsight.llm_base_url is used only with llm_provider=openai")
        _require(
            errors,
            h.llm_api_key_secret_arn is None,
            "hindsight.llm_api_key_secret_arn is used only with llm_provider=openai",
        )
    return errors


# --- EKS (issue 25) -------------------------------------------------------------------------------------------------
_EKS_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
_IAM_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
_OIDC_PROVIDER_ARN = re.compile(
    r"^arn:aws[a-z-]*:iam::\d{12}:oidc-provider/oidc\.eks\.[a-z0-9-]+\.amazonaws\.com/id/[0-9A-F]{8,64}$"
)
_SECURITY_GROUP_ID = re.compile(r"^sg-[0-9a-f]{8,17}$")
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
#: Namespaces Hindsight must not share: Kubernetes' and EKS's own.
_RESERVED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease", "amazon-cloudwatch"})


def eks_problems(e: EksConfig, h: HindsightConfig, network_mode: VpcMode | None) -> list[str]:
    """The ``eks`` section: required (and checked) with ``hindsight.platform=eks``, unused otherwise."""
    errors: list[str] = []
    if h.platform is not Platform.EKS:
        given = [
            name
            for name in (
                "cluster_name",
                "kubernetes_version",
                "kubectl_role_arn",
                "oidc_provider_arn",
                "cluster_security_group_id",
            )
            if getattr(e, name) is not None
        ] + (["pod_identity"] if e.pod_identity else [])
        _require(
            errors,
            not given,
            f"eks.{', eks.'.join(given)}: used only with hindsight.platform=eks; unset them or set the platform",
        )
        return errors
    _require(
        errors,
        network_mode is not VpcMode.CREATE,
        "hindsight.platform=eks needs network.mode=import with the cluster's VPC (a created VPC holds no cluster)",
    )
    _require(
        errors,
        e.cluster_name is not None and bool(_EKS_CLUSTER_NAME.match(e.cluster_name)),
        "eks.cluster_name must name your existing EKS cluster (required with hindsight.platform=eks)",
    )
    _require(
        errors,
        e.kubernetes_version in SUPPORTED_KUBERNETES_VERSIONS,
        f"eks.kubernetes_version must be your cluster's version, one of {', '.join(SUPPORTED_KUBERNETES_VERSIONS)}"
        f" (got {e.kubernetes_version}): upgrade the cluster or run Hindsight on ECS",
    )
    _require(
        errors,
        e.kubectl_role_arn is not None and bool(_IAM_ROLE_ARN.match(e.kubectl_role_arn)),
        "eks.kubectl_role_arn must be the ARN of an IAM role with cluster-admin access to the cluster (an access "
        "entry with AmazonEKSClusterAdminPolicy), which applies the manifests",
    )
    _require(
        errors,
        (e.oidc_provider_arn is None) == e.pod_identity,
        "eks.oidc_provider_arn (IRSA) or eks.pod_identity=true (EKS Pod Identity): set exactly one, for the pods' "
        "AWS role",
    )
    _require(
        errors,
        e.oidc_provider_arn is None or bool(_OIDC_PROVIDER_ARN.match(e.oidc_provider_arn)),
        "eks.oidc_provider_arn must be the cluster's IAM OIDC provider ARN "
        "(arn:aws:iam::<account>:oidc-provider/oidc.eks.<region>.amazonaws.com/id/<id>)",
    )
    _require(
        errors,
        bool(_K8S_NAME.match(e.namespace)) and e.namespace not in _RESERVED_NAMESPACES,
        f"eks.namespace must be a namespace name of its own (lowercase, digits, -), not {e.namespace!r}",
    )
    _require(
        errors,
        e.cluster_security_group_id is not None and bool(_SECURITY_GROUP_ID.match(e.cluster_security_group_id)),
        "eks.cluster_security_group_id must be the cluster security group EKS created (sg-...; aws eks "
        "describe-cluster: resourcesVpcConfig.clusterSecurityGroupId)",
    )
    return errors


# --- end EKS -------------------------------------------------------------------------------------------------------


#: Largest ``hindsight.ca_bundle``: it travels in each client's environment, and a Lambda function's whole
#: environment must fit 4 KB (a private root CA certificate is 0.6-2 KB).
MAX_CA_BUNDLE_BYTES = 2500


# --- external Hindsight (issue 24) ----------------------------------------------------------------------------------
#: A complete Secrets Manager ARN (with the 6-character suffix AWS appends), so a grant names exactly that secret.
_SECRET_ARN = re.compile(
    r"^arn:aws[a-z-]*:secretsmanager:(?P<region>[a-z]{2}(-[a-z]+)+-\d):\d{12}:secret:[\w/+=.@-]{1,512}-[A-Za-z0-9]{6}$"
)
_KMS_KEY_ARN = re.compile(r"^arn:aws[a-z-]*:kms:(?P<region>[a-z]{2}(-[a-z]+)+-\d):\d{12}:key/[0-9a-f-]{36}$")
_HOST = re.compile(
    r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
#: Managed-only settings an external deployment must leave at their defaults (they would build nothing).
_MANAGED_ONLY = ("certificate_arn", "domain_name", "hosted_zone_id")


def external_problems(h: HindsightConfig, auth: AuthConfig | None, region: str | None) -> list[str]:
    """``hindsight.mode=external``: the URL (scheme, host, port), the secrets' ARNs and region, the egress CIDRs.

    What synthesis cannot see (the route from the isolated subnets, the server's extension) the deploy-time
    isolation probe checks.
    """
    errors: list[str] = []
    errors.extend(_external_url_problems(h))
    _require(
        errors,
        h.platform is Platform.ECS,
        "hindsight.platform=eks builds Hindsight on your cluster: with hindsight.mode=external unset it",
    )
    given = [name for name in _MANAGED_ONLY if getattr(h, name) is not None]
    _require(
        errors,
        not given,
        f"hindsight.{', hindsight.'.join(given)}: used only with hindsight.mode=managed (an external server brings "
        "its own certificate; give its private CA as hindsight.ca_bundle)",
    )
    errors.extend(
        _secret_arn_problems(
            "hindsight.external_operator_key_secret_arn", h.external_operator_key_secret_arn, region, required=True
        )
    )
    iam_mode = auth is not None and auth.mode is AuthMode.IAM
    if iam_mode:
        errors.extend(
            _secret_arn_problems(
                "hindsight.external_agent_key_secret_arn", h.external_agent_key_secret_arn, region, required=True
            )
        )
    else:
        _require(
            errors,
            h.external_agent_key_secret_arn is None,
            "hindsight.external_agent_key_secret_arn is used only with auth.mode=iam (with user tokens the agent "
            "forwards the caller's token and holds no key): unset it",
        )
    key = h.external_secrets_key_arn
    if key is not None:
        match = _KMS_KEY_ARN.match(key)
        _require(
            errors,
            match is not None,
            "hindsight.external_secrets_key_arn must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>), or "
            "null for the aws/secretsmanager key",
        )
        _require(
            errors,
            match is None or region is None or match["region"] == region,
            f"hindsight.external_secrets_key_arn is in another region than region={region}: use the key of the "
            "secrets in this region",
        )
    for cidr in h.external_egress_cidrs:
        try:
            network = ipaddress.ip_network(cidr, strict=True)
        except ValueError:
            errors.append(f"hindsight.external_egress_cidrs: {cidr!r} is not an IPv4 CIDR like 10.50.0.0/16")
            continue
        _require(
            errors,
            network.version == 4 and network.prefixlen >= 8 and not network.is_loopback and not network.is_link_local,
            f"hindsight.external_egress_cidrs: {cidr} must be an IPv4 range of at most /8 where the endpoint's "
            "addresses are (not 0.0.0.0/0, loopback or link-local)",
        )
    errors.extend(ca_bundle_problems(h, external=True))
    return errors


def _external_url_problems(h: HindsightConfig) -> list[str]:
    """Scheme (https unless ``external_allow_http``), host, port; no credentials, query or fragment."""
    url = h.external_url
    if not url:
        return [
            "hindsight.external_url is required with hindsight.mode=external: your Hindsight's base URL, "
            "e.g. https://memory.internal.example.com"
        ]
    parts = urllib.parse.urlsplit(url)
    errors: list[str] = []
    if parts.scheme == "http":
        _require(
            errors,
            h.external_allow_http,
            f"hindsight.external_url {url} is plain http: tokens and keys would cross the network in clear; use "
            "https, or set hindsight.external_allow_http=true for a development server",
        )
    elif parts.scheme != "https":
        errors.append(f"hindsight.external_url {url} must start with https:// (the server's base URL)")
        return errors
    try:
        port = parts.port
    except ValueError:
        return [f"hindsight.external_url {url} has a port that is not a number from 1 to 65535"]
    host = parts.hostname or ""
    _require(
        errors,
        bool(_HOST.match(host)) or _is_ip(host),
        f"hindsight.external_url {url} needs a host name (memory.internal.example.com) or an IPv4 address",
    )
    if _is_ip(host):
        address = ipaddress.ip_address(host)
        _require(
            errors,
            not (address.is_loopback or address.is_link_local or address.is_unspecified),
            f"hindsight.external_url {url}: {host} is not reachable from the isolated subnets (loopback, "
            "link-local or unspecified)",
        )
    _require(errors, host != "localhost", f"hindsight.external_url {url}: localhost is not reachable from AWS")
    _require(errors, port is None or port > 0, f"hindsight.external_url {url} has port 0")
    _require(
        errors,
        not (parts.username or parts.password or parts.query or parts.fragment),
        f"hindsight.external_url {url} must hold no credentials, query or fragment (keys come from Secrets Manager)",
    )
    return errors


def _is_ip(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 4
    except ValueError:
        return False


def _secret_arn_problems(name: str, arn: str | None, region: str | None, *, required: bool) -> list[str]:
    if arn is None:
        return (
            [f"{name} is required with hindsight.mode=external: the complete ARN of the secret holding the key"]
            if required
            else []
        )
    match = _SECRET_ARN.match(arn)
    if match is None:
        return [
            f"{name} must be a complete Secrets Manager ARN (arn:aws:secretsmanager:<region>:<account>:secret:"
            "<name>-<6 characters>; aws secretsmanager describe-secret shows it)"
        ]
    if region is not None and match["region"] != region:
        return [f"{name} is in {match['region']}, the deployment in {region}: replicate the secret to {region}"]
    return []


# --- end external Hindsight -----------------------------------------------------------------------------------------


def ca_bundle_problems(h: HindsightConfig, *, external: bool = False) -> list[str]:
    """``hindsight.ca_bundle``: only with HTTPS, a readable PEM certificate file, small enough for an environment."""
    if h.ca_bundle is None:
        return []
    if external and not (h.external_url or "").startswith("https://"):
        return ["hindsight.ca_bundle is the CA of an https server's certificate: use an https hindsight.external_url"]
    if not external and h.certificate_arn is None:
        return ["hindsight.ca_bundle goes with certificate_arn (it is the CA of that certificate): set both or neither"]
    try:
        text = h.ca_bundle.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        return [f"hindsight.ca_bundle: cannot read {h.ca_bundle} ({type(exc).__name__}): give the CA's PEM file"]
    if not text.startswith("-----BEGIN CERTIFICATE-----") or "PRIVATE KEY" in text:
        return [f"hindsight.ca_bundle: {h.ca_bundle} is not a PEM certificate file (and must hold no private key)"]
    if len(text) > MAX_CA_BUNDLE_BYTES:
        return [
            f"hindsight.ca_bundle: {len(text)} bytes, at most {MAX_CA_BUNDLE_BYTES} fit a function's environment: "
            "give the root CA certificate only"
        ]
    return []


def database_problems(d: DatabaseConfig) -> list[str]:
    """Hindsight's PostgreSQL."""
    errors: list[str] = []
    _require(errors, bool(_INSTANCE_TYPE.match(d.instance_type)), "database.instance_type must be like t4g.medium")
    _bounded(errors, "database.allocated_storage_gb", d.allocated_storage_gb, low=20, high=65536)
    _require(
        errors,
        d.allocated_storage_gb <= d.max_allocated_storage_gb <= 65536,
        "database.max_allocated_storage_gb must be between allocated_storage_gb and 65536",
    )
    _require(
        errors,
        0 <= d.min_capacity_acu <= d.max_capacity_acu <= 256,
        "database.min_capacity_acu/max_capacity_acu must satisfy 0 <= min <= max <= 256",
    )
    _require(errors, d.max_capacity_acu >= 1, "database.max_capacity_acu must be at least 1")
    _bounded(errors, "database.backup_retention_days", d.backup_retention_days, low=1, high=35)
    _require(
        errors,
        bool(_CRON.match(d.backup_plan_schedule)),
        "database.backup_plan_schedule must be an AWS Backup cron expression like cron(0 5 * * ? *) (UTC)",
    )
    _bounded(errors, "database.backup_plan_retention_days", d.backup_plan_retention_days, low=1, high=36500)
    _bounded(errors, "database.rotation_days", d.rotation_days, low=1, high=365)
    _bounded(errors, "database.port", d.port, low=1150, high=65535)
    return errors


def gateway_problems(g: GatewayConfig, auth_mode: AuthMode | None) -> list[str]:
    """The AgentCore Gateway: names AgentCore accepts, tool names models accept, a user-token issuer."""
    errors: list[str] = []
    if g.name is not None:
        _require(
            errors,
            len(g.name) <= 48 and bool(_GATEWAY_NAME.match(g.name)),
            "gateway.name must be at most 48 lower-case letters, digits and single hyphens (no leading hyphen; its ARN "
            "is lower case), or null",
        )
    _require(
        errors,
        bool(_TARGET_NAME.match(g.target_name)),
        "gateway.target_name must be letters, digits and single hyphens (no leading hyphen), like memory",
    )
    longest = max(TOOL_NAMES, key=len)
    _require(
        errors,
        len(prefixed_tool_name(g.target_name, longest)) <= MAX_TOOL_NAME_CHARS,
        f"gateway.target_name is too long: clients see '{prefixed_tool_name(g.target_name, longest)}', and model "
        f"providers refuse tool names over {MAX_TOOL_NAME_CHARS} characters",
    )
    if g.enabled and auth_mode is AuthMode.IAM:
        errors.append(
            "gateway.enabled=true: the gateway's tools act for the user a verified token names, and auth.mode=iam "
            "has no user tokens; leave gateway.enabled null (no gateway with iam) or use auth.mode=cognito or jwt"
        )
    return errors


def agent_gateway_problems(a: AgentConfig, g: GatewayConfig, auth_mode: AuthMode | None) -> list[str]:
    """The agent's tools can go through the gateway only if there is one."""
    errors: list[str] = []
    if a.tools_via_gateway and (g.enabled is False or auth_mode is AuthMode.IAM):
        errors.append(
            "agent.tools_via_gateway needs the memory gateway, which this configuration does not have "
            "(gateway.enabled=false, or auth.mode=iam); set agent.tools_via_gateway=false"
        )
    if a.tools_via_gateway and a.project is not None:
        errors.append(
            "agent.tools_via_gateway applies to the reference agent, whose tools read the gateway's URL; an agent "
            "project (agent.project) connects to the gateway itself: set agent.tools_via_gateway=false"
        )
    return errors


def alarms_problems(a: AlarmsConfig) -> list[str]:
    """Where the alarms notify."""
    errors: list[str] = []
    _require(errors, a.email is None or bool(_EMAIL.match(a.email)), "alarms.email must be an e-mail address (or null)")
    return errors


def operations_problems(o: OperationsConfig) -> list[str]:
    """The admin functions' schedules and the administration bucket's lifecycle."""
    errors: list[str] = []
    for name, expression in (("expiry_schedule", o.expiry_schedule), ("backup_schedule", o.backup_schedule)):
        _require(
            errors,
            bool(_RATE.match(expression) or _CRON.match(expression)),
            f"operations.{name} must be an EventBridge schedule: rate(1 hour), rate(6 hours) or cron(0 3 * * ? *)",
        )
    _bounded(errors, "operations.expiry_batch_size", o.expiry_batch_size, low=1, high=10_000)
    _bounded(errors, "operations.logical_backup_retention_days", o.logical_backup_retention_days, low=1, high=3650)
    _bounded(errors, "operations.export_retention_days", o.export_retention_days, low=1, high=3650)
    _retention(errors, "operations.audit_log_retention_days", o.audit_log_retention_days)
    return errors


def events_problems(e: EventsConfig) -> list[str]:
    """The memory events: text only with events on, the archive's and the audit log's retention."""
    errors: list[str] = []
    _require(
        errors,
        e.enabled or not e.include_text,
        "events.include_text needs events.enabled=true (there are no events to carry text): enable both or neither",
    )
    if e.archive_retention_days != 0:
        _bounded(errors, "events.archive_retention_days", e.archive_retention_days, low=1, high=36_500)
    _retention(errors, "events.audit_log_retention_days", e.audit_log_retention_days)
    return errors


def _require(errors: list[str], ok: bool, message: str) -> None:
    if not ok:
        errors.append(message)


def _bounded(errors: list[str], name: str, value: float, *, low: float, high: float) -> None:
    problem = out_of_range(name, value, low=low, high=high)
    if problem is not None:
        errors.append(problem)


def _each_matches(errors: list[str], name: str, values: tuple[str, ...], pattern: re.Pattern[str], what: str) -> None:
    for value in values:
        _require(errors, bool(pattern.match(value)), f"{name}: '{value}' is not {what}")


def _az_id_format(errors: list[str], name: str, az_ids: tuple[str, ...]) -> None:
    _each_matches(errors, name, az_ids, _AZ_ID, "an AZ id like use1-az1")


def _retention(errors: list[str], name: str, days: int) -> None:
    allowed = ", ".join(map(str, sorted(LOG_RETENTION_DAYS)))
    _require(errors, days in LOG_RETENTION_DAYS, f"{name} must be one of CloudWatch's retention periods ({allowed})")

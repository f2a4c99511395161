"""The ``hindsight`` section: the Hindsight memory service on ECS Fargate or EKS (``platform``), or the customer's
own (``mode=external``, whose rules are :mod:`infra.config.external`'s); the rules of a managed service here."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from hindsight_isolation.settings import IsolationSettings
from infra.config.checks import bounded, log_retention, require
from memory_adapter.settings_fields import declared


class ImageSource(StrEnum):
    """Where Fargate pulls the Hindsight image from."""

    MIRROR = "mirror"  # copied at deploy time into an ECR repository of this stack (works without egress)
    REGISTRY = "registry"  # pulled straight from the public registry (needs egress: NAT or proxy)
    ECR = "ecr"  # an ECR repository the customer already maintains


class LlmProvider(StrEnum):
    """Hindsight's LLM provider."""

    BEDROCK = "bedrock"  # Amazon Bedrock through the VPC endpoint, credentials from the task role
    OPENAI = "openai"  # any OpenAI-compatible endpoint, key in Secrets Manager (needs egress to reach it)


class Platform(StrEnum):
    """Where Hindsight's containers run."""

    ECS = "ecs"  # ECS Fargate, a cluster of this stack (the default)
    EKS = "eks"  # the customer's existing EKS cluster (the ``eks`` section), manifests applied by this stack


class HindsightMode(StrEnum):
    """Whose Hindsight the agent uses."""

    MANAGED = "managed"  # this app builds it: the -Data and -MemoryService stacks (the default)
    EXTERNAL = "external"  # the customer's, at ``hindsight.external_url``: neither stack is built


class ProbeFailure(StrEnum):
    """What the deploy-time isolation probe does when the external server lets one identity read another's bank."""

    FAIL = "fail"  # the deploy fails (the default)
    WARN = "warn"  # the deploy goes on; the probe logs an ERROR line and its metric alarms


@dataclass(frozen=True)
class HindsightConfig:
    """The Hindsight memory service on ECS Fargate, or on an existing EKS cluster (``platform``)."""

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
    #: Retains one worker runs at once: with a hosted LLM this, not CPU, bounds the write rate (docs/capacity.md).
    worker_max_slots: int
    #: Connections per Hindsight process; the whole fleet's pools must fit the database (docs/capacity.md).
    db_pool_max_size: int
    port: int
    mcp_enabled: bool
    certificate_arn: str | None
    domain_name: str | None
    hosted_zone_id: str | None
    #: PEM file of the private CA that signed ``certificate_arn``'s certificate (ACM Private CA): every client of
    #: Hindsight trusts it besides the default store (``HINDSIGHT_CA_BUNDLE``, memory_adapter.tls). Null: public ACM.
    ca_bundle: Path | None
    require_tls: bool
    #: TLS from the load balancer to the API tasks too (an HTTPS target group; each task serves a self-signed
    #: certificate it makes at start, which the load balancer does not verify); needs ``certificate_arn``.
    tls_to_tasks: bool
    readonly_root_filesystem: bool
    llm_provider: LlmProvider
    llm_model: str
    llm_base_url: str | None
    llm_api_key_secret_arn: str | None
    embeddings_model: str
    log_retention_days: int
    database_schema: str
    maintenance_embeddings_model: str | None
    #: ``bedrock/<rerank model id>`` (``amazon.rerank-v1:0``, ``cohere.rerank-v3-5:0``): Hindsight reranks its
    #: candidates with it (``litellm-sdk``); null: no reranker (``rrf``, fused ranks; docs/deploying.md).
    reranker_model: str | None = None
    #: Largest request body, in MiB, the servers read from anyone but the operator (413 past it, unread); null: the
    #: isolation extension's default, declared once in ``IsolationSettings.max_body_mib`` with its bounds.
    max_body_mib: int | None = None
    #: ECS Fargate (default) or the customer's EKS cluster (the ``eks`` section); issue 25.
    platform: Platform = Platform.ECS
    #: ``external``: the customer's Hindsight at ``external_url`` (issue 24); the settings above then build nothing.
    mode: HindsightMode = HindsightMode.MANAGED
    external_url: str | None = None
    #: Complete Secrets Manager ARNs (with the 6-character suffix): IAM grants name exactly these.
    external_operator_key_secret_arn: str | None = None
    external_agent_key_secret_arn: str | None = None
    #: The customer-managed KMS key the two secrets are encrypted with (null: the aws/secretsmanager key).
    external_secrets_key_arn: str | None = None
    #: Where the endpoint's addresses are (peered VPC, PrivateLink endpoint); empty: the VPC's own CIDR.
    external_egress_cidrs: tuple[str, ...] = ()
    #: Plain HTTP to the external server (development only: keys and memories would cross the network in clear).
    external_allow_http: bool = False
    external_probe: ProbeFailure = ProbeFailure.FAIL

    @property
    def external(self) -> bool:
        """True with ``hindsight.mode=external`` (no -Data or -MemoryService stack)."""
        return self.mode is HindsightMode.EXTERNAL


_IMAGE_TAG = re.compile(r"^\d+\.\d+\.\d+(-[a-z0-9]+)?$")
_ARN = re.compile(r"^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:\d{0,12}:.+$")
_DOMAIN = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")
_ZONE_ID = re.compile(r"^Z[0-9A-Z]{1,31}$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
#: A PostgreSQL schema Hindsight may use (the maintenance task's rule: letters, digits, underscores).
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
#: Fargate's CPU units -> the memory sizes (MiB) it allows with them.
FARGATE_CPU_MEMORY = {
    256: range(512, 2049, 512),
    512: range(1024, 4097, 1024),
    1024: range(2048, 8193, 1024),
    2048: range(4096, 16385, 1024),
    4096: range(8192, 30721, 1024),
}


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
    require(
        errors,
        not given,
        f"hindsight.{', hindsight.'.join(given)}: used only with hindsight.mode=external; set the mode or unset them",
    )
    require(errors, bool(_IMAGE_TAG.match(h.image_tag)), "hindsight.image_tag must be a pinned version (1.1.0-slim)")
    require(
        errors,
        "/" in h.image_repository and ":" not in h.image_repository,
        "hindsight.image_repository must be a repository without a tag (the tag is hindsight.image_tag)",
    )
    if h.image_source is ImageSource.ECR:
        require(
            errors,
            h.ecr_repository_arn is not None
            and h.ecr_repository_arn.startswith("arn:")
            and ":ecr:" in h.ecr_repository_arn,
            "hindsight.ecr_repository_arn must be the ARN of your mirror repository (required with image_source=ecr)",
        )
    require(
        errors,
        h.cpu in FARGATE_CPU_MEMORY and h.memory_mib in FARGATE_CPU_MEMORY[h.cpu],
        f"hindsight.cpu/memory_mib: {h.cpu}/{h.memory_mib} is not a Fargate size (cpu 256-4096 with its memory sizes)",
    )
    require(errors, h.memory_mib >= 1024, "hindsight.memory_mib must be at least 1024 (Hindsight needs 0.5-1 GB)")
    require(
        errors,
        1 <= h.api_min_count <= h.api_max_count <= 50,
        "hindsight.api_min_count/api_max_count must satisfy 1 <= min <= max <= 50",
    )
    bounded(errors, "hindsight.cpu_target_percent", h.cpu_target_percent, low=10, high=90)
    bounded(errors, "hindsight.worker_count", h.worker_count, low=1, high=10)
    bounded(errors, "hindsight.worker_max_slots", h.worker_max_slots, low=1, high=100)
    bounded(errors, "hindsight.db_pool_max_size", h.db_pool_max_size, low=5, high=200)
    errors.extend(max_body_problems(h))
    require(
        errors,
        1024 <= h.port <= 65535,
        "hindsight.port must be between 1024 and 65535 (the container is not root)",
    )
    require(
        errors,
        h.certificate_arn is None or bool(_ARN.match(h.certificate_arn)),
        "hindsight.certificate_arn must be an ACM certificate ARN",
    )
    require(
        errors,
        (h.certificate_arn is None) == (h.domain_name is None),
        "hindsight.domain_name goes with certificate_arn (the name the certificate covers): set both or neither",
    )
    require(
        errors,
        not h.require_tls or (h.certificate_arn is not None and h.domain_name is not None),
        "hindsight.certificate_arn, hindsight.domain_name: required because hindsight.require_tls is true (the "
        "prod default): callers' tokens travel from the agent to Hindsight, so prod refuses plain HTTP. Set an ACM "
        "certificate ARN and the DNS name it covers (the stack creates the private DNS record), or set "
        "hindsight.require_tls=false to accept HTTP inside the VPC",
    )
    require(
        errors,
        not h.tls_to_tasks or h.certificate_arn is not None,
        "hindsight.tls_to_tasks needs hindsight.certificate_arn and domain_name: encrypting the hop from the load "
        "balancer to the tasks protects nothing while the agent reaches the load balancer over plain HTTP. Set both, "
        "or hindsight.tls_to_tasks=false",
    )
    require(
        errors,
        h.domain_name is None or bool(_DOMAIN.match(h.domain_name)),
        "hindsight.domain_name must be a DNS name like memory.internal.example.com",
    )
    require(
        errors,
        h.hosted_zone_id is None or (h.domain_name is not None and bool(_ZONE_ID.match(h.hosted_zone_id))),
        "hindsight.hosted_zone_id must be the id (Z...) of a private hosted zone holding domain_name, or null",
    )
    errors.extend(ca_bundle_problems(h))
    require(
        errors,
        h.image_digest is None or bool(_DIGEST.match(h.image_digest)),
        "hindsight.image_digest must be sha256:<64 hex digits> (the arm64 image's manifest digest), or null",
    )
    log_retention(errors, "hindsight.log_retention_days", h.log_retention_days)
    require(errors, bool(h.llm_model), "hindsight.llm_model is required")
    require(
        errors,
        h.embeddings_model.startswith("bedrock/"),
        "hindsight.embeddings_model must be bedrock/<model id> (embeddings run on Bedrock)",
    )
    require(
        errors,
        bool(_SCHEMA.match(h.database_schema)),
        "hindsight.database_schema must be a PostgreSQL schema name (lowercase letters, digits, _), e.g. public",
    )
    require(
        errors,
        h.maintenance_embeddings_model is None or h.maintenance_embeddings_model.startswith("bedrock/"),
        "hindsight.maintenance_embeddings_model must be bedrock/<model id> (the model a re-embedding moves to), or "
        "null",
    )
    require(
        errors,
        h.reranker_model is None or h.reranker_model.startswith("bedrock/"),
        "hindsight.reranker_model must be bedrock/<rerank model id> (e.g. bedrock/amazon.rerank-v1:0), or null",
    )
    if h.llm_provider is LlmProvider.OPENAI:
        require(
            errors,
            (h.llm_base_url or "").startswith("https://"),
            "hindsight.llm_base_url must be an https URL (required with llm_provider=openai)",
        )
        require(
            errors,
            h.llm_api_key_secret_arn is None or bool(_ARN.match(h.llm_api_key_secret_arn)),
            "hindsight.llm_api_key_secret_arn must be a Secrets Manager ARN, or null to create an empty secret",
        )
    else:
        require(errors, h.llm_base_url is None, "hindsight.llm_base_url is used only with llm_provider=openai")
        require(
            errors,
            h.llm_api_key_secret_arn is None,
            "hindsight.llm_api_key_secret_arn is used only with llm_provider=openai",
        )
    return errors


def max_body_problems(h: HindsightConfig) -> list[str]:
    """``hindsight.max_body_mib``: within the bounds the extension itself declares (the setting it becomes)."""
    if h.max_body_mib is None:
        return []
    ((field, declaration),) = [(f, s) for f, s in declared(IsolationSettings) if f.name == "max_body_mib"]
    problem = declaration.out_of_range("hindsight.max_body_mib", h.max_body_mib)
    if problem is None:
        return []
    return [
        f"{problem}: the largest request body, in MiB, Hindsight reads from the agent and users (null: the "
        f"extension's default, {field.default})"
    ]


#: Largest ``hindsight.ca_bundle``: it travels in each client's environment, and a Lambda function's whole
#: environment must fit 4 KB (a private root CA certificate is 0.6-2 KB).
MAX_CA_BUNDLE_BYTES = 2500


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

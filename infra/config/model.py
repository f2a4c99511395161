"""What the deployment's settings are: one frozen dataclass per ``cdk.json`` section, each field a setting.

The field names are the settings' names (``cdk.json`` keys and ``-c section.key=value``); their values come from
``cdk.json`` (``context.defaults``, then ``context.envs.<env>``), read by :mod:`infra.config.loader` and checked by
:mod:`infra.config.rules`. Stacks receive the section they need (``config=cfg.hindsight``), never the whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from hindsight_isolation.fading import DEFAULT_FLOOR, FadingRules
from hindsight_isolation.settings import DEFAULT_EXPIRY_GRACE_S
from infra.agent_code import DEFAULT_PROJECT_ENTRYPOINT, AgentCode, agent_code
from memory_adapter.kinds import MemoryKind, RetentionRules
from memory_adapter.missions import Mission, Missions

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
    "Sqs",
    "CognitoIdp",
    "AgentCoreGateway",
    "Eks",  # hindsight.platform=eks only (the kubectl and restart functions' describe-cluster)
    "EksAuth",  # eks.pod_identity=true only (the pods' credentials through the Pod Identity agent)
)
#: Endpoints no workload of a managed-mode deployment calls (``network.optional_endpoints=false`` leaves them out):
#: CloudWatch's API (metrics go out as log records; only the external-mode probe calls it), X-Ray (nothing in the VPC
#: sends traces: AgentCore delivers the runtime's), KMS (every key is used by the services on the caller's behalf) and
#: Cognito (the signing keys are mirrored to SSM). ``tests/infra/reach_check.py`` checks that every workload of a lean
#: deployment still reaches what it calls.
OPTIONAL_ENDPOINTS = ("Monitoring", "XRay", "Kms", "CognitoIdp")
#: The retention periods CloudWatch Logs accepts, in days.
LOG_RETENTION_DAYS = frozenset(
    {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)


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


# --- EKS (issue 25) -------------------------------------------------------------------------------------------------
class Platform(StrEnum):
    """Where Hindsight's containers run."""

    ECS = "ecs"  # ECS Fargate, a cluster of this stack (the default)
    EKS = "eks"  # the customer's existing EKS cluster (the ``eks`` section), manifests applied by this stack


#: The Kubernetes minor versions the manifests are validated against (tests/infra/test_eks.py, kubernetes-validate)
#: and the kubectl layer (1.34, which supports its own minor version +/- 1) may talk to.
SUPPORTED_KUBERNETES_VERSIONS = ("1.33", "1.34", "1.35")


@dataclass(frozen=True)
class EksConfig:
    """The customer's EKS cluster Hindsight runs on with ``hindsight.platform=eks`` (the stack does not create it).

    ``kubectl_role_arn``: a role with cluster-admin access (an access entry with ``AmazonEKSClusterAdminPolicy``,
    or ``system:masters``) that CloudFormation's kubectl function assumes to apply the manifests. The pods' AWS
    role comes either from IRSA (``oidc_provider_arn``, the cluster's IAM OIDC provider) or from EKS Pod Identity
    (``pod_identity``). ``cluster_security_group_id`` is the security group EKS created for the cluster (its
    control plane and managed nodes): the kubectl and restart functions reach the API through it, and the pods'
    own group (security groups for pods) admits the kubelet's probes and reaches CoreDNS through it.
    """

    cluster_name: str | None
    kubernetes_version: str | None
    kubectl_role_arn: str | None
    oidc_provider_arn: str | None
    pod_identity: bool
    namespace: str
    cluster_security_group_id: str | None


# --- end EKS -------------------------------------------------------------------------------------------------------


# --- external Hindsight (issue 24) ----------------------------------------------------------------------------------
class HindsightMode(StrEnum):
    """Whose Hindsight the agent uses."""

    MANAGED = "managed"  # this app builds it: the -Data and -MemoryService stacks (the default)
    EXTERNAL = "external"  # the customer's, at ``hindsight.external_url``: neither stack is built


class ProbeFailure(StrEnum):
    """What the deploy-time isolation probe does when the external server lets one identity read another's bank."""

    FAIL = "fail"  # the deploy fails (the default)
    WARN = "warn"  # the deploy goes on; the probe logs an ERROR line and its metric alarms


# --- end external Hindsight -----------------------------------------------------------------------------------------


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
    #: The lean dev option (``docs/deploying.md#what-it-costs``): the interface endpoints in the first this many zones
    #: (``None``: every zone of the subnets; calls from the other zones cross zones), and the optional ones
    #: (:data:`OPTIONAL_ENDPOINTS`) left out when ``False``.
    endpoint_az_count: int | None
    optional_endpoints: bool


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
    #: ``null``: the isolation extension's default (``hindsight_isolation.settings.DEFAULT_EXPIRY_GRACE_S``).
    retain_grace_seconds: int | None

    @property
    def grace_seconds(self) -> int:
        """The retain grace window in seconds: the one the extension enforces and the retain queue retries within."""
        return int(DEFAULT_EXPIRY_GRACE_S) if self.retain_grace_seconds is None else self.retain_grace_seconds


@dataclass(frozen=True)
class AgentConfig:
    """The AgentCore Runtime agent: the reference agent (``bundle_path``), or an agent project you bring
    (``project``, with its ``entrypoint``; see :mod:`infra.agent_code`)."""

    name: str
    model_id: str
    bundle_path: Path
    allow_anonymous: bool
    idle_timeout_seconds: int
    max_lifetime_seconds: int
    log_retention_days: int
    tools_via_gateway: bool
    project: Path | None = None
    entrypoint: str = DEFAULT_PROJECT_ENTRYPOINT
    #: The memory adapter's recall settings (``null``: the adapter's default, declared once in
    #: ``memory_adapter.config.HindsightAgentCoreConfig``): search depth, size of the recalled block, deadline.
    recall_budget: str | None = None
    recall_max_tokens: int | None = None
    recall_timeout_seconds: float | None = None

    @property
    def memory_settings(self) -> dict[str, Any]:
        """The recall settings given, as ``HindsightAgentCoreConfig`` fields (what the agent's ``to_env`` writes)."""
        given = {
            "recall_budget": self.recall_budget,
            "recall_max_tokens": self.recall_max_tokens,
            "recall_timeout": self.recall_timeout_seconds,
        }
        return {name: value for name, value in given.items() if value is not None}

    @property
    def code(self) -> AgentCode:
        """The folder the runtime deploys and the file AgentCore runs from its root."""
        return agent_code(bundle_path=self.bundle_path, project=self.project, entrypoint=self.entrypoint)


@dataclass(frozen=True)
class LayerConfig:
    """The memory-adapter Lambda layer."""

    path: Path
    parameter_name: str | None


@dataclass(frozen=True)
class RetainQueueConfig:
    """The retain queue (SQS) the agent spools undeliverable turns to, and the function that delivers them."""

    replay_path: Path
    replay_timeout_seconds: int
    delivery_timeout_seconds: int
    batch_size: int
    max_concurrency: int
    oldest_message_alarm_minutes: int


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
    backup_plan_schedule: str
    backup_plan_retention_days: int
    rotation_days: int
    port: int
    provisioning_path: Path


@dataclass(frozen=True)
class RetentionConfig:
    """How many days each memory kind is kept: ``retention.<kind>`` (``null``: kept until someone forgets it).

    Not one field per setting: the kinds, their defaults and the rule are :mod:`memory_adapter.kinds`' alone (the
    functions read the same rules from ``MEMORY_RETENTION_DAYS``), so this section is read by
    :class:`~memory_adapter.kinds.RetentionRules`; a kind left out keeps its default.
    """

    rules: RetentionRules

    @staticmethod
    def section_keys() -> tuple[str, ...]:
        """The keys the section may hold (``-c retention.<kind>=<days>``): the memory kinds."""
        return tuple(kind.value for kind in MemoryKind)

    @classmethod
    def from_section(cls, raw: Mapping[str, Any], shown_prefix: str) -> tuple[RetentionConfig, list[str]]:
        """The section as read from context (``-c`` values arrive as text), and every problem with it."""
        values = {
            key: int(value.strip()) if isinstance(value, str) and value.strip().isdigit() else value
            for key, value in raw.items()
        }
        rules, problems = RetentionRules.checked(values, shown_prefix=shown_prefix)
        return cls(rules), problems


@dataclass(frozen=True)
class FadingConfig:
    """Fading and reinforcement of memories (docs/operating.md#fading-and-reinforcement): ``fading.enabled`` (off by
    default: it lowered recall on the eval, BENCHMARKS.md), ``fading.floor`` and ``fading.<kind>`` half-life days
    (``null``: that kind never fades). The kinds, defaults and rule are :class:`hindsight_isolation.fading.FadingRules`'
    alone; the extension reads the same rules from its environment."""

    enabled: bool
    rules: FadingRules

    @staticmethod
    def section_keys() -> tuple[str, ...]:
        """The keys the section may hold (``-c fading.enabled=true``, ``-c fading.<kind>=<days>``)."""
        return ("enabled", "floor", *(kind.value for kind in MemoryKind))

    @classmethod
    def from_section(cls, raw: Mapping[str, Any], shown_prefix: str) -> tuple[FadingConfig, list[str]]:
        """The section as read from context (``-c`` values arrive as text), and every problem with it."""
        problems = [
            f"{shown_prefix}{key} is not a setting: use enabled, floor or a memory kind "
            f"({', '.join(kind.value for kind in MemoryKind)})"
            for key in sorted(set(raw) - set(cls.section_keys()))
        ]
        enabled = raw.get("enabled", False)
        if isinstance(enabled, str) and enabled.strip().lower() in ("true", "false"):
            enabled = enabled.strip().lower() == "true"
        if not isinstance(enabled, bool):
            problems.append(f"{shown_prefix}enabled must be true or false")
            enabled = False
        floor = _number(raw.get("floor", DEFAULT_FLOOR))
        if isinstance(floor, bool) or not isinstance(floor, int | float):
            problems.append(f"{shown_prefix}floor must be a number from 0 to below 1, got {floor!r}")
            floor = DEFAULT_FLOOR
        kinds = {kind.value for kind in MemoryKind}
        half_lives = {key: _number(value) for key, value in raw.items() if key in kinds}
        rules, found = FadingRules.checked(half_lives, floor=floor, shown=shown_prefix.rstrip("."))
        problems.extend(found)
        return cls(enabled, rules), problems


def _number(value: Any) -> Any:
    """A number given as text on the command line (``-c fading.plan=7``) as a float; anything else as it is."""
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return value
    return value


@dataclass(frozen=True)
class MissionsConfig:
    """What memory keeps, per agent: ``missions.<agent name>`` holds that agent's ``retain_mission``,
    ``retain_extraction_mode`` and ``reflect_mission`` (Hindsight's bank settings), applied to every bank of the agent.

    Read by :class:`~memory_adapter.missions.Missions` (the fields and their rules are defined there, once); set in
    ``cdk.json`` only (there is no ``-c missions.<agent>`` override: a mission is a paragraph, not a flag).
    """

    missions: Missions

    @staticmethod
    def section_keys() -> tuple[str, ...]:
        """No ``-c`` keys: the section's keys are agent names."""
        return ()

    @classmethod
    def from_section(cls, raw: Mapping[str, Any], shown_prefix: str) -> tuple[MissionsConfig, list[str]]:
        """The section as read from context, and every problem with it."""
        missions, problems = Missions.checked(raw, shown_prefix=shown_prefix)
        return cls(missions), problems

    def for_agent(self, agent: str) -> Mission | None:
        """The mission of ``agent`` (``None``: its banks keep Hindsight's defaults)."""
        return self.missions.for_agent(agent)


@dataclass(frozen=True)
class OperationsConfig:
    """Memory administration: the admin functions, their schedules and the administration bucket's lifecycle."""

    admin_function_path: Path
    expiry_schedule: str
    expiry_dry_run: bool
    expiry_batch_size: int
    backup_schedule: str
    logical_backup_retention_days: int
    export_retention_days: int
    audit_log_retention_days: int


@dataclass(frozen=True)
class EventsConfig:
    """Memory events (issue 24): one event per change to what a bank holds, on an EventBridge bus of the account.

    ``enabled``: the extension in the Hindsight tasks sends each event to an SQS FIFO queue (grouped by bank), from
    which an EventBridge pipe puts it on the bus (docs/events.md). ``include_text``: events carry the memory's text
    (off: ids, kinds and who caused it only); then the bus and its archive are encrypted with the events key too.
    ``archive_retention_days``: how long the bus's archive keeps events for replay (0: for ever).
    ``audit_log_retention_days``: the example rule's log group (every event, searchable with Logs Insights).
    """

    enabled: bool
    include_text: bool
    archive_retention_days: int
    audit_log_retention_days: int


@dataclass(frozen=True)
class GatewayConfig:
    """The AgentCore Gateway serving the memory tools over MCP to any agent or client (user-token modes only).

    ``enabled``: ``None`` (the default) creates it whenever callers present user tokens (``auth.mode`` cognito or
    jwt) and not with ``iam``; ``True`` requires it (refused with ``iam``); ``False`` never.
    """

    enabled: bool | None
    name: str | None
    target_name: str


@dataclass(frozen=True)
class AlarmsConfig:
    """Where the stacks' alarms notify (an SNS topic is always created; the e-mail subscription is optional)."""

    email: str | None


@dataclass(frozen=True)
class AppConfig:
    """Everything a deployment needs; built only by :func:`~infra.config.loader.load_config`.

    ``env_name`` is ``-c env=<name>``; the other plain fields are ``cdk.json``'s top-level settings, the dataclass
    fields its sections.
    """

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
    retain_queue: RetainQueueConfig
    hindsight: HindsightConfig
    database: DatabaseConfig
    gateway: GatewayConfig
    alarms: AlarmsConfig
    retention: RetentionConfig
    missions: MissionsConfig
    fading: FadingConfig
    operations: OperationsConfig
    eks: EksConfig
    events: EventsConfig

    @property
    def gateway_enabled(self) -> bool:
        """Whether the deployment has the memory gateway (see :class:`GatewayConfig`)."""
        if self.gateway.enabled is None:
            return self.auth.mode is not AuthMode.IAM
        return self.gateway.enabled

    @property
    def stack_prefix(self) -> str:
        """Stack names start with this, e.g. ``HindsightMemory-dev``."""
        return f"{self.prefix}-{self.env_name}"

    @property
    def parameter_prefix(self) -> str:
        """SSM parameter names of the deployment start with this, e.g. ``/HindsightMemory/dev``."""
        return f"/{self.prefix}/{self.env_name}"

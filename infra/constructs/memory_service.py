"""MemoryService: the stock Hindsight image on ECS Fargate (ARM64), with our isolation extension loaded into it.

It composes one construct per job and owns what ties them together (the cluster, the log group, the two security
groups and the services):

- :class:`~infra.constructs.hindsight_secrets.HindsightSecrets`: operator, agent and LLM keys under one KMS key;
- :func:`~infra.constructs.image_mirror.hindsight_image`: the image (mirrored into ECR, or pulled);
- :class:`~infra.constructs.hindsight_task.HindsightTaskDefinition`: each task (three containers, the extension);
- :class:`~infra.constructs.memory_load_balancer.MemoryLoadBalancer`: the internal ALB, its logs, alarm and DNS;
- :class:`~infra.constructs.redeploy_on_rotation.RedeployOnRotation`: restarts after a rotation or a key change.

Other constructs use it only through ``url``, ``connections``, ``allow_from(peer)``, ``agent_key_secret_arn``,
``grant_agent_key_read(grantee)`` and ``grant_operator_key_read(grantee)`` (the administration functions); it uses the
database and the identity only through their own methods.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Protocol

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from infra.config import AuthConfig, EksConfig, HindsightConfig, Platform
from infra.constructs.alerts import Alerts
from infra.constructs.database import VectorDatabase
from infra.constructs.eks_workloads import HindsightOnEks
from infra.constructs.handoff import Handoff
from infra.constructs.hindsight_secrets import HindsightSecrets
from infra.constructs.hindsight_task import (
    API_COMMAND,
    API_TLS_COMMAND,
    MAINTENANCE_COMMAND,
    MAINTENANCE_DEFAULT_ARGUMENTS,
    WORKER_COMMAND,
    HindsightTaskDefinition,
    HindsightTaskParts,
    hindsight_environment,
)
from infra.constructs.identity import Identity
from infra.constructs.image_mirror import hindsight_image, hindsight_image_uri
from infra.constructs.log_retention import retention
from infra.constructs.memory_load_balancer import MemoryLoadBalancer
from infra.constructs.memory_props import MemoryServiceProps
from infra.constructs.network import Network
from infra.constructs.redeploy_on_rotation import RedeployOnRotation, RestartTrigger
from infra.isolation_env import ENV_STATIC_JWKS, isolation_environment
from infra.permissions import (
    MAINTENANCE_FOLLOW_ACTIONS,
    MAINTENANCE_RUN_ACTIONS,
    PASS_ROLE_ACTION,
    grant_bedrock_invoke,
)


def _restart_triggers(database: VectorDatabase, identity: Identity | None) -> list[RestartTrigger]:
    """What restarts Hindsight on either platform: a rotated database login, and new signing keys in the mirror."""
    triggers = [
        RestartTrigger(
            "DatabaseSecretRotated",
            "Secrets Manager rotated the Hindsight database secret",
            database.login_rotation_pattern(),
        )
    ]
    if identity is not None:
        triggers.append(
            RestartTrigger(
                "SigningKeysChanged", "The mirrored JWKS of the token issuer changed", identity.keys_change_pattern()
            )
        )
    return triggers


def _sha256_of(path: Path) -> str:
    """The extension file's digest: a new extension restarts the tasks or pods that load it."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _api_command(config: HindsightConfig) -> str:
    """The API's command: HTTPS with the task's own certificate when ``hindsight.tls_to_tasks``, else HTTP."""
    return API_TLS_COMMAND if config.tls_to_tasks else API_COMMAND


class ConnectableConstruct(Protocol):
    """A construct with security groups (the agent runtime)."""

    @property
    def connections(self) -> ec2.Connections:
        """The construct's security groups."""


class MemoryService(Construct):
    """Hindsight API behind an internal load balancer plus stable-id workers; exposes ``url``, ``connections``,
    ``listener_port``, ``secrets``, ``mirror``, ``load_balancing``, ``api_task``, ``api_service``,
    ``worker_services``, ``maintenance_task`` (restore and re-embedding, run on demand) and ``redeploy``."""

    def __init__(self, scope: Construct, construct_id: str, props: MemoryServiceProps) -> None:
        super().__init__(scope, construct_id)
        config, auth, agent_name, parameter_prefix = props.config, props.auth, props.agent_name, props.parameter_prefix
        network, logs_key, alerts = props.foundation.network, props.foundation.logs_key, props.foundation.alerts
        database, identity, eks_config, events = props.database, props.identity, props.eks, props.events
        self.config = config
        self._fading = props.fading  # fading.enabled: every task's extension re-ranks recalls (docs/operating.md)
        self._mission = props.mission  # the agent's: every task's extension applies it to the agent's banks
        # Memory events (events.enabled): the extension in every task sends them to the events queue.
        events_env = events.environment_in(self) if events is not None else {}
        if config.platform is Platform.EKS:
            assert eks_config is not None
            self._on_eks(
                config=config,
                auth=auth,
                eks_config=eks_config,
                network=network,
                database=database,
                identity=identity,
                agent_name=agent_name,
                logs_key=logs_key,
                alerts=alerts,
                parameter_prefix=parameter_prefix,
                events_env=events_env,
            )
            assert self.eks is not None
            if events is not None:
                for role in (self.eks.workload_role, self.eks.maintenance_role):
                    events.grant_send(role)
            return
        self.eks: HindsightOnEks | None = None
        self.secrets = HindsightSecrets(self, "Secrets", config=config, auth_mode=auth.mode)
        image, self.mirror = hindsight_image(self, config, key=self.secrets.key)
        extension = s3_assets.Asset(self, "IsolationExtension", path=str(config.extension_path))
        self.cluster = ecs.Cluster(
            self, "Cluster", vpc=network.vpc, container_insights_v2=ecs.ContainerInsights.ENHANCED
        )
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            retention=retention(config.log_retention_days),
            encryption_key=logs_key,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.security_group = network.workload_security_group(
            self,
            "SecurityGroup",
            description="Hindsight tasks: from the load balancer; to the database and AWS endpoints",
        )
        database.allow_from(self, self.security_group, description="Hindsight tasks to PostgreSQL")
        secrets = {**database.container_secrets(self), **self.secrets.credential_secrets()}
        if identity is not None:
            secrets[ENV_STATIC_JWKS] = identity.keys_container_secret()
        secrets.update(self.secrets.llm_secrets())
        parts = HindsightTaskParts(
            config=config,
            image=image,
            extension=extension,
            extension_sha256=_sha256_of(config.extension_path),
            environment=self._environment(config, auth, identity, database, agent_name, events_env),
            secrets=secrets,
            log_group=self.log_group,
            execution_grants=(database.grant_connect, *([self.mirror.grant_task_pull] if self.mirror else [])),
        )
        self.api_task = HindsightTaskDefinition(
            self,
            "ApiTask",
            parts=parts,
            command=_api_command(config),
            log_prefix="api",
            serve_tls=config.tls_to_tasks,
        )
        # The operator's restore and re-embedding: run on demand (docs/operating.md), never as a service. Its own
        # role reads backups only where the administration bucket allows it (grant_read in the -Operations stack).
        self.maintenance_task = HindsightTaskDefinition(
            self,
            "MaintenanceTask",
            parts=parts,
            command=MAINTENANCE_COMMAND,
            log_prefix="maintenance",
            arguments=MAINTENANCE_DEFAULT_ARGUMENTS,
        )
        if config.maintenance_embeddings_model is not None:  # the model a re-embedding moves to
            grant_bedrock_invoke(
                self,
                self.maintenance_task.task_role,
                [config.maintenance_embeddings_model.removeprefix("bedrock/")],
            )
        self.maintenance_policy = self._maintenance_policy()
        self.api_service = self._service("Api", self.api_task, desired_count=config.api_min_count, network=network)
        scaling = self.api_service.auto_scale_task_count(
            min_capacity=config.api_min_count, max_capacity=config.api_max_count
        )
        scaling.scale_on_cpu_utilization("Cpu", target_utilization_percent=config.cpu_target_percent)
        # One service per worker id, never two tasks at once (max 100 %): work a dead task had claimed is
        # reclaimed only by a worker with the same id, so ids must survive task replacement.
        self.worker_services = [
            self._service(
                f"Worker{i}",
                HindsightTaskDefinition(
                    self,
                    f"Worker{i}Task",
                    parts=parts,
                    command=WORKER_COMMAND,
                    log_prefix=f"worker{i}",
                    worker_id=f"worker-{i}",
                ),
                desired_count=1,
                network=network,
                worker=True,
            )
            for i in range(1, config.worker_count + 1)
        ]
        if self.mirror is not None:
            for service in [self.api_service, *self.worker_services]:
                service.node.add_dependency(self.mirror.lookup)
        if events is not None:
            for task in [self.api_task, self.maintenance_task, *(w.task_definition for w in self.worker_services)]:
                events.grant_send(task.task_role)
        self._balance_load(config, network, alerts, api_service=self.api_service)
        #: The URL in this stack; later stacks read it with :meth:`url_in` (HTTPS on or off changes it).
        self.url = self.load_balancing.url
        self._url = self._url_handoff(parameter_prefix)
        # The worker services come and go with hindsight.worker_count: later stacks read their names by parameter.
        self._worker_names = [
            Handoff(
                self,
                f"Worker{i}NameHandoff",
                parameter_name=f"{parameter_prefix}/memory/worker-{i}/service-name",
                value=service.service_name,
                description=f"The ECS service name of Hindsight's worker-{i}, for the later stacks",
            )
            for i, service in enumerate(self.worker_services, 1)
        ]
        self.listener_port = self.load_balancing.listener_port
        self.connections: ec2.Connections = self.load_balancing.load_balancer.connections
        triggers = _restart_triggers(database, identity)
        self.maintenance_role: iam.IRole = self.maintenance_task.task_role
        self.redeploy: RedeployOnRotation | None = RedeployOnRotation(
            self,
            "RedeployOnRotation",
            cluster=self.cluster,
            services=[self.api_service, *self.worker_services],
            triggers=triggers,
            logs_key=logs_key,
            alerts=alerts,
        )

    def _on_eks(
        self,
        *,
        config: HindsightConfig,
        auth: AuthConfig,
        eks_config: EksConfig,
        network: Network,
        database: VectorDatabase,
        identity: Identity | None,
        agent_name: str,
        logs_key: kms.IKey,
        alerts: Alerts,
        parameter_prefix: str,
        events_env: dict[str, str],
    ) -> None:
        """The same service on the customer's EKS cluster: the same secrets, image, environment, commands and load
        balancer; pods instead of tasks (:class:`~infra.constructs.eks_workloads.HindsightOnEks`)."""
        self.secrets = HindsightSecrets(self, "Secrets", config=config, auth_mode=auth.mode)
        image, self.mirror = hindsight_image_uri(self, config, key=self.secrets.key)
        extension = s3_assets.Asset(self, "IsolationExtension", path=str(config.extension_path))
        self.security_group = network.workload_security_group(
            self,
            "SecurityGroup",
            description="Hindsight pods: from the load balancer and the kubelet; to the database, DNS and endpoints",
        )
        database.allow_from(self, self.security_group, description="Hindsight pods to PostgreSQL")
        sources = {**database.secret_sources(self), **self.secrets.credential_sources()}
        if identity is not None:
            sources[ENV_STATIC_JWKS] = identity.keys_source()
        sources.update(self.secrets.llm_sources())
        self._balance_load(config, network, alerts, api_service=None)
        self.load_balancer_security_group.connections.allow_to(
            self.security_group, ec2.Port.tcp(config.port), "Load balancer to the Hindsight API pods"
        )
        triggers = _restart_triggers(database, identity)
        self.eks = HindsightOnEks(
            self,
            "Eks",
            config=config,
            eks_config=eks_config,
            network=network,
            database=database,
            image=image,
            environment=self._environment(config, auth, identity, database, agent_name, events_env),
            secrets=sources,
            extension=extension,
            extension_sha256=_sha256_of(config.extension_path),
            security_group=self.security_group,
            target_group_arn=self.load_balancing.target_group.target_group_arn,
            api_command=_api_command(config),
            worker_command=WORKER_COMMAND,
            restart_triggers=triggers,
            logs_key=logs_key,
            alerts=alerts,
        )
        if self.mirror is not None:
            self.eks.manifest.node.add_dependency(self.mirror.lookup)
        self.maintenance_role = self.eks.maintenance_role
        self.url = self.load_balancing.url
        self._url = self._url_handoff(parameter_prefix)
        # One StatefulSet, not one service per worker: the dashboard graphs its pods (no names handed off).
        self._worker_names = []
        self.listener_port = self.load_balancing.listener_port
        self.connections = self.load_balancing.load_balancer.connections
        self.redeploy = None

    def _environment(
        self,
        config: HindsightConfig,
        auth: AuthConfig,
        identity: Identity | None,
        database: VectorDatabase,
        agent_name: str,
        events_env: dict[str, str],
    ) -> dict[str, str]:
        """Every Hindsight process's plain environment, the same on both platforms: the server's settings, the
        isolation extension's and, with memory events, the events queue."""
        return {
            **hindsight_environment(config, database=database.container_environment()),
            **isolation_environment(
                auth,
                identity,
                scope=self,
                agent_name=agent_name,
                expiry_grace_s=auth.grace_seconds,
                fading=self._fading,
                mission=self._mission,
            ),
            **events_env,
        }

    def _balance_load(
        self,
        config: HindsightConfig,
        network: Network,
        alerts: Alerts,
        *,
        api_service: ecs.FargateService | None,
    ) -> None:
        """The internal load balancer in front of the API (its Fargate service, or on EKS the pods a
        TargetGroupBinding registers: ``api_service=None``), reachable from the agent only."""
        self.load_balancer_security_group = ec2.SecurityGroup(
            self,
            "LoadBalancerSecurityGroup",
            vpc=network.vpc,
            description="Hindsight internal load balancer: from the agent only",
            allow_all_outbound=False,
        )
        self.load_balancing = MemoryLoadBalancer(
            self,
            "LoadBalancing",
            config=config,
            network=network,
            security_group=self.load_balancer_security_group,
            api_service=api_service,
            alerts=alerts,
        )

    def _url_handoff(self, parameter_prefix: str) -> Handoff:
        """Publish :attr:`url` for the later stacks (ECS and EKS alike; they read it with :meth:`url_in`)."""
        return Handoff(
            self,
            "UrlHandoff",
            parameter_name=f"{parameter_prefix}/memory/url",
            value=self.url,
            description="Hindsight's URL inside the VPC, for the later stacks",
        )

    def _maintenance_policy(self) -> iam.ManagedPolicy:
        """What an operator needs to run the maintenance task (restore, re-embedding) and follow it: run-task on
        its family in this cluster, pass its two roles to ECS tasks only, describe and stop the tasks it started."""
        stack = Stack.of(self)
        task = self.maintenance_task
        family_arn = stack.format_arn(service="ecs", resource="task-definition", resource_name=f"{task.family}:*")
        cluster_tasks = stack.format_arn(service="ecs", resource="task", resource_name=f"{self.cluster.cluster_name}/*")
        return iam.ManagedPolicy(
            self,
            "MaintenancePolicy",
            description="Run Hindsight's maintenance task (restore, re-embedding) in its cluster",
            statements=[
                iam.PolicyStatement(
                    actions=list(MAINTENANCE_RUN_ACTIONS),
                    resources=[family_arn],
                    conditions={"ArnEquals": {"ecs:cluster": self.cluster.cluster_arn}},
                ),
                iam.PolicyStatement(
                    actions=list(MAINTENANCE_FOLLOW_ACTIONS),
                    resources=[cluster_tasks],
                    conditions={"ArnEquals": {"ecs:cluster": self.cluster.cluster_arn}},
                ),
                iam.PolicyStatement(
                    actions=[PASS_ROLE_ACTION],
                    resources=[task.task_role.role_arn, task.obtain_execution_role().role_arn],
                    conditions={"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}},
                ),
            ],
        )

    def url_in(self, scope: Construct) -> str:
        """Hindsight's URL as scope's stack reads it (an SSM handoff; scope's stack deploys after this one)."""
        return self._url.value_in(scope)

    def worker_service_names_in(self, scope: Construct) -> list[str]:
        """The worker services' names, worker-1 first, as scope's stack reads them (SSM handoffs)."""
        return [handoff.value_in(scope) for handoff in self._worker_names]

    @property
    def ca_bundle(self) -> str | None:
        """The PEM of ``hindsight.ca_bundle`` (the private CA of the load balancer's certificate) every client of
        :attr:`url` trusts, or None (public ACM, HTTP)."""
        return (
            None if self.config.ca_bundle is None else self.config.ca_bundle.read_text(encoding="ascii").strip() + "\n"
        )

    @property
    def operator_key_secret_arn(self) -> str:
        """The operator key's ARN (for the administration functions' environment; read with
        :meth:`grant_operator_key_read`)."""
        return self.secrets.operator_key.secret_arn

    @property
    def agent_key_secret_arn(self) -> str | None:
        """The agent key's ARN for the agent's environment (IAM mode), else None."""
        return self.secrets.agent_key_secret_arn

    def allow_from(self, peer: ConnectableConstruct) -> None:
        """Let peer reach the load balancer's listener.

        Both rules are written in the peer's stack (through an imported handle on the load balancer's group, in the
        peer's scope), so this stack never depends on the peer's.
        """
        assert isinstance(peer, Construct)
        handle = ec2.SecurityGroup.from_security_group_id(
            peer,
            "HindsightSecurityGroup",
            self.load_balancer_security_group.security_group_id,
            allow_all_outbound=False,
        )
        peer.connections.allow_to(handle, ec2.Port.tcp(self.listener_port), "Agent to Hindsight's load balancer")

    def grant_agent_key_read(self, grantee: iam.IGrantable) -> None:
        """Let grantee read the agent key (IAM mode; nothing otherwise). See :class:`HindsightSecrets`."""
        self.secrets.grant_agent_key_read(grantee)

    def grant_operator_key_read(self, grantee: iam.IGrantable) -> None:
        """Let grantee (the memory admin functions, never the agent) read the operator key."""
        self.secrets.grant_operator_key_read(grantee)

    def _service(
        self,
        construct_id: str,
        task: ecs.FargateTaskDefinition,
        *,
        desired_count: int,
        network: Network,
        worker: bool = False,
    ) -> ecs.FargateService:
        return ecs.FargateService(
            self,
            construct_id,
            cluster=self.cluster,
            task_definition=task,
            desired_count=desired_count,
            security_groups=[self.security_group],
            vpc_subnets=network.subnets,
            circuit_breaker=ecs.DeploymentCircuitBreaker(enable=True, rollback=True),
            min_healthy_percent=0 if worker else 100,
            max_healthy_percent=100 if worker else 200,
            health_check_grace_period=None if worker else Duration.minutes(5),
            platform_version=ecs.FargatePlatformVersion.VERSION1_4,
        )

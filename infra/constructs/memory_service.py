"""MemoryService: the stock Hindsight image on ECS Fargate (ARM64), with our isolation extension loaded into it.

How the extension gets in without building an image: an init container (the same image, non-essential) downloads
the extension zip (a CDK S3 asset, checked against its SHA-256) into a task-scoped volume; the Hindsight container
starts only after the init container succeeded, mounts that volume read-only and has it on ``PYTHONPATH``. Both
containers run as uid 1000 with a read-only root filesystem; ``/tmp`` is a task volume.

Fargate creates task volumes owned by root (mode 0755), and the stock image declares no ``VOLUME`` that would copy
ownership in, so uid 1000 could write neither. A first, non-essential container runs as root for exactly one
command (hand the extension directory to uid 1000, make ``/tmp`` 1777) with every capability dropped but the one
that needs; both other containers start only after it succeeded.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.config import AuthConfig, AuthMode, HindsightConfig, ImageSource, LlmProvider
from infra.constructs.alerts import Alerts
from infra.constructs.database import VectorDatabase
from infra.constructs.identity import FUNCTIONS_DIR, Identity
from infra.constructs.image_mirror import ImageMirror
from infra.constructs.log_retention import retention
from infra.constructs.network import Network
from infra.constructs.private_dns import PrivateDnsName
from infra.constructs.rds_ca_bundle import CA_FILE
from infra.isolation_env import ENV_AGENT_KEY, ENV_OPERATOR_KEY, ENV_STATIC_JWKS, isolation_environment
from infra.permissions import ECS_REDEPLOY_ACTIONS, grant_bedrock_invoke

#: The stock image's user (``hindsight``), set explicitly so the task never runs as root.
CONTAINER_USER = "1000:1000"
#: The volume-preparation step runs as root: a non-root process cannot change a root-owned directory.
ROOT_USER = "0:0"
IMAGE_PYTHON = "/app/api/.venv/bin/python"
EXTENSION_DIR = "/opt/hindsight-ext"
WORKER_HTTP_PORT = 8889
#: Memories a (bank, fact type) needs before it gets its own HNSW index (Hindsight's suggested start, docs/capacity.md).
VECTOR_INDEX_MIN_ROWS = 10_000

#: Assembles the database URL from the secret's fields inside the container, so it never appears in the task
#: definition, the template or a log line (no ``set -x``), then runs the API or the worker module of the image's
#: venv directly (the image's ``start-all.sh`` may start more than the API). The login is Hindsight's own (never the
#: master), and TLS verifies the server against the RDS certificate bundle (``verify-full``: encrypted *and* the
#: right server), which arrives as an ECS secret and is written to the task's /tmp first.
_DATABASE_URL = (
    f"printf '%s\\n' \"$DB_CA_BUNDLE\" > {CA_FILE}; unset DB_CA_BUNDLE; "
    'export HINDSIGHT_API_DATABASE_URL="postgresql://$DB_USERNAME:$DB_PASSWORD@$DB_HOST:$DB_PORT/'
    f'$DB_NAME?sslmode=verify-full&sslrootcert={CA_FILE}"; unset DB_PASSWORD; '
)
API_COMMAND = "set -eu; " + _DATABASE_URL + f"exec {IMAGE_PYTHON} -m hindsight_api.main"
WORKER_COMMAND = (
    "set -eu; " + _DATABASE_URL + f"exec {IMAGE_PYTHON} -m hindsight_api.worker.main --http-port {WORKER_HTTP_PORT}"
)

#: Hands the (root-owned) task volumes to the image's user; /tmp is world-writable with the sticky bit, like /tmp.
PREPARE_VOLUMES = (
    f"set -eu; chmod 0755 {EXTENSION_DIR}; chmod 1777 /tmp; chown {CONTAINER_USER} {EXTENSION_DIR}; "
    f"ls -ldn {EXTENSION_DIR} /tmp"
)
#: Linux capabilities dropped from the root step: it only needs CHOWN (chmod of a root-owned path needs none).
PREPARE_DROPPED_CAPABILITIES = (
    ecs.Capability.AUDIT_WRITE,
    ecs.Capability.DAC_OVERRIDE,
    ecs.Capability.FOWNER,
    ecs.Capability.FSETID,
    ecs.Capability.KILL,
    ecs.Capability.MKNOD,
    ecs.Capability.NET_BIND_SERVICE,
    ecs.Capability.NET_RAW,
    ecs.Capability.SETFCAP,
    ecs.Capability.SETGID,
    ecs.Capability.SETPCAP,
    ecs.Capability.SETUID,
    ecs.Capability.SYS_CHROOT,
)

#: The init container's program: fetch the extension zip through the S3 gateway endpoint, check its digest,
#: unpack it into the shared volume. Runs with the image's Python (boto3 is a Hindsight dependency).
INSTALL_EXTENSION = (
    "import hashlib, io, os, zipfile, boto3\n"
    "body = boto3.client('s3').get_object(Bucket=os.environ['EXT_BUCKET'], Key=os.environ['EXT_KEY'])['Body'].read()\n"
    "digest = hashlib.sha256(body).hexdigest()\n"
    "assert digest == os.environ['EXT_SHA256'], 'extension digest mismatch: ' + digest\n"
    f"zipfile.ZipFile(io.BytesIO(body)).extractall('{EXTENSION_DIR}')\n"
    "print('isolation extension installed', digest)\n"
)


@dataclass(frozen=True)
class _TaskParts:
    """What every Hindsight task (the API's and each worker's) is built from: the same image, extension,
    environment and secrets, so API and workers cannot drift apart."""

    config: HindsightConfig
    image: ecs.ContainerImage
    extension: s3_assets.Asset
    extension_sha256: str
    environment: dict[str, str]
    secrets: dict[str, ecs.Secret]


@dataclass(frozen=True)
class ServiceSecrets:
    """Credentials the memory service owns. The operator key is never granted to the agent."""

    operator_key: secretsmanager.Secret
    agent_key: secretsmanager.Secret | None
    llm_api_key: secretsmanager.ISecret | None


class MemoryService(Construct):
    """Hindsight API behind an internal load balancer plus stable-id workers; exposes ``url`` and ``connections``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: HindsightConfig,
        auth: AuthConfig,
        network: Network,
        database: VectorDatabase,
        identity: Identity | None,
        agent_name: str,
        logs_key: kms.IKey,
        alerts: Alerts,
    ) -> None:
        super().__init__(scope, construct_id)
        self.config = config
        self._alerts = alerts
        self._logs_key = logs_key
        self._database_key = database.key
        self.key = kms.Key(self, "Key", description="Hindsight service secrets", enable_key_rotation=True)
        self.mirror: ImageMirror | None = None
        self.secrets = self._secrets(config, auth)
        image, image_dependency = self._image(config)
        extension = s3_assets.Asset(self, "IsolationExtension", path=str(config.extension_path))
        extension_sha256 = hashlib.sha256(config.extension_path.read_bytes()).hexdigest()
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
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=network.vpc,
            description="Hindsight tasks: from the load balancer; to the database and AWS endpoints",
            allow_all_outbound=False,
        )
        # No NAT and no IGW in the default VPC: 443 reaches only the VPC endpoints and the S3 gateway (whose
        # addresses are public, hence no narrower CIDR); with image_source=registry or an external LLM it also
        # reaches the customer's egress path.
        self.security_group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to AWS endpoints")
        network.allow_endpoints_from(self, self.security_group)
        # The rule is written in this stack (through an imported handle on the database's group), so the stateful
        # stack never references this one.
        database_sg = ec2.SecurityGroup.from_security_group_id(
            self, "DatabaseSecurityGroup", database.security_group.security_group_id, allow_all_outbound=False
        )
        self.security_group.connections.allow_to(
            database_sg, ec2.Port.tcp(database.port), "Hindsight tasks to PostgreSQL"
        )
        environment = self._environment(config, database)
        environment.update(
            isolation_environment(auth, identity, agent_name=agent_name, expiry_grace_s=auth.retain_grace_seconds)
        )
        parts = _TaskParts(
            config, image, extension, extension_sha256, environment, self._container_secrets(database, identity)
        )
        self.api_task = self._task_definition("Api", parts, command=API_COMMAND, port=config.port, worker_id=None)
        self.api_service = ecs.FargateService(
            self,
            "Api",
            cluster=self.cluster,
            task_definition=self.api_task,
            desired_count=config.api_min_count,
            security_groups=[self.security_group],
            vpc_subnets=network.subnets,
            circuit_breaker=ecs.DeploymentCircuitBreaker(enable=True, rollback=True),
            min_healthy_percent=100,
            max_healthy_percent=200,
            health_check_grace_period=Duration.minutes(5),
            platform_version=ecs.FargatePlatformVersion.VERSION1_4,
        )
        scaling = self.api_service.auto_scale_task_count(
            min_capacity=config.api_min_count, max_capacity=config.api_max_count
        )
        scaling.scale_on_cpu_utilization("Cpu", target_utilization_percent=config.cpu_target_percent)
        self.worker_services = [self._worker(i, parts, network) for i in range(1, config.worker_count + 1)]
        if image_dependency is not None:
            for service in [self.api_service, *self.worker_services]:
                service.node.add_dependency(image_dependency)
        self.load_balancer, listener_port = self._load_balancer(config, network)
        self.dns: PrivateDnsName | None = None
        if config.domain_name is not None:
            self.dns = PrivateDnsName(
                self,
                "Dns",
                domain_name=config.domain_name,
                hosted_zone_id=config.hosted_zone_id,
                vpc=network.vpc,
                load_balancer=self.load_balancer,
            )
        host = config.domain_name or self.load_balancer.load_balancer_dns_name
        scheme = "https" if config.certificate_arn else "http"
        self.url = f"{scheme}://{host}"
        self.listener_port = listener_port
        self.connections: ec2.Connections = self.load_balancer.connections
        self._redeploy_on_change(database, identity)

    # -- pieces -------------------------------------------------------------------------------------------------

    def _secrets(self, config: HindsightConfig, auth: AuthConfig) -> ServiceSecrets:
        def generated(construct_id: str, description: str) -> secretsmanager.Secret:
            return secretsmanager.Secret(
                self,
                construct_id,
                description=description,
                encryption_key=self.key,
                generate_secret_string=secretsmanager.SecretStringGenerator(
                    password_length=48, exclude_punctuation=True, include_space=False
                ),
            )

        operator = generated("OperatorKey", "Hindsight operator credential: administers every bank; never the agent's")
        agent = (
            generated("AgentKey", "Per-deployment agent credential (IAM runtimes): this deployment's banks only")
            if auth.mode is AuthMode.IAM
            else None
        )
        llm: secretsmanager.ISecret | None = None
        if config.llm_provider is LlmProvider.OPENAI:
            llm = (
                secretsmanager.Secret.from_secret_complete_arn(self, "LlmApiKey", config.llm_api_key_secret_arn)
                if config.llm_api_key_secret_arn
                else secretsmanager.Secret(
                    self,
                    "LlmApiKey",
                    description="External LLM API key for Hindsight: put the real key here",
                    encryption_key=self.key,
                )
            )
        return ServiceSecrets(operator_key=operator, agent_key=agent, llm_api_key=llm)

    def _image(self, config: HindsightConfig) -> tuple[ecs.ContainerImage, Construct | None]:
        digest = config.image_digest
        if config.image_source is ImageSource.REGISTRY:
            ref = f"@{digest}" if digest else f":{config.image_tag}"
            return ecs.ContainerImage.from_registry(config.image_repository + ref), None
        if config.image_source is ImageSource.ECR:
            assert config.ecr_repository_arn is not None
            repo = ecr.Repository.from_repository_arn(self, "Repository", config.ecr_repository_arn)
            return ecs.ContainerImage.from_ecr_repository(repo, digest or config.image_tag), None
        self.mirror = ImageMirror(
            self,
            "Mirror",
            source_repository=config.image_repository,
            image_tag=config.image_tag,
            digest=digest,
            key=self.key,
        )
        return self.mirror.image, self.mirror.lookup

    def _environment(self, config: HindsightConfig, database: VectorDatabase) -> dict[str, str]:
        env = {
            "HINDSIGHT_API_HOST": "0.0.0.0",  # noqa: S104 (inside the task; reachable only through the load balancer SG)
            "HINDSIGHT_API_PORT": str(config.port),
            "HINDSIGHT_API_WORKER_ENABLED": "false",  # the worker services do the background work
            "HINDSIGHT_API_MCP_ENABLED": "true" if config.mcp_enabled else "false",
            "HINDSIGHT_API_LLM_PROVIDER": config.llm_provider.value,
            "HINDSIGHT_API_LLM_MODEL": config.llm_model,
            "HINDSIGHT_API_SKIP_LLM_VERIFICATION": "true",  # the first deploy must not hinge on model access
            "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "litellm-sdk",
            "HINDSIGHT_API_EMBEDDINGS_LITELLM_SDK_MODEL": config.embeddings_model,
            "HINDSIGHT_API_RERANKER_PROVIDER": "rrf",  # the slim image ships no local models
            "HINDSIGHT_API_LOG_LEVEL": "info",
            # Scaling (docs/capacity.md, measured with make bench-scale). Per-process pool (Hindsight's default is
            # 100): (api_max_count + worker_count) x pool must fit the database's connections.
            "HINDSIGHT_API_DB_POOL_MAX_SIZE": str(config.db_pool_max_size),
            # Retains a worker runs at once (default 10): with a 1.5 s LLM, 30 slots absorbed 2.1x the default's rate.
            "HINDSIGHT_API_WORKER_MAX_SLOTS": str(config.worker_max_slots),
            # Banks are per user: below this many memories a bank is searched exactly instead of owning three HNSW
            # indexes on the shared table (default 0: every bank; 3,039 indexes made planning 103-508 ms a statement).
            "HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS": str(VECTOR_INDEX_MIN_ROWS),
            "AWS_REGION": Aws.REGION,
            "AWS_DEFAULT_REGION": Aws.REGION,
            "HOME": "/tmp",  # noqa: S108 (a task-scoped volume; the root filesystem is read-only)
            "XDG_CACHE_HOME": "/tmp/.cache",  # noqa: S108
            "HF_HUB_OFFLINE": "1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of the price map from the internet at import
            "TRANSFORMERS_OFFLINE": "1",
            "PYTHONPATH": EXTENSION_DIR,
            "DB_HOST": database.endpoint_address,
            "DB_PORT": str(database.port),
            "DB_NAME": database.database_name,
        }
        if config.llm_provider is LlmProvider.OPENAI:
            assert config.llm_base_url is not None
            env["HINDSIGHT_API_LLM_BASE_URL"] = config.llm_base_url
        return env

    def _container_secrets(self, database: VectorDatabase, identity: Identity | None) -> dict[str, ecs.Secret]:
        # Referenced by ARN, not by object: granting through the object would write this stack's roles into the
        # data stack's key policy and make the stateful stack depend on this one. Decrypt is granted below instead.
        db_secret = secretsmanager.Secret.from_secret_complete_arn(
            self, "DatabaseSecret", database.login.secret.secret_arn
        )
        secrets = {
            "DB_USERNAME": ecs.Secret.from_secrets_manager(db_secret, "username"),
            "DB_PASSWORD": ecs.Secret.from_secrets_manager(db_secret, "password"),
            "DB_CA_BUNDLE": ecs.Secret.from_ssm_parameter(database.ca_bundle.parameter),
            ENV_OPERATOR_KEY: ecs.Secret.from_secrets_manager(self.secrets.operator_key),
        }
        if self.secrets.agent_key is not None:
            secrets[ENV_AGENT_KEY] = ecs.Secret.from_secrets_manager(self.secrets.agent_key)
        if identity is not None:
            secrets[ENV_STATIC_JWKS] = ecs.Secret.from_ssm_parameter(identity.jwks_parameter)
        if self.secrets.llm_api_key is not None:
            secrets["HINDSIGHT_API_LLM_API_KEY"] = ecs.Secret.from_secrets_manager(self.secrets.llm_api_key)
        return secrets

    def _task_definition(
        self, construct_id: str, parts: _TaskParts, *, command: str, port: int, worker_id: str | None
    ) -> ecs.FargateTaskDefinition:
        config, image, extension = parts.config, parts.image, parts.extension
        task = ecs.FargateTaskDefinition(
            self,
            f"{construct_id}Task",
            cpu=config.cpu,
            memory_limit_mib=config.memory_mib,
            runtime_platform=ecs.RuntimePlatform(
                cpu_architecture=ecs.CpuArchitecture.ARM64, operating_system_family=ecs.OperatingSystemFamily.LINUX
            ),
        )
        task.add_volume(name="extension")
        task.add_volume(name="tmp")
        # Exactly what the install step reads: one object of the asset bucket (CDK's grant_read adds List* and
        # GetBucket* on the whole bootstrap bucket).
        task.add_to_task_role_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"], resources=[extension.bucket.arn_for_objects(extension.s3_object_key)]
            )
        )
        grant_bedrock_invoke(self, task.task_role, self._bedrock_models(config))
        logging = ecs.LogDrivers.aws_logs(stream_prefix=construct_id.lower(), log_group=self.log_group)
        prepare = task.add_container(
            "PrepareVolumes",
            image=image,
            essential=False,
            user=ROOT_USER,
            readonly_root_filesystem=True,
            entry_point=["/bin/sh", "-c"],
            command=[PREPARE_VOLUMES],
            linux_parameters=self._prepare_linux_parameters(task),
            logging=logging,
        )
        prepare.add_mount_points(
            ecs.MountPoint(container_path=EXTENSION_DIR, source_volume="extension", read_only=False),
            ecs.MountPoint(container_path="/tmp", source_volume="tmp", read_only=False),  # noqa: S108
        )
        prepared = ecs.ContainerDependency(container=prepare, condition=ecs.ContainerDependencyCondition.SUCCESS)
        init = task.add_container(
            "InstallExtension",
            image=image,
            essential=False,
            user=CONTAINER_USER,
            readonly_root_filesystem=True,
            entry_point=[IMAGE_PYTHON, "-c"],
            command=[INSTALL_EXTENSION],
            environment={
                "EXT_BUCKET": extension.s3_bucket_name,
                "EXT_KEY": extension.s3_object_key,
                "EXT_SHA256": parts.extension_sha256,
                "AWS_REGION": Aws.REGION,
                "HOME": "/tmp",  # noqa: S108
            },
            logging=logging,
        )
        init.add_mount_points(
            ecs.MountPoint(container_path=EXTENSION_DIR, source_volume="extension", read_only=False),
            ecs.MountPoint(container_path="/tmp", source_volume="tmp", read_only=False),  # noqa: S108
        )
        init.add_container_dependencies(prepared)
        env = dict(parts.environment)
        health_port = port
        if worker_id is not None:
            env["HINDSIGHT_API_WORKER_ID"] = worker_id
            env["HINDSIGHT_API_WORKER_ENABLED"] = "true"
            health_port = WORKER_HTTP_PORT
        main = task.add_container(
            "Hindsight",
            image=image,
            essential=True,
            user=CONTAINER_USER,
            readonly_root_filesystem=config.readonly_root_filesystem,
            entry_point=["/bin/bash", "-c"],
            command=[command],
            environment=env,
            secrets=parts.secrets,
            port_mappings=[ecs.PortMapping(container_port=port)] if worker_id is None else [],
            # Liveness: the process answers without touching the database. Readiness (/health, which checks the
            # database) is the load balancer's health check.
            health_check=ecs.HealthCheck(
                command=["CMD", "curl", "-fsS", f"http://127.0.0.1:{health_port}/health/live"],
                interval=Duration.seconds(30),
                timeout=Duration.seconds(5),
                retries=3,
                start_period=Duration.seconds(180),
            ),
            stop_timeout=Duration.seconds(30),
            logging=logging,
        )
        main.add_mount_points(
            ecs.MountPoint(container_path=EXTENSION_DIR, source_volume="extension", read_only=True),
            ecs.MountPoint(container_path="/tmp", source_volume="tmp", read_only=False),  # noqa: S108
        )
        main.add_container_dependencies(
            prepared, ecs.ContainerDependency(container=init, condition=ecs.ContainerDependencyCondition.SUCCESS)
        )
        self._database_key.grant_decrypt(task.obtain_execution_role())
        if self.mirror is not None:
            self.mirror.grant_pull(task.obtain_execution_role())
        return task

    def _prepare_linux_parameters(self, task: ecs.FargateTaskDefinition) -> ecs.LinuxParameters:
        parameters = ecs.LinuxParameters(self, f"{task.node.id}PrepareLinux")
        parameters.drop_capabilities(*PREPARE_DROPPED_CAPABILITIES)
        return parameters

    def _bedrock_models(self, config: HindsightConfig) -> list[str]:
        models = [config.embeddings_model.removeprefix("bedrock/")]
        if config.llm_provider is LlmProvider.BEDROCK:
            models.append(config.llm_model)
        return models

    def _worker(self, index: int, parts: _TaskParts, network: Network) -> ecs.FargateService:
        # One service per worker id, never two tasks at once (max 100 %): work a dead task had claimed is
        # reclaimed only by a worker with the same id, so ids must survive task replacement.
        task = self._task_definition(
            f"Worker{index}", parts, command=WORKER_COMMAND, port=parts.config.port, worker_id=f"worker-{index}"
        )
        return ecs.FargateService(
            self,
            f"Worker{index}",
            cluster=self.cluster,
            task_definition=task,
            desired_count=1,
            security_groups=[self.security_group],
            vpc_subnets=network.subnets,
            circuit_breaker=ecs.DeploymentCircuitBreaker(enable=True, rollback=True),
            min_healthy_percent=0,
            max_healthy_percent=100,
            platform_version=ecs.FargatePlatformVersion.VERSION1_4,
        )

    def _load_balancer(self, config: HindsightConfig, network: Network) -> tuple[elbv2.ApplicationLoadBalancer, int]:
        security_group = ec2.SecurityGroup(
            self,
            "LoadBalancerSecurityGroup",
            vpc=network.vpc,
            description="Hindsight internal load balancer: from the agent only",
            allow_all_outbound=False,
        )
        self.load_balancer_security_group = security_group
        alb = elbv2.ApplicationLoadBalancer(
            self,
            "LoadBalancer",
            vpc=network.vpc,
            vpc_subnets=network.subnets,
            internet_facing=False,
            security_group=security_group,
            drop_invalid_header_fields=True,
            deletion_protection=False,
        )
        access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,  # load balancer logs support only SSE-S3
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[
                s3.LifecycleRule(expiration=Duration.days(90), noncurrent_version_expiration=Duration.days(7))
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        alb.log_access_logs(access_logs, prefix="hindsight")
        if config.certificate_arn:
            listener = alb.add_listener(
                "Https",
                port=443,
                protocol=elbv2.ApplicationProtocol.HTTPS,
                certificates=[acm.Certificate.from_certificate_arn(self, "Certificate", config.certificate_arn)],
                ssl_policy=elbv2.SslPolicy.RECOMMENDED_TLS,
                open=False,
            )
            port = 443
        else:
            listener = alb.add_listener("Http", port=80, protocol=elbv2.ApplicationProtocol.HTTP, open=False)
            port = 80
        self.target_group = listener.add_targets(
            "Api",
            port=config.port,
            protocol=elbv2.ApplicationProtocol.HTTP,
            targets=[self.api_service],
            deregistration_delay=Duration.seconds(30),
            health_check=elbv2.HealthCheck(
                path="/health",
                healthy_http_codes="200",
                interval=Duration.seconds(15),
                timeout=Duration.seconds(5),
                healthy_threshold_count=2,
                unhealthy_threshold_count=3,
            ),
        )
        self.unhealthy_alarm = self._alerts.watch(
            cloudwatch.Alarm(
                self,
                "NoHealthyApiTask",
                alarm_description="No Hindsight API task passes the load balancer's health check: agents run without "
                "memory (degraded). See the service's events and the Hindsight log group.",
                metric=self.target_group.metrics.healthy_host_count(
                    period=Duration.minutes(1), statistic=cloudwatch.Stats.MINIMUM
                ),
                comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                threshold=1,
                evaluation_periods=3,
                treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
            )
        )
        return alb, port

    def _redeploy_on_change(self, database: VectorDatabase, identity: Identity | None) -> None:
        """Replace the tasks when what they read once at start changes: the DB password or the signing keys."""
        services = [self.api_service, *self.worker_services]
        function = lambda_.Function(
            self,
            "RedeployOnRotation",
            description="Restarts the Hindsight services after their database secret rotated",
            runtime=lambda_.Runtime.PYTHON_3_14,
            architecture=lambda_.Architecture.ARM_64,
            handler="index.handler",
            code=lambda_.Code.from_asset(str(FUNCTIONS_DIR / "redeploy_on_rotation")),
            timeout=Duration.seconds(30),
            memory_size=128,
            log_group=logs.LogGroup(
                self,
                "RedeployLogs",
                retention=logs.RetentionDays.THREE_MONTHS,
                encryption_key=self._logs_key,
                removal_policy=RemovalPolicy.DESTROY,
            ),
            environment={
                "CLUSTER_ARN": self.cluster.cluster_arn,
                "SERVICE_ARNS": ",".join(s.service_arn for s in services),
            },
        )
        function.add_to_role_policy(
            iam.PolicyStatement(actions=list(ECS_REDEPLOY_ACTIONS), resources=[s.service_arn for s in services])
        )
        rule = events.Rule(
            self,
            "DatabaseSecretRotated",
            description="Secrets Manager rotated the Hindsight database secret",
            event_pattern=events.EventPattern(
                source=["aws.secretsmanager"],
                detail_type=["AWS Service Event via CloudTrail"],
                detail={
                    "eventName": ["RotationSucceeded"],
                    "additionalEventData": {"SecretId": [database.login.secret.secret_arn]},
                },
            ),
        )
        rule.add_target(targets.LambdaFunction(function, retry_attempts=2))
        self._alerts.watch(
            cloudwatch.Alarm(
                self,
                "RedeployFailing",
                alarm_description="Restarting the Hindsight services after a credential or key change failed",
                metric=function.metric_errors(period=Duration.minutes(5)),
                threshold=1,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
        )
        if identity is not None:
            keys_rule = events.Rule(
                self,
                "SigningKeysChanged",
                description="The mirrored JWKS of the token issuer changed",
                event_pattern=events.EventPattern(
                    source=["aws.ssm"],
                    detail_type=["Parameter Store Change"],
                    detail={"name": [identity.jwks_parameter.parameter_name], "operation": ["Update"]},
                ),
            )
            keys_rule.add_target(targets.LambdaFunction(function, retry_attempts=2))

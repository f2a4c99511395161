"""The ECS half of :class:`~infra.constructs.memory_service.MemoryService` (``hindsight.platform=ecs``, the default):
Hindsight's API, workers and maintenance task on Fargate (ARM64).

- :func:`~infra.constructs.image_mirror.hindsight_image`: the image (mirrored into ECR, or pulled);
- :class:`~infra.constructs.hindsight_task.HindsightTaskDefinition`: each task (three containers, the extension);
- :class:`~infra.constructs.redeploy_on_rotation.RedeployOnRotation`: restarts after a rotation or a key change.

Its resources are the memory service's own children (their logical ids are the service's), so this module only
splits the code, never the construct tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs

from infra.constructs.handoff import Handoff
from infra.constructs.hindsight_task import (
    MAINTENANCE_COMMAND,
    MAINTENANCE_DEFAULT_ARGUMENTS,
    WORKER_COMMAND,
    HindsightTaskDefinition,
    HindsightTaskParts,
    api_command,
)
from infra.constructs.image_mirror import hindsight_image
from infra.constructs.log_retention import retention
from infra.constructs.network import Network
from infra.constructs.redeploy_on_rotation import RedeployOnRotation, RedeployProps
from infra.permissions import (
    MAINTENANCE_FOLLOW_ACTIONS,
    MAINTENANCE_RUN_ACTIONS,
    PASS_ROLE_ACTION,
    grant_bedrock_invoke,
)

if TYPE_CHECKING:
    from infra.constructs.memory_props import MemoryServiceProps
    from infra.constructs.memory_service import MemoryService


class HindsightOnEcs:
    """Builds the Fargate half into ``memory`` (the :class:`MemoryService`); exposes ``mirror``, ``cluster``,
    ``log_group``, ``api_task``, ``maintenance_task``, ``maintenance_policy``, ``api_service``, ``worker_services``,
    ``worker_names`` (their handoffs) and ``redeploy``."""

    def __init__(self, memory: MemoryService, props: MemoryServiceProps, events_env: dict[str, str]) -> None:
        config, network, database = props.config, props.foundation.network, props.database
        self._memory = memory
        image, self.mirror = hindsight_image(memory, config, key=memory.secrets.key)
        self.cluster = ecs.Cluster(
            memory, "Cluster", vpc=network.vpc, container_insights_v2=ecs.ContainerInsights.ENHANCED
        )
        self.log_group = logs.LogGroup(
            memory,
            "Logs",
            retention=retention(config.log_retention_days),
            encryption_key=props.foundation.logs_key,
            removal_policy=RemovalPolicy.DESTROY,
        )
        secrets = memory.workload_access(props)  # before the environment: the construct order is the template's
        parts = HindsightTaskParts(
            config=config,
            image=image,
            extension=memory.extension,
            extension_sha256=memory.extension_sha256,
            environment=memory.environment(props, events_env),
            secrets=secrets,
            log_group=self.log_group,
            execution_grants=(database.grant_connect, *([self.mirror.grant_task_pull] if self.mirror else [])),
        )
        self.api_task = HindsightTaskDefinition(
            memory,
            "ApiTask",
            parts=parts,
            command=api_command(config),
            log_prefix="api",
            serve_tls=config.tls_to_tasks,
        )
        # The operator's restore and re-embedding: run on demand (docs/operating.md), never as a service. Its own
        # role reads backups only where the administration bucket allows it (grant_read in the -Operations stack).
        self.maintenance_task = HindsightTaskDefinition(
            memory,
            "MaintenanceTask",
            parts=parts,
            command=MAINTENANCE_COMMAND,
            log_prefix="maintenance",
            arguments=MAINTENANCE_DEFAULT_ARGUMENTS,
        )
        if config.maintenance_embeddings_model is not None:  # the model a re-embedding moves to
            grant_bedrock_invoke(
                memory,
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
                    memory,
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
        if props.events is not None:
            for task in [self.api_task, self.maintenance_task, *(w.task_definition for w in self.worker_services)]:
                props.events.grant_send(task.task_role)
        memory.balance_load(props, api_service=self.api_service)
        # The worker services come and go with hindsight.worker_count: later stacks read their names by parameter.
        self.worker_names = [
            Handoff(
                memory,
                f"Worker{i}NameHandoff",
                parameter_name=f"{props.parameter_prefix}/memory/worker-{i}/service-name",
                value=service.service_name,
                description=f"The ECS service name of Hindsight's worker-{i}, for the later stacks",
            )
            for i, service in enumerate(self.worker_services, 1)
        ]
        self.redeploy = RedeployOnRotation(
            memory,
            "RedeployOnRotation",
            RedeployProps(
                cluster=self.cluster,
                services=(self.api_service, *self.worker_services),
                triggers=memory.restart_triggers(props),
                logs_key=props.foundation.logs_key,
                alerts=props.foundation.alerts,
            ),
        )

    def _maintenance_policy(self) -> iam.ManagedPolicy:
        """What an operator needs to run the maintenance task (restore, re-embedding) and follow it: run-task on
        its family in this cluster, pass its two roles to ECS tasks only, describe and stop the tasks it started."""
        stack = Stack.of(self._memory)
        task = self.maintenance_task
        family_arn = stack.format_arn(service="ecs", resource="task-definition", resource_name=f"{task.family}:*")
        cluster_tasks = stack.format_arn(service="ecs", resource="task", resource_name=f"{self.cluster.cluster_name}/*")
        return iam.ManagedPolicy(
            self._memory,
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
            self._memory,
            construct_id,
            cluster=self.cluster,
            task_definition=task,
            desired_count=desired_count,
            security_groups=[self._memory.security_group],
            vpc_subnets=network.subnets,
            circuit_breaker=ecs.DeploymentCircuitBreaker(enable=True, rollback=True),
            min_healthy_percent=0 if worker else 100,
            max_healthy_percent=100 if worker else 200,
            health_check_grace_period=None if worker else Duration.minutes(5),
            platform_version=ecs.FargatePlatformVersion.VERSION1_4,
        )

"""MemoryService: the stock Hindsight image with our isolation extension loaded into it, on ECS Fargate (ARM64) or on
the customer's EKS cluster (``hindsight.platform``).

This module holds what both platforms share and what the other stacks see; each platform's half builds the rest into
the same construct (:mod:`infra.constructs.memory_service_ecs`, :mod:`infra.constructs.memory_service_eks`):

- :class:`~infra.constructs.hindsight_secrets.HindsightSecrets`: operator, agent and LLM keys under one KMS key;
- the isolation extension (an S3 asset) and every process's environment (:meth:`MemoryService.environment`);
- the workload security group and :class:`~infra.constructs.memory_load_balancer.MemoryLoadBalancer` (the internal
  ALB, its logs, alarm and DNS);
- the handoffs (:mod:`infra.constructs.handoff`) through which later stacks read what changes with a setting.

Other constructs use it only through ``url``, ``connections``, ``allow_from(peer)``, ``agent_key_secret_arn``,
``grant_agent_key_read(grantee)`` and ``grant_operator_key_read(grantee)`` (the administration functions); it uses the
database and the identity only through their own methods.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from aws_cdk import Stack, Tags
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from infra.config import Platform
from infra.constructs.eks_workloads import HindsightOnEks
from infra.constructs.handoff import Handoff
from infra.constructs.hindsight_secrets import HindsightSecrets
from infra.constructs.hindsight_task import hindsight_environment
from infra.constructs.image_mirror import ImageMirror
from infra.constructs.memory_endpoint import ConnectableConstruct
from infra.constructs.memory_load_balancer import MemoryLoadBalancer, MemoryLoadBalancerProps
from infra.constructs.memory_props import MemoryServiceProps
from infra.constructs.memory_service_ecs import HindsightOnEcs
from infra.constructs.memory_service_eks import hindsight_on_eks
from infra.constructs.redeploy_on_rotation import RedeployOnRotation, RestartTrigger
from infra.constructs.secret_source import SecretSource
from infra.isolation_env import ENV_STATIC_JWKS, isolation_settings
from infra.permissions import MAINTENANCE_ROLE_TAG

#: What Hindsight's processes are on each platform, and where their security group lets them go.
WORKLOADS = {
    Platform.ECS: ("tasks", "from the load balancer; to the database and AWS endpoints"),
    Platform.EKS: ("pods", "from the load balancer and the kubelet; to the database, DNS and endpoints"),
}


class MemoryService(Construct):
    """Hindsight API behind an internal load balancer plus stable-id workers; exposes ``url``, ``connections``,
    ``listener_port``, ``secrets``, ``mirror``, ``load_balancing``, ``security_group``, ``maintenance_role``, ``eks``
    (the pods, on EKS) and, on ECS, ``cluster``, ``log_group``, ``api_task``, ``api_service``, ``worker_services``,
    ``maintenance_task`` (restore and re-embedding, run on demand), ``maintenance_policy`` and ``redeploy``."""

    def __init__(self, scope: Construct, construct_id: str, props: MemoryServiceProps) -> None:
        super().__init__(scope, construct_id)
        config = self.config = props.config
        # Memory events (events.enabled): the extension in every process sends them to the events queue.
        events_env = props.events.environment_in(self) if props.events is not None else {}
        self.secrets = HindsightSecrets(self, "Secrets", props)
        self.extension = s3_assets.Asset(self, "IsolationExtension", path=str(config.extension_path))
        # A new extension restarts the tasks or pods that load it.
        self.extension_sha256 = hashlib.sha256(Path(config.extension_path).read_bytes()).hexdigest()
        self.mirror: ImageMirror | None = None
        self.redeploy: RedeployOnRotation | None = None
        self.eks: HindsightOnEks | None = None
        self._worker_names: list[Handoff] = []
        if config.platform is Platform.EKS:
            self.eks = hindsight_on_eks(self, props, events_env)
            self.maintenance_role: iam.IRole = self.eks.maintenance_role
        else:
            on_ecs = HindsightOnEcs(self, props, events_env)
            self.mirror, self.redeploy = on_ecs.mirror, on_ecs.redeploy
            self.cluster, self.log_group, self.api_service = on_ecs.cluster, on_ecs.log_group, on_ecs.api_service
            self.api_task, self.maintenance_task = on_ecs.api_task, on_ecs.maintenance_task
            self.worker_services, self.maintenance_policy = on_ecs.worker_services, on_ecs.maintenance_policy
            self.maintenance_role = on_ecs.maintenance_task.task_role
            # One StatefulSet on EKS, not one service per worker: the dashboard graphs its pods (no names handed off).
            self._worker_names = on_ecs.worker_names
        #: The URL in this stack; later stacks read it with :meth:`url_in` (HTTPS on or off changes it).
        self.url = self.load_balancing.url
        self._url = Handoff(
            self,
            "UrlHandoff",
            parameter_name=f"{props.parameter_prefix}/memory/url",
            value=self.url,
            description="Hindsight's URL inside the VPC, for the later stacks",
        )
        self.listener_port = self.load_balancing.listener_port
        self.connections: ec2.Connections = self.load_balancing.load_balancer.connections
        self._hand_off_platform_values(props.parameter_prefix)

    def _hand_off_platform_values(self, prefix: str) -> None:
        """What the -Operations stack reads of one platform only, by parameter (never an export, which would block
        the -MemoryService update that switches ``hindsight.platform``): the maintenance role, the restart alarm and,
        on ECS, the cluster's and the API service's names. The same parameter names on both platforms."""
        values = {"maintenance-role-arn": self.maintenance_role.role_arn}
        # The handoff only names the role: what reads it grants only a role of this account with this tag.
        self.maintenance_role_tag = (MAINTENANCE_ROLE_TAG, prefix)
        Tags.of(self.maintenance_role).add(*self.maintenance_role_tag)
        if self.eks is not None:
            values["restart-alarm-arn"] = self.eks.restart_failing_alarm.alarm_arn
            kept = [self.eks.maintenance_role.role_arn, self.eks.restart_failing_alarm.alarm_arn]
        else:
            assert self.redeploy is not None
            values["restart-alarm-arn"] = self.redeploy.failing_alarm.alarm_arn
            values["ecs-cluster-name"] = self.cluster.cluster_name
            values["ecs-api-service-name"] = self.api_service.service_name
            kept = [*values.values()]
        self._platform = {
            name: Handoff(
                self,
                "".join(word.title() for word in name.split("-")) + "Handoff",
                parameter_name=f"{prefix}/memory/{name}",
                value=value,
                description=f"Hindsight's {name} ({self.config.platform.value}), for the -Operations stack",
            )
            for name, value in values.items()
        }
        # Deployments made before these handoffs import the same values as exports: kept (same export names) so that
        # their first update is not refused; remove once every deployment has been updated with this version.
        for value in kept:
            Stack.of(self).export_value(value)

    # -- what both halves build with ---------------------------------------------------------------------------------

    def workload_access(self, props: MemoryServiceProps) -> dict[str, SecretSource]:
        """The tasks' or pods' security group (``security_group``), which the database admits (and the load balancer
        reaches), and what every process reads at start, by the variable each becomes: the database's login and CA
        bundle, the extension's keys, the mirrored signing keys (user-token modes), the external LLM's key. ECS
        injects them as container secrets; on EKS each pod's init step reads them with the pod's role."""
        kind, reach = WORKLOADS[self.config.platform]
        self.security_group = props.foundation.network.workload_security_group(
            self, "SecurityGroup", description=f"Hindsight {kind}: {reach}"
        )
        props.database.allow_from(self, self.security_group, description=f"Hindsight {kind} to PostgreSQL")
        sources = {**props.database.secret_sources(self), **self.secrets.credential_sources()}
        if props.identity is not None:
            sources[ENV_STATIC_JWKS] = props.identity.keys_source()
        return {**sources, **self.secrets.llm_sources()}

    def restart_triggers(self, props: MemoryServiceProps) -> list[RestartTrigger]:
        """What restarts Hindsight on either platform: a rotated database login, new signing keys in the mirror."""
        triggers = [
            RestartTrigger(
                "DatabaseSecretRotated",
                "Secrets Manager rotated the Hindsight database secret",
                props.database.login_rotation_pattern(),
            )
        ]
        if props.identity is not None:
            triggers.append(
                RestartTrigger(
                    "SigningKeysChanged",
                    "The mirrored JWKS of the token issuer changed",
                    props.identity.keys_change_pattern(),
                )
            )
        return triggers

    def environment(self, props: MemoryServiceProps, events_env: dict[str, str]) -> dict[str, str]:
        """Every Hindsight process's plain environment, the same on both platforms: the server's settings, the
        isolation extension's and, with memory events, the events queue."""
        return {
            **hindsight_environment(props.config, database=props.database.container_environment()),
            **isolation_settings(props, scope=self).to_env(),
            **events_env,
        }

    def balance_load(self, props: MemoryServiceProps, *, api_service: ecs.FargateService | None) -> MemoryLoadBalancer:
        """The internal load balancer in front of the API (its Fargate service, or on EKS the pods a
        TargetGroupBinding registers: ``api_service=None``), reachable from the agent only."""
        self.load_balancer_security_group = ec2.SecurityGroup(
            self,
            "LoadBalancerSecurityGroup",
            vpc=props.foundation.network.vpc,
            description="Hindsight internal load balancer: from the agent only",
            allow_all_outbound=False,
        )
        self.load_balancing = MemoryLoadBalancer(
            self,
            "LoadBalancing",
            MemoryLoadBalancerProps(
                config=props.config,
                foundation=props.foundation,
                security_group=self.load_balancer_security_group,
                api_service=api_service,
            ),
        )
        return self.load_balancing

    # -- what the other stacks use -----------------------------------------------------------------------------------

    def url_in(self, scope: Construct) -> str:
        """Hindsight's URL as scope's stack reads it (an SSM handoff; scope's stack deploys after this one)."""
        return self._url.value_in(scope)

    def maintenance_role_in(self, scope: Construct) -> iam.IRole:
        """The maintenance task's or pods' role as scope's stack reads it (a handoff: the platform may change). The
        handoff's value is not trusted: a grant to it must also require :attr:`maintenance_role_tag`."""
        arn = self._platform["maintenance-role-arn"].value_in(scope)
        return iam.Role.from_role_arn(scope, "HindsightMaintenanceRole", arn, mutable=False)

    def restart_alarm_in(self, scope: Construct) -> cloudwatch.IAlarm:
        """The alarm of the restarts after a rotation or a key change, as scope's stack reads it (a handoff)."""
        arn = self._platform["restart-alarm-arn"].value_in(scope)
        return cloudwatch.Alarm.from_alarm_arn(scope, "HindsightRestartAlarm", arn)

    def ecs_names_in(self, scope: Construct) -> tuple[str, str]:
        """The ECS cluster's and the API service's names as scope's stack reads them (handoffs; ECS only)."""
        names = self._platform["ecs-cluster-name"], self._platform["ecs-api-service-name"]
        return names[0].value_in(scope), names[1].value_in(scope)

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

"""MemoryServiceStack: Hindsight on Fargate (stateless; its data lives in the DataStack)."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput
from constructs import Construct

from infra.config import AuthConfig, EksConfig, HindsightConfig
from infra.config.model import FadingConfig
from infra.constructs.database import VectorDatabase
from infra.constructs.eks_workloads import HindsightOnEks
from infra.constructs.identity import Identity
from infra.constructs.memory_events import MemoryEvents
from infra.constructs.memory_service import MemoryService, MemoryServiceProps
from infra.constructs.part import PartAwareStack
from infra.stacks.network_stack import Foundation
from memory_adapter.missions import Mission


class MemoryServiceStack(PartAwareStack):
    """Exposes ``memory``.

    Args:
        auth: How callers authenticate (the isolation extension checks their tokens as the agent does).
        agent_name: The agent whose banks an IAM-mode agent key opens.
        fading: Fading and reinforcement of memories (the ``fading`` section), applied by every task's extension.
        mission: What the agent's memory keeps (``missions.<agent name>``), applied by every task's extension to
            the agent's banks (a user's token may set no bank setting).
        events: The -Data stack's memory events (``events.enabled``): every task's extension sends to its queue.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: HindsightConfig,
        auth: AuthConfig,
        agent_name: str,
        foundation: Foundation,
        database: VectorDatabase,
        identity: Identity | None,
        parameter_prefix: str,
        eks: EksConfig | None = None,
        events: MemoryEvents | None = None,
        fading: FadingConfig | None = None,
        mission: Mission | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.memory = MemoryService(
            self,
            "Memory",
            MemoryServiceProps(
                config=config,
                auth=auth,
                network=foundation.network,
                database=database,
                identity=identity,
                agent_name=agent_name,
                logs_key=foundation.logs_key,
                alerts=foundation.alerts,
                parameter_prefix=parameter_prefix,
                eks_config=eks,
                events=events,
                fading=fading,
                mission=mission,
            ),
        )
        CfnOutput(self, "HindsightUrl", value=self.memory.url, description="Hindsight API (inside the VPC)")
        CfnOutput(
            self,
            "OperatorKeySecretArn",
            value=self.memory.secrets.operator_key.secret_arn,
            description="Hindsight operator credential (administration only; never give it to the agent)",
        )
        if self.memory.eks is not None:
            self._eks_outputs(self.memory.eks)
            return
        # ecs run-task of the maintenance task (restore, re-embed): docs/operating.md.
        CfnOutput(
            self,
            "MaintenanceTaskDefinition",
            value=self.memory.maintenance_task.family,
            description="Restore and re-embedding: aws ecs run-task --task-definition <this> (docs/operating.md)",
        )
        CfnOutput(
            self,
            "MaintenancePolicyArn",
            value=self.memory.maintenance_policy.managed_policy_arn,
            description="Attach to the roles that restore or re-embed: ecs run-task of MaintenanceTaskDefinition",
        )
        CfnOutput(self, "ClusterName", value=self.memory.cluster.cluster_name, description="The Hindsight ECS cluster")
        CfnOutput(
            self,
            "ServiceLogGroup",
            value=self.memory.log_group.log_group_name,
            description="Every Hindsight task's log (streams api/, worker<n>/, maintenance/)",
        )
        CfnOutput(
            self,
            "TaskSecurityGroupId",
            value=self.memory.security_group.security_group_id,
            description="The Hindsight tasks' security group (run the maintenance task with it)",
        )

    def _eks_outputs(self, on_eks: HindsightOnEks) -> None:
        """What an operator of the EKS variant needs (docs: Hindsight on EKS)."""
        CfnOutput(
            self, "ClusterName", value=on_eks.cluster.cluster_name, description="The EKS cluster Hindsight runs on"
        )
        CfnOutput(
            self,
            "PodSecurityGroupId",
            value=self.memory.security_group.security_group_id,
            description="The Hindsight pods' security group (security groups for pods)",
        )
        CfnOutput(
            self,
            "MaintenanceRoleArn",
            value=on_eks.maintenance_role.role_arn,
            description="The role of the hindsight-maintenance service account (restore, re-embed)",
        )

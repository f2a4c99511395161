"""cdk-nag acknowledgements: each names the resource it applies to and the specific reason it is acceptable.

Reviewed against AwsSolutions and NIST 800-53 rev 5 (cdk-nag 3.x ``Validations``). Acknowledgements are attached to
the exact construct (never a whole stack), and those that depend on configuration (single-AZ database, no TLS
certificate) are added only when that configuration is chosen. One module per stack (``infra.nag.data`` for
``-Data``, ...); :mod:`infra.nag.common` holds what they share. The ``-Network`` stack needs none: its endpoint
security group only admits 443 from the VPC's CIDR.
"""

from __future__ import annotations

from infra.app_builder import Stacks
from infra.config import AppConfig
from infra.nag import agent, common, data, external, gateway, identity, memory, operations


def acknowledge_findings(stacks: Stacks, config: AppConfig) -> None:
    """Acknowledge the findings reviewed and accepted for this design."""
    for stack in stacks.all():
        common.inline_policies(stack)
    if stacks.data is not None:
        data.acknowledge(stacks.data, config)
    if stacks.identity is not None:
        identity.acknowledge(stacks.identity)
    if stacks.memory is not None:
        memory.acknowledge(stacks.memory, config)
    if stacks.external is not None:
        external.acknowledge(stacks.external)
    agent.acknowledge(stacks.agent, config)
    if stacks.gateway is not None:
        gateway.acknowledge(stacks.gateway)
    operations.acknowledge(stacks.operations)
    # -- deploy-safety (issue 21) --
    for stack in stacks.all():
        common.service_log_groups(stack)
    if stacks.memory is not None and stacks.memory.memory.eks is None:  # ECS run-task's; EKS: a service account
        memory.acknowledge_maintenance_policy(stacks.memory)

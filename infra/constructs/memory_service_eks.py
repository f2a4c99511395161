"""The EKS half of :class:`~infra.constructs.memory_service.MemoryService` (``hindsight.platform=eks``): the same
secrets, image, environment, commands and load balancer, with pods on the customer's cluster instead of tasks
(:class:`~infra.constructs.eks_workloads.HindsightOnEks`).

Its resources are the memory service's own children (their logical ids are the service's), so this module only
splits the code, never the construct tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import aws_ec2 as ec2

from infra.constructs.eks_workloads import HindsightOnEks, HindsightPodsProps
from infra.constructs.image_mirror import hindsight_image_uri

if TYPE_CHECKING:
    from infra.constructs.memory_props import MemoryServiceProps
    from infra.constructs.memory_service import MemoryService


def hindsight_on_eks(memory: MemoryService, props: MemoryServiceProps, events_env: dict[str, str]) -> HindsightOnEks:
    """Build the EKS half into ``memory``; answers the pods' construct (``memory.eks``)."""
    config = props.config
    assert props.eks is not None
    image, mirror = hindsight_image_uri(memory, config, key=memory.secrets.key)
    memory.mirror = mirror
    sources = memory.workload_access(props)
    security_group = memory.security_group
    balancing = memory.balance_load(props, api_service=None)
    memory.load_balancer_security_group.connections.allow_to(
        security_group, ec2.Port.tcp(config.port), "Load balancer to the Hindsight API pods"
    )
    eks = HindsightOnEks(
        memory,
        "Eks",
        HindsightPodsProps(
            config=config,
            eks=props.eks,
            foundation=props.foundation,
            database=props.database,
            image=image,
            environment=memory.environment(props, events_env),
            secrets=sources,
            extension=memory.extension,
            extension_sha256=memory.extension_sha256,
            security_group=security_group,
            target_group_arn=balancing.target_group.target_group_arn,
            restart_triggers=memory.restart_triggers(props),
        ),
    )
    if mirror is not None:
        eks.manifest.node.add_dependency(mirror.lookup)
    if props.events is not None:
        for role in (eks.workload_role, eks.maintenance_role):
            props.events.grant_send(role)
    return eks

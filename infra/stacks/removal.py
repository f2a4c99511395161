"""What ``removal`` (retain, snapshot, destroy) means for a stateful resource."""

from __future__ import annotations

from aws_cdk import RemovalPolicy

from infra.config import DataRemoval

REMOVAL_POLICIES = {
    DataRemoval.RETAIN: RemovalPolicy.RETAIN,
    DataRemoval.SNAPSHOT: RemovalPolicy.SNAPSHOT,
    DataRemoval.DESTROY: RemovalPolicy.DESTROY,
}


def removal_policy(removal: DataRemoval, *, snapshots: bool = True) -> RemovalPolicy:
    """The policy for ``removal``; ``snapshot`` becomes ``retain`` for resources that cannot be snapshotted."""
    if removal is DataRemoval.SNAPSHOT and not snapshots:
        return RemovalPolicy.RETAIN
    return REMOVAL_POLICIES[removal]

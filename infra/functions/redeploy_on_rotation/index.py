"""Force a new deployment of the Hindsight services after their database secret rotated.

Hindsight reads the database URL once at container start; after a single-user rotation the old password stops
working for new connections, so the tasks are replaced (the deployment circuit breaker rolls back a bad start).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import boto3

from memory_adapter.settings_fields import DeclaredSettings, setting


@dataclass(frozen=True, slots=True, kw_only=True)
class RedeploySettings(DeclaredSettings):
    """Which services to replace."""

    cluster_arn: str = setting("CLUSTER_ARN", required="the ECS cluster of the services")
    service_arns: tuple[str, ...] = setting("SERVICE_ARNS", kind=tuple, required="the services to redeploy")


def handler(event: Any, context: Any, *, ecs: Any = None) -> dict[str, Any]:
    """EventBridge target for Secrets Manager's RotationSucceeded event."""
    del context
    client = ecs or boto3.client("ecs")
    settings = RedeploySettings.from_env(os.environ)
    services = settings.service_arns
    for service in services:
        client.update_service(cluster=settings.cluster_arn, service=service, forceNewDeployment=True)
    print(
        json.dumps(
            {
                "message": "services redeployed after rotation",
                "count": len(services),
                "event": event.get("detail-type") if isinstance(event, dict) else None,
            }
        )
    )
    return {"redeployed": len(services)}

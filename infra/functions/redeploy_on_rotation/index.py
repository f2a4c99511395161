"""Force a new deployment of the Hindsight services after their database secret rotated.

Hindsight reads the database URL once at container start; after a single-user rotation the old password stops
working for new connections, so the tasks are replaced (the deployment circuit breaker rolls back a bad start).
"""

from __future__ import annotations

import json
import os
from typing import Any

import boto3


def handler(event: Any, context: Any, *, ecs: Any = None) -> dict[str, Any]:
    """EventBridge target for Secrets Manager's RotationSucceeded event."""
    del context
    client = ecs or boto3.client("ecs")
    cluster = os.environ["CLUSTER_ARN"]
    services = [s for s in os.environ["SERVICE_ARNS"].split(",") if s]
    for service in services:
        client.update_service(cluster=cluster, service=service, forceNewDeployment=True)
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

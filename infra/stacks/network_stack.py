"""NetworkStack: the VPC, its endpoints and flow logs, the key that encrypts every log group, and the alerts topic."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import ArnFormat, CfnOutput, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.constructs.alerts import Alerts
from infra.constructs.foundation import Foundation
from infra.constructs.network import Network, NetworkProps
from infra.constructs.part import PartAwareStack

#: What the CloudWatch Logs service needs on the logs key.
LOGS_KEY_ACTIONS = ("kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*")


@dataclass(frozen=True)
class NetworkStackProps:
    """What the -Network stack is built from.

    Args:
        network: The network's (:class:`~infra.constructs.network.NetworkProps`).
        alarm_email: Where the alerts topic sends mail (``alarms.email``; ``None``: no subscription).
    """

    network: NetworkProps
    alarm_email: str | None


class NetworkStack(PartAwareStack):
    """Exposes ``network``, ``logs_key``, ``alerts`` and all three as ``foundation``."""

    def __init__(self, scope: Construct, construct_id: str, *, props: NetworkStackProps, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.logs_key = kms.Key(
            self,
            "LogsKey",
            description="CloudWatch Logs of the memory service, the agent and the VPC flow logs",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.logs_key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal(f"logs.{self.region}.amazonaws.com")],
                actions=list(LOGS_KEY_ACTIONS),
                resources=["*"],  # in a key policy, "*" means this key
                conditions={
                    "ArnLike": {
                        "kms:EncryptionContext:aws:logs:arn": self.format_arn(
                            service="logs",
                            resource="log-group",
                            resource_name="*",
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                    }
                },
            )
        )
        self.alerts = Alerts(self, "Alerts", email=props.alarm_email)
        CfnOutput(
            self,
            "AlertsTopicArn",
            value=self.alerts.topic.topic_arn,
            description="Every alarm of the deployment notifies this topic: subscribe your alerting to it",
        )
        self.network = Network(self, "Network", props.network, logs_key=self.logs_key)
        self.foundation = Foundation(network=self.network, logs_key=self.logs_key, alerts=self.alerts)
        CfnOutput(
            self,
            "SubnetIds",
            value=",".join(self.network.subnet_ids),
            description="Where every workload runs (an ecs run-task of the maintenance task names them)",
        )

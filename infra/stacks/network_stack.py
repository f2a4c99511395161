"""NetworkStack: the VPC, its endpoints and flow logs, and the key that encrypts every log group."""

from __future__ import annotations

from typing import Any

from aws_cdk import ArnFormat, CfnOutput, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.config import AppConfig
from infra.constructs.alerts import Alerts
from infra.constructs.network import Network


class NetworkStack(Stack):
    """Exposes ``network``, ``logs_key`` and ``alerts`` (the topic every alarm of the deployment notifies)."""

    def __init__(self, scope: Construct, construct_id: str, *, config: AppConfig, **kwargs: Any) -> None:
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
                actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
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
        self.alerts = Alerts(self, "Alerts", email=config.alarms.email)
        CfnOutput(
            self,
            "AlertsTopicArn",
            value=self.alerts.topic.topic_arn,
            description="Every alarm of the deployment notifies this topic: subscribe your alerting to it",
        )
        self.network = Network(
            self, "Network", config=config.network, auth_mode=config.auth.mode, logs_key=self.logs_key
        )

"""IdentityStack: the Cognito user pool (quick start) or the customer's issuer, and the mirrored signing keys."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.config import AppConfig, DataRemoval
from infra.constructs.alerts import Alerts
from infra.constructs.identity import Identity
from infra.stacks.data_stack import REMOVAL_POLICIES


class IdentityStack(Stack):
    """Exposes ``identity``. Only for JWT modes (cognito, jwt)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AppConfig,
        logs_key: kms.IKey,
        alerts: Alerts,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        removal = REMOVAL_POLICIES[config.removal if config.removal is not DataRemoval.SNAPSHOT else DataRemoval.RETAIN]
        self.identity = Identity(
            self,
            "Identity",
            config=config.auth,
            logs_key=logs_key,
            removal_policy=removal,
            parameter_name=f"/{config.prefix}/{config.env_name}/identity/jwks",
            alerts=alerts,
        )
        CfnOutput(self, "DiscoveryUrl", value=self.identity.discovery_url, description="OIDC discovery URL")
        CfnOutput(
            self, "Issuer", value=self.identity.issuer, description="The issuer's iss, from its discovery document"
        )
        CfnOutput(
            self,
            "JwksParameter",
            value=self.identity.jwks_parameter.parameter_name,
            description="SSM parameter holding the mirrored signing keys",
        )
        if self.identity.user_pool is not None and self.identity.client is not None:
            CfnOutput(self, "UserPoolId", value=self.identity.user_pool.user_pool_id, description="Cognito user pool")
            CfnOutput(
                self,
                "UserPoolClientId",
                value=self.identity.client.user_pool_client_id,
                description="App client id (public client, no secret)",
            )

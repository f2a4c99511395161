"""Identity: who may call the agent (a Cognito user pool, or a customer's OIDC issuer) and its mirrored signing keys."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, triggers
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra.config import AuthConfig, AuthMode
from infra.permissions import SSM_WRITE_ACTIONS

FUNCTIONS_DIR = Path(__file__).resolve().parent.parent / "functions"
DISCOVERY_SUFFIX = "/.well-known/openid-configuration"
#: Written once by CloudFormation; the mirror function replaces it with the issuer's JWKS on every deploy.
JWKS_PLACEHOLDER = '{"keys":[]}'


class Identity(Construct):
    """Exposes ``discovery_url``, ``issuer``, ``jwks_parameter`` and, in Cognito mode, ``user_pool`` and ``client``.

    Signing keys in a VPC without egress: AgentCore verifies every token before the agent sees it, and the agent and
    the Hindsight extension verify it again against keys they read from ``jwks_parameter`` through the SSM endpoint.
    A function outside the VPC refreshes the parameter on every deploy (the deploy fails if the issuer is
    unreachable or serves private key material) and on a schedule; failures raise the ``MirrorFailing`` alarm while
    the last good keys stay in place.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AuthConfig,
        logs_key: kms.IKey,
        removal_policy: RemovalPolicy,
    ) -> None:
        super().__init__(scope, construct_id)
        if config.mode is AuthMode.IAM:
            raise ValueError("Identity is for JWT modes; an IAM runtime has no token issuer")
        self.user_pool: cognito.UserPool | None = None
        self.client: cognito.UserPoolClient | None = None
        if config.mode is AuthMode.COGNITO:
            self.user_pool, self.client = self._cognito(removal_policy)
            self.issuer = self.user_pool.user_pool_provider_url
            self.allowed_clients: list[str] = [self.client.user_pool_client_id]
            self.allowed_audience: list[str] = []
        else:
            assert config.discovery_url is not None
            self.issuer = config.discovery_url[: -len(DISCOVERY_SUFFIX)]
            self.allowed_clients = list(config.allowed_clients)
            self.allowed_audience = list(config.allowed_audience)
        self.discovery_url = self.issuer + DISCOVERY_SUFFIX
        self.jwks_parameter = ssm.StringParameter(
            self,
            "Jwks",
            description="Public signing keys (JWKS) of the token issuer, mirrored for VPCs without egress",
            string_value=JWKS_PLACEHOLDER,
            tier=ssm.ParameterTier.ADVANCED,
        )
        self._mirror(config, logs_key)

    def _cognito(self, removal_policy: RemovalPolicy) -> tuple[cognito.UserPool, cognito.UserPoolClient]:
        pool = cognito.UserPool(
            self,
            "UserPool",
            self_sign_up_enabled=False,  # users are created by an administrator
            sign_in_aliases=cognito.SignInAliases(email=True, username=True),
            mfa=cognito.Mfa.OPTIONAL,
            mfa_second_factor=cognito.MfaSecondFactor(sms=False, otp=True),
            password_policy=cognito.PasswordPolicy(
                min_length=12,
                require_digits=True,
                require_lowercase=True,
                require_uppercase=True,
                require_symbols=True,
                temp_password_validity=Duration.days(3),
            ),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            deletion_protection=removal_policy is RemovalPolicy.RETAIN,
            removal_policy=removal_policy,
        )
        client = pool.add_client(
            "AgentClient",
            auth_flows=cognito.AuthFlow(user_srp=True, user_password=True),
            generate_secret=False,
            prevent_user_existence_errors=True,
            access_token_validity=Duration.hours(1),
            id_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.days(1),
            enable_token_revocation=True,
        )
        return pool, client

    def _mirror(self, config: AuthConfig, logs_key: kms.IKey) -> None:
        log_group = logs.LogGroup(
            self,
            "MirrorLogs",
            retention=logs.RetentionDays.THREE_MONTHS,
            encryption_key=logs_key,
            removal_policy=RemovalPolicy.DESTROY,
        )
        function = lambda_.Function(
            self,
            "Mirror",
            description="Copies the token issuer's public signing keys into SSM for workloads without egress",
            runtime=lambda_.Runtime.PYTHON_3_14,
            architecture=lambda_.Architecture.ARM_64,
            handler="index.handler",
            code=lambda_.Code.from_asset(str(FUNCTIONS_DIR / "jwks_mirror")),
            timeout=Duration.seconds(30),
            memory_size=128,
            log_group=log_group,
            environment={"DISCOVERY_URL": self.discovery_url, "PARAMETER_NAME": self.jwks_parameter.parameter_name},
        )
        self.jwks_parameter.grant_read(function)
        function.add_to_role_policy(
            iam.PolicyStatement(actions=list(SSM_WRITE_ACTIONS), resources=[self.jwks_parameter.parameter_arn])
        )
        rule = events.Rule(
            self, "MirrorSchedule", schedule=events.Schedule.rate(Duration.minutes(config.jwks_refresh_minutes))
        )
        rule.add_target(targets.LambdaFunction(function, retry_attempts=2))
        trigger = triggers.Trigger(self, "MirrorOnDeploy", handler=function, execute_on_handler_change=True)
        trigger.execute_after(self.jwks_parameter)
        if self.user_pool is not None:
            trigger.execute_after(self.user_pool)
        self.mirror_alarm = cloudwatch.Alarm(
            self,
            "MirrorFailing",
            alarm_description="The token issuer's signing keys could not be refreshed; the last good keys stay in use",
            metric=function.metric_errors(period=Duration.minutes(config.jwks_refresh_minutes)),
            threshold=1,
            evaluation_periods=2,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self.mirror_function = function

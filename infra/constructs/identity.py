"""Identity: who may call the agent (a Cognito user pool, or a customer's OIDC issuer) and its mirrored signing keys."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import CustomResource, Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra.config import AuthConfig, AuthMode
from infra.constructs.alerts import Alerts
from infra.constructs.foundation import Foundation
from infra.constructs.functions import FUNCTIONS_DIR
from infra.constructs.handoff import Handoff
from infra.constructs.owned_parameter import owned_parameter_digest, owned_parameter_function
from infra.constructs.secret_source import SecretSource
from infra.functions.jwks_mirror.index import MirrorSettings
from infra.permissions import SSM_READ_ACTIONS
from memory_adapter.identity.settings import DISCOVERY_SUFFIX, JwtSettings

MIRROR_DIR = FUNCTIONS_DIR / "jwks_mirror"


@dataclass(frozen=True)
class IdentityProps:
    """What the identity is built from.

    Args:
        config: The ``auth`` section (a user-token mode: cognito or jwt).
        foundation: The mirror function's logs key and its alarm's topic.
        removal_policy: What deleting the stack does to the user pool.
        parameter_prefix: Where the mirrored keys (``<prefix>/identity/jwks``) and the issuer's handoff
            (``<prefix>/identity/issuer``) are published.
    """

    config: AuthConfig
    foundation: Foundation
    removal_policy: RemovalPolicy
    parameter_prefix: str


class Identity(Construct):
    """Exposes ``discovery_url``, ``issuer``, ``allowed_clients``, ``allowed_audience``, ``jwks_parameter`` and, in
    Cognito mode, ``user_pool`` and ``client``; ``grant_read_keys(grantee)``, ``keys_source()``,
    ``keys_change_pattern()``.

    Signing keys in a VPC without egress: AgentCore verifies every token before the agent sees it, and the agent and
    the Hindsight extension verify it again against keys they read from ``jwks_parameter`` through the SSM endpoint.
    The parameter belongs to a function outside the VPC, not to CloudFormation (which would reset a value the
    function rewrote on every update of the resource): as a custom resource the function creates it, fills it on
    every deploy that changes the issuer or the function (the deploy fails if the issuer is unreachable or serves
    private key material), hands back the discovery document's real ``issuer`` (``issuer``), and deletes it with
    the stack; a schedule refreshes it in between, and failures raise the ``MirrorFailing`` alarm while the last
    good keys stay in place.
    """

    def __init__(self, scope: Construct, construct_id: str, props: IdentityProps) -> None:
        super().__init__(scope, construct_id)
        config, removal_policy = props.config, props.removal_policy
        parameter_name = f"{props.parameter_prefix}/identity/jwks"
        if config.mode is AuthMode.IAM:
            raise ValueError("Identity is for JWT modes; an IAM runtime has no token issuer")
        self.user_pool: cognito.UserPool | None = None
        self.client: cognito.UserPoolClient | None = None
        if config.mode is AuthMode.COGNITO:
            self.user_pool, self.client = self._cognito(removal_policy)
            self.discovery_url = self.user_pool.user_pool_provider_url + DISCOVERY_SUFFIX
            self.allowed_clients: list[str] = [self.client.user_pool_client_id]
            self.allowed_audience: list[str] = []
        else:
            assert config.discovery_url is not None
            self.discovery_url = config.discovery_url
            self.allowed_clients = list(config.allowed_clients)
            self.allowed_audience = list(config.allowed_audience)
        self._config = config
        self._parameter_name = parameter_name
        keys = self._mirror(config, props.foundation.logs_key, props.foundation.alerts)
        #: The discovery document's ``issuer``, exactly as tokens carry it in ``iss`` (read at deploy time). Later
        #: stacks read it with :meth:`issuer_in`: a new discovery URL changes it, which an export would refuse.
        self.issuer = keys.get_att_string("Issuer")
        self._issuer = Handoff(
            self,
            "IssuerHandoff",
            parameter_name=f"{props.parameter_prefix}/identity/issuer",
            value=self.issuer,
            description="The token issuer's iss (from its discovery document), for the later stacks",
        )
        # By the configured name (a constant), not the custom resource's attribute, which changes whenever the
        # mirror's properties do as far as CloudFormation knows; readers' stacks deploy after this one anyway.
        self.jwks_parameter = ssm.StringParameter.from_string_parameter_attributes(
            self, "Jwks", parameter_name=parameter_name, simple_name=False
        )

    def grant_read_keys(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let grantee read the mirrored keys (a plain String parameter: no KMS key is involved), GetParameter only."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=list(SSM_READ_ACTIONS), resource_arns=[self.jwks_parameter.parameter_arn]
        )

    def issuer_in(self, scope: Construct) -> str:
        """The issuer as scope's stack reads it (:class:`~infra.constructs.handoff.Handoff`); scope's stack deploys
        after this one."""
        return self._issuer.value_in(scope)

    def verifier_settings(self, scope: Construct) -> JwtSettings:
        """The token checks of a process that verifies this issuer's user tokens as the agent does, for a process
        in scope's stack (its settings' ``to_env`` writes them as ``JWT_*``): the mirrored keys (read through SSM,
        never fetched from the issuer), the discovery document's ``issuer``, the clients or audience, the claims;
        Cognito's access tokens only. Grant the process :meth:`grant_read_keys` too."""
        return JwtSettings(
            issuer=self.issuer_in(scope),
            jwks_parameter=self.jwks_parameter.parameter_name,
            user_claim=self._config.user_claim,
            allowed_clients=tuple(self.allowed_clients),
            allowed_audience=tuple(self.allowed_audience),
            tenant_claim=self._config.tenant_claim or None,
            token_use="access" if self._config.mode is AuthMode.COGNITO else None,
        )

    def keys_source(self) -> SecretSource:
        """The mirrored keys' parameter (read once at start, on either platform; see :meth:`keys_change_pattern`)."""
        return SecretSource(parameter=self.jwks_parameter)

    def keys_change_pattern(self) -> events.EventPattern:
        """The event of the mirror having written new keys (tasks that read them at start must restart)."""
        return events.EventPattern(
            source=["aws.ssm"],
            detail_type=["Parameter Store Change"],
            detail={"name": [self.jwks_parameter.parameter_name], "operation": ["Update"]},
        )

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

    def _mirror(self, config: AuthConfig, logs_key: kms.IKey, alerts: Alerts) -> CustomResource:
        function = owned_parameter_function(
            self,
            "Mirror",
            log_group_id="MirrorLogs",
            source=MIRROR_DIR,
            parameter_name=self._parameter_name,
            description="Owns the mirrored public signing keys of the token issuer (SSM) for workloads without egress",
            timeout=Duration.seconds(60),
            logs_key=logs_key,
            environment=MirrorSettings(discovery_url=self.discovery_url, parameter_name=self._parameter_name).to_env(),
            read=True,
        )
        keys = CustomResource(
            self,
            "Keys",
            service_token=function.function_arn,
            resource_type="Custom::MirroredSigningKeys",
            properties={
                "DiscoveryUrl": self.discovery_url,
                "ParameterName": self._parameter_name,
                # A changed mirror function runs again at deploy (it may check or store the keys differently).
                "HandlerSha256": owned_parameter_digest(MIRROR_DIR),
            },
        )
        keys.node.add_dependency(function.role or function)
        if self.user_pool is not None:
            keys.node.add_dependency(self.user_pool)
        rule = events.Rule(
            self, "MirrorSchedule", schedule=events.Schedule.rate(Duration.minutes(config.jwks_refresh_minutes))
        )
        rule.add_target(targets.LambdaFunction(function, retry_attempts=2))
        rule.node.add_dependency(keys)  # deleted before the parameter's owner, so no refresh re-creates it
        self.mirror_alarm = alerts.watch(
            cloudwatch.Alarm(
                self,
                "MirrorFailing",
                alarm_description="The issuer's signing keys could not be refreshed; the last good keys stay in use",
                metric=function.metric_errors(period=Duration.minutes(config.jwks_refresh_minutes)),
                threshold=1,
                evaluation_periods=2,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
        )
        self.mirror_function = function
        return keys

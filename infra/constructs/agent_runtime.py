"""AgentRuntime: the ``runtime_handler`` agent on AgentCore Runtime as code (Linux arm64 wheels, no Docker)."""

from __future__ import annotations

import re
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.config import AgentConfig, AuthConfig, AuthMode
from infra.constructs.identity import Identity
from infra.constructs.log_retention import retention
from infra.constructs.memory_service import MemoryService
from infra.constructs.network import Network
from infra.permissions import grant_bedrock_invoke
from runtime_handler import settings as rs

#: The bundle's root holds ``main.py``, which runs ``python -m runtime_handler`` (see ``infra.build``).
ENTRYPOINT = ["main.py"]
ENDPOINT_NAME = "live"
#: The endpoint every runtime has besides ours; it logs to its own group.
DEFAULT_ENDPOINT_NAME = "DEFAULT"
RUNTIME_LOG_GROUP_PREFIX = "/aws/bedrock-agentcore/runtimes/"
POWERTOOLS_SERVICE_NAME = "POWERTOOLS_SERVICE_NAME"
POWERTOOLS_METRICS_NAMESPACE = "POWERTOOLS_METRICS_NAMESPACE"
METRICS_NAMESPACE = "AgentCoreHindsightMemory"


def runtime_log_group_name(runtime_id: str, endpoint: str) -> str:
    """Where AgentCore writes a runtime endpoint's logs."""
    return f"{RUNTIME_LOG_GROUP_PREFIX}{runtime_id}-{endpoint}"


def make_runtime_name(prefix: str, env_name: str, agent_name: str) -> str:
    """AgentCore requires ``[a-zA-Z][a-zA-Z0-9_]{0,47}``: no hyphens."""
    return re.sub(r"[^A-Za-z0-9_]", "_", f"{prefix}_{env_name}_{agent_name}")[:48]


class AgentRuntime(Construct):
    """The Runtime in VPC mode with its authorizer, environment, least-privilege role and an endpoint."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AgentConfig,
        auth: AuthConfig,
        network: Network,
        memory: MemoryService,
        identity: Identity | None,
        runtime_name: str,
        logs_key: kms.IKey,
    ) -> None:
        super().__init__(scope, construct_id)
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=network.vpc,
            description="Agent: to the Hindsight load balancer and AWS endpoints only",
            allow_all_outbound=False,
        )
        # The VPC has no egress; 443 reaches the VPC endpoints (Bedrock, Secrets Manager, SSM, logs, traces).
        self.security_group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to AWS endpoints")
        network.allow_endpoints_from(self, self.security_group)
        self.network_configuration = agentcore.RuntimeNetworkConfiguration.using_vpc(
            self, vpc=network.vpc, vpc_subnets=network.subnets, security_groups=[self.security_group]
        )
        # Written in this stack through an imported handle, so the memory stack never depends on the agent's.
        hindsight_sg = ec2.SecurityGroup.from_security_group_id(
            self,
            "HindsightSecurityGroup",
            memory.load_balancer_security_group.security_group_id,
            allow_all_outbound=False,
        )
        self.security_group.connections.allow_to(
            hindsight_sg, ec2.Port.tcp(memory.listener_port), "Agent to Hindsight's load balancer"
        )
        artifact = agentcore.AgentRuntimeArtifact.from_code_asset(
            path=str(Path(config.bundle_path)),
            runtime=agentcore.AgentCoreRuntime.PYTHON_3_12,
            entrypoint=ENTRYPOINT,
        )
        self.environment = agent_environment(config, auth, memory=memory, identity=identity)
        self.runtime = agentcore.Runtime(
            self,
            "Runtime",
            runtime_name=runtime_name,
            description=f"Agent '{config.name}' with durable memory on self-hosted Hindsight",
            agent_runtime_artifact=artifact,
            authorizer_configuration=_authorizer(auth, identity),
            network_configuration=self.network_configuration,
            environment_variables=self.environment,
            request_header_configuration=agentcore.RequestHeaderConfiguration(allowlisted_headers=["Authorization"])
            if auth.mode is not AuthMode.IAM
            else None,
            lifecycle_configuration=agentcore.LifecycleConfiguration(
                idle_runtime_session_timeout=Duration.seconds(config.idle_timeout_seconds),
                max_lifetime=Duration.seconds(config.max_lifetime_seconds),
            ),
            tracing_enabled=True,
        )
        grant_bedrock_invoke(self, self.runtime, [config.model_id])
        if identity is not None:
            # The agent reads the mirrored signing keys through the VPC's SSM endpoint (it cannot reach the issuer).
            # A String parameter: no KMS key is involved, so read on this one parameter is all the role gets.
            identity.grant_read_keys(self.runtime)
        if memory.secrets.agent_key is not None:
            # By ARN plus a direct decrypt grant, so the memory stack's key policy never names this stack's role.
            agent_key = secretsmanager.Secret.from_secret_complete_arn(
                self, "AgentKey", memory.secrets.agent_key.secret_arn
            )
            agent_key.grant_read(self.runtime)
            memory.key.grant_decrypt(self.runtime)
        self.endpoint = self.runtime.add_endpoint(ENDPOINT_NAME, description="The agent's stable endpoint")
        # The runtime writes to /aws/bedrock-agentcore/runtimes/<id>-<endpoint> and, when they do not exist yet,
        # creates them itself: kept forever and unencrypted. Created here first, with the configured retention and
        # the logs key (the service first writes on the first invocation, after the deploy).
        self.log_groups = [
            logs.LogGroup(
                self,
                f"{endpoint.title()}Logs",
                log_group_name=runtime_log_group_name(self.runtime.agent_runtime_id, endpoint),
                retention=retention(config.log_retention_days),
                encryption_key=logs_key,
                removal_policy=RemovalPolicy.DESTROY,
            )
            for endpoint in (DEFAULT_ENDPOINT_NAME, ENDPOINT_NAME)
        ]


def agent_environment(
    config: AgentConfig, auth: AuthConfig, *, memory: MemoryService, identity: Identity | None
) -> dict[str, str]:
    """Exactly the variables ``runtime_handler.settings.Settings.from_env`` reads (plus Powertools' own)."""
    env = {
        rs.ENV_AGENT_NAME: config.name,
        rs.ENV_HINDSIGHT_API_URL: memory.url,
        rs.ENV_MODEL_PROVIDER: "bedrock",
        rs.ENV_MODEL_ID: config.model_id,
        rs.ENV_ALLOW_ANONYMOUS: "true" if config.allow_anonymous else "false",
        POWERTOOLS_SERVICE_NAME: config.name,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
    }
    if auth.mode is AuthMode.IAM:
        env[rs.ENV_AUTH_MODE] = "iam"
        assert memory.secrets.agent_key is not None
        env[rs.ENV_HINDSIGHT_API_KEY_SECRET_ARN] = memory.secrets.agent_key.secret_arn
        if auth.tenant_id:
            env[rs.ENV_TENANT_ID] = auth.tenant_id
        return env
    assert identity is not None
    env[rs.ENV_AUTH_MODE] = "jwt"
    # Keys from the SSM mirror and the configured issuer, like Hindsight's: the VPC has no route to the issuer, so
    # no discovery URL is given (the agent would otherwise fetch the issuer's JWKS over the internet).
    env[rs.ENV_JWT_ISSUER] = identity.issuer
    env[rs.ENV_JWT_JWKS_PARAMETER] = identity.jwks_parameter.parameter_name
    env[rs.ENV_JWT_USER_CLAIM] = auth.user_claim
    if identity.allowed_clients:
        env[rs.ENV_JWT_ALLOWED_CLIENTS] = ",".join(identity.allowed_clients)
    if identity.allowed_audience:
        env[rs.ENV_JWT_ALLOWED_AUDIENCE] = ",".join(identity.allowed_audience)
    if auth.tenant_claim:
        env[rs.ENV_JWT_TENANT_CLAIM] = auth.tenant_claim
    if auth.mode is AuthMode.COGNITO:
        env[rs.ENV_JWT_TOKEN_USE] = "access"
    return env


def _authorizer(auth: AuthConfig, identity: Identity | None) -> agentcore.RuntimeAuthorizerConfiguration:
    if auth.mode is AuthMode.IAM:
        return agentcore.RuntimeAuthorizerConfiguration.using_iam()
    assert identity is not None
    if identity.user_pool is not None and identity.client is not None:
        return agentcore.RuntimeAuthorizerConfiguration.using_cognito(identity.user_pool, [identity.client])
    return agentcore.RuntimeAuthorizerConfiguration.using_jwt(
        identity.discovery_url,
        allowed_clients=identity.allowed_clients or None,
        allowed_audience=identity.allowed_audience or None,
    )

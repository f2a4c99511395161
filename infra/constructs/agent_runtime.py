"""AgentRuntime: the agent on AgentCore Runtime as code (Linux arm64 wheels, no Docker): ``runtime_handler``, or
the agent project ``agent.project`` names (its bundle and entrypoint, :mod:`infra.agent_code`), with the same role,
network, authorizer and environment."""

from __future__ import annotations

import re
from dataclasses import dataclass

from aws_cdk import Duration, Stack
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_lambda_powertools.shared.constants import METRICS_NAMESPACE_ENV, SERVICE_NAME_ENV
from constructs import Construct

from infra.config import AgentConfig, AuthConfig, AuthMode
from infra.constructs.foundation import Foundation
from infra.constructs.identity import Identity
from infra.constructs.memory_endpoint import MemoryEndpoint
from infra.constructs.props import raise_if_invalid
from infra.constructs.retain_queue import RetainQueue
from infra.constructs.service_log_group import ServiceLogGroup
from infra.permissions import SSM_READ_ACTIONS, grant_bedrock_invoke
from memory_adapter.agentcore.settings import IdentitySource
from memory_adapter.config import HindsightAgentCoreConfig
from memory_adapter.constants import METRICS_NAMESPACE
from memory_adapter.missions import Mission, Missions
from runtime_handler import settings as rs

ENDPOINT_NAME = "live"
#: The endpoint every runtime has besides ours; it logs to its own group.
DEFAULT_ENDPOINT_NAME = "DEFAULT"
RUNTIME_LOG_GROUP_PREFIX = "/aws/bedrock-agentcore/runtimes/"


def agent_metric(agent_name: str, metric_name: str, **props: object) -> cloudwatch.Metric:
    """One of the agent's metrics: ``runtime_handler``'s and the memory adapter's (``memory_adapter.observability.
    Metric``), both through Powertools in :data:`METRICS_NAMESPACE` with the dimension ``service=<agent name>``."""
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={"service": agent_name},
        **props,  # type: ignore[arg-type]
    )


def runtime_log_group_name(runtime_id: str, endpoint: str) -> str:
    """Where AgentCore writes a runtime endpoint's logs."""
    return f"{RUNTIME_LOG_GROUP_PREFIX}{runtime_id}-{endpoint}"


def make_runtime_name(prefix: str, env_name: str, agent_name: str) -> str:
    """AgentCore requires ``[a-zA-Z][a-zA-Z0-9_]{0,47}``: no hyphens."""
    return re.sub(r"[^A-Za-z0-9_]", "_", f"{prefix}_{env_name}_{agent_name}")[:48]


@dataclass(frozen=True)
class GatewayAccess:
    """Where the agent finds the memory gateway its tools go through: by name, because the gateway's stack deploys
    after the agent's (its target runs on this stack's layer)."""

    url_parameter: str
    target_name: str


@dataclass(frozen=True)
class AgentRuntimeProps:
    """What the agent runtime is built from.

    Args:
        identity: The token issuer's mirrored keys (user-token modes; ``None`` with ``auth.mode=iam``).
        runtime_name: The AgentCore runtime's name (AgentCore requires one: :func:`make_runtime_name`).
        gateway: Where the agent finds the memory gateway its tools go through (``agent.tools_via_gateway``).
        mission: What the agent's memory keeps (``missions.<agent name>``; ``None``: Hindsight's defaults).
    """

    config: AgentConfig
    auth: AuthConfig
    foundation: Foundation
    memory: MemoryEndpoint
    identity: Identity | None
    runtime_name: str
    gateway: GatewayAccess | None = None
    mission: Mission | None = None


class AgentRuntime(Construct):
    """The Runtime in VPC mode with its authorizer, environment, least-privilege role and an endpoint.

    Args:
        props: The agent section and what the agent uses.
        retain_queue: Where the agent spools the turns it could not deliver (the stack's).
    """

    def __init__(
        self, scope: Construct, construct_id: str, props: AgentRuntimeProps, *, retain_queue: RetainQueue
    ) -> None:
        super().__init__(scope, construct_id)
        config, auth, memory, identity, gateway = props.config, props.auth, props.memory, props.identity, props.gateway
        network, logs_key = props.foundation.network, props.foundation.logs_key
        self.security_group = network.workload_security_group(
            self, "SecurityGroup", description="Agent: to the Hindsight load balancer and AWS endpoints only"
        )
        self.connections = self.security_group.connections
        self.network_configuration = agentcore.RuntimeNetworkConfiguration.using_vpc(
            self, vpc=network.vpc, vpc_subnets=network.subnets, security_groups=[self.security_group]
        )
        memory.allow_from(self)
        code = config.code
        raise_if_invalid(self.node.path, [missing] if (missing := code.missing()) else [])
        artifact = agentcore.AgentRuntimeArtifact.from_code_asset(
            path=str(code.path), runtime=agentcore.AgentCoreRuntime.PYTHON_3_12, entrypoint=list(code.entrypoint)
        )
        #: :func:`agent_settings` written by ``Settings.to_env`` (exactly what ``Settings.from_env`` reads), plus
        #: Powertools' own variables.
        self.environment = {
            **agent_settings(props, scope=self, retain_queue_url=retain_queue.queue.queue_url).to_env(),
            SERVICE_NAME_ENV: config.name,
            METRICS_NAMESPACE_ENV: METRICS_NAMESPACE,
        }
        self.runtime = agentcore.Runtime(
            self,
            "Runtime",
            runtime_name=props.runtime_name,
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
        memory.grant_agent_key_read(self.runtime)
        if gateway is not None:
            # Read by name (the parameter belongs to the later gateway stack): this one parameter, nothing else.
            iam.Grant.add_to_principal(
                grantee=self.runtime,
                actions=list(SSM_READ_ACTIONS),
                resource_arns=[
                    Stack.of(self).format_arn(
                        service="ssm", resource="parameter", resource_name=gateway.url_parameter.lstrip("/")
                    )
                ],
            )
        # Undeliverable turns go to the retain queue (the microVM's disk goes with the session): send, nothing else.
        retain_queue.grant_send(self.runtime)
        self.endpoint = self.runtime.add_endpoint(ENDPOINT_NAME, description="The agent's stable endpoint")
        # The runtime writes to /aws/bedrock-agentcore/runtimes/<id>-<endpoint> and creates those groups itself,
        # kept forever and unencrypted; whether the -DEFAULT one appears at runtime creation or at the first
        # invocation is reported both ways, so a plain log group resource could fail with AlreadyExists. Claimed
        # instead (created if missing, then the configured retention and the logs key), which works either way. The
        # runtime's own properties offer no logging destination (CfnRuntime has no logging configuration).
        self.log_groups = [
            ServiceLogGroup(
                self,
                f"{endpoint.title()}Logs",
                log_group_name=runtime_log_group_name(self.runtime.agent_runtime_id, endpoint),
                retention_days=config.log_retention_days,
                logs_key=logs_key,
                remove_on_delete=True,
            )
            for endpoint in (DEFAULT_ENDPOINT_NAME, ENDPOINT_NAME)
        ]


def agent_settings(props: AgentRuntimeProps, *, scope: Construct, retain_queue_url: str) -> rs.Settings:
    """The agent's settings as deployed (``runtime_handler.settings.Settings``; an agent project you bring reads the
    same variables through ``AgentMemorySettings``), with deploy-time values as CDK tokens."""
    config, auth, memory, identity = props.config, props.auth, props.memory, props.identity
    gateway, mission = props.gateway, props.mission
    iam = auth.mode is AuthMode.IAM
    # This agent's entry only: another agent's mission change redeploys nothing.
    missions = Missions({config.name: mission}).to_json() if mission is not None and mission.updates() else ""
    if iam:
        assert memory.agent_key_secret_arn is not None
    else:
        assert identity is not None
    return rs.Settings(
        agent_name=config.name,
        auth_mode=IdentitySource.IAM if iam else IdentitySource.JWT,
        memory=HindsightAgentCoreConfig(
            hindsight_api_url=memory.url_in(scope),
            spool_queue_url=retain_queue_url,
            missions=missions,
            **config.memory_settings,
        ),
        # Keys from the SSM mirror and the configured issuer, like Hindsight's: the VPC has no route to the issuer,
        # so no discovery URL is given (the agent would otherwise fetch the issuer's JWKS over the internet).
        jwt=None if identity is None or iam else identity.verifier_settings(scope),
        hindsight_api_key_secret_arn=memory.agent_key_secret_arn if iam else None,
        ca_bundle=memory.ca_bundle,
        tenant_id=auth.tenant_id if iam else None,
        allow_anonymous=config.allow_anonymous,
        model_provider=rs.ModelProvider.BEDROCK,
        model_id=config.model_id,
        gateway_url_parameter=gateway.url_parameter if gateway is not None else None,
        gateway_target=gateway.target_name if gateway is not None else None,
    )


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

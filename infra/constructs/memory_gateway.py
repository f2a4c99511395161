"""MemoryGateway: the memory tools (recall, reflect, remember, forget, list_recent) over MCP for any agent or MCP
client, on an AgentCore Gateway, acting for the verified user only.

The path of one MCP request, every step failing closed:

1. the gateway's JWT authorizer checks the bearer token against the runtime's issuer and clients (never the L2's
   default machine-to-machine pool);
2. the REQUEST interceptor (``infra/functions/memory_gateway/interceptor.py``) verifies it again with the identity
   contract, the agent's checks on the same mirrored keys, refuses anything but a user token with a 401, and forwards
   the caller's token in :data:`~memory_adapter.gateway.CALLER_TOKEN_HEADER`, always overwritten;
3. the Lambda target (``target.py``, in the VPC, on the memory adapter layer) allowlists exactly that header,
   verifies it once more and calls Hindsight with it, so Hindsight's isolation serves that user's bank only.

The interceptor runs outside the VPC: it touches no data, only the mirrored keys in SSM (the same parameter, issuer
and clients as the agent and Hindsight, so all four verifiers agree on who may call), and a VPC would add network
interfaces to the path every MCP request takes for nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra.config import GatewayConfig
from infra.constructs import memory_layer
from infra.constructs.foundation import Foundation
from infra.constructs.functions import FUNCTIONS_DIR, python_function
from infra.constructs.identity import Identity
from infra.constructs.memory_endpoint import MemoryEndpoint
from infra.constructs.memory_layer import adapter_layer_version
from infra.constructs.props import raise_if_invalid
from infra.functions.memory_gateway.interceptor import InterceptorSettings
from infra.functions.memory_gateway.target import TOOL_TIMEOUT_S, TargetSettings
from infra.permissions import GATEWAY_KEY_ACTIONS, GATEWAY_KEY_GRANT_ACTIONS
from memory_adapter.constants import METRICS_NAMESPACE
from memory_adapter.gateway import CALLER_TOKEN_HEADER, MAX_TOOL_NAME_CHARS, prefixed_tool_name
from memory_adapter.tools.specs import TOOL_SPECS

SOURCE = FUNCTIONS_DIR / "memory_gateway"
INTERCEPTOR_HANDLER: Final = "interceptor.handler"
TARGET_HANDLER: Final = "target.handler"
INTERCEPTOR_TIMEOUT = Duration.seconds(10)
#: Above the target's per-request timeout, under ~30 s (a gateway has hung on slower Lambda targets).
TARGET_TIMEOUT = Duration.seconds(int(TOOL_TIMEOUT_S) + 5)
#: The on-demand VPC endpoint through which workloads in the VPC reach the gateway (see ``Network.add_endpoint``).
ENDPOINT_NAME: Final = "AgentCoreGateway"
#: The ten characters AgentCore appends to a gateway's name to form its id and ARN (``GatewayId``:
#: ``([0-9a-z][-]?){1,100}-[0-9a-z]{10}``), as an ``ArnLike`` wildcard.
GATEWAY_ID_SUFFIX: Final = "-" + "?" * 10
INSTRUCTIONS = (
    "The user's long-term memory: recall, reflect, remember, forget, list_recent. Every tool acts for the user "
    "whose token you present, and only for them."
)
_ALARM_PERIOD = Duration.minutes(5)
_SCHEMA_TYPES: Mapping[str, agentcore.SchemaDefinitionType] = {
    "string": agentcore.SchemaDefinitionType.STRING,
    "integer": agentcore.SchemaDefinitionType.INTEGER,
    "number": agentcore.SchemaDefinitionType.NUMBER,
    "boolean": agentcore.SchemaDefinitionType.BOOLEAN,
    "array": agentcore.SchemaDefinitionType.ARRAY,
    "object": agentcore.SchemaDefinitionType.OBJECT,
}


def _schema(schema: Mapping[str, Any]) -> agentcore.SchemaDefinition:
    """One JSON schema as the gateway's (which has no bounds or enums: they go into the description; the target
    checks them again with ``parse_arguments``)."""
    limits = []
    if "enum" in schema:
        limits.append("One of: " + ", ".join(schema["enum"]) + ".")
    if "minimum" in schema:
        limits.append(f"From {schema['minimum']} to {schema['maximum']}.")
    if "maxLength" in schema:
        limits.append(f"At most {schema['maxLength']} characters.")
    if "maxItems" in schema:
        limits.append(f"{schema.get('minItems', 0)} to {schema['maxItems']} items.")
    description = " ".join(filter(None, [schema.get("description"), *limits]))
    properties = schema.get("properties")
    return agentcore.SchemaDefinition(
        type=_SCHEMA_TYPES[schema["type"]],
        description=description or None,
        items=_schema(schema["items"]) if "items" in schema else None,
        properties={name: _schema(value) for name, value in properties.items()} if properties else None,
        required=list(schema["required"]) if schema.get("required") else None,
    )


def default_gateway_name(stack_name: str) -> str:
    """The gateway's name when ``gateway.name`` is null: its stack's, lower case (``hindsightmemory-dev-gateway``).

    AgentCore accepts upper case in a gateway's name but forms its id and ARN in lower case only, and the role's
    ``ArnLike aws:SourceArn`` condition, built from the name, is case-sensitive: a mixed-case name never matches.
    """
    return stack_name.lower()


def tool_definitions() -> list[agentcore.ToolDefinition]:
    """The target's inline tool schema, from the one definition of the tools (``memory_adapter.tools.specs``)."""
    return [
        agentcore.ToolDefinition(name=spec.name, description=spec.description, input_schema=_schema(spec.input_schema))
        for spec in TOOL_SPECS
    ]


@dataclass(frozen=True)
class MemoryGatewayProps:
    """What the memory gateway is built from.

    Args:
        agent_name: Whose banks the tools act on: the runtime agent's, so an MCP client shares the user's memory
            with the agent.
        recall_settings: The agent's recall budget, block size and candidates (``AgentConfig.recall_settings``):
            the tools recall as the agent does.
        url_parameter_name: The SSM name publishing the MCP URL (the agent's stack, deployed earlier, reads it by
            that name).
        private_access: Create the VPC endpoint through which workloads in the VPC (the agent) reach the gateway.
        layer_path: The memory adapter layer's build (the gateway's functions run on their own version of it).
    """

    config: GatewayConfig
    agent_name: str
    recall_settings: Mapping[str, Any]
    url_parameter_name: str
    private_access: bool
    foundation: Foundation
    memory: MemoryEndpoint
    identity: Identity
    layer_path: Path


class MemoryGateway(Construct):
    """The gateway, its interceptor and target functions, key, URL parameter and alarms.

    Exposes ``gateway``, ``layer``, ``target``, ``interceptor``, ``target_function``, ``key``, ``url``,
    ``url_parameter``, ``tool_prefix``, ``connections`` (the target's security group), ``endpoint`` (``None`` unless
    ``private_access``), ``alarms``; ``grant_read_url(grantee)``.

    """

    def __init__(self, scope: Construct, construct_id: str, props: MemoryGatewayProps) -> None:
        super().__init__(scope, construct_id)
        config, agent_name, url_parameter_name = props.config, props.agent_name, props.url_parameter_name
        recall_settings = props.recall_settings
        memory, identity = props.memory, props.identity
        network, logs_key, alerts = props.foundation.network, props.foundation.logs_key, props.foundation.alerts
        longest = prefixed_tool_name(config.target_name, max((spec.name for spec in TOOL_SPECS), key=len))
        raise_if_invalid(
            self.node.path,
            [f"tool name {longest!r} is over {MAX_TOOL_NAME_CHARS} characters"]
            if len(longest) > MAX_TOOL_NAME_CHARS
            else [],
        )
        # Its own version of the layer (the same build): a stack importing another stack's layer version would
        # block that stack's next layer update (CloudFormation refuses to change an export that is imported).
        self.layer = adapter_layer_version(self, "MemoryAdapterLayer", path=props.layer_path)
        checks = identity.verifier_settings(self)
        self.interceptor = python_function(
            self,
            "Interceptor",
            source=SOURCE,
            handler=INTERCEPTOR_HANDLER,
            runtime=memory_layer.RUNTIME,
            layers=[self.layer],
            description="Memory gateway REQUEST interceptor: only verified user tokens pass, in the caller header",
            timeout=INTERCEPTOR_TIMEOUT,
            memory_size=256,
            logs_key=logs_key,
            log_group_id="InterceptorLogs",
            json_logs=True,
            environment=InterceptorSettings(jwt=checks).to_env(),
        )
        identity.grant_read_keys(self.interceptor)
        self.security_group = network.workload_security_group(
            self,
            "TargetSecurityGroup",
            description="Memory gateway target: to the Hindsight load balancer and AWS endpoints only",
        )
        self.connections = self.security_group.connections
        memory.allow_from(self)
        self.target_function = python_function(
            self,
            "Target",
            source=SOURCE,
            handler=TARGET_HANDLER,
            runtime=memory_layer.RUNTIME,
            layers=[self.layer],
            description="Memory gateway target: the memory tools for the verified caller, on Hindsight",
            timeout=TARGET_TIMEOUT,
            memory_size=512,
            logs_key=logs_key,
            log_group_id="TargetLogs",
            json_logs=True,
            environment=TargetSettings(
                agent_name=agent_name,
                hindsight_api_url=memory.url_in(self),
                ca_bundle=memory.ca_bundle,
                jwt=checks,
                **recall_settings,
            ).to_env(),
            vpc=network.vpc,
            vpc_subnets=network.subnets,
            security_groups=[self.security_group],
        )
        identity.grant_read_keys(self.target_function)
        self.key = kms.Key(
            self,
            "Key",
            description="Encrypts the memory gateway's configuration and data",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,  # the gateway keeps no memory: Hindsight does
        )
        self.gateway = agentcore.Gateway(
            self,
            "Gateway",
            gateway_name=config.name or default_gateway_name(Stack.of(self).stack_name),
            description="Memory tools over MCP for verified users (recall, reflect, remember, forget, list_recent)",
            authorizer_configuration=_authorizer(identity),
            protocol_configuration=agentcore.McpProtocolConfiguration(
                instructions=INSTRUCTIONS,
                supported_versions=[
                    agentcore.MCPProtocolVersion.MCP_2025_03_26,
                    agentcore.MCPProtocolVersion.MCP_2025_06_18,
                ],
            ),
            interceptor_configurations=[
                agentcore.LambdaInterceptor.for_request(self.interceptor, pass_request_headers=True)
            ],
            # kms_key unset: the L2 would grant the role every encrypt/decrypt action and an unconditioned
            # kms:CreateGrant; _harden_role sets the key and grants what AgentCore documents, through AgentCore only.
            # exception_level unset: errors are sanitized for end users (DEBUG would return target details)
        )
        self._harden_role()
        self.target = self.gateway.add_lambda_target(
            "MemoryTools",
            gateway_target_name=config.target_name,
            description="The memory tools of the verified caller",
            lambda_function=self.target_function,
            tool_schema=agentcore.ToolSchema.from_inline(tool_definitions()),
        )
        # The L2 models metadataConfiguration only for API Gateway targets: the target receives the interceptor's
        # header (and nothing else the client sends) through this allowlist. Authorization cannot be allowlisted.
        cfn_target = self.target.node.default_child
        assert isinstance(cfn_target, agentcore.CfnGatewayTarget)
        cfn_target.metadata_configuration = agentcore.CfnGatewayTarget.MetadataConfigurationProperty(
            allowed_request_headers=[CALLER_TOKEN_HEADER]
        )
        #: What clients see in front of each tool's name (``memory___recall``).
        self.tool_prefix = prefixed_tool_name(config.target_name, "")
        url = self.gateway.gateway_url
        assert url is not None
        self.url = url
        self.url_parameter = ssm.StringParameter(
            self,
            "UrlParameter",
            parameter_name=url_parameter_name,
            description="MCP URL of the memory gateway",
            string_value=url,
        )
        self.endpoint = network.add_endpoint(self, ENDPOINT_NAME) if props.private_access else None
        self.alarms = [
            alerts.watch(self._failing_alarm("Interceptor", self.interceptor, "every MCP call is refused meanwhile")),
            alerts.watch(self._failing_alarm("Target", self.target_function, "memory tool calls fail meanwhile")),
            alerts.watch(
                cloudwatch.Alarm(
                    self,
                    "GatewaySystemErrors",
                    alarm_description="The memory gateway failed MCP requests itself (5xx)",
                    metric=self.gateway.metric_system_errors(period=_ALARM_PERIOD),
                    threshold=5,
                    evaluation_periods=1,
                    treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                )
            ),
        ]

    def _harden_role(self) -> None:
        """The L2's service role, made safe to create and to assume.

        - CloudFormation creates the gateway only after the role's policy (its key's actions, ``lambda:Invoke``
          on the functions) exists: AgentCore checks its role at creation, and the L2 sets no such dependency (the
          runtime's L2 does).
        - It uses the gateway's key only through AgentCore (``kms:ViaService``), with the actions AgentCore documents
          for a customer managed key (DescribeKey, Decrypt, GenerateDataKey, CreateGrant), and creates grants only
          for AgentCore's own use of the key (``kms:GrantIsForAWSResource``): the role cannot hand the key to anyone.
        - Its trust policy keeps only the statement conditioned on this account and this gateway's ARN (the L2 adds
          an unconditioned ``bedrock-agentcore.amazonaws.com`` statement too, which any gateway could use: the
          confused-deputy case).
        """
        role = self.gateway.role
        cfn_gateway = self.gateway.node.default_child
        assert isinstance(role, iam.Role)
        assert isinstance(cfn_gateway, agentcore.CfnGateway)
        policy = role.node.try_find_child("DefaultPolicy")
        assert policy is not None
        cfn_gateway.node.add_dependency(policy)
        stack = Stack.of(self)
        cfn_gateway.kms_key_arn = self.key.key_arn
        through_agentcore = {"kms:ViaService": f"bedrock-agentcore.{stack.region}.amazonaws.com"}
        role.add_to_policy(
            iam.PolicyStatement(
                actions=list(GATEWAY_KEY_ACTIONS),
                resources=[self.key.key_arn],
                conditions={"StringEquals": through_agentcore},
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=list(GATEWAY_KEY_GRANT_ACTIONS),
                resources=[self.key.key_arn],
                conditions={"StringEquals": through_agentcore, "Bool": {"kms:GrantIsForAWSResource": "true"}},
            )
        )
        # Exactly this gateway's ARNs: its name and the id suffix AgentCore appends (not another gateway whose name
        # merely starts with this one's).
        gateway_arn = stack.format_arn(
            service="bedrock-agentcore",
            resource="gateway",
            resource_name=f"{self.gateway.gateway_name}{GATEWAY_ID_SUFFIX}",
        )
        cfn_role = role.node.default_child
        assert isinstance(cfn_role, iam.CfnRole)
        cfn_role.add_property_override(
            "AssumeRolePolicyDocument",
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "bedrock-agentcore.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                        "Condition": {
                            "StringEquals": {"aws:SourceAccount": stack.account},
                            "ArnLike": {"aws:SourceArn": gateway_arn},
                        },
                    }
                ],
            },
        )

    def grant_read_url(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let grantee read the gateway's MCP URL from its SSM parameter."""
        return self.url_parameter.grant_read(grantee)

    def _failing_alarm(self, name: str, function: lambda_.Function, effect: str) -> cloudwatch.Alarm:
        """Crashes and timeouts (Lambda errors) plus failures the handler answered itself (ERROR log records)."""
        logged = logs.MetricFilter(
            self,
            f"{name}LoggedErrors",
            log_group=function.log_group,
            filter_pattern=logs.FilterPattern.string_value("$.level", "=", "ERROR"),
            metric_namespace=METRICS_NAMESPACE,
            metric_name=f"MemoryGateway{name}Errors",
            metric_value="1",
        )
        failures = cloudwatch.MathExpression(
            expression="FILL(crashed, 0) + FILL(logged, 0)",
            using_metrics={
                "crashed": function.metric_errors(period=_ALARM_PERIOD),
                "logged": logged.metric(statistic="Sum", period=_ALARM_PERIOD),
            },
            period=_ALARM_PERIOD,
            label=f"{name} failures",
        )
        return cloudwatch.Alarm(
            self,
            f"{name}Failing",
            alarm_description=f"The memory gateway's {name.lower()} function is failing: {effect}",
            metric=failures,
            threshold=1,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )


def _authorizer(identity: Identity) -> agentcore.IGatewayAuthorizerConfig:
    """The runtime's issuer and clients (Cognito's pool and app client, or your issuer's discovery URL)."""
    if identity.user_pool is not None and identity.client is not None:
        return agentcore.GatewayAuthorizer.using_cognito(
            user_pool=identity.user_pool, allowed_clients=[identity.client]
        )
    return agentcore.GatewayAuthorizer.using_custom_jwt(
        discovery_url=identity.discovery_url,
        allowed_clients=identity.allowed_clients or None,
        allowed_audience=identity.allowed_audience or None,
    )

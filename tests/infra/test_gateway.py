"""The memory gateway stack (``-Gateway``), asserted on the synthesized templates: the authorizer trusts the runtime's
issuer and clients, every request runs the interceptor with its headers, the target allowlists exactly the caller
header, runs in the VPC on the layer and reaches only Hindsight, every grant is scoped, every failure alarms."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.constructs.memory_gateway import tool_definitions
from memory_adapter.gateway import CALLER_TOKEN_HEADER, MAX_TOOL_NAME_CHARS, prefixed_tool_name
from memory_adapter.identity.settings import ENV_NAMING, JwtSettings
from memory_adapter.tools.specs import TOOL_NAMES, TOOL_SPECS
from tests.infra.conftest import VARIANTS, Synth, resources

GATEWAY_VARIANTS = [name for name in VARIANTS if VARIANTS[name].get("auth.mode", "cognito") != "iam"]


def _text(obj: object) -> str:
    return json.dumps(obj, sort_keys=True)


def _one(template: dict[str, Any], type_name: str) -> dict[str, Any]:
    (resource,) = resources(template, type_name).values()
    properties: dict[str, Any] = resource["Properties"]
    return properties


def _function(template: dict[str, Any], prefix: str) -> tuple[str, dict[str, Any]]:
    ((logical_id, function),) = [
        (k, f) for k, f in resources(template, "AWS::Lambda::Function").items() if k.startswith(prefix)
    ]
    return logical_id, function["Properties"]


def _statements(template: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    return [
        s
        for p in resources(template, "AWS::IAM::Policy").values()
        if any(r["Ref"].startswith(role_prefix) for r in p["Properties"]["Roles"])
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def _concrete(env: dict[str, Any]) -> dict[str, str]:
    """A function's environment with deploy-time values (imports) replaced by plausible ones."""
    stand_ins = {
        ENV_NAMING.key("issuer"): "https://issuer.example.com/pool",
        ENV_NAMING.key("jwks_parameter"): "/HindsightMemory/dev/identity/jwks",
        ENV_NAMING.key("allowed_clients"): "client-1",
    }
    return {k: v if isinstance(v, str) else stand_ins.get(k, "token") for k, v in env.items()}


@pytest.mark.parametrize("variant", GATEWAY_VARIANTS)
def test_the_gateway_trusts_exactly_the_runtimes_issuer_and_clients(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    gateway = _one(synth.template("-Gateway"), "AWS::BedrockAgentCore::Gateway")
    runtime = _one(synth.template("-Agent"), "AWS::BedrockAgentCore::Runtime")
    assert (gateway["AuthorizerType"], gateway["ProtocolType"]) == ("CUSTOM_JWT", "MCP")
    jwt, runtime_jwt = (
        gateway["AuthorizerConfiguration"]["CustomJWTAuthorizer"],
        runtime["AuthorizerConfiguration"]["CustomJWTAuthorizer"],
    )
    # The same discovery document and the same clients or audience as the runtime (cross-stack values compared by
    # what they import), never a pool of the construct's own: no Cognito resource in this stack.
    assert jwt["DiscoveryUrl"] == runtime_jwt["DiscoveryUrl"]
    for key in ("AllowedClients", "AllowedAudience"):
        assert _text(jwt.get(key)) == _text(runtime_jwt.get(key)), key
    assert jwt.get("AllowedClients") or jwt.get("AllowedAudience")
    assert not [r for r in synth.template("-Gateway")["Resources"].values() if r["Type"].startswith("AWS::Cognito::")]


@pytest.mark.parametrize("variant", GATEWAY_VARIANTS)
def test_every_request_runs_the_interceptor_with_its_headers_outside_the_vpc(
    synths: dict[str, Synth], variant: str
) -> None:
    t = synths[variant].template("-Gateway")
    gateway = _one(t, "AWS::BedrockAgentCore::Gateway")
    interceptor_id, interceptor = _function(t, "MemoryGatewayInterceptor")
    (configuration,) = gateway["InterceptorConfigurations"]
    assert configuration["InterceptionPoints"] == ["REQUEST"]
    assert configuration["InputConfiguration"] == {"PassRequestHeaders": True}
    assert configuration["Interceptor"]["Lambda"]["Arn"] == {"Fn::GetAtt": [interceptor_id, "Arn"]}
    assert interceptor["Handler"] == "interceptor.handler"
    assert "VpcConfig" not in interceptor
    # It verifies like the agent: the mirrored keys and the discovery document's issuer, never a fetch from the issuer
    env = interceptor["Environment"]["Variables"]
    assert ENV_NAMING.key("discovery_url") not in env
    agent_env = _one(synths[variant].template("-Agent"), "AWS::BedrockAgentCore::Runtime")["EnvironmentVariables"]
    assert {k: v for k, v in agent_env.items() if k.startswith("JWT_")} == env
    settings = JwtSettings.from_mapping(_concrete(env), ENV_NAMING)
    assert settings.jwks_parameter is not None
    assert settings.problems(ENV_NAMING) == []


@pytest.mark.parametrize("variant", GATEWAY_VARIANTS)
def test_the_target_is_the_memory_tools_in_the_vpc_on_the_layer(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-Gateway")
    target_id, function = _function(t, "MemoryGatewayTarget")
    target = _one(t, "AWS::BedrockAgentCore::GatewayTarget")
    lambda_target = target["TargetConfiguration"]["Mcp"]["Lambda"]
    assert lambda_target["LambdaArn"] == {"Fn::GetAtt": [target_id, "Arn"]}
    assert target["Name"] == synth.config.gateway.target_name
    assert target["CredentialProviderConfigurations"] == [{"CredentialProviderType": "GATEWAY_IAM_ROLE"}]
    # the function: in the VPC's subnets, on this stack's own version of the layer, the layer's Python, under ~30 s
    assert function["Handler"] == "target.handler"
    assert function["Runtime"] == "python3.12"
    assert function["VpcConfig"]["SubnetIds"]
    assert "MemoryAdapterLayer" in _text(function["Layers"])
    assert function["Timeout"] < 30
    env = function["Environment"]["Variables"]
    assert env["AGENT_NAME"] == synth.config.agent.name  # the runtime agent's banks: one memory per user
    agent_env = _one(synth.template("-Agent"), "AWS::BedrockAgentCore::Runtime")["EnvironmentVariables"]
    assert env["HINDSIGHT_API_URL"] == agent_env["HINDSIGHT_API_URL"]  # the same load balancer (or TLS name)
    # the inline schema is the tools' one definition: no identity parameter, every name within 64 characters
    tools = lambda_target["ToolSchema"]["InlinePayload"]
    assert [tool["Name"] for tool in tools] == [spec.name for spec in TOOL_SPECS]
    for tool in tools:
        assert len(prefixed_tool_name(target["Name"], tool["Name"])) <= MAX_TOOL_NAME_CHARS
        for word in ("user", "tenant", "bank", "agent", "token"):
            assert f'"{word}' not in _text(tool["InputSchema"]["Properties"]).lower(), (tool["Name"], word)


@pytest.mark.parametrize("variant", GATEWAY_VARIANTS)
def test_the_target_receives_exactly_the_caller_header(synths: dict[str, Synth], variant: str) -> None:
    target = _one(synths[variant].template("-Gateway"), "AWS::BedrockAgentCore::GatewayTarget")
    assert target["MetadataConfiguration"] == {"AllowedRequestHeaders": [CALLER_TOKEN_HEADER]}


@pytest.mark.parametrize("variant", GATEWAY_VARIANTS)
def test_the_gateway_has_its_own_key_sanitized_errors_and_no_tool_search(
    synths: dict[str, Synth], variant: str
) -> None:
    t = synths[variant].template("-Gateway")
    gateway = _one(t, "AWS::BedrockAgentCore::Gateway")
    ((key_id, key),) = resources(t, "AWS::KMS::Key").items()
    assert gateway["KmsKeyArn"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert key["Properties"]["EnableKeyRotation"] is True
    assert "ExceptionLevel" not in gateway  # DEBUG would hand target details to any caller
    mcp = gateway["ProtocolConfiguration"]["Mcp"]
    assert "SearchType" not in mcp  # semantic search would add a tool of the gateway's own to tools/list
    assert "2025-03-26" in mcp["SupportedVersions"]
    if (name := synths[variant].config.gateway.name) is not None:
        assert gateway["Name"] == name


@pytest.mark.parametrize("variant", GATEWAY_VARIANTS)
def test_every_grant_is_scoped(synths: dict[str, Synth], variant: str) -> None:
    t = synths[variant].template("-Gateway")
    interceptor_id, _ = _function(t, "MemoryGatewayInterceptor")
    target_id, _ = _function(t, "MemoryGatewayTarget")
    # the gateway's role invokes its two functions (and their versions) and uses its key; nothing else
    gateway_statements = _statements(t, "MemoryGatewayServiceRole")
    invoke = [s for s in gateway_statements if s["Action"] == "lambda:InvokeFunction"]
    assert len(invoke) == 1
    assert {_text(r) for r in invoke[0]["Resource"]} == {
        _text(r)
        for fid in (interceptor_id, target_id)
        for r in ({"Fn::GetAtt": [fid, "Arn"]}, {"Fn::Join": ["", [{"Fn::GetAtt": [fid, "Arn"]}, ":*"]]})
    }
    (key_id,) = resources(t, "AWS::KMS::Key")
    for statement in gateway_statements:
        if statement is not invoke[0]:
            assert statement["Resource"] == {"Fn::GetAtt": [key_id, "Arn"]}, statement
    # ... only through AgentCore, with the actions AgentCore documents; its grants only for AgentCore's own use
    through = {"kms:ViaService": f"bedrock-agentcore.{synths[variant].config.region}.amazonaws.com"}
    key_use = {_text(s["Action"]): s.get("Condition") for s in gateway_statements if s is not invoke[0]}
    assert key_use == {
        _text(["kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey"]): {"StringEquals": through},
        _text("kms:CreateGrant"): {"StringEquals": through, "Bool": {"kms:GrantIsForAWSResource": "true"}},
    }
    # each function reads exactly the mirrored keys parameter, and may do nothing else
    for role in ("MemoryGatewayInterceptorServiceRole", "MemoryGatewayTargetServiceRole"):
        (statement,) = _statements(t, role)
        assert "ssm:GetParameter" in statement["Action"]
        assert "/identity/jwks" in _text(statement["Resource"])  # the mirrored keys, by their configured name
        assert "*" not in _text(statement["Resource"])


@pytest.mark.parametrize("variant", GATEWAY_VARIANTS)
def test_the_target_reaches_only_hindsights_listener_and_the_endpoints(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-Gateway")
    listener_port = 443 if synth.config.hindsight.certificate_arn else 80
    (group,) = resources(t, "AWS::EC2::SecurityGroup").values()
    assert [(r["CidrIp"], r["FromPort"]) for r in group["Properties"]["SecurityGroupEgress"]] == [("0.0.0.0/0", 443)]
    (egress,) = resources(t, "AWS::EC2::SecurityGroupEgress").values()
    assert "MemoryLoadBalancerSecurityGroup" in _text(egress["Properties"]["DestinationSecurityGroupId"])
    assert (egress["Properties"]["FromPort"], egress["Properties"]["ToPort"]) == (listener_port, listener_port)
    # the matching ingress rules (load balancer, endpoints) are written here, so earlier stacks never depend on this one
    ingress = {
        ("MemoryLoadBalancerSecurityGroup" in _text(r["Properties"]["GroupId"]), r["Properties"]["FromPort"])
        for r in resources(t, "AWS::EC2::SecurityGroupIngress").values()
    }
    assert ingress == {(True, listener_port), (False, 443)}
    assert synth.stacks.gateway is not None
    assert synth.stacks.agent in synth.stacks.gateway.dependencies
    assert synth.stacks.gateway not in synth.stacks.agent.dependencies


@pytest.mark.parametrize("variant", GATEWAY_VARIANTS)
def test_the_functions_log_encrypted_as_json_and_their_failures_alarm(synths: dict[str, Synth], variant: str) -> None:
    t = synths[variant].template("-Gateway")
    groups = resources(t, "AWS::Logs::LogGroup")
    for prefix in ("MemoryGatewayInterceptor", "MemoryGatewayTarget"):
        _, function = _function(t, prefix)
        logging = function["LoggingConfig"]
        assert logging["LogFormat"] == "JSON"  # the metric filter reads `level`
        group = groups[logging["LogGroup"]["Ref"]]["Properties"]
        assert "Fn::ImportValue" in _text(group["KmsKeyId"])
        assert group["RetentionInDays"] == 90
    filters = [f["Properties"] for f in resources(t, "AWS::Logs::MetricFilter").values()]
    assert sorted(f["LogGroupName"]["Ref"] for f in filters) == sorted(groups)
    assert {f["FilterPattern"] for f in filters} == {'{ $.level = "ERROR" }'}
    alarms = [a["Properties"] for a in resources(t, "AWS::CloudWatch::Alarm").values()]
    assert len(alarms) == 3
    watched = _text(alarms)
    for metric in ("MemoryGatewayInterceptorErrors", "MemoryGatewayTargetErrors", "SystemErrors", '"Errors"'):
        assert metric in watched, metric
    # (every alarm notifies the alerts topic: test_security.test_every_alarm_notifies_the_encrypted_alerts_topic)


@pytest.mark.parametrize("variant", GATEWAY_VARIANTS)
def test_the_url_is_published_for_clients_and_the_agent(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-Gateway")
    (gateway_id,) = resources(t, "AWS::BedrockAgentCore::Gateway")
    parameter = _one(t, "AWS::SSM::Parameter")
    assert parameter["Name"] == f"/HindsightMemory/{synth.config.env_name}/gateway/mcp-url"
    assert parameter["Value"] == {"Fn::GetAtt": [gateway_id, "GatewayUrl"]}
    outputs = t["Outputs"]
    assert outputs["GatewayUrl"]["Value"] == {"Fn::GetAtt": [gateway_id, "GatewayUrl"]}
    assert outputs["GatewayToolPrefix"]["Value"] == synth.config.gateway.target_name + "___"


def test_the_agent_can_call_its_tools_through_the_gateway(synths: dict[str, Synth]) -> None:
    synth = synths["jwt-import"]
    assert synth.config.agent.tools_via_gateway
    agent, gateway = synth.template("-Agent"), synth.template("-Gateway")
    name = _one(gateway, "AWS::SSM::Parameter")["Name"]
    env = _one(agent, "AWS::BedrockAgentCore::Runtime")["EnvironmentVariables"]
    # GIVEN the parameter's name, not a reference to the later stack ...
    assert env["MEMORY_TOOLS_GATEWAY_URL_PARAMETER"] == name
    assert env["MEMORY_TOOLS_GATEWAY_TARGET"] == synth.config.gateway.target_name
    # ... which the agent's role may read, and nothing else of the gateway's
    statements = [
        s for p in resources(agent, "AWS::IAM::Policy").values() for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    (read,) = [s for s in statements if "gateway/mcp-url" in _text(s["Resource"])]
    assert read["Action"] == "ssm:GetParameter"  # (one statement with the mirrored keys' read: the same action)
    reads = read["Resource"] if isinstance(read["Resource"], list) else [read["Resource"]]
    assert sorted(_text(r).endswith(f':parameter{name}"]]}}') for r in reads) == [False] * (len(reads) - 1) + [True]
    assert all(_text(r).endswith(('/gateway/mcp-url"]]}', '/identity/jwks"]]}')) for r in reads)
    assert "-Gateway:" not in _text(agent)  # no import from the later stack
    # AND the agent reaches the gateway inside the VPC, through its endpoint (bearer tokens: no endpoint policy)
    (endpoint,) = resources(gateway, "AWS::EC2::VPCEndpoint").values()
    props = endpoint["Properties"]
    assert props["ServiceName"] == "com.amazonaws.us-east-1.bedrock-agentcore.gateway"
    assert props["PrivateDnsEnabled"] is True
    assert "NetworkEndpointSecurityGroup" in _text(props["SecurityGroupIds"])
    assert "PolicyDocument" not in props
    # Without agent.tools_via_gateway the agent is told nothing of the gateway, and no endpoint is created
    default = synths["default"]
    assert "MEMORY_TOOLS_GATEWAY" not in _text(default.template("-Agent"))
    assert resources(default.template("-Gateway"), "AWS::EC2::VPCEndpoint") == {}


def test_iam_mode_has_no_gateway(synths: dict[str, Synth]) -> None:
    synth = synths["iam-aurora"]
    assert synth.stacks.gateway is None
    assert not [name for name in synth.templates if name.endswith("-Gateway")]


def test_an_endpoint_the_customer_already_has_is_not_created_again(tmp_path: Any) -> None:
    from tests.infra.conftest import synthesize

    synth = synthesize(tmp_path, {**VARIANTS["jwt-import"], "network.skip_endpoints": "AgentCoreGateway"}, nag=False)
    assert resources(synth.template("-Gateway"), "AWS::EC2::VPCEndpoint") == {}


def test_the_inline_schema_keeps_what_the_gateway_cannot_express_in_the_descriptions() -> None:
    definitions = {d.name: d for d in tool_definitions()}
    assert set(definitions) == TOOL_NAMES
    remember = definitions["remember"].input_schema
    assert remember.required == ["text"]
    assert remember.properties is not None
    assert "One of: preference, decision, fact, plan, problem, solution." in (
        remember.properties["kind"].description or ""
    )
    assert "At most 4000 characters." in (remember.properties["text"].description or "")
    forget = definitions["forget"].input_schema
    assert forget.required is None  # query or memory_ids: the target says which is missing
    assert forget.properties is not None
    assert forget.properties["memory_ids"].items is not None


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_no_stack_imports_another_stacks_layer_version(synths: dict[str, Synth], variant: str) -> None:
    # GIVEN every stack of a variant WHEN the exports that name a layer version are collected
    templates = synths[variant].templates
    layer_exports = set()
    for template in templates.values():
        layers = set(resources(template, "AWS::Lambda::LayerVersion"))
        for output in template.get("Outputs", {}).values():
            value = output["Value"]
            if "Export" in output and isinstance(value, dict) and value.get("Ref") in layers:
                layer_exports.add(json.dumps(output["Export"]["Name"], sort_keys=True))
    # THEN no stack imports one: CloudFormation refuses to change an imported export, so each new layer version
    # would block the exporting stack's update
    for name, template in templates.items():
        imported = {json.dumps(v, sort_keys=True) for v in _import_values(template)}
        assert not imported & layer_exports, name


def _import_values(node: object) -> list[object]:
    if isinstance(node, dict):
        found = [node["Fn::ImportValue"]] if set(node) == {"Fn::ImportValue"} else []
        return found + [v for child in node.values() for v in _import_values(child)]
    if isinstance(node, list):
        return [v for child in node for v in _import_values(child)]
    return []

"""Security properties of the agent, its identity, its logs and the alarms, asserted on the synthesized templates of
every variant."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from infra.permissions import SSM_OWNED_PARAMETER_ACTIONS, STACK_STATUS_ACTIONS
from tests.infra.conftest import VARIANTS, Synth, resources
from tests.infra.security_helpers import ALL, as_text, task_containers

# -- agent ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_runtime_is_code_deployed_in_vpc_with_the_right_authorizer(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-Agent")
    (runtime,) = resources(t, "AWS::BedrockAgentCore::Runtime").values()
    props = runtime["Properties"]
    code = props["AgentRuntimeArtifact"]["CodeConfiguration"]
    assert code["Runtime"] == "PYTHON_3_12"
    assert code["EntryPoint"] == ["main.py"]
    assert props["NetworkConfiguration"]["NetworkMode"] == "VPC"
    assert props["AgentRuntimeName"].replace("_", "").isalnum()
    mode = synth.config.auth.mode.value
    if mode == "iam":
        assert "AuthorizerConfiguration" not in props
        assert "RequestHeaderConfiguration" not in props
    else:
        jwt = props["AuthorizerConfiguration"]["CustomJWTAuthorizer"]
        assert as_text(jwt["DiscoveryUrl"]).endswith('/.well-known/openid-configuration"]]}') or jwt[
            "DiscoveryUrl"
        ].endswith("/.well-known/openid-configuration")
        assert props["RequestHeaderConfiguration"]["RequestHeaderAllowlist"] == ["Authorization"]
    assert len(resources(t, "AWS::BedrockAgentCore::RuntimeEndpoint")) == 1


@pytest.mark.parametrize("variant", ALL)
def test_agent_role_invokes_only_its_model(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-Agent")
    statements = [
        s for p in resources(t, "AWS::IAM::Policy").values() for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    bedrock = [s for s in statements if "bedrock:InvokeModel" in as_text(s["Action"])]
    assert len(bedrock) == 1
    assert synth.config.agent.model_id in as_text(bedrock[0]["Resource"])
    assert "foundation-model/*" not in as_text(bedrock[0]["Resource"])
    for s in statements:
        assert s["Action"] != "*"
        assert "secretsmanager:*" not in as_text(s["Action"])


def _concrete_agent_env(synth: Synth) -> dict[str, str]:
    """The agent's environment with deploy-time tokens replaced by plausible values."""
    env = dict(synth.stacks.agent.agent.environment)
    return {
        k: (
            "arn:aws:secretsmanager:us-east-1:111122223333:secret:x"
            if k == "HINDSIGHT_API_KEY_SECRET_ARN"
            else "http://hindsight.internal"
            if k == "HINDSIGHT_API_URL"
            else "https://issuer.example.com/.well-known/openid-configuration"
            if k == "JWT_DISCOVERY_URL"
            else "https://sqs.us-east-1.amazonaws.com/111122223333/retains"
            if k == "HINDSIGHT_ADAPTER_SPOOL_QUEUE_URL"
            else "client-1"
            if "${Token" in v
            else v
        )
        for k, v in env.items()
    }


@pytest.mark.parametrize("variant", ALL)
def test_agent_environment_is_exactly_what_settings_reads(synths: dict[str, Synth], variant: str) -> None:
    from runtime_handler.settings import Settings

    env = dict(synths[variant].stacks.agent.agent.environment)
    ours = {k for k in env if not k.startswith("POWERTOOLS_")}
    assert ours <= set(Settings.env_names()), ours - set(Settings.env_names())
    # Deploy-time tokens stand in for real values; the settings must accept the combination.
    settings = Settings.from_env(_concrete_agent_env(synths[variant]))
    assert settings.agent_name == synths[variant].config.agent.name


JWT_VARIANTS = [name for name in ALL if VARIANTS[name].get("auth.mode", "cognito") != "iam"]


def _keys_resource_id(synth: Synth) -> str:
    (logical_id,) = resources(synth.template("-Identity"), "Custom::MirroredSigningKeys")
    return logical_id


@pytest.mark.parametrize("variant", JWT_VARIANTS)
def test_agent_reads_the_mirrored_signing_keys_not_the_issuer(synths: dict[str, Synth], variant: str) -> None:
    from memory_adapter.agentcore.identity import default_verifier
    from memory_adapter.agentcore.keys import MirroredKeysVerifier
    from runtime_handler.settings import Settings

    synth = synths[variant]
    (runtime,) = resources(synth.template("-Agent"), "AWS::BedrockAgentCore::Runtime").values()
    env = runtime["Properties"]["EnvironmentVariables"]
    # GIVEN a VPC without egress: no discovery URL (the agent would fetch the issuer's JWKS over the internet) ...
    assert "JWT_DISCOVERY_URL" not in env
    # ... but the mirrored parameter, and the same issuer Hindsight's extension expects.
    keys = _keys_resource_id(synth)
    assert env["JWT_JWKS_PARAMETER"] == f"/HindsightMemory/{synth.config.env_name}/identity/jwks"
    hindsight = {
        e["Name"]: e["Value"]
        for e in task_containers(synth.template("-MemoryService"), "MemoryApiTask")["Hindsight"]["Environment"]
    }
    # The issuer is the discovery document's own `issuer` (read at deploy time by the keys' owner), never the
    # discovery URL minus its suffix: some issuers' `issuer` ends with a slash. It reaches the later stacks through
    # an SSM handoff (a new discovery URL changes it, which an export would refuse).
    issuer_name = f"/HindsightMemory/{synth.config.env_name}/identity/issuer"
    (handoff,) = [
        p["Properties"]
        for p in resources(synth.template("-Identity"), "AWS::SSM::Parameter").values()
        if p["Properties"]["Name"] == issuer_name
    ]
    assert handoff["Value"] == {"Fn::GetAtt": [keys, "Issuer"]}
    for stack, value in (
        ("-Agent", env["JWT_ISSUER"]),
        ("-MemoryService", hindsight["HINDSIGHT_API_TENANT_JWT_ISSUER"]),
    ):
        parameter = synth.template(stack)["Parameters"][value["Ref"]]
        assert (parameter["Type"], parameter["Default"]) == ("AWS::SSM::Parameter::Value<String>", issuer_name)
    # WHEN the agent starts with that environment THEN it verifies against the parameter's keys.
    settings = Settings.from_env(_concrete_agent_env(synth))
    assert settings.jwt is not None
    assert settings.jwt.discovery_url is None  # not the issuer
    assert isinstance(default_verifier(settings), MirroredKeysVerifier)


@pytest.mark.parametrize("variant", ALL)
def test_agent_role_reads_exactly_the_mirrored_keys_parameter(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    statements = [
        s
        for p in resources(synth.template("-Agent"), "AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    # (the memory gateway's URL parameter, read when agent.tools_via_gateway is set, is tested in test_gateway.py)
    ssm = [s for s in statements if "ssm:" in as_text(s["Action"])]
    # (both are read with GetParameter only, so CDK may merge the two reads into one statement)
    reads = [
        (s["Action"], r)
        for s in ssm
        for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
        if "gateway/mcp-url" not in as_text(r)
    ]
    if variant not in JWT_VARIANTS:
        assert reads == []
        return
    ((action, resource),) = reads
    assert action == "ssm:GetParameter"  # what the keys reader calls, not the L2 grant_read's four
    assert isinstance(resource, dict)  # one ARN, not a list or a wildcard
    assert ":parameter" in as_text(resource)
    assert f"/{synth.config.env_name}/identity/jwks" in as_text(resource)
    assert "*" not in as_text(resource)
    # A String parameter: the agent needs no KMS key for it (in JWT modes it holds no key material at all); the only
    # key anything in the stack uses is the retain queue's (the agent sends to it, the replay function reads it).
    agent = synth.stacks.agent
    queue_key = agent.resolve(agent.get_logical_id(agent.retain_queue.key.node.default_child))
    assert {as_text(s["Resource"]) for s in statements if "kms:" in as_text(s["Action"])} == {
        as_text({"Fn::GetAtt": [queue_key, "Arn"]})
    }


def test_layer_is_arm64_and_published_to_ssm(default: Synth) -> None:
    t = Template.from_json(default.template("-Agent"))
    t.has_resource_properties(
        "AWS::Lambda::LayerVersion",
        {
            "CompatibleArchitectures": ["arm64"],
            "CompatibleRuntimes": Match.array_with(["python3.12"]),
        },
    )
    t.has_resource_properties("AWS::SSM::Parameter", {"Name": "/HindsightMemory/dev/memory-adapter-layer-arn"})
    outputs = default.template("-Agent")["Outputs"]
    assert any(k.startswith("MemoryAdapterLayerLayerArn") for k in outputs)
    assert any(k.startswith("AgentRuntimeArn") for k in outputs)


# -- identity -------------------------------------------------------------------------------------------------------


def test_signing_keys_are_mirrored_for_a_vpc_without_egress(default: Synth) -> None:
    t = default.template("-Identity")
    functions = resources(t, "AWS::Lambda::Function")
    mirror = next(f for k, f in functions.items() if k.startswith("IdentityMirror"))
    assert "VpcConfig" not in mirror["Properties"]  # it must reach the issuer on the internet
    rule = next(iter(resources(t, "AWS::Events::Rule").values()))
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 hour)"
    assert resources(t, "AWS::CloudWatch::Alarm")
    pool = next(iter(resources(t, "AWS::Cognito::UserPool").values()))
    assert pool["Properties"]["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    client = next(iter(resources(t, "AWS::Cognito::UserPoolClient").values()))
    assert client["Properties"]["GenerateSecret"] is False


@pytest.mark.parametrize("variant", JWT_VARIANTS)
def test_the_keys_parameter_belongs_to_the_mirror_function_not_to_cloudformation(
    synths: dict[str, Synth], variant: str
) -> None:
    synth = synths[variant]
    t = synth.template("-Identity")
    name = f"/HindsightMemory/{synth.config.env_name}/identity/jwks"
    # GIVEN no CloudFormation-managed parameter of that name: an update of one would reset the value the function
    # rewrote (the stack's only parameter is the issuer's handoff)
    assert [p["Properties"]["Name"] for p in resources(t, "AWS::SSM::Parameter").values()] == [
        f"/HindsightMemory/{synth.config.env_name}/identity/issuer"
    ]
    # THEN the mirror function owns it as a custom resource that runs on every deploy changing the issuer or itself
    ((keys_id, keys),) = resources(t, "Custom::MirroredSigningKeys").items()
    props = keys["Properties"]
    (mirror_id,) = [k for k in resources(t, "AWS::Lambda::Function") if k.startswith("IdentityMirror")]
    assert props["ServiceToken"] == {"Fn::GetAtt": [mirror_id, "Arn"]}
    assert props["ParameterName"] == name
    assert len(props["HandlerSha256"]) == 64
    if synth.config.auth.discovery_url:
        assert props["DiscoveryUrl"] == synth.config.auth.discovery_url
    # ... and the function may own that one parameter (its versions' labels and history: a rollback restores from
    # them), nothing else in SSM, and read whether its own stack is rolling back
    statements = [
        s for p in resources(t, "AWS::IAM::Policy").values() for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    (ssm,) = [s for s in statements if "ssm:" in as_text(s["Action"])]
    assert set(ssm["Action"]) == {"ssm:GetParameter", *SSM_OWNED_PARAMETER_ACTIONS}
    assert as_text(ssm["Resource"]).endswith(f':parameter{name}"]]}}')
    (status,) = [s for s in statements if "cloudformation:" in as_text(s["Action"])]
    assert (set(status["Action"]), status["Resource"]) == (set(STACK_STATUS_ACTIONS), {"Ref": "AWS::StackId"})
    # The schedule goes before its owner on delete, so no refresh re-creates a deleted parameter.
    (rule,) = resources(t, "AWS::Events::Rule").values()
    assert keys_id in rule["DependsOn"]


def test_iam_mode_has_no_identity_stack_and_a_scoped_agent_key(synths: dict[str, Synth]) -> None:
    synth = synths["iam-aurora"]
    assert synth.stacks.identity is None
    env = synth.stacks.agent.agent.environment
    assert env["AUTH_MODE"] == "iam"
    assert env["TENANT_ID"] == "acme"
    assert "HINDSIGHT_API_KEY_SECRET_ARN" in env


# -- alarms ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_every_alarm_notifies_the_encrypted_alerts_topic(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    network = synth.template("-Network")
    ((topic_id, topic),) = resources(network, "AWS::SNS::Topic").items()
    assert "KmsMasterKeyId" in topic["Properties"]
    export = next(
        o["Export"]["Name"] for o in network["Outputs"].values() if "Export" in o and o["Value"] == {"Ref": topic_id}
    )
    assert any(k.startswith("AlertsTopicArn") for k in network["Outputs"])  # for subscribing your alerting
    alarms = [a for t in synth.templates.values() for a in resources(t, "AWS::CloudWatch::Alarm").values()]
    assert alarms
    for alarm in alarms:
        assert alarm["Properties"]["AlarmActions"] == [{"Fn::ImportValue": export}]
        assert alarm["Properties"]["OKActions"] == [{"Fn::ImportValue": export}]


def test_the_alarm_email_subscribes_to_the_topic(tmp_path: Any) -> None:
    from tests.infra.conftest import synthesize

    synth = synthesize(tmp_path, {"alarms.email": "oncall@example.com"}, nag=False)
    (sub,) = resources(synth.template("-Network"), "AWS::SNS::Subscription").values()
    assert (sub["Properties"]["Protocol"], sub["Properties"]["Endpoint"]) == ("email", "oncall@example.com")


@pytest.mark.parametrize("variant", ALL)
def test_agent_logs_go_to_groups_we_create_with_retention_and_the_logs_key(
    synths: dict[str, Synth], variant: str
) -> None:
    synth = synths[variant]
    t = synth.template("-Agent")
    (runtime_id,) = resources(t, "AWS::BedrockAgentCore::Runtime")
    # (the agent's own groups are named by AgentCore, which may create them itself: claimed, not created; the retain
    # replay function's group is CDK-named)
    assert not [g for g in resources(t, "AWS::Logs::LogGroup").values() if "LogGroupName" in g["Properties"]]
    groups = {k: g for k, g in resources(t, "Custom::ServiceLogGroup").items()}
    names = sorted(as_text(g["Properties"]["LogGroupName"]) for g in groups.values())
    # Both endpoints' groups, named after the runtime id AgentCore assigns, are claimed once the runtime exists ...
    assert len(names) == 2
    for name, endpoint in zip(names, ("-DEFAULT", "-live"), strict=True):
        assert "/aws/bedrock-agentcore/runtimes/" in name
        assert runtime_id in name
        assert "AgentRuntimeId" in name
        assert endpoint in name
    # ... with the configured agent.log_retention_days and the deployment's logs key (not "forever, unencrypted")
    for group in groups.values():
        assert group["Properties"]["RetentionInDays"] == str(synth.config.agent.log_retention_days)
        assert "Fn::ImportValue" in as_text(group["Properties"]["KmsKeyArn"])

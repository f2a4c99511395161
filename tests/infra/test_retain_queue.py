"""The retain queue and its replay function, asserted on the synthesized template: customer key, dead-letter queue,
message size, retention, the event source mapping with partial batch failures, the function on the layer in the VPC,
least-privilege grants (the agent may only send; the function only consume and dead-letter) and the alarms."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.constructs.retain_queue import MIN_RECEIVE_COUNT, max_receive_count, visibility_timeout
from memory_adapter.constants import (
    HINDSIGHT_API_KEY_SECRET_ARN_ENV,
    HINDSIGHT_API_URL_ENV,
    RETAIN_DEAD_LETTER_QUEUE_URL_ENV,
    RETAIN_DELIVERY_TIMEOUT_ENV,
    SQS_MAX_MESSAGE_BYTES,
)
from tests.infra import permission_check as check
from tests.infra.conftest import Synth, resources, role_policy_statements, statement_actions


@pytest.fixture(scope="module")
def retain(default: Synth) -> dict[str, Any]:
    """The default configuration's agent stack, with the logical ids of the retain queue's resources."""
    agent = default.stacks.agent
    queue, replay = agent.retain_queue, agent.retain_replay

    def logical_id(construct: Any) -> str:
        return str(agent.resolve(agent.get_logical_id(construct.node.default_child)))

    return {
        "template": default.template("-Agent"),
        "config": default.config,
        "queue": logical_id(queue.queue),
        "dead_letters": logical_id(queue.dead_letters),
        "key": logical_id(queue.key),
        "function": logical_id(replay.function),
        "function_role": logical_id(replay.function.role),
        "agent_role": logical_id(agent.agent.runtime.role),
        "layer": logical_id(agent.layer.layer),
        "security_group": logical_id(replay.security_group),
        "max_receive_count": queue.max_receive_count,
    }


def test_both_queues_use_the_customer_key_the_largest_messages_and_two_weeks_of_retention(retain):
    queues = resources(retain["template"], "AWS::SQS::Queue")
    for name in (retain["queue"], retain["dead_letters"]):
        properties = queues[name]["Properties"]
        assert properties["KmsMasterKeyId"] == {"Fn::GetAtt": [retain["key"], "Arn"]}
        assert properties["MaximumMessageSize"] == SQS_MAX_MESSAGE_BYTES
        assert properties["MessageRetentionPeriod"] == 14 * 24 * 3600
    key = resources(retain["template"], "AWS::KMS::Key")[retain["key"]]
    assert key["Properties"]["EnableKeyRotation"] is True


def test_the_queue_retries_for_about_the_grace_window_then_dead_letters(retain):
    properties = resources(retain["template"], "AWS::SQS::Queue")[retain["queue"]]["Properties"]
    config = retain["config"].retain_queue
    visibility = visibility_timeout(config)
    assert properties["VisibilityTimeout"] == visibility == 6 * config.replay_timeout_seconds
    assert properties["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [retain["dead_letters"], "Arn"]},
        "maxReceiveCount": retain["max_receive_count"],
    }
    assert retain["max_receive_count"] * visibility >= retain["config"].auth.grace_seconds


def test_max_receive_count_spans_the_grace_window_and_has_a_floor():
    assert max_receive_count(3600, 360) == 10
    assert max_receive_count(3601, 360) == 11
    assert max_receive_count(60, 360) == MIN_RECEIVE_COUNT


def test_both_queues_refuse_plain_http(retain):
    policies = resources(retain["template"], "AWS::SQS::QueuePolicy").values()
    denied = {
        json.dumps(ref, sort_keys=True)
        for policy in policies
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Effect"] == "Deny" and statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for ref in policy["Properties"]["Queues"]
    }
    assert denied == {json.dumps({"Ref": retain["queue"]}), json.dumps({"Ref": retain["dead_letters"]})}


def test_the_queue_triggers_the_function_with_partial_batch_failures(retain):
    (mapping,) = resources(retain["template"], "AWS::Lambda::EventSourceMapping").values()
    properties = mapping["Properties"]
    assert properties["EventSourceArn"] == {"Fn::GetAtt": [retain["queue"], "Arn"]}
    assert properties["FunctionName"] == {"Ref": retain["function"]}
    assert properties["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    config = retain["config"].retain_queue
    assert properties["BatchSize"] == config.batch_size
    assert properties["ScalingConfig"] == {"MaximumConcurrency": config.max_concurrency}


def test_the_function_runs_on_arm64_in_the_vpc_on_the_memory_adapter_layer(retain):
    function = resources(retain["template"], "AWS::Lambda::Function")[retain["function"]]["Properties"]
    assert function["Architectures"] == ["arm64"]
    assert function["Runtime"] == "python3.12"
    assert function["Handler"] == "index.handler"
    assert function["Layers"] == [{"Ref": retain["layer"]}]
    assert function["VpcConfig"]["SecurityGroupIds"] == [{"Fn::GetAtt": [retain["security_group"], "GroupId"]}]
    assert set(function["Environment"]["Variables"]) == {
        HINDSIGHT_API_URL_ENV,
        RETAIN_DEAD_LETTER_QUEUE_URL_ENV,
        RETAIN_DELIVERY_TIMEOUT_ENV,
        "POWERTOOLS_SERVICE_NAME",
        "POWERTOOLS_METRICS_NAMESPACE",
    }
    assert function["Environment"]["Variables"][RETAIN_DEAD_LETTER_QUEUE_URL_ENV] == {"Ref": retain["dead_letters"]}


def test_the_functions_logs_are_kept_and_encrypted(retain):
    function = resources(retain["template"], "AWS::Lambda::Function")[retain["function"]]["Properties"]
    log_group_id = function["LoggingConfig"]["LogGroup"]["Ref"]
    log_group = resources(retain["template"], "AWS::Logs::LogGroup")[log_group_id]["Properties"]
    assert log_group["RetentionInDays"] == 90
    assert "KmsKeyId" in log_group


def test_the_agent_may_only_send_to_the_queue(retain):
    sqs = [
        s
        for s in role_policy_statements(retain["template"], retain["agent_role"])
        if any(a.startswith("sqs:") for a in statement_actions(s))
    ]
    assert [(statement_actions(s), s["Resource"]) for s in sqs] == [
        (["sqs:SendMessage"], {"Fn::GetAtt": [retain["queue"], "Arn"]})
    ]
    key = [
        s
        for s in role_policy_statements(retain["template"], retain["agent_role"])
        if s.get("Resource") == {"Fn::GetAtt": [retain["key"], "Arn"]}
    ]
    assert [sorted(statement_actions(s)) for s in key] == [["kms:Decrypt", "kms:GenerateDataKey"]]


def test_the_function_may_only_consume_the_queue_and_send_dead_letters(retain):
    by_resource: dict[str, set[str]] = {}
    for statement in role_policy_statements(retain["template"], retain["function_role"]):
        for action in statement_actions(statement):
            if action.startswith("sqs:"):
                by_resource.setdefault(json.dumps(statement["Resource"]), set()).add(action)
    assert by_resource == {
        json.dumps({"Fn::GetAtt": [retain["queue"], "Arn"]}): {
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:GetQueueAttributes",
        },
        json.dumps({"Fn::GetAtt": [retain["dead_letters"], "Arn"]}): {"sqs:SendMessage"},
    }


def test_the_function_holds_no_sqs_action_its_code_or_its_mapping_does_not_call(default: Synth, retain):
    # GIVEN what the permission check derives the replay needs: its code's calls and its event source mapping's
    (replay,) = [
        f
        for f in check.functions(default.templates, default.outdir, region=default.config.region)
        if f.logical_id == retain["function"]
    ]
    needed = {n.action for n in replay.needs if n.action.startswith("sqs:")}
    # WHEN compared with every SQS action its role is granted
    granted = {
        action
        for statement in role_policy_statements(retain["template"], retain["function_role"])
        for action in statement_actions(statement)
        if action.startswith("sqs:")
    }
    # THEN it holds exactly those (CDK's SqsEventSource added GetQueueUrl and ChangeMessageVisibility, which nothing
    # calls: the function uses queue URLs and only sends dead letters; Lambda's mapping receives and deletes)
    assert granted == needed == {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:SendMessage"}


def test_the_functions_network_reaches_only_https_and_hindsights_load_balancer(retain):
    groups = resources(retain["template"], "AWS::EC2::SecurityGroup")
    egress = groups[retain["security_group"]]["Properties"]["SecurityGroupEgress"]
    assert [(rule.get("CidrIp"), rule["FromPort"], rule["ToPort"]) for rule in egress] == [("0.0.0.0/0", 443, 443)]
    to_hindsight = [
        rule["Properties"]
        for rule in resources(retain["template"], "AWS::EC2::SecurityGroupEgress").values()
        if rule["Properties"]["GroupId"] == {"Fn::GetAtt": [retain["security_group"], "GroupId"]}
    ]
    assert [(r["FromPort"], r["ToPort"]) for r in to_hindsight] == [(80, 80)]


def test_dead_letters_a_stalled_queue_and_failing_invocations_raise_alarms_to_the_alert_topic(retain):
    alarms = resources(retain["template"], "AWS::CloudWatch::Alarm")
    by_metric = {alarm["Properties"]["MetricName"]: alarm["Properties"] for alarm in alarms.values()}
    dead = by_metric["ApproximateNumberOfMessagesVisible"]
    assert dead["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [retain["dead_letters"], "QueueName"]}}]
    assert (dead["Threshold"], dead["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
    oldest = by_metric["ApproximateAgeOfOldestMessage"]
    assert oldest["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [retain["queue"], "QueueName"]}}]
    assert oldest["Threshold"] == 15 * 60
    errors = by_metric["Errors"]
    assert errors["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": retain["function"]}}]
    for alarm in (dead, oldest, errors):
        assert len(alarm["AlarmActions"]) == 1
        assert alarm["AlarmActions"] == alarm["OKActions"]
        assert "AlertsTopic" in json.dumps(alarm["AlarmActions"])


def test_the_agent_spools_to_the_queue(retain):
    (runtime,) = resources(retain["template"], "AWS::BedrockAgentCore::Runtime").values()
    variables = runtime["Properties"]["EnvironmentVariables"]
    assert variables["HINDSIGHT_ADAPTER_SPOOL_QUEUE_URL"] == {"Ref": retain["queue"]}


def test_the_queues_and_their_key_outlive_the_stack_by_default(retain):
    template = retain["template"]["Resources"]
    for name in (retain["queue"], retain["dead_letters"], retain["key"]):
        assert template[name]["DeletionPolicy"] == "Retain", name


def test_the_operator_finds_the_queues_in_the_outputs(retain):
    outputs = retain["template"]["Outputs"]
    values = {name: output["Value"] for name, output in outputs.items()}
    assert values["RetainQueueUrl"] == {"Ref": retain["queue"]}
    assert values["RetainDeadLetterQueueUrl"] == {"Ref": retain["dead_letters"]}
    assert values["RetainDeadLetterQueueArn"] == {"Fn::GetAtt": [retain["dead_letters"], "Arn"]}


@pytest.mark.parametrize("variant", ["default", "iam-aurora"])
def test_in_iam_mode_the_function_may_read_the_agent_key_and_nothing_else_from_secrets_manager(
    synths: dict[str, Synth], variant: str
) -> None:
    synth = synths[variant]
    agent = synth.stacks.agent
    template = synth.template("-Agent")
    function_id = agent.resolve(agent.get_logical_id(agent.retain_replay.function.node.default_child))
    role_id = agent.resolve(agent.get_logical_id(agent.retain_replay.function.role.node.default_child))
    env = template["Resources"][function_id]["Properties"]["Environment"]["Variables"]
    secrets = [
        s
        for s in role_policy_statements(template, role_id)
        if any(a.startswith("secretsmanager:") for a in statement_actions(s))
    ]
    if variant == "default":  # JWT modes: each message carries its caller's own token; no secret to read
        assert secrets == []
        assert HINDSIGHT_API_KEY_SECRET_ARN_ENV not in env
        return
    # The very secret the agent reads (same reference), by ARN, read-only: the queue no longer carries the key
    agent_key = agent.resolve(agent.agent.environment[HINDSIGHT_API_KEY_SECRET_ARN_ENV])
    assert env[HINDSIGHT_API_KEY_SECRET_ARN_ENV] == agent_key
    assert [(sorted(statement_actions(s)), s["Resource"], s["Effect"]) for s in secrets] == [
        (["secretsmanager:GetSecretValue"], agent_key, "Allow")
    ]

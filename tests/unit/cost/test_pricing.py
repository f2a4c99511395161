"""The pricing of ``make cost`` on small hand-made templates, against the dated price table."""

from __future__ import annotations

from typing import Any

import pytest

from infra.cost.pricing import PricingError, estimate, load_prices

PRICES = load_prices()
TABLE = PRICES["regions"]["us-east-1"]
HOURS = PRICES["hours_per_month"]


def _template(**resources: dict[str, Any]) -> dict[str, Any]:
    return {"Resources": resources}


def _line(result: Any, item: str) -> Any:
    (line,) = [line for line in result.idle if line.item.startswith(item)]
    return line


def test_the_table_states_its_date_and_source() -> None:
    assert PRICES["as_of"]
    assert "pricing" in PRICES["source"]


def test_interface_endpoints_are_priced_per_az_and_gateways_are_free() -> None:
    t = _template(
        A={"Type": "AWS::EC2::VPCEndpoint", "Properties": {"VpcEndpointType": "Interface", "SubnetIds": ["a", "b"]}},
        B={"Type": "AWS::EC2::VPCEndpoint", "Properties": {"VpcEndpointType": "Interface", "SubnetIds": ["a"]}},
        S3={"Type": "AWS::EC2::VPCEndpoint", "Properties": {"VpcEndpointType": "Gateway"}},
    )
    line = _line(estimate([t], region="us-east-1", prices=PRICES), "VPC interface endpoints")
    assert line.cost == pytest.approx(3 * HOURS * TABLE["vpc_interface_endpoint_az_hour"])
    assert line.quantity == "2 endpoints, 3 endpoint-AZs"


def test_fargate_services_are_priced_at_their_desired_count_and_task_size() -> None:
    t = _template(
        Task={
            "Type": "AWS::ECS::TaskDefinition",
            "Properties": {"Cpu": "1024", "Memory": "2048", "RuntimePlatform": {"CpuArchitecture": "ARM64"}},
        },
        Svc={"Type": "AWS::ECS::Service", "Properties": {"DesiredCount": 2, "TaskDefinition": {"Ref": "Task"}}},
    )
    line = _line(estimate([t], region="us-east-1", prices=PRICES), "Fargate")
    hourly = TABLE["fargate_arm64_vcpu_hour"] + 2 * TABLE["fargate_arm64_gb_hour"]
    assert line.cost == pytest.approx(2 * HOURS * hourly)


def test_multi_az_doubles_the_instance_and_its_storage() -> None:
    def db(multi: bool) -> dict[str, Any]:
        props = {"DBInstanceClass": "db.t4g.medium", "MultiAZ": multi, "AllocatedStorage": "20"}
        return _template(Db={"Type": "AWS::RDS::DBInstance", "Properties": props})

    single = _line(estimate([db(False)], region="us-east-1", prices=PRICES), "RDS PostgreSQL").cost
    multi = _line(estimate([db(True)], region="us-east-1", prices=PRICES), "RDS PostgreSQL").cost
    assert single == pytest.approx(HOURS * TABLE["rds_postgres_instance_hour"]["db.t4g.medium"] + 20 * 0.115)
    assert multi == pytest.approx(2 * single)


def test_aurora_is_priced_at_its_minimum_capacity_per_instance() -> None:
    t = _template(
        C={"Type": "AWS::RDS::DBCluster", "Properties": {"ServerlessV2ScalingConfiguration": {"MinCapacity": 0.5}}},
        W={"Type": "AWS::RDS::DBInstance", "Properties": {"DBInstanceClass": "db.serverless"}},
        R={"Type": "AWS::RDS::DBInstance", "Properties": {"DBInstanceClass": "db.serverless"}},
    )
    line = _line(estimate([t], region="us-east-1", prices=PRICES), "Aurora")
    assert line.cost == pytest.approx(2 * 0.5 * HOURS * TABLE["aurora_serverless_v2_acu_hour"])


def test_keys_alarms_and_the_load_balancer_are_counted_across_stacks() -> None:
    one = _template(
        K1={"Type": "AWS::KMS::Key"},
        A1={"Type": "AWS::CloudWatch::Alarm", "Properties": {"MetricName": "Errors"}},
    )
    two = _template(
        K2={"Type": "AWS::KMS::Key"},
        A2={
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": {"Metrics": [{"Expression": "m0 + m1"}, {"MetricStat": {}}, {"MetricStat": {}}]},
        },
        Lb={"Type": "AWS::ElasticLoadBalancingV2::LoadBalancer"},
    )
    result = estimate([one, two], region="us-east-1", prices=PRICES)
    assert _line(result, "KMS").cost == pytest.approx(2 * TABLE["kms_key_month"])
    assert _line(result, "CloudWatch alarms").quantity == "2 alarms, 3 metrics"
    assert _line(result, "Application load balancers").cost == pytest.approx(HOURS * TABLE["alb_hour"])
    assert result.idle_total == pytest.approx(sum(line.cost for line in result.idle))


def test_scheduled_functions_are_priced_by_their_rate() -> None:
    t = _template(
        Fn={"Type": "AWS::Lambda::Function", "Properties": {"MemorySize": 1024}},
        Rule={
            "Type": "AWS::Events::Rule",
            "Properties": {"ScheduleExpression": "rate(1 hour)", "Targets": [{"Arn": {"Fn::GetAtt": ["Fn", "Arn"]}}]},
        },
    )
    line = _line(estimate([t], region="us-east-1", prices=PRICES), "Scheduled functions")
    assert line.quantity == "720 runs"
    assert line.cost == pytest.approx(
        720 * TABLE["lambda_arm64_gb_second"] + 720 / 1e6 * TABLE["lambda_million_requests"]
    )


def test_turns_follow_the_stated_assumptions() -> None:
    result = estimate([_template()], region="us-east-1", prices=PRICES)
    turn = PRICES["turn"]
    (model,) = [line for line in result.per_thousand_turns if line.item.startswith("Agent model")]
    nova = TABLE["bedrock_thousand_tokens"]["amazon.nova-lite-v1:0"]
    assert model.cost == pytest.approx(
        turn["agent_model_input_tokens"] * nova["input"] + turn["agent_model_output_tokens"] * nova["output"]
    )
    assert result.idle_total == 0  # nothing deployed, nothing idle


def test_an_unknown_region_or_class_is_a_clear_error() -> None:
    with pytest.raises(PricingError, match="no prices for region eu-west-9"):
        estimate([], region="eu-west-9", prices=PRICES)
    db = _template(Db={"Type": "AWS::RDS::DBInstance", "Properties": {"DBInstanceClass": "db.x9.huge"}})
    with pytest.raises(PricingError, match=r"db\.x9\.huge"):
        estimate([db], region="us-east-1", prices=PRICES)


def _runtime(idle_timeout_s: int) -> dict[str, Any]:
    props = {"LifecycleConfiguration": {"IdleRuntimeSessionTimeout": idle_timeout_s, "MaxLifetime": 28800}}
    return _template(Runtime={"Type": "AWS::BedrockAgentCore::Runtime", "Properties": props})


def test_the_runtime_bills_memory_through_each_sessions_idle_timeout() -> None:
    # GIVEN the runtime's idle timeout from the template and the table's turns per session
    turn = PRICES["turn"]
    result = estimate([_runtime(900)], region="us-east-1", prices=PRICES)
    (runtime,) = [line for line in result.per_thousand_turns if line.item == "AgentCore Runtime"]
    # THEN each turn carries its own seconds plus its share of the session's idle tail, in memory
    memory_s = turn["runtime_session_seconds"] + 900 / turn["turns_per_session"]
    cpu_s = turn["runtime_active_cpu_seconds"]
    assert runtime.cost == pytest.approx(
        1000
        * (
            cpu_s / 3600 * turn["runtime_vcpu"] * TABLE["agentcore_runtime_vcpu_hour"]
            + memory_s / 3600 * turn["runtime_gb"] * TABLE["agentcore_runtime_gb_hour"]
        )
    )
    # AND one-turn sessions pay the whole idle tail on every turn: several times the figure
    one_turn_tail = 1000 * (900 - 900 / turn["turns_per_session"]) / 3600 * turn["runtime_gb"]
    assert result.one_turn_sessions_total == pytest.approx(
        result.turns_total + one_turn_tail * TABLE["agentcore_runtime_gb_hour"]
    )
    assert result.one_turn_sessions_total > 3 * result.turns_total
    # AND a shorter idle timeout costs less
    assert estimate([_runtime(60)], region="us-east-1", prices=PRICES).turns_total < result.turns_total

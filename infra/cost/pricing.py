"""Price synthesized templates: what a deployment costs idle each month, and what 1,000 agent turns add.

Reads only CloudFormation templates (``cdk.out/*.template.json``) and the dated price table (``prices.json``), so
the figure is known before ``cdk deploy`` and follows the configuration that produced the templates. Each line
names the resources it counts; usage the templates cannot show (data processed, requests, log volume, storage
growth) is left out of the idle figure and estimated per turn from the table's stated ``turn`` assumptions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PRICES = Path(__file__).resolve().parent / "prices.json"
#: AgentCore's idle session timeout when the template sets none (15 minutes).
DEFAULT_IDLE_TIMEOUT_S = 900.0

Template = Mapping[str, Any]


class PricingError(Exception):
    """The templates hold something the price table cannot price (an unknown region or instance class)."""


@dataclass(frozen=True)
class Line:
    """One priced item: what it is, how many, and its monthly (or per-1,000-turns) cost."""

    item: str
    quantity: str
    cost: float


@dataclass(frozen=True)
class Estimate:
    region: str
    as_of: str
    idle: list[Line]
    per_thousand_turns: list[Line]
    #: The per-1,000-turns total if every session had one turn (each billed through its idle timeout).
    one_turn_sessions_total: float

    @property
    def idle_total(self) -> float:
        return sum(line.cost for line in self.idle)

    @property
    def turns_total(self) -> float:
        return sum(line.cost for line in self.per_thousand_turns)


def load_prices(path: Path = PRICES) -> dict[str, Any]:
    prices: dict[str, Any] = json.loads(path.read_text())
    return prices


def estimate(templates: Iterable[Template], *, region: str, prices: Mapping[str, Any]) -> Estimate:
    """Price every resource of templates in region (one deployment's stacks)."""
    table = prices["regions"].get(region)
    if table is None:
        known = ", ".join(sorted(prices["regions"]))
        raise PricingError(f"no prices for region {region} in the price table (it has {known}): add them")
    resources = [r for t in templates for r in t.get("Resources", {}).values()]
    by_id = {k: r for t in templates for k, r in t.get("Resources", {}).items()}
    hours = float(prices["hours_per_month"])
    idle = [
        *_endpoints(resources, table, hours),
        *_fargate(resources, by_id, table, hours),
        *_databases(resources, table, hours),
        *_flat(resources, table, hours),
        *_scheduled_functions(resources, by_id, table, float(prices["scheduled_function_seconds"])),
    ]
    return Estimate(
        region=region,
        as_of=str(prices["as_of"]),
        idle=[line for line in idle if line.cost > 0],
        per_thousand_turns=_turns(resources, table, prices["turn"]),
        one_turn_sessions_total=sum(
            line.cost for line in _turns(resources, table, {**prices["turn"], "turns_per_session": 1})
        ),
    )


def _of(resources: list[Any], type_name: str) -> list[Mapping[str, Any]]:
    return [r.get("Properties", {}) for r in resources if r.get("Type") == type_name]


def _endpoints(resources: list[Any], table: Mapping[str, Any], hours: float) -> list[Line]:
    interface = [p for p in _of(resources, "AWS::EC2::VPCEndpoint") if p.get("VpcEndpointType") == "Interface"]
    az_hours = sum(len(p.get("SubnetIds", [])) for p in interface)
    return [
        Line(
            "VPC interface endpoints",
            f"{len(interface)} endpoints, {az_hours} endpoint-AZs",
            az_hours * hours * table["vpc_interface_endpoint_az_hour"],
        )
    ]


def _fargate(resources: list[Any], by_id: Mapping[str, Any], table: Mapping[str, Any], hours: float) -> list[Line]:
    tasks, vcpu, gb, cost = 0, 0.0, 0.0, 0.0
    for service in _of(resources, "AWS::ECS::Service"):
        count = int(service.get("DesiredCount", 1))
        ref = service.get("TaskDefinition", {})
        task = by_id.get(ref.get("Ref", "") if isinstance(ref, dict) else "", {}).get("Properties", {})
        cpu, memory = int(task.get("Cpu", 256)) / 1024, int(task.get("Memory", 512)) / 1024
        arch = "arm64" if task.get("RuntimePlatform", {}).get("CpuArchitecture") == "ARM64" else "x86"
        tasks += count
        vcpu += count * cpu
        gb += count * memory
        cost += count * hours * (cpu * table[f"fargate_{arch}_vcpu_hour"] + memory * table[f"fargate_{arch}_gb_hour"])
    return [Line("Fargate tasks (services at their desired count)", f"{tasks} tasks, {vcpu:g} vCPU, {gb:g} GB", cost)]


def _databases(resources: list[Any], table: Mapping[str, Any], hours: float) -> list[Line]:
    lines = []
    instance_prices: Mapping[str, float] = table["rds_postgres_instance_hour"]
    for db in _of(resources, "AWS::RDS::DBInstance"):
        cls = db.get("DBInstanceClass", "")
        if cls == "db.serverless" or "DBClusterIdentifier" in db:
            continue  # an Aurora instance: priced with its cluster
        if cls not in instance_prices:
            raise PricingError(f"no price for RDS instance class {cls} in the price table: add it")
        multi = bool(db.get("MultiAZ"))
        factor = 2 if multi else 1
        storage = float(db.get("AllocatedStorage", 0))
        lines.append(
            Line(
                f"RDS PostgreSQL {cls}{' Multi-AZ' if multi else ''}",
                f"1 instance, {storage:g} GB gp3",
                factor * (hours * instance_prices[cls] + storage * table["rds_gp3_gb_month"]),
            )
        )
        lines.append(
            Line(
                "Backups (one full copy of the storage)", f"{storage:g} GB", storage * table["backup_snapshot_gb_month"]
            )
        )
    serverless = [p for p in _of(resources, "AWS::RDS::DBInstance") if p.get("DBInstanceClass") == "db.serverless"]
    for cluster in _of(resources, "AWS::RDS::DBCluster"):
        minimum = float(cluster.get("ServerlessV2ScalingConfiguration", {}).get("MinCapacity", 0.5))
        acus = minimum * max(1, len(serverless))
        lines.append(
            Line(
                "Aurora Serverless v2 at its minimum capacity",
                f"{len(serverless)} instances x {minimum:g} ACU",
                acus * hours * table["aurora_serverless_v2_acu_hour"],
            )
        )
    return lines


def _alarm_metrics(alarm: Mapping[str, Any]) -> int:
    metrics = alarm.get("Metrics")
    if metrics is None:
        return 1
    return sum(1 for m in metrics if "MetricStat" in m) or 1


def _flat(resources: list[Any], table: Mapping[str, Any], hours: float) -> list[Line]:
    alarms = _of(resources, "AWS::CloudWatch::Alarm")
    alarm_metrics = sum(_alarm_metrics(a) for a in alarms)
    counted = [
        ("Application load balancers", "AWS::ElasticLoadBalancingV2::LoadBalancer", hours * table["alb_hour"]),
        ("KMS customer-managed keys", "AWS::KMS::Key", table["kms_key_month"]),
        ("Secrets Manager secrets", "AWS::SecretsManager::Secret", table["secrets_manager_secret_month"]),
        ("CloudWatch dashboards", "AWS::CloudWatch::Dashboard", table["cloudwatch_dashboard_month"]),
        ("Route 53 hosted zones", "AWS::Route53::HostedZone", table["route53_hosted_zone_month"]),
    ]
    lines = [Line(item, str(n), n * unit) for item, kind, unit in counted if (n := len(_of(resources, kind)))]
    lines.append(
        Line(
            "CloudWatch alarms",
            f"{len(alarms)} alarms, {alarm_metrics} metrics",
            alarm_metrics * table["cloudwatch_alarm_metric_month"],
        )
    )
    return lines


def _scheduled_functions(
    resources: list[Any], by_id: Mapping[str, Any], table: Mapping[str, Any], seconds: float
) -> list[Line]:
    """Functions that EventBridge runs on a schedule (rate() or cron()), at ``seconds`` per run."""
    runs, gb_seconds = 0.0, 0.0
    for rule in _of(resources, "AWS::Events::Rule"):
        per_month = _runs_per_month(str(rule.get("ScheduleExpression", "")))
        for target in rule.get("Targets", []):
            arn = target.get("Arn", {})
            ref = arn.get("Fn::GetAtt", [""])[0] if isinstance(arn, dict) else ""
            function = by_id.get(ref, {})
            if per_month and function.get("Type") == "AWS::Lambda::Function":
                runs += per_month
                gb_seconds += per_month * seconds * int(function["Properties"].get("MemorySize", 128)) / 1024
    cost = gb_seconds * table["lambda_arm64_gb_second"] + runs / 1e6 * table["lambda_million_requests"]
    return [Line("Scheduled functions", f"{runs:,.0f} runs", cost)]


def _runs_per_month(expression: str) -> float:
    """rate(N minutes|hours|days) exactly; a cron() as daily (the project's crons run once a day)."""
    if expression.startswith("rate("):
        number, unit = expression.removeprefix("rate(").removesuffix(")").split()
        per_day = {"minute": 1440, "minutes": 1440, "hour": 24, "hours": 24, "day": 1, "days": 1}[unit]
        return 30 * per_day / int(number)
    return 30.0 if expression.startswith("cron(") else 0.0


def _turns(resources: list[Any], table: Mapping[str, Any], turn: Mapping[str, Any]) -> list[Line]:
    """1,000 turns of the reference agent, from the table's ``turn`` assumptions and the templates' models."""
    tokens: Mapping[str, Mapping[str, float]] = table["bedrock_thousand_tokens"]
    runtimes = _of(resources, "AWS::BedrockAgentCore::Runtime")
    model = next(
        (str(r.get("EnvironmentVariables", {}).get("MODEL_ID")) for r in runtimes if r.get("EnvironmentVariables")),
        "amazon.nova-lite-v1:0",
    )
    idle_timeout = next(
        (
            float(r["LifecycleConfiguration"]["IdleRuntimeSessionTimeout"])
            for r in runtimes
            if "IdleRuntimeSessionTimeout" in r.get("LifecycleConfiguration", {})
        ),
        DEFAULT_IDLE_TIMEOUT_S,
    )
    # Memory is billed for the whole session: each turn's own seconds, plus the idle timeout once per session.
    memory_seconds = turn["runtime_session_seconds"] + idle_timeout / turn["turns_per_session"]
    agent_model = tokens.get(model, tokens["amazon.nova-lite-v1:0"])
    extraction = tokens["amazon.nova-lite-v1:0"]
    embedding = tokens["amazon.titan-embed-text-v2:0"]
    n = 1000
    lines = [
        Line(
            f"Agent model ({model})",
            f"{turn['agent_model_input_tokens']}+{turn['agent_model_output_tokens']} tokens a turn",
            n
            * (
                turn["agent_model_input_tokens"] / 1000 * agent_model["input"]
                + turn["agent_model_output_tokens"] / 1000 * agent_model["output"]
            ),
        ),
        Line(
            "Hindsight's fact extraction (LLM)",
            f"{turn['extraction_input_tokens']}+{turn['extraction_output_tokens']} tokens a turn",
            n
            * (
                turn["extraction_input_tokens"] / 1000 * extraction["input"]
                + turn["extraction_output_tokens"] / 1000 * extraction["output"]
            ),
        ),
        Line(
            "Embeddings",
            f"{turn['embedding_tokens']} tokens a turn",
            n * turn["embedding_tokens"] / 1000 * embedding["input"],
        ),
        Line(
            "AgentCore Runtime",
            f"{turn['runtime_active_cpu_seconds']:g} s of {turn['runtime_vcpu']:g} vCPU, "
            f"{memory_seconds:g} s of {turn['runtime_gb']:g} GB a turn",
            n
            * (
                turn["runtime_active_cpu_seconds"] / 3600 * turn["runtime_vcpu"] * table["agentcore_runtime_vcpu_hour"]
                + memory_seconds / 3600 * turn["runtime_gb"] * table["agentcore_runtime_gb_hour"]
            ),
        ),
        Line(
            "CloudWatch Logs ingestion",
            f"{turn['log_kb']:g} KB a turn",
            n * turn["log_kb"] / 2**20 * table["logs_ingested_gb"],
        ),
        Line(
            "Load balancer capacity units",
            f"{turn['alb_lcu_hours']:g} LCU-hours a turn",
            n * turn["alb_lcu_hours"] * table["alb_lcu_hour"],
        ),
    ]
    return lines


def render(result: Estimate, *, env: str) -> str:
    """The report ``make cost`` prints."""
    out = [f"Estimated cost of env '{env}' in {result.region} (USD, on-demand prices as of {result.as_of})", ""]
    out.append("Idle, per month (deployed, no traffic):")
    out += [f"  {line.item:<52} {line.quantity:<36} {line.cost:>9.2f}" for line in result.idle]
    out.append(f"  {'Total idle':<89} {result.idle_total:>9.2f}")
    out += ["", "Per 1,000 turns (on top of idle; assumptions in infra/cost/prices.json 'turn'):"]
    out += [f"  {line.item:<52} {line.quantity:<36} {line.cost:>9.2f}" for line in result.per_thousand_turns]
    out.append(f"  {'Total per 1,000 turns':<89} {result.turns_total:>9.2f}")
    out.append(
        f"  {'Total per 1,000 turns in one-turn sessions (each billed through its idle timeout)':<89} "
        f"{result.one_turn_sessions_total:>9.2f}"
    )
    out += ["", "Not counted: data processed by endpoints and the load balancer, log storage, request charges, growth."]
    return "\n".join(out)

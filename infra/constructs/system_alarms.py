"""SystemAlarms: the alarms across the system that need a person, all to the alerts topic.

Each is a condition no automation fixes (the components' own alarms cover their own failures: the load balancer's
"no healthy task", the key mirror, the redeploy function, the backups, the admin functions):

- ``DatabaseStorageLow`` (RDS): free storage under :data:`FREE_STORAGE_FRACTION` of the allocated storage, which
  storage autoscaling (at 10 %) should have prevented: it reached ``database.max_allocated_storage_gb`` or cannot
  grow yet. Aurora grows its storage itself; ``DatabaseCapacityHigh`` fires when it runs at its maximum capacity
  (``database.max_capacity_acu``) instead.
- ``DatabaseCpuHigh``: the database's CPU above :data:`CPU_PERCENT` for 15 minutes (a bigger instance, or more ACUs).
- ``HindsightErrors``: Hindsight (or its load balancer) answered 5xx repeatedly; no input may make it answer 500, so
  each is a fault or an outage.
- ``MemoryDegraded``: turns ran without memory (recall failed or the breaker was open) for 15 minutes.
- ``RecallsShed``: Hindsight shed recalls (overloaded: answered at once, those turns ran without memory) in two
  periods running, at least :data:`SHED_PER_PERIOD` in each: the API tasks do not keep up (a burst sheds a few
  until autoscaling adds tasks; this is shedding that lasts).
- ``RetainsLost``: retains Hindsight refused for good, or that could not be spooled: memories that will not arrive.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct

from infra.config import DatabaseEngine
from infra.constructs.agent_runtime import agent_metric
from infra.constructs.database import VectorDatabase
from infra.constructs.external_memory import ExternalMemory
from infra.constructs.foundation import Foundation
from infra.constructs.memory_service import MemoryService
from memory_adapter.observability import Metric

PERIOD = Duration.minutes(5)
FREE_STORAGE_FRACTION = 0.05
CPU_PERCENT = 90
ACU_PERCENT = 90
#: 5xx answers per five minutes that count as "repeatedly".
ERRORS_PER_PERIOD = 5
#: Shed recalls per five minutes that count as "the fleet does not keep up" (in two periods running).
SHED_PER_PERIOD = 10


@dataclass(frozen=True)
class WatchedSystem:
    """What the alarms and the dashboard watch.

    Args:
        agent_name: The agent whose metrics they read (dimension ``service=<agent name>``).
        database: Hindsight's database (``None`` with ``hindsight.mode=external``).
        memory: Hindsight: this app's service, or the customer's server (whose own metrics it cannot see).
    """

    agent_name: str
    database: VectorDatabase | None
    memory: MemoryService | ExternalMemory


@dataclass(frozen=True)
class SystemAlarmsProps:
    """What the alarms watch, and the foundation (the topic they notify)."""

    system: WatchedSystem
    foundation: Foundation


class SystemAlarms(Construct):
    """Exposes ``alarms`` (every alarm created here)."""

    def __init__(self, scope: Construct, construct_id: str, props: SystemAlarmsProps) -> None:
        super().__init__(scope, construct_id)
        database, memory, agent_name = props.system.database, props.system.memory, props.system.agent_name
        self._alerts = props.foundation.alerts
        self.alarms: list[cloudwatch.Alarm] = []
        # The database's and the load balancer's alarms: only where this app runs Hindsight (not mode=external).
        if isinstance(memory, MemoryService) and database is not None:
            if database.engine is DatabaseEngine.POSTGRES:
                threshold_bytes = max(2**30, FREE_STORAGE_FRACTION * database.allocated_storage_gb * 2**30)
                self._alarm(
                    "DatabaseStorageLow",
                    f"The database has less than {FREE_STORAGE_FRACTION:.0%} of its storage free and autoscaling did "
                    "not add more: raise database.max_allocated_storage_gb (or expire memories)",
                    database.metric("FreeStorageSpace", period=PERIOD, statistic="Minimum"),
                    threshold=threshold_bytes,
                    comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                    periods=3,
                )
            else:
                self._alarm(
                    "DatabaseCapacityHigh",
                    f"The Aurora cluster runs above {ACU_PERCENT} % of its maximum capacity: raise "
                    "database.max_capacity_acu",
                    database.metric("ACUUtilization", period=PERIOD, statistic="Average"),
                    threshold=ACU_PERCENT,
                    periods=3,
                )
            self._alarm(
                "DatabaseCpuHigh",
                f"The database's CPU has been above {CPU_PERCENT} % for 15 minutes: a bigger database.instance_type "
                "(or more ACUs)",
                database.metric("CPUUtilization", period=PERIOD, statistic="Average"),
                threshold=CPU_PERCENT,
                periods=3,
            )
            alb = memory.load_balancing.load_balancer.metrics
            # A shed recall is a 503 by design (answered at once, hindsight_isolation.admission), not a fault: the
            # agent counts each one, so they are taken out of Hindsight's 5xx here (RecallsShed watches them).
            errors = cloudwatch.MathExpression(
                expression="FILL(elb, 0) + IF(FILL(target, 0) > FILL(shed, 0), FILL(target, 0) - FILL(shed, 0), 0)",
                using_metrics={
                    "elb": alb.http_code_elb(elbv2.HttpCodeElb.ELB_5XX_COUNT, period=PERIOD, statistic="Sum"),
                    "target": alb.http_code_target(
                        elbv2.HttpCodeTarget.TARGET_5XX_COUNT, period=PERIOD, statistic="Sum"
                    ),
                    "shed": agent_metric(agent_name, Metric.RECALL_SHED, period=PERIOD, statistic="Sum"),
                },
                label="5xx answers (load balancer + Hindsight, shed recalls excepted)",
                period=PERIOD,
            )
            self._alarm(
                "HindsightErrors",
                "Hindsight or its load balancer answered 5xx repeatedly (no input may make Hindsight answer 500): read "
                "the service's log group",
                errors,
                threshold=ERRORS_PER_PERIOD,
                periods=2,
            )
        self._alarm(
            "MemoryDegraded",
            "Turns have run without memory for 15 minutes (recall failing or the breaker open): is Hindsight up?",
            agent_metric(agent_name, Metric.DEGRADED_TURNS, period=PERIOD, statistic="Sum"),
            threshold=1,
            periods=3,
        )
        self._alarm(
            "RecallsShed",
            f"Hindsight has shed at least {SHED_PER_PERIOD} recalls in each of two 5-minute periods (overloaded: "
            "answered at once, those turns ran without memory): the API tasks do not keep up; raise "
            "hindsight.api_max_count or the tasks' size (docs/capacity.md)",
            agent_metric(agent_name, Metric.RECALL_SHED, period=PERIOD, statistic="Sum"),
            threshold=SHED_PER_PERIOD,
            periods=2,
        )
        self._alarm(
            "RetainsLost",
            "Retains were refused by Hindsight for good, or could not be spooled: those turns will not be "
            "remembered (the agent's log says why)",
            agent_metric(agent_name, Metric.RETAIN_FAILED, period=PERIOD, statistic="Sum"),
            threshold=1,
            periods=1,
        )

    def _alarm(
        self,
        construct_id: str,
        description: str,
        metric: cloudwatch.IMetric,
        *,
        threshold: float,
        periods: int,
        comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    ) -> None:
        self.alarms.append(
            self._alerts.alarm(
                self,
                construct_id,
                description=description,
                metric=metric,
                threshold=threshold,
                periods=periods,
                comparison=comparison,
            )
        )

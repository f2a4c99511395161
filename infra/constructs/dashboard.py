"""SystemDashboard: one CloudWatch dashboard for the whole system, one row per layer along a turn's path.

Rows, top to bottom (docs/operating.md's "Read the dashboard" draws the same grid):

1. the alarms of the deployment (their state at a glance);
2. the agent: turns and their latency, recall latency, turns without memory, the circuit breaker;
3. retains: delivered, spooled, refused or lost, replayed; the retain queue's replay function's outcomes, the
   queue's and its dead letters' depth and the age of their oldest message;
4. Hindsight on ECS: CPU and memory, running and desired tasks, of the API and of the workers;
5. the load balancer: 5xx, latency, requests;
6. the database: CPU, connections, free storage (RDS) or capacity (Aurora);
7. memory administration: expiry, backups, the admin functions' errors.

The agent's metrics are the ones ``runtime_handler`` (``main.py``, ``observability.py``) and
``memory_adapter.observability.Metric`` emit (:func:`~infra.constructs.agent_runtime.agent_metric`), the replay
function's the ``MemoryQueue*`` ones under its own ``service`` (:data:`~infra.constructs.retain_replay.SERVICE_NAME`);
everything else is AWS's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct

from infra.config import DatabaseEngine
from infra.constructs.agent_runtime import agent_metric
from infra.constructs.eks_manifests import API_NAME, WORKER_NAME
from infra.constructs.eks_workloads import HindsightOnEks
from infra.constructs.memory_admin import MemoryAdmin
from infra.constructs.memory_service import MemoryService
from infra.constructs.retain_queue import RetainQueue
from infra.constructs.retain_replay import SERVICE_NAME as REPLAY_SERVICE
from infra.constructs.retain_replay import RetainReplay
from infra.constructs.system_alarms import WatchedSystem
from infra.functions.memory_admin import index as admin
from memory_adapter.constants import METRICS_NAMESPACE
from memory_adapter.observability import Metric

#: The agent's own metrics (``runtime_handler``: ``obs.count(...)``, ``obs.millis(...)``).
AGENT_INVOCATIONS: Final = "Invocations"
AGENT_AUTH_FAILURES: Final = "AuthFailures"
AGENT_TURN_LATENCY: Final = "TurnLatency"
AGENT_METRICS: Final = (AGENT_INVOCATIONS, AGENT_AUTH_FAILURES, AGENT_TURN_LATENCY)
PERIOD = Duration.minutes(5)
HEIGHT = 6
#: Widget titles, each drawn in docs/operating.md's picture of the dashboard.
TITLES: Final = {
    "turns": "Turns",
    "recall": "Recall latency",
    "degraded": "Turns without memory",
    "breaker": "Circuit breaker",
    "retains": "Retains",
    "replay": "Retain replay",
    "queue_depth": "Retain queue depth",
    "queue_age": "Retain queue age",
    "api_usage": "API tasks: CPU, memory",
    "api_tasks": "API tasks: running, desired",
    "worker_usage": "Workers: CPU, memory",
    "worker_tasks": "Workers: running, desired",
    "lb_errors": "Load balancer: 5xx",
    "lb_latency": "Load balancer: latency",
    "lb_requests": "Load balancer: requests",
    "db_cpu": "Database: CPU",
    "db_connections": "Database: connections",
    "db_storage": "Database: free storage",
    "db_capacity": "Database: capacity",
    "expiry": "Expiry",
    "backups": "Logical backups",
    "admin_errors": "Admin functions: errors",
    "alarms": "Alarms",
}
#: Container Insights' task counts (``ECS/ContainerInsights``; the cluster has it enabled).
CONTAINER_INSIGHTS = "ECS/ContainerInsights"


@dataclass(frozen=True)
class DashboardProps:
    """What the dashboard shows.

    Args:
        name: The dashboard's name.
        system: The agent, Hindsight and its database.
        admin_functions: Memory administration (its row).
        retain_queue, retain_replay: The ``-Agent`` stack's retain queue and its replay function (the retains row).
            Props rather than a later ``add_*`` call: CloudWatch's ``Row.add_widget`` puts a widget below the row's
            first line, so a widget added after construction cannot join a row.
        alarms: Every alarm of the deployment (the alarm status widget).
    """

    name: str
    system: WatchedSystem
    admin_functions: MemoryAdmin
    retain_queue: RetainQueue
    retain_replay: RetainReplay
    alarms: Sequence[cloudwatch.IAlarm]


class SystemDashboard(Construct):
    """Exposes ``dashboard``."""

    def __init__(self, scope: Construct, construct_id: str, props: DashboardProps) -> None:
        super().__init__(scope, construct_id)
        dashboard_name, agent_name = props.name, props.system.agent_name
        database, memory, admin_functions = props.system.database, props.system.memory, props.admin_functions
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=dashboard_name, default_interval=Duration.hours(3)
        )

        def agent(name: str, statistic: str, label: str) -> cloudwatch.Metric:
            return agent_metric(agent_name, name, period=PERIOD, statistic=statistic, label=label)

        self.dashboard.add_widgets(
            cloudwatch.TextWidget(
                markdown=f"# {dashboard_name}\nOne row per layer, along a turn's path: agent, retains, Hindsight on "
                "ECS, its load balancer, the database, then memory administration. Alarms notify the alerts topic "
                "(`-Network` output `AlertsTopicArn`).",
                width=24,
                height=2,
            ),
            cloudwatch.AlarmStatusWidget(title=TITLES["alarms"], alarms=list(props.alarms), width=24, height=4),
        )
        self.dashboard.add_widgets(
            self._graph(
                "turns",
                [agent(AGENT_INVOCATIONS, "Sum", "turns"), agent(AGENT_AUTH_FAILURES, "Sum", "refused (auth)")],
                right=[agent(AGENT_TURN_LATENCY, "p50", "latency p50"), agent(AGENT_TURN_LATENCY, "p99", "p99")],
            ),
            self._graph(
                "recall",
                [agent(Metric.RECALL_LATENCY, "p50", "p50 (ms)"), agent(Metric.RECALL_LATENCY, "p99", "p99 (ms)")],
            ),
            self._graph(
                "degraded",
                [
                    agent(Metric.DEGRADED_TURNS, "Sum", "degraded turns"),
                    agent(Metric.RECALL_SHED, "Sum", "of which shed (Hindsight overloaded)"),
                ],
            ),
            self._graph(
                "breaker",
                [agent(Metric.BREAKER_STATE, "Maximum", "state (0 closed, 1 open, 2 half-open)")],
                left_axis=cloudwatch.YAxisProps(min=0, max=2, show_units=False),
            ),
        )
        self.dashboard.add_widgets(
            self._graph(
                "retains",
                [
                    agent(Metric.RETAIN_DELIVERED, "Sum", "delivered"),
                    agent(Metric.RETAIN_SPOOLED, "Sum", "spooled"),
                    agent(Metric.RETAIN_FAILED, "Sum", "refused or lost"),
                    agent(Metric.RETAIN_REPLAYED, "Sum", "replayed"),
                ],
            ),
            *self._retain_queue_widgets(props.retain_queue, props.retain_replay),
        )
        # Hindsight's own rows: only where this app runs it (hindsight.mode=external brings a server it cannot see).
        if isinstance(memory, MemoryService) and database is not None:
            if memory.eks is not None:
                self.dashboard.add_widgets(*self._pod_graphs(memory.eks))
            else:
                # The workers by their handed-off names: a lower hindsight.worker_count removes services graphed here.
                workers = memory.worker_service_names_in(self)
                cluster, api = memory.ecs_names_in(self)
                self.dashboard.add_widgets(
                    self._graph("api_usage", self._usage(cluster, api, "API")),
                    self._graph("api_tasks", self._tasks(cluster, api, "API")),
                    self._graph(
                        "worker_usage",
                        [m for i, s in enumerate(workers, 1) for m in self._usage(cluster, s, f"worker-{i}")],
                    ),
                    self._graph(
                        "worker_tasks",
                        [m for i, s in enumerate(workers, 1) for m in self._tasks(cluster, s, f"worker-{i}")],
                    ),
                )
            lb = memory.load_balancing.load_balancer.metrics
            self.dashboard.add_widgets(
                self._graph(
                    "lb_errors",
                    [
                        lb.http_code_elb(
                            elbv2.HttpCodeElb.ELB_5XX_COUNT, period=PERIOD, statistic="Sum", label="load balancer 5xx"
                        ),
                        lb.http_code_target(
                            elbv2.HttpCodeTarget.TARGET_5XX_COUNT, period=PERIOD, statistic="Sum", label="Hindsight 5xx"
                        ),
                    ],
                    width=8,
                ),
                self._graph(
                    "lb_latency",
                    [
                        lb.target_response_time(period=PERIOD, statistic="p50", label="p50 (s)"),
                        lb.target_response_time(period=PERIOD, statistic="p99", label="p99 (s)"),
                    ],
                    width=8,
                ),
                self._graph(
                    "lb_requests", [lb.request_count(period=PERIOD, statistic="Sum", label="requests")], width=8
                ),
            )
            if database.engine is DatabaseEngine.POSTGRES:
                storage = self._graph(
                    "db_storage",
                    [database.metric("FreeStorageSpace", period=PERIOD, statistic="Minimum", label="free (bytes)")],
                    width=8,
                )
            else:
                storage = self._graph(
                    "db_capacity",
                    [database.metric("ServerlessDatabaseCapacity", period=PERIOD, statistic="Maximum", label="ACUs")],
                    right=[database.metric("ACUUtilization", period=PERIOD, statistic="Maximum", label="% of maximum")],
                    width=8,
                )
            self.dashboard.add_widgets(
                self._graph(
                    "db_cpu",
                    [database.metric("CPUUtilization", period=PERIOD, statistic="Average", label="CPU %")],
                    width=8,
                ),
                self._graph(
                    "db_connections",
                    [database.metric("DatabaseConnections", period=PERIOD, statistic="Maximum", label="connections")],
                    width=8,
                ),
                storage,
            )
        hour = Duration.hours(1)
        backups = admin_functions.backup_function is not None  # none with hindsight.mode=external
        labels = ("URL", "expiry", "backup") if backups else ("URL", "expiry")
        self.dashboard.add_widgets(
            self._graph(
                "expiry",
                [
                    admin_functions.metric(admin.METRIC_EXPIRED, period=hour, statistic="Sum", label="expired"),
                    admin_functions.metric(admin.METRIC_DUE, period=hour, statistic="Maximum", label="due"),
                    admin_functions.metric(
                        admin.METRIC_EXPIRY_FAILED, period=hour, statistic="Sum", label="failed banks"
                    ),
                ],
                width=8,
            ),
            *(
                [
                    self._graph(
                        "backups",
                        [
                            admin_functions.metric(admin.METRIC_BACKED_UP, period=hour, statistic="Sum", label="banks"),
                            admin_functions.metric(
                                admin.METRIC_BACKUP_FAILED, period=hour, statistic="Sum", label="failed banks"
                            ),
                        ],
                        width=8,
                    )
                ]
                if backups
                else []
            ),
            self._graph(
                "admin_errors",
                [
                    fn.metric_errors(period=hour, statistic="Sum", label=label)
                    for fn, label in zip(admin_functions.functions, labels, strict=True)
                ],
                width=8,
            ),
        )

    @classmethod
    def _retain_queue_widgets(cls, queue: RetainQueue, replay: RetainReplay) -> list[cloudwatch.IWidget]:
        """Beside the retains: what the replay function did with the queued turns (delivered, dead-lettered, left
        for later, whole invocations failed), the queue's and its dead letters' depth, their oldest message's age."""

        def replayed(name: str, label: str) -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace=METRICS_NAMESPACE,  # the replay function's, set by the -Agent stack
                metric_name=name,
                dimensions_map={"service": REPLAY_SERVICE},
                period=PERIOD,
                statistic="Sum",
                label=label,
            )

        waiting, dead = queue.queue, queue.dead_letters
        return [
            cls._graph(
                "replay",
                [
                    replayed(Metric.QUEUE_DELIVERED, "delivered"),
                    replayed(Metric.QUEUE_DEAD_LETTERED, "dead-lettered"),
                    replayed(Metric.QUEUE_RETRIED, "left for later"),
                    replay.function.metric_errors(period=PERIOD, statistic="Sum", label="invocations failed"),
                ],
            ),
            cls._graph(
                "queue_depth",
                [
                    waiting.metric_approximate_number_of_messages_visible(
                        period=PERIOD, statistic="Maximum", label="waiting"
                    ),
                    waiting.metric_approximate_number_of_messages_not_visible(
                        period=PERIOD, statistic="Maximum", label="being delivered"
                    ),
                    dead.metric_approximate_number_of_messages_visible(
                        period=PERIOD, statistic="Maximum", label="dead letters"
                    ),
                ],
            ),
            cls._graph(
                "queue_age",
                [
                    waiting.metric_approximate_age_of_oldest_message(
                        period=PERIOD, statistic="Maximum", label="oldest (s)"
                    ),
                    dead.metric_approximate_age_of_oldest_message(
                        period=PERIOD, statistic="Maximum", label="oldest dead letter (s)"
                    ),
                ],
            ),
        ]

    @staticmethod
    def _graph(
        key: str,
        left: Sequence[cloudwatch.IMetric],
        *,
        right: Sequence[cloudwatch.IMetric] = (),
        width: int = 6,
        left_axis: cloudwatch.YAxisProps | None = None,
    ) -> cloudwatch.GraphWidget:
        return cloudwatch.GraphWidget(
            title=TITLES[key],
            left=list(left),
            right=list(right) or None,
            width=width,
            height=HEIGHT,
            left_y_axis=left_axis,
        )

    def _pod_graphs(self, on_eks: HindsightOnEks) -> list[cloudwatch.GraphWidget]:
        """The same four graphs on EKS, from Container Insights for EKS (the cluster's CloudWatch Observability
        add-on): CPU and memory of the API and worker pods against their limits, and their running pods."""
        ns = on_eks.namespace

        def metric(name: str, dimensions: dict[str, str], label: str, statistic: str) -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace=CONTAINER_INSIGHTS,
                metric_name=name,
                dimensions_map={"ClusterName": on_eks.cluster.cluster_name, "Namespace": ns, **dimensions},
                period=PERIOD,
                statistic=statistic,
                label=label,
            )

        def usage(workload: str, label: str) -> list[cloudwatch.IMetric]:
            return [
                metric(f"pod_{what}_utilization_over_pod_limit", {"PodName": workload}, f"{label} {shown} %", "Average")
                for what, shown in (("cpu", "CPU"), ("memory", "memory"))
            ]

        def pods(workload: str, label: str) -> list[cloudwatch.IMetric]:
            return [metric("service_number_of_running_pods", {"Service": workload}, f"{label} running", "Maximum")]

        return [
            self._graph("api_usage", usage(API_NAME, "API")),
            self._graph("api_tasks", pods(API_NAME, "API")),
            self._graph("worker_usage", usage(WORKER_NAME, "workers")),
            self._graph("worker_tasks", pods(WORKER_NAME, "workers")),
        ]

    @staticmethod
    def _usage(cluster_name: str, service_name: str, label: str) -> list[cloudwatch.IMetric]:
        return [
            cloudwatch.Metric(
                namespace="AWS/ECS",
                metric_name=name,
                dimensions_map={"ClusterName": cluster_name, "ServiceName": service_name},
                period=PERIOD,
                statistic="Average",
                label=f"{label} {what}",
            )
            for name, what in (("CPUUtilization", "CPU %"), ("MemoryUtilization", "memory %"))
        ]

    @staticmethod
    def _tasks(cluster_name: str, service_name: str, label: str) -> list[cloudwatch.IMetric]:
        dimensions = {"ClusterName": cluster_name, "ServiceName": service_name}
        return [
            cloudwatch.Metric(
                namespace=CONTAINER_INSIGHTS,
                metric_name=name,
                dimensions_map=dimensions,
                period=PERIOD,
                statistic="Maximum",
                label=f"{label} {what}",
            )
            for name, what in (("RunningTaskCount", "running"), ("DesiredTaskCount", "desired"))
        ]

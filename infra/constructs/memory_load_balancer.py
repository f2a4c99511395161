"""MemoryLoadBalancer: Hindsight's internal entry point, with its access logs, health alarm and private DNS name.

The API tasks sit behind an internal Application Load Balancer (HTTPS with ``hindsight.certificate_arn``, else
HTTP inside the VPC), which reaches them over HTTP, or HTTPS with ``hindsight.tls_to_tasks``. Its readiness check
is Hindsight's ``/health`` (which checks the database); an alarm fires when no task passes it. With
``hindsight.domain_name`` a private DNS name points at it (``PrivateDnsName``).
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct

from infra.config import HindsightConfig
from infra.constructs.access_logs import access_log_bucket
from infra.constructs.foundation import Foundation
from infra.constructs.part import Part
from infra.constructs.private_dns import PrivateDnsName
from infra.constructs.props import raise_if_any
from memory_adapter import hindsight_routes as routes

HTTPS_PORT = 443
HTTP_PORT = 80


@dataclass(frozen=True)
class MemoryLoadBalancerProps:
    """What the load balancer is built from (the memory service builds it).

    Args:
        config: The ``hindsight`` section (certificate, name, ports, TLS to the tasks).
        foundation: The VPC it sits in and the topic its alarm notifies.
        security_group: The load balancer's group (owned by the service, whose rules name it).
        api_service: The service whose tasks receive the traffic; None on EKS, where a TargetGroupBinding registers
            the API pods in ``target_group``.
    """

    config: HindsightConfig
    foundation: Foundation
    security_group: ec2.ISecurityGroup
    api_service: ecs.FargateService | None


class MemoryLoadBalancer(Part):
    """Exposes ``load_balancer``, ``target_group``, ``access_logs``, ``dns``, ``url``, ``listener_port`` and
    ``unhealthy_alarm``."""

    def __init__(self, scope: Construct, construct_id: str, props: MemoryLoadBalancerProps) -> None:
        super().__init__(scope, construct_id)
        config, network, api_service = props.config, props.foundation.network, props.api_service
        raise_if_any(
            self.node.path,
            (
                "domain_name needs certificate_arn (the name is what the certificate covers), and only with it",
                (config.domain_name is None) != (config.certificate_arn is None),
            ),
            (
                "hosted_zone_id needs domain_name (the record it holds)",
                config.hosted_zone_id is not None and config.domain_name is None,
            ),
        )
        self.load_balancer = elbv2.ApplicationLoadBalancer(
            self,
            "LoadBalancer",
            vpc=network.vpc,
            vpc_subnets=network.subnets,
            internet_facing=False,
            security_group=props.security_group,
            drop_invalid_header_fields=True,
            deletion_protection=False,
        )
        self.access_logs = access_log_bucket(
            self, "AccessLogs", expiration_days=90, noncurrent_version_days=7, removal_policy=RemovalPolicy.RETAIN
        )
        self.load_balancer.log_access_logs(self.access_logs, prefix="hindsight")
        listener = self._listener(config)
        # hindsight.tls_to_tasks: HTTPS to the tasks and for their health check. The load balancer verifies no
        # target certificate, so each task's self-signed one serves (hindsight_task.MAKE_TASK_CERTIFICATE).
        to_tasks = elbv2.ApplicationProtocol.HTTPS if config.tls_to_tasks else elbv2.ApplicationProtocol.HTTP
        health_check = elbv2.HealthCheck(
            path=routes.HEALTH,
            healthy_http_codes="200",
            interval=Duration.seconds(15),
            timeout=Duration.seconds(5),
            healthy_threshold_count=2,
            unhealthy_threshold_count=3,
            protocol=elbv2.Protocol.HTTPS if config.tls_to_tasks else None,
        )
        if api_service is not None:
            self.target_group = listener.add_targets(
                "Api",
                port=config.port,
                protocol=to_tasks,
                targets=[api_service],
                deregistration_delay=Duration.seconds(30),
                health_check=health_check,
            )
        else:  # EKS: the pods' IPs are registered by the AWS Load Balancer Controller (a TargetGroupBinding)
            self.target_group = elbv2.ApplicationTargetGroup(
                self,
                "Api",
                vpc=network.vpc,
                port=config.port,
                protocol=to_tasks,
                target_type=elbv2.TargetType.IP,
                deregistration_delay=Duration.seconds(30),
                health_check=health_check,
            )
            listener.add_target_groups("Api", target_groups=[self.target_group])
        self.unhealthy_alarm = props.foundation.alerts.watch(
            cloudwatch.Alarm(
                self,
                "NoHealthyApiTask",
                alarm_description="No Hindsight API task passes the load balancer's health check: agents run without "
                "memory (degraded). See the service's events and the Hindsight log group.",
                metric=self.target_group.metrics.healthy_host_count(
                    period=Duration.minutes(1), statistic=cloudwatch.Stats.MINIMUM
                ),
                comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                threshold=1,
                evaluation_periods=3,
                treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
            )
        )
        self.dns: PrivateDnsName | None = None
        if config.domain_name is not None:
            self.dns = PrivateDnsName(
                self,
                "Dns",
                domain_name=config.domain_name,
                hosted_zone_id=config.hosted_zone_id,
                vpc=network.vpc,
                load_balancer=self.load_balancer,
            )
        host = config.domain_name or self.load_balancer.load_balancer_dns_name
        self.url = f"{'https' if config.certificate_arn else 'http'}://{host}"

    def _listener(self, config: HindsightConfig) -> elbv2.ApplicationListener:
        if config.certificate_arn:
            self.listener_port = HTTPS_PORT
            return self.load_balancer.add_listener(
                "Https",
                port=HTTPS_PORT,
                protocol=elbv2.ApplicationProtocol.HTTPS,
                certificates=[acm.Certificate.from_certificate_arn(self, "Certificate", config.certificate_arn)],
                ssl_policy=elbv2.SslPolicy.RECOMMENDED_TLS,
                open=False,
            )
        self.listener_port = HTTP_PORT
        return self.load_balancer.add_listener(
            "Http", port=HTTP_PORT, protocol=elbv2.ApplicationProtocol.HTTP, open=False
        )

"""PrivateDnsName: the name the Hindsight certificate covers, resolving inside the VPC to the internal load balancer.

Without it the agent would call ``https://<domain_name>`` and resolve nothing (a manual step every deployer could
miss). With ``hindsight.hosted_zone_id`` the record goes into that existing private zone (which must hold the name);
without it a private hosted zone for exactly that name is created and associated with the VPC (a more specific zone
wins over a broader one the VPC may already use, so nothing else resolves differently).
"""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_route53 as route53
from aws_cdk import aws_route53_targets as route53_targets
from constructs import Construct


class PrivateDnsName(Construct):
    """Exposes ``zone`` and ``record`` (an alias A record for ``domain_name``)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        domain_name: str,
        hosted_zone_id: str | None,
        vpc: ec2.IVpc,
        load_balancer: elbv2.IApplicationLoadBalancer,
    ) -> None:
        super().__init__(scope, construct_id)
        self.zone: route53.IHostedZone
        if hosted_zone_id is not None:
            self.zone = route53.PrivateHostedZone.from_hosted_zone_id(self, "Zone", hosted_zone_id)
        else:
            self.zone = route53.PrivateHostedZone(
                self, "Zone", zone_name=domain_name, vpc=vpc, comment="Hindsight's name inside the VPC"
            )
        self.record = route53.ARecord(
            self,
            "Record",
            zone=self.zone,
            record_name=domain_name + ".",  # fully qualified: an imported zone's own name is not known at synth
            target=route53.RecordTarget.from_alias(route53_targets.LoadBalancerTarget(load_balancer)),
            comment="Hindsight's internal load balancer",
        )

"""Network: an isolated VPC (or an imported one) whose AWS APIs are reached only through VPC endpoints."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import AuthMode, NetworkConfig, VpcMode
from infra.constructs.log_retention import retention

#: Interface endpoints every deployment needs: image pulls, logs, secrets, keys, credentials, the models, the
#: mirrored signing keys (SSM) and traces. S3 (image layers, the extension asset) is a gateway endpoint.
INTERFACE_ENDPOINTS: dict[str, ec2.InterfaceVpcEndpointAwsService] = {
    "EcrApi": ec2.InterfaceVpcEndpointAwsService.ECR,
    "EcrDocker": ec2.InterfaceVpcEndpointAwsService.ECR_DOCKER,
    "Logs": ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS,
    "Monitoring": ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_MONITORING,
    "SecretsManager": ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER,
    "Kms": ec2.InterfaceVpcEndpointAwsService.KMS,
    "Sts": ec2.InterfaceVpcEndpointAwsService.STS,
    "Ssm": ec2.InterfaceVpcEndpointAwsService.SSM,
    "BedrockRuntime": ec2.InterfaceVpcEndpointAwsService.BEDROCK_RUNTIME,
    "XRay": ec2.InterfaceVpcEndpointAwsService.XRAY,
}


class Network(Construct):
    """The VPC, its endpoints and flow logs; exposes ``vpc`` and ``subnets`` (where every workload goes)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: NetworkConfig,
        auth_mode: AuthMode,
        logs_key: kms.IKey,
    ) -> None:
        super().__init__(scope, construct_id)
        self.config = config
        self.vpc: ec2.IVpc
        if config.mode is VpcMode.CREATE:
            self.vpc = self._create_vpc(config, logs_key)
        else:
            self.vpc = ec2.Vpc.from_vpc_attributes(
                self,
                "Vpc",
                vpc_id=config.vpc_id or "",
                vpc_cidr_block=config.vpc_cidr,
                availability_zones=list(config.availability_zones),
                isolated_subnet_ids=list(config.subnet_ids),
                isolated_subnet_route_table_ids=list(config.route_table_ids) or None,
            )
        self.subnets = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
        self.endpoint_security_group: ec2.SecurityGroup | None = None
        if config.create_endpoints:
            self._add_endpoints(auth_mode)

    def _create_vpc(self, config: NetworkConfig, logs_key: kms.IKey) -> ec2.Vpc:
        vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(config.cidr),
            max_azs=len(config.az_ids),
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="Isolated", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=20)
            ],
            restrict_default_security_group=True,
        )
        # AgentCore supports only some AZ *ids* per region, and AZ names map to different ids in every account:
        # pin each subnet by id so the agent's network interfaces always land in a supported zone.
        for az_id, subnet in zip(config.az_ids, vpc.isolated_subnets, strict=True):
            cfn_subnet = subnet.node.default_child
            assert isinstance(cfn_subnet, ec2.CfnSubnet)
            cfn_subnet.add_property_deletion_override("AvailabilityZone")
            cfn_subnet.add_property_override("AvailabilityZoneId", az_id)
        log_group = logs.LogGroup(
            self,
            "FlowLogs",
            retention=retention(config.flow_log_retention_days),
            encryption_key=logs_key,
            removal_policy=RemovalPolicy.RETAIN,
        )
        vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(log_group),
            traffic_type=ec2.FlowLogTrafficType.ALL,
        )
        return vpc

    def _add_endpoints(self, auth_mode: AuthMode) -> None:
        self.vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3, subnets=[self.subnets])
        sg = ec2.SecurityGroup(
            self,
            "EndpointSecurityGroup",
            vpc=self.vpc,
            description="VPC interface endpoints: HTTPS from inside the VPC only",
            allow_all_outbound=False,
        )
        # The configured CIDR, not the VPC's token, so the rule is checkable at synth (and equal by construction).
        cidr = self.config.cidr if self.config.mode is VpcMode.CREATE else self.config.vpc_cidr
        assert cidr is not None
        sg.add_ingress_rule(ec2.Peer.ipv4(cidr), ec2.Port.tcp(443), "HTTPS from the VPC")
        self.endpoint_security_group = sg
        services = dict(INTERFACE_ENDPOINTS)
        if auth_mode is AuthMode.COGNITO:
            # Serves the user pool's unauthenticated APIs in the VPC; the signing keys are mirrored to SSM as well,
            # because whether the JWKS path answers through this endpoint is not documented.
            services["CognitoIdp"] = ec2.InterfaceVpcEndpointAwsService.COGNITO_IDP
        for name, service in services.items():
            self.vpc.add_interface_endpoint(
                name,
                service=service,
                subnets=self.subnets,
                security_groups=[sg],
                private_dns_enabled=True,
                open=False,  # the group above already admits 443 from the VPC, and nothing else
            )

"""Network: an isolated VPC (or an imported one) whose AWS APIs are reached only through VPC endpoints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.bootstrap import asset_bucket_name
from infra.config import OPTIONAL_ENDPOINTS, AuthMode, NetworkConfig, VpcMode
from infra.constructs.log_retention import retention

#: Interface endpoints every deployment gets: image pulls, logs, secrets, keys, credentials, the models, the
#: mirrored signing keys (SSM) and traces (``network.optional_endpoints=false`` leaves out those nothing calls:
#: ``OPTIONAL_ENDPOINTS``). S3 (image layers, the extension asset) is a gateway endpoint.
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
    "Sqs": ec2.InterfaceVpcEndpointAwsService.SQS,  # the retain queue: the agent sends, the replay function consumes
}
#: Endpoints whose API is also called without AWS credentials (Cognito's user-pool APIs): no principal condition.
UNAUTHENTICATED_ENDPOINTS = frozenset({"CognitoIdp"})
#: Endpoints a later stack creates when it needs one (:meth:`Network.add_endpoint`), skippable like the others. The
#: gateway's callers present bearer tokens, which an endpoint policy cannot filter (it sees IAM principals only).
ON_DEMAND_ENDPOINTS: dict[str, ec2.InterfaceVpcEndpointAwsService] = {
    "AgentCoreGateway": ec2.InterfaceVpcEndpointAwsService.BEDROCK_AGENTCORE_GATEWAY,
    # hindsight.platform=eks: the kubectl function's describe-cluster (its kubeconfig).
    "Eks": ec2.InterfaceVpcEndpointAwsService.EKS,
    # eks.pod_identity=true: the Pod Identity agent's AssumeRoleForPodIdentity, the pods' credentials.
    "EksAuth": ec2.InterfaceVpcEndpointAwsService.EKS_AUTH,
}


#: What the deployment's own buckets are used for through the S3 gateway: objects written and read back.
GATEWAY_BUCKET_ACTIONS = ("s3:GetObject", "s3:PutObject")


@dataclass(frozen=True)
class NetworkProps:
    """What the network is built from.

    Args:
        auth_mode: How callers authenticate (the Cognito endpoint and its policy depend on it).
        gateway_buckets: Names (or name patterns, admitted in this account only) of the deployment's own buckets
            that workloads in the VPC read and write (the administration bucket), besides what is only read; known
            before those buckets exist (later stacks create them), so this stack never depends on theirs.
    """

    config: NetworkConfig
    auth_mode: AuthMode
    gateway_buckets: Sequence[str] = ()


class Network(Construct):
    """The VPC, its endpoints and flow logs; exposes ``vpc`` and ``subnets`` (where every workload goes).

    Args:
        props: The network section and what it serves.
        logs_key: The key of the flow logs' log group (the stack's).
    """

    def __init__(self, scope: Construct, construct_id: str, props: NetworkProps, *, logs_key: kms.IKey) -> None:
        super().__init__(scope, construct_id)
        self.config = config = props.config
        auth_mode = props.auth_mode
        self._gateway_buckets = tuple(props.gateway_buckets)
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
        #: Where the interface endpoints go: every subnet, or the first ``endpoint_az_count`` (the lean dev option).
        self.endpoint_subnets = self.subnets
        if config.endpoint_az_count is not None:
            subnets = self.vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED).subnets
            self.endpoint_subnets = ec2.SubnetSelection(subnets=subnets[: config.endpoint_az_count])
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
        flow_log = vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(log_group),
            traffic_type=ec2.FlowLogTrafficType.ALL,
        )
        _trust_only_own_flow_logs(flow_log)
        return vpc

    def _add_endpoints(self, auth_mode: AuthMode) -> None:
        skip = set(self.config.skip_endpoints) | (set() if self.config.optional_endpoints else set(OPTIONAL_ENDPOINTS))
        stack = Stack.of(self)
        if "S3" not in skip:
            # A created VPC holds only this deployment, so its S3 gateway reaches exactly what is used through it:
            # ECR's image layers and the bootstrap bucket's assets (the extension, the agent's code), read; the
            # administration bucket (exports, receipts, backups), written and read. An imported
            # VPC's route tables carry other workloads' S3 traffic too, so there the policy stays open.
            s3 = self.vpc.add_gateway_endpoint(
                "S3", service=ec2.GatewayVpcEndpointAwsService.S3, subnets=[self.subnets]
            )
            if self.config.mode is VpcMode.CREATE:
                s3.add_to_policy(
                    iam.PolicyStatement(
                        principals=[iam.AnyPrincipal()],
                        actions=["s3:GetObject"],
                        resources=[
                            f"arn:{stack.partition}:s3:::{bucket}/*"
                            for bucket in (ecr_layer_bucket_name(stack), asset_bucket_name(stack))
                        ],
                    )
                )
                if self._gateway_buckets:
                    s3.add_to_policy(
                        iam.PolicyStatement(
                            principals=[iam.AnyPrincipal()],
                            actions=list(GATEWAY_BUCKET_ACTIONS),
                            resources=[f"arn:{stack.partition}:s3:::{bucket}/*" for bucket in self._gateway_buckets],
                            # A name pattern: only this account's buckets of it (bucket names are global).
                            conditions={"StringEquals": {"aws:ResourceAccount": stack.account}},
                        )
                    )
        sg = ec2.SecurityGroup(
            self,
            "EndpointSecurityGroup",
            vpc=self.vpc,
            description="VPC interface endpoints: HTTPS from inside the VPC only",
            allow_all_outbound=False,
        )
        # The configured CIDR, not the VPC's token, so the rule is checkable at synth (and equal by construction).
        # Workloads also get a rule from their own security group (allow_endpoints_from), which covers subnets of
        # an imported VPC's secondary CIDRs.
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
            if name in skip:
                continue
            endpoint = self.vpc.add_interface_endpoint(
                name,
                service=service,
                subnets=self.endpoint_subnets,
                security_groups=[sg],
                private_dns_enabled=True,
                open=False,  # the group above already admits 443 from the VPC, and nothing else
            )
            if name not in UNAUTHENTICATED_ENDPOINTS:
                # Only this account's principals (the tasks', the agent's and the functions' roles) may use it.
                endpoint.add_to_policy(
                    iam.PolicyStatement(
                        principals=[iam.AnyPrincipal()],
                        actions=["*"],
                        resources=["*"],
                        conditions={"StringEquals": {"aws:PrincipalAccount": stack.account}},
                    )
                )

    @property
    def subnet_ids(self) -> list[str]:
        """The ids of :attr:`subnets` (what an ``ecs run-task`` names)."""
        return self.vpc.select_subnets(subnet_type=self.subnets.subnet_type).subnet_ids

    def workload_security_group(
        self,
        scope: Construct,
        construct_id: str,
        *,
        description: str,
        egress_description: str = "HTTPS to AWS endpoints",
        rules_in_group: bool = False,
    ) -> ec2.SecurityGroup:
        """A workload's group in scope: no egress but HTTPS (the VPC has no NAT and no IGW, so 443 reaches only the
        VPC endpoints and the S3 gateway, whose addresses are public, hence no narrower CIDR), admitted to the
        interface endpoints.

        ``rules_in_group`` writes the endpoint rule's handle inside the group instead of in scope (for groups that
        share a scope, such as the rotation functions').
        """
        group = ec2.SecurityGroup(scope, construct_id, vpc=self.vpc, description=description, allow_all_outbound=False)
        group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), egress_description)
        self.allow_endpoints_from(group if rules_in_group else scope, group)
        return group

    def add_endpoint(self, scope: Construct, name: str) -> ec2.InterfaceVpcEndpoint | None:
        """The on-demand interface endpoint ``name`` (:data:`ON_DEMAND_ENDPOINTS`) in ``scope``, with private DNS,
        in the endpoint security group (an imported handle, so this stack never depends on scope's); ``None`` when the
        network's endpoints are the customer's (``create_endpoints=false``) or ``name`` is in ``skip_endpoints``."""
        if self.endpoint_security_group is None or name in self.config.skip_endpoints:
            return None
        handle = ec2.SecurityGroup.from_security_group_id(
            scope,
            f"{name}EndpointSecurityGroup",
            self.endpoint_security_group.security_group_id,
            allow_all_outbound=False,
            mutable=False,
        )
        return ec2.InterfaceVpcEndpoint(
            scope,
            f"{name}Endpoint",
            vpc=self.vpc,
            service=ON_DEMAND_ENDPOINTS[name],
            subnets=self.endpoint_subnets,
            security_groups=[handle],
            private_dns_enabled=True,
            open=False,  # the endpoint group already admits 443 from the VPC and the workloads, and nothing else
        )

    def allow_endpoints_from(self, scope: Construct, peer: ec2.ISecurityGroup) -> None:
        """Admit HTTPS from a workload's security group to the interface endpoints.

        The rule is written in ``scope``'s stack through an imported handle on the endpoint group, so the network
        stack never depends on the workloads' stacks.
        """
        if self.endpoint_security_group is None:
            return
        handle = ec2.SecurityGroup.from_security_group_id(
            scope,
            "EndpointSecurityGroup",
            self.endpoint_security_group.security_group_id,
            allow_all_outbound=False,
            mutable=True,
        )
        handle.add_ingress_rule(peer, ec2.Port.tcp(443), "HTTPS to the VPC endpoints")


def ecr_layer_bucket_name(stack: Stack) -> str:
    """The AWS-owned bucket ECR serves image layers from (Amazon ECR User Guide, "Amazon ECR interface VPC
    endpoints": the gateway endpoint must reach ``prod-<region>-starport-layer-bucket``)."""
    return f"prod-{stack.region}-starport-layer-bucket"


def _trust_only_own_flow_logs(flow_log: ec2.FlowLog) -> None:
    """The flow log role may be assumed only for this account's flow logs (the confused deputy conditions the VPC
    User Guide, "IAM role for publishing flow logs to CloudWatch Logs", recommends; the flow log's id is ``*``:
    naming it would make the role depend on the flow log that depends on the role). Changes the role in place."""
    role = flow_log.iam_role
    assert role is not None
    assert isinstance(role.node.default_child, iam.CfnRole)
    stack = Stack.of(flow_log)
    source = stack.format_arn(service="ec2", resource="vpc-flow-log", resource_name="*")
    role.node.default_child.add_property_override(
        "AssumeRolePolicyDocument.Statement.0.Condition",
        {"StringEquals": {"aws:SourceAccount": stack.account}, "ArnLike": {"aws:SourceArn": source}},
    )

"""The ``network`` section: the VPC, created isolated or imported by id, its endpoints, and the rules it must meet."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from infra.agentcore_zones import SOURCE as AGENTCORE_ZONES_SOURCE
from infra.agentcore_zones import supported_az_ids
from infra.config.checks import log_retention, require

#: The VPC endpoints the network stack creates (``network.skip_endpoints`` names them).
ENDPOINT_NAMES = (
    "S3",
    "EcrApi",
    "EcrDocker",
    "Logs",
    "Monitoring",
    "SecretsManager",
    "Kms",
    "Sts",
    "Ssm",
    "BedrockRuntime",
    "XRay",
    "Sqs",
    "CognitoIdp",
    "AgentCoreGateway",
    "Eks",  # hindsight.platform=eks only (the kubectl and restart functions' describe-cluster)
    "EksAuth",  # eks.pod_identity=true only (the pods' credentials through the Pod Identity agent)
)
#: Endpoints no workload of a managed-mode deployment calls (``network.optional_endpoints=false`` leaves them out):
#: CloudWatch's API (metrics go out as log records; only the external-mode probe calls it), X-Ray (nothing in the VPC
#: sends traces: AgentCore delivers the runtime's), KMS (every key is used by the services on the caller's behalf) and
#: Cognito (the signing keys are mirrored to SSM). ``tests/infra/reach_check.py`` checks that every workload of a lean
#: deployment still reaches what it calls.
OPTIONAL_ENDPOINTS = ("Monitoring", "XRay", "Kms", "CognitoIdp")


class VpcMode(StrEnum):
    """Where the network comes from."""

    CREATE = "create"
    IMPORT = "import"


@dataclass(frozen=True)
class NetworkConfig:
    """The VPC: created isolated (no IGW, no NAT) or imported by id with no lookups."""

    mode: VpcMode
    cidr: str
    az_ids: tuple[str, ...]
    vpc_id: str | None
    vpc_cidr: str | None
    subnet_ids: tuple[str, ...]
    availability_zones: tuple[str, ...]
    route_table_ids: tuple[str, ...]
    create_endpoints: bool
    skip_endpoints: tuple[str, ...]
    supported_az_ids: tuple[str, ...]
    flow_log_retention_days: int
    #: The lean dev option (``docs/deploying.md#what-it-costs``): the interface endpoints in the first this many zones
    #: (``None``: every zone of the subnets; calls from the other zones cross zones), and the optional ones
    #: (:data:`OPTIONAL_ENDPOINTS`) left out when ``False``.
    endpoint_az_count: int | None
    optional_endpoints: bool


_AZ_ID = re.compile(r"^[a-z]{2,5}\d-az\d{1,2}$")
_AZ_NAME = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$")
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_ROUTE_TABLE_ID = re.compile(r"^rtb-[0-9a-f]{8,17}$")
_CIDR = re.compile(r"^(\d{1,3}\.){3}\d{1,3}/(1[6-9]|2[0-8])$")


def network_problems(n: NetworkConfig, region: str | None) -> list[str]:
    """The VPC (created or imported) and, when the region is known, its zones against AgentCore's."""
    errors: list[str] = []
    log_retention(errors, "network.flow_log_retention_days", n.flow_log_retention_days)
    if n.mode is VpcMode.CREATE:
        errors.extend(_created_network_problems(n))
    else:
        errors.extend(_imported_network_problems(n))
    if region is not None:
        errors.extend(_az_support_problems(n, region))
    errors.extend(_lean_endpoint_problems(n))
    return errors


def _lean_endpoint_problems(n: NetworkConfig) -> list[str]:
    """The lean dev option: endpoints in fewer zones, the optional ones left out (only where endpoints are created)."""
    errors: list[str] = []
    zones = len(n.az_ids) if n.mode is VpcMode.CREATE else len(n.subnet_ids)
    if n.endpoint_az_count is not None:
        require(
            errors,
            1 <= n.endpoint_az_count <= zones,
            f"network.endpoint_az_count must be null (every zone) or 1 to {zones} (the zones of the subnets)",
        )
    require(
        errors,
        n.create_endpoints or (n.endpoint_az_count is None and n.optional_endpoints),
        "network.endpoint_az_count and network.optional_endpoints apply only with create_endpoints=true",
    )
    return errors


def _created_network_problems(n: NetworkConfig) -> list[str]:
    errors: list[str] = []
    require(errors, bool(_CIDR.match(n.cidr)), "network.cidr must be an IPv4 CIDR between /16 and /28")
    require(errors, len(n.az_ids) == 2, "network.az_ids must be exactly two AgentCore-supported AZ ids (use1-az1)")
    _az_id_format(errors, "network.az_ids", n.az_ids)
    require(errors, len(set(n.az_ids)) == len(n.az_ids), "network.az_ids must be distinct")
    require(
        errors, n.create_endpoints, "network.create_endpoints must be true: a created VPC has no egress and needs them"
    )
    require(
        errors,
        not n.skip_endpoints,
        "network.skip_endpoints applies to an imported VPC only (a created VPC has no endpoints of its own)",
    )
    return errors


def _imported_network_problems(n: NetworkConfig) -> list[str]:
    errors: list[str] = []
    require(errors, n.vpc_id is not None and bool(_VPC_ID.match(n.vpc_id)), "network.vpc_id must be like vpc-0123abcd")
    require(errors, n.vpc_cidr is not None and bool(_CIDR.match(n.vpc_cidr)), "network.vpc_cidr must be the VPC's CIDR")
    require(errors, len(n.subnet_ids) >= 2, "network.subnet_ids must name at least two private subnets in two AZs")
    _each_matches(errors, "network.subnet_ids", n.subnet_ids, _SUBNET_ID, "a subnet id")
    require(
        errors,
        len(n.availability_zones) == len(n.subnet_ids),
        "network.availability_zones must give one AZ name per subnet id, in the same order",
    )
    _each_matches(errors, "network.availability_zones", n.availability_zones, _AZ_NAME, "an AZ name")
    require(errors, len(set(n.availability_zones)) >= 2, "network.availability_zones must hold two distinct AZs")
    if n.route_table_ids:
        require(
            errors,
            len(n.route_table_ids) == len(n.subnet_ids),
            "network.route_table_ids must give one route table id per subnet id, in the same order",
        )
        _each_matches(errors, "network.route_table_ids", n.route_table_ids, _ROUTE_TABLE_ID, "a route table id")
    require(
        errors,
        len(n.az_ids) == len(n.subnet_ids),
        "network.az_ids must give the AZ id of each subnet, in the same order (aws ec2 describe-subnets "
        "--subnet-ids ... --query 'Subnets[].AvailabilityZoneId'); they are checked against AgentCore's zones",
    )
    _az_id_format(errors, "network.az_ids", n.az_ids)
    needs_route_tables = n.create_endpoints and "S3" not in n.skip_endpoints
    require(
        errors,
        not needs_route_tables or bool(n.route_table_ids),
        "network.route_table_ids is required with create_endpoints (the S3 gateway endpoint attaches to them)",
    )
    for name in n.skip_endpoints:
        require(
            errors,
            name in ENDPOINT_NAMES,
            f"network.skip_endpoints: '{name}' is not an endpoint of this stack (one of: {', '.join(ENDPOINT_NAMES)})",
        )
    require(
        errors,
        n.create_endpoints or not n.skip_endpoints,
        "network.skip_endpoints applies only with create_endpoints=true (false already skips every endpoint)",
    )
    return errors


def _az_support_problems(n: NetworkConfig, region: str) -> list[str]:
    """Subnets only in zones AgentCore supports (AZ *ids*: names map to different zones in every account)."""
    errors: list[str] = []
    _az_id_format(errors, "network.supported_az_ids", n.supported_az_ids)
    supported = supported_az_ids(region, n.supported_az_ids)
    if supported is None:
        errors.append(
            f"network.az_ids: the AgentCore-supported AZ ids of region '{region}' are not in this project's table; "
            f"look them up ({AGENTCORE_ZONES_SOURCE}, 'Supported Availability Zones') and set "
            "network.supported_az_ids to that region's list"
        )
        return errors
    for az in n.az_ids:
        if _AZ_ID.match(az) and az not in supported:
            errors.append(
                f"network.az_ids: '{az}' is not an AgentCore-supported AZ id in {region} "
                f"(supported: {', '.join(sorted(supported))}; source: {AGENTCORE_ZONES_SOURCE}); a subnet there makes "
                "the agent runtime's creation fail"
            )
    return errors


def _each_matches(errors: list[str], name: str, values: tuple[str, ...], pattern: re.Pattern[str], what: str) -> None:
    for value in values:
        require(errors, bool(pattern.match(value)), f"{name}: '{value}' is not {what}")


def _az_id_format(errors: list[str], name: str, az_ids: tuple[str, ...]) -> None:
    _each_matches(errors, name, az_ids, _AZ_ID, "an AZ id like use1-az1")

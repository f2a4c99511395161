"""Security properties of the stacks, asserted on the synthesized templates of every variant: cdk-nag findings,
the network (endpoints, security groups, the private TLS name). The data, the memory service and the agent are in
``test_security_data.py``, ``test_security_service.py`` and ``test_security_agent.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.infra.conftest import Synth, resources
from tests.infra.security_helpers import ALL, as_text

# -- cdk-nag ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_cdk_nag_has_no_unacknowledged_findings(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    violations = [
        (v["ruleName"], c["constructPath"])
        for plugin in (synth.nag_report or {}).get("pluginReports", [])
        for v in plugin["violations"]
        for c in v["violatingConstructs"]
    ]
    assert synth.nag_error is None, violations
    assert violations == []


@pytest.mark.parametrize("variant", ALL)
def test_every_acknowledgement_names_its_resource_and_a_reason(synths: dict[str, Synth], variant: str) -> None:
    from infra import nag
    from infra.nag import common

    recorded: list[tuple[str, str]] = []
    original = common.ack

    def spy(scope, rule, reason):
        recorded.append((scope.node.path, reason))
        original(scope, rule, reason)

    common.ack = spy
    try:
        synth = synths[variant]
        nag.acknowledge_findings(synth.stacks, synth.config)
    finally:
        common.ack = original
    assert recorded
    for path, reason in recorded:
        assert "/" in path
        assert len(reason) >= 40, (path, reason)


def _recorded_acknowledgements(synth: Synth) -> list[tuple[str, str, str]]:
    """(construct path, rule, reason) of every acknowledgement the app makes for this configuration."""
    from infra import nag
    from infra.nag import common

    recorded: list[tuple[str, str, str]] = []
    original = common.ack

    def spy(scope: Any, rule: str, reason: str) -> None:
        recorded.append((scope.node.path, rule, reason))

    common.ack = spy
    try:
        nag.acknowledge_findings(synth.stacks, synth.config)
    finally:
        common.ack = original
    return recorded


@pytest.mark.parametrize("variant", ALL)
def test_every_acknowledgement_matches_a_real_finding(
    synths: dict[str, Synth], unacknowledged: dict[str, Synth], variant: str
) -> None:
    # An acknowledgement that matches nothing is a stale claim a reviewer would have to re-check: none may exist.
    findings = [
        (v["ruleName"], c["constructPath"])
        for plugin in (unacknowledged[variant].nag_report or {}).get("pluginReports", [])
        for v in plugin["violations"]
        for c in v["violatingConstructs"]
    ]
    assert findings  # the packs really ran without acknowledgements
    stale = [
        (path, rule)
        for path, rule, _ in _recorded_acknowledgements(synths[variant])
        if not any(r == rule and (p == path or p.startswith(path + "/")) for r, p in findings)
    ]
    assert stale == []


# -- network ------------------------------------------------------------------------------------------------------


def test_created_vpc_has_no_internet_path_and_pins_az_ids(default: Synth) -> None:
    t = default.template("-Network")
    for banned in (
        "AWS::EC2::InternetGateway",
        "AWS::EC2::NatGateway",
        "AWS::EC2::EIP",
        "AWS::EC2::EgressOnlyInternetGateway",
    ):
        assert resources(t, banned) == {}
    subnets = resources(t, "AWS::EC2::Subnet")
    assert sorted(s["Properties"]["AvailabilityZoneId"] for s in subnets.values()) == ["use1-az1", "use1-az2"]
    assert all("AvailabilityZone" not in s["Properties"] for s in subnets.values())
    assert all(s["Properties"]["MapPublicIpOnLaunch"] is False for s in subnets.values())
    (flow_log,) = resources(t, "AWS::EC2::FlowLog").values()
    # The flow log role trusts the service only for this account's flow logs (confused deputy conditions)
    role = t["Resources"][flow_log["Properties"]["DeliverLogsPermissionArn"]["Fn::GetAtt"][0]]
    (trust,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "vpc-flow-logs.amazonaws.com"}
    account = default.config.account or {"Ref": "AWS::AccountId"}
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": account}
    (source,) = trust["Condition"]["ArnLike"].values()
    assert list(trust["Condition"]["ArnLike"]) == ["aws:SourceArn"]
    assert ":ec2:" in as_text(source)
    assert as_text(source).endswith(':vpc-flow-log/*"]]}')  # this account's flow logs, any of them


@pytest.mark.parametrize("variant", ALL)
def test_aws_apis_are_reached_through_endpoints(synths: dict[str, Synth], variant: str) -> None:
    t = synths[variant].template("-Network")
    names = {as_text(e["Properties"]["ServiceName"]) for e in resources(t, "AWS::EC2::VPCEndpoint").values()}
    joined = " ".join(names)
    for service in ("ecr.api", "ecr.dkr", ".logs", "secretsmanager", ".kms", ".sts", ".ssm", "bedrock-runtime", ".s3"):
        assert service in joined, service
    assert ("cognito-idp" in joined) == (synths[variant].config.auth.mode.value == "cognito")
    interface = [
        e
        for e in resources(t, "AWS::EC2::VPCEndpoint").values()
        if e["Properties"].get("VpcEndpointType") == "Interface"
    ]
    assert all(e["Properties"]["PrivateDnsEnabled"] is True for e in interface)


@pytest.mark.parametrize("variant", ALL)
def test_endpoint_group_admits_only_https_from_the_vpc(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-Network")
    (sg,) = [
        v for k, v in resources(t, "AWS::EC2::SecurityGroup").items() if k.startswith("NetworkEndpointSecurityGroup")
    ]
    (rule,) = sg["Properties"]["SecurityGroupIngress"]
    expected = (
        synth.config.network.cidr if synth.config.network.mode.value == "create" else synth.config.network.vpc_cidr
    )
    assert (rule["CidrIp"], rule["FromPort"], rule["ToPort"], rule["IpProtocol"]) == (expected, 443, 443, "tcp")


@pytest.mark.parametrize("variant", ALL)
def test_workload_security_groups_may_reach_the_endpoints(synths: dict[str, Synth], variant: str) -> None:
    # The CIDR rule covers only the VPC's primary CIDR; each workload's own group is admitted as well.
    synth = synths[variant]
    workloads = {
        "-MemoryService": ["MemorySecurityGroup"],
        "-Agent": ["AgentSecurityGroup", "RetainReplaySecurityGroup"],
    }
    for suffix, groups in workloads.items():
        rules = [
            r["Properties"]
            for r in resources(synth.template(suffix), "AWS::EC2::SecurityGroupIngress").values()
            if "NetworkEndpointSecurityGroup" in as_text(r["Properties"]["GroupId"])
        ]
        assert len(rules) == len(groups), suffix
        for rule, group in zip(sorted(rules, key=as_text), sorted(groups), strict=True):
            assert (rule["FromPort"], rule["ToPort"], rule["IpProtocol"]) == (443, 443, "tcp")
            assert group in as_text(rule["SourceSecurityGroupId"])


@pytest.mark.parametrize("variant", ALL)
def test_interface_endpoints_serve_only_this_accounts_principals(synths: dict[str, Synth], variant: str) -> None:
    t = synths[variant].template("-Network")
    interface = [
        e for e in resources(t, "AWS::EC2::VPCEndpoint").values() if e["Properties"]["VpcEndpointType"] == "Interface"
    ]
    for endpoint in interface:
        if "cognito-idp" in as_text(endpoint["Properties"]["ServiceName"]):
            assert "PolicyDocument" not in endpoint["Properties"]  # its user-pool APIs are called unauthenticated
            continue
        (statement,) = endpoint["Properties"]["PolicyDocument"]["Statement"]
        assert statement["Condition"] == {"StringEquals": {"aws:PrincipalAccount": {"Ref": "AWS::AccountId"}}}


def test_the_s3_gateway_of_a_created_vpc_reaches_only_ecr_layers_the_asset_bucket_and_the_admin_bucket(
    synths: dict[str, Synth],
) -> None:
    for variant, qualifier in (("default", "hnb659fds"), ("iam-aurora", "corp12345")):
        t = synths[variant].template("-Network")
        (gateway,) = [
            e for e in resources(t, "AWS::EC2::VPCEndpoint").values() if e["Properties"]["VpcEndpointType"] == "Gateway"
        ]
        reads, admin = gateway["Properties"]["PolicyDocument"]["Statement"]
        assert reads["Action"] == "s3:GetObject"
        text = as_text(reads["Resource"])
        assert "prod-us-east-1-starport-layer-bucket/*" in text
        assert f"cdk-{qualifier}-assets-" in text
        # ... and the deployment's administration bucket, written and read (tests/infra/test_operations.py).
        assert sorted(admin["Action"]) == ["s3:GetObject", "s3:PutObject"]
        assert "admin-" in as_text(admin["Resource"])
        assert "AWS::AccountId" in as_text(admin["Resource"])
    # An imported VPC's route tables carry other workloads' S3 traffic: its gateway policy stays AWS's default.
    imported = synths["jwt-import"].template("-Network")
    (gateway,) = [
        e
        for e in resources(imported, "AWS::EC2::VPCEndpoint").values()
        if e["Properties"]["VpcEndpointType"] == "Gateway"
    ]
    assert "PolicyDocument" not in gateway["Properties"]


def test_each_endpoint_can_be_left_to_an_imported_vpc(tmp_path: Any) -> None:
    from tests.infra.conftest import VARIANTS, synthesize

    overrides = {**VARIANTS["jwt-import"], "network.skip_endpoints": "S3,Ssm,XRay"}
    t = synthesize(tmp_path, overrides, nag=False).template("-Network")
    services = " ".join(as_text(e["Properties"]["ServiceName"]) for e in resources(t, "AWS::EC2::VPCEndpoint").values())
    for skipped in (".s3", ".ssm", ".xray"):
        assert skipped not in services
    for kept in ("ecr.api", "secretsmanager", ".kms", "bedrock-runtime"):
        assert kept in services


def test_imported_vpc_is_not_looked_up(synths: dict[str, Synth]) -> None:
    synth = synths["jwt-import"]
    assert resources(synth.template("-Network"), "AWS::EC2::VPC") == {}
    manifest = json.loads((synth.outdir / "manifest.json").read_text())
    assert "missing" not in manifest  # no context lookups: synthesis stays offline
    assert "subnet-0aaaaaaaaaaaaaaa1" in as_text(synth.template("-MemoryService"))


@pytest.mark.parametrize("variant", ALL)
def test_security_groups_allow_only_what_flows(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    memory = synth.template("-MemoryService")
    agent = synth.template("-Agent")
    db_port = synth.config.database.port
    # Hindsight tasks -> database port, written in the service stack.
    db_rules = [
        r["Properties"]
        for r in resources(memory, "AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"]["FromPort"] == db_port
    ]
    assert len(db_rules) == 1
    assert db_rules[0]["ToPort"] == db_port
    # Agent and retain replay -> load balancer listener port only.
    listener_port = 443 if synth.config.hindsight.certificate_arn else 80
    agent_rules = [
        r["Properties"]
        for r in resources(agent, "AWS::EC2::SecurityGroupIngress").values()
        if "NetworkEndpointSecurityGroup" not in as_text(r["Properties"]["GroupId"])
    ]
    assert [(r["FromPort"], r["ToPort"]) for r in agent_rules] == [(listener_port, listener_port)] * 2
    assert sorted("RetainReplay" in as_text(r["SourceSecurityGroupId"]) for r in agent_rules) == [False, True]
    # Load balancer -> tasks on Hindsight's port only.
    hs_port = synth.config.hindsight.port
    task_rules = [
        r["Properties"]
        for r in resources(memory, "AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"]["FromPort"] == hs_port
    ]
    assert len(task_rules) == 1
    # No group anywhere admits the internet.
    for template in synth.templates.values():
        for sg in resources(template, "AWS::EC2::SecurityGroup").values():
            for rule in sg["Properties"].get("SecurityGroupIngress", []):
                assert rule.get("CidrIp") != "0.0.0.0/0"
        for rule in resources(template, "AWS::EC2::SecurityGroupIngress").values():
            assert rule["Properties"].get("CidrIp") != "0.0.0.0/0"
    # Egress to anywhere is HTTPS only (AWS endpoints; no egress path exists in the default VPC).
    for template in (memory, agent):
        for sg in resources(template, "AWS::EC2::SecurityGroup").values():
            for rule in sg["Properties"].get("SecurityGroupEgress", []):
                if rule.get("CidrIp") == "0.0.0.0/0":
                    assert (rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) == ("tcp", 443, 443)


def test_the_tls_name_resolves_to_the_load_balancer_inside_the_vpc(synths: dict[str, Synth]) -> None:
    t = synths["jwt-import"].template("-MemoryService")
    ((zone_id, zone),) = resources(t, "AWS::Route53::HostedZone").items()
    assert zone["Properties"]["Name"] == "memory.internal.example.com."
    assert zone["Properties"]["VPCs"] == [{"VPCId": "vpc-0123456789abcdef0", "VPCRegion": "us-east-1"}]
    (record,) = resources(t, "AWS::Route53::RecordSet").values()
    assert record["Properties"]["Type"] == "A"
    assert record["Properties"]["Name"] == "memory.internal.example.com."
    assert record["Properties"]["HostedZoneId"] == {"Ref": zone_id}
    (alb_id,) = resources(t, "AWS::ElasticLoadBalancingV2::LoadBalancer")
    assert alb_id in as_text(record["Properties"]["AliasTarget"]["DNSName"])
    # Without a name there is nothing to resolve: plain HTTP to the load balancer's own name (dev only).
    assert resources(synths["default"].template("-MemoryService"), "AWS::Route53::RecordSet") == {}


def test_an_existing_private_zone_receives_the_record(tmp_path: Any) -> None:
    from tests.infra.conftest import synthesize

    synth = synthesize(
        tmp_path,
        {
            "hindsight.certificate_arn": "arn:aws:acm:us-east-1:111122223333:certificate/abcd-1234",
            "hindsight.domain_name": "memory.internal.example.com",
            "hindsight.hosted_zone_id": "Z0123456789ABCDEFGHIJ",
        },
        nag=False,
    )
    t = synth.template("-MemoryService")
    assert resources(t, "AWS::Route53::HostedZone") == {}
    (record,) = resources(t, "AWS::Route53::RecordSet").values()
    assert record["Properties"]["HostedZoneId"] == "Z0123456789ABCDEFGHIJ"
    assert synth.stacks.memory.memory.url == "https://memory.internal.example.com"

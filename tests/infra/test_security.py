"""Every security property of the stacks, asserted on the synthesized templates of every variant."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from hindsight_isolation.settings import SERVER_REQUIRED_ENV
from tests.infra.conftest import VARIANTS, Synth, resources

ALL = list(VARIANTS)


def _text(obj: object) -> str:
    return json.dumps(obj, sort_keys=True)


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
    assert len(resources(t, "AWS::EC2::FlowLog")) == 1


@pytest.mark.parametrize("variant", ALL)
def test_aws_apis_are_reached_through_endpoints(synths: dict[str, Synth], variant: str) -> None:
    t = synths[variant].template("-Network")
    names = {_text(e["Properties"]["ServiceName"]) for e in resources(t, "AWS::EC2::VPCEndpoint").values()}
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
            if "NetworkEndpointSecurityGroup" in _text(r["Properties"]["GroupId"])
        ]
        assert len(rules) == len(groups), suffix
        for rule, group in zip(sorted(rules, key=_text), sorted(groups), strict=True):
            assert (rule["FromPort"], rule["ToPort"], rule["IpProtocol"]) == (443, 443, "tcp")
            assert group in _text(rule["SourceSecurityGroupId"])


@pytest.mark.parametrize("variant", ALL)
def test_interface_endpoints_serve_only_this_accounts_principals(synths: dict[str, Synth], variant: str) -> None:
    t = synths[variant].template("-Network")
    interface = [
        e for e in resources(t, "AWS::EC2::VPCEndpoint").values() if e["Properties"]["VpcEndpointType"] == "Interface"
    ]
    for endpoint in interface:
        if "cognito-idp" in _text(endpoint["Properties"]["ServiceName"]):
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
        text = _text(reads["Resource"])
        assert "prod-us-east-1-starport-layer-bucket/*" in text
        assert f"cdk-{qualifier}-assets-" in text
        # ... and the deployment's administration bucket, written and read (tests/infra/test_operations.py).
        assert sorted(admin["Action"]) == ["s3:GetObject", "s3:PutObject"]
        assert "admin-" in _text(admin["Resource"])
        assert "AWS::AccountId" in _text(admin["Resource"])
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
    services = " ".join(_text(e["Properties"]["ServiceName"]) for e in resources(t, "AWS::EC2::VPCEndpoint").values())
    for skipped in (".s3", ".ssm", ".xray"):
        assert skipped not in services
    for kept in ("ecr.api", "secretsmanager", ".kms", "bedrock-runtime"):
        assert kept in services


def test_imported_vpc_is_not_looked_up(synths: dict[str, Synth]) -> None:
    synth = synths["jwt-import"]
    assert resources(synth.template("-Network"), "AWS::EC2::VPC") == {}
    manifest = json.loads((synth.outdir / "manifest.json").read_text())
    assert "missing" not in manifest  # no context lookups: synthesis stays offline
    assert "subnet-0aaaaaaaaaaaaaaa1" in _text(synth.template("-MemoryService"))


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
        if "NetworkEndpointSecurityGroup" not in _text(r["Properties"]["GroupId"])
    ]
    assert [(r["FromPort"], r["ToPort"]) for r in agent_rules] == [(listener_port, listener_port)] * 2
    assert sorted("RetainReplay" in _text(r["SourceSecurityGroupId"]) for r in agent_rules) == [False, True]
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


# -- data ---------------------------------------------------------------------------------------------------------


def test_database_is_encrypted_tls_only_backed_up_and_protected(default: Synth) -> None:
    t = Template.from_json(default.template("-Data"))
    t.has_resource_properties(
        "AWS::RDS::DBInstance",
        {
            "Engine": "postgres",
            "EngineVersion": Match.string_like_regexp(r"^17\.\d+$"),
            "StorageEncrypted": True,
            "KmsKeyId": Match.any_value(),
            "DeletionProtection": True,
            "BackupRetentionPeriod": 7,
            "EnableCloudwatchLogsExports": ["postgresql", "upgrade"],
            "EnablePerformanceInsights": True,
            "PerformanceInsightsKMSKeyId": Match.any_value(),
            "PubliclyAccessible": False,
            "AutoMinorVersionUpgrade": False,
            "MultiAZ": False,  # dev overlay
        },
    )
    t.has_resource("AWS::RDS::DBInstance", {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})
    t.has_resource_properties("AWS::RDS::DBParameterGroup", {"Parameters": Match.object_like({"rds.force_ssl": "1"})})
    t.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


def test_database_credentials_have_no_punctuation_and_rotate(default: Synth) -> None:
    t = Template.from_json(default.template("-Data"))
    t.has_resource_properties(
        "AWS::SecretsManager::Secret",
        {
            "GenerateSecretString": Match.object_like({"ExcludeCharacters": Match.string_like_regexp(r"%.*@|@.*%")}),
            "KmsKeyId": Match.any_value(),
        },
    )
    secret = next(iter(resources(default.template("-Data"), "AWS::SecretsManager::Secret").values()))
    excluded = secret["Properties"]["GenerateSecretString"]["ExcludeCharacters"]
    assert set("%@:/?#&'\"`\\ ") <= set(excluded)
    t.has_resource_properties(
        "AWS::SecretsManager::RotationSchedule",
        {
            "RotationRules": {"ScheduleExpression": "rate(30 days)"},
        },
    )


@pytest.mark.parametrize("variant", ALL)
def test_hindsight_logs_in_as_its_own_login_never_the_master(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    data, memory = synth.template("-Data"), synth.template("-MemoryService")
    secrets = resources(data, "AWS::SecretsManager::Secret")
    (login_id,) = [k for k, v in secrets.items() if _text(v).count('\\"username\\":\\"hindsight_app\\"')]
    (master_id,) = [k for k in secrets if k != login_id]
    # The login's secret names the master for the rotation (multi-user rotation reads it), like RDS's own pattern.
    assert "masterarn" in _text(secrets[login_id]["Properties"]["GenerateSecretString"])
    (attachment_id,) = [
        k
        for k, v in resources(data, "AWS::SecretsManager::SecretTargetAttachment").items()
        if v["Properties"]["SecretId"] == {"Ref": login_id}
    ]
    outputs = data["Outputs"]
    login_export = next(o["Export"]["Name"] for o in outputs.values() if o["Value"] == {"Ref": attachment_id})
    main = _containers(memory, "MemoryApiTask")["Hindsight"]
    creds = {s["Name"]: _text(s["ValueFrom"]) for s in main["Secrets"] if s["Name"] in ("DB_USERNAME", "DB_PASSWORD")}
    assert len(creds) == 2
    for value in creds.values():
        assert login_export in value
    # Nothing in the memory service may even name the master's secret.
    master_exports = [o["Export"]["Name"] for o in outputs.values() if master_id in _text(o["Value"])]
    for name in master_exports:
        assert name not in _text(memory), name


@pytest.mark.parametrize("variant", ALL)
def test_the_login_rotates_with_alternating_users_after_provisioning(synths: dict[str, Synth], variant: str) -> None:
    data = synths[variant].template("-Data")
    mappings = _text(data.get("Mappings", {}))
    assert "SecretsManagerRDSPostgreSQLRotationMultiUser" in mappings  # Hindsight's login: alternating users
    assert "SecretsManagerRDSPostgreSQLRotationSingleUser" in mappings  # the master (used by no running task)
    apps = resources(data, "AWS::Serverless::Application")
    assert len(apps) == 2
    ((provisioning_id, provisioning),) = resources(data, "Custom::HindsightDatabaseLogin").items()
    # The first rotation runs as soon as it is scheduled: never before both logins exist, nor while the provisioning
    # function uses the master's password. Each schedule takes its function from an application that waits for it.
    for app in apps.values():
        assert provisioning_id in app["DependsOn"]
    schedules = resources(data, "AWS::SecretsManager::RotationSchedule")
    assert sorted(s["Properties"]["RotationLambdaARN"]["Fn::GetAtt"][0] for s in schedules.values()) == sorted(apps)
    props = provisioning["Properties"]
    assert {"MasterSecretArn", "AppSecretArn", "CaParameterName", "Host", "Port", "DatabaseName"} <= set(props)
    (function,) = [
        f for k, f in resources(data, "AWS::Lambda::Function").items() if k.startswith("DatabaseLoginFunction")
    ]
    assert "VpcConfig" in function["Properties"]  # it reaches the database in the isolated subnets
    assert function["Properties"]["Handler"] == "index.handler"


@pytest.mark.parametrize("variant", ALL)
def test_the_data_stacks_functions_reach_only_the_database_and_https(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    data = synth.template("-Data")
    groups = resources(data, "AWS::EC2::SecurityGroup")
    assert len(groups) == 4  # the database, the provisioning function, two rotation functions
    for sg in groups.values():
        for rule in sg["Properties"].get("SecurityGroupEgress", []):
            # the database's own group has no egress (CDK renders a "disallow all" rule)
            assert (rule["FromPort"], rule["ToPort"]) in ((443, 443), (252, 86)), rule
    for egress in resources(data, "AWS::EC2::SecurityGroupEgress").values():
        port = egress["Properties"]["FromPort"]
        assert port == synth.config.database.port or "Endpoint.Port" in _text(port)


@pytest.mark.parametrize("variant", ALL)
def test_tls_to_the_database_verifies_the_server(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    data, memory = synth.template("-Data"), synth.template("-MemoryService")
    ((bundle_id, bundle),) = resources(data, "Custom::RdsCaBundle").items()
    assert bundle["Properties"]["BundleUrl"] == (
        "https://truststore.pki.rds.amazonaws.com/us-east-1/us-east-1-bundle.pem"
    )
    export = next(
        o["Export"]["Name"]
        for o in data["Outputs"].values()
        if o["Value"] == {"Fn::GetAtt": [bundle_id, "ParameterName"]}
    )
    for prefix in ("MemoryApiTask", "MemoryWorker1Task"):
        main = _containers(memory, prefix)["Hindsight"]
        (ca,) = [s for s in main["Secrets"] if s["Name"] == "DB_CA_BUNDLE"]
        assert export in _text(ca["ValueFrom"])
        assert "sslmode=verify-full&sslrootcert=/tmp/rds-ca.pem" in main["Command"][0]
        assert "sslmode=require" not in main["Command"][0]


def test_prod_overlay_makes_the_database_multi_az(synths: dict[str, Synth]) -> None:
    t = Template.from_json(synths["jwt-import"].template("-Data"))
    t.has_resource_properties("AWS::RDS::DBInstance", {"MultiAZ": True, "BackupRetentionPeriod": 30})


def test_aurora_serverless_variant(synths: dict[str, Synth]) -> None:
    t = Template.from_json(synths["iam-aurora"].template("-Data"))
    t.has_resource_properties(
        "AWS::RDS::DBCluster",
        {
            "Engine": "aurora-postgresql",
            "StorageEncrypted": True,
            "DeletionProtection": True,
            "ServerlessV2ScalingConfiguration": {"MinCapacity": 0.5, "MaxCapacity": 4},
        },
    )
    t.resource_count_is("AWS::RDS::DBInstance", 1)  # the serverless writer (dev: no reader)


# -- memory service -------------------------------------------------------------------------------------------------


def _containers(template: dict[str, Any], task_prefix: str) -> dict[str, dict[str, Any]]:
    (task,) = [v for k, v in resources(template, "AWS::ECS::TaskDefinition").items() if k.startswith(task_prefix)]
    assert task["Properties"]["RuntimePlatform"] == {"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"}
    return {c["Name"]: c for c in task["Properties"]["ContainerDefinitions"]}


@pytest.mark.parametrize("variant", ALL)
def test_hindsight_tasks_are_non_root_read_only_and_load_the_extension(synths: dict[str, Synth], variant: str) -> None:
    t = synths[variant].template("-MemoryService")
    for prefix in ("MemoryApiTask", "MemoryWorker1Task"):
        containers = _containers(t, prefix)
        init, main = containers["InstallExtension"], containers["Hindsight"]
        for c in (init, main):
            assert c["User"] == "1000:1000"
            assert c["ReadonlyRootFilesystem"] is True
        assert init["Essential"] is False
        assert init["DependsOn"] == [{"ContainerName": "PrepareVolumes", "Condition": "SUCCESS"}]
        assert main["DependsOn"] == [
            {"ContainerName": "PrepareVolumes", "Condition": "SUCCESS"},
            {"ContainerName": "InstallExtension", "Condition": "SUCCESS"},
        ]
        ext_mounts = {m["ContainerPath"]: m["ReadOnly"] for m in main["MountPoints"]}
        assert ext_mounts["/opt/hindsight-ext"] is True
        env = {e["Name"]: e["Value"] for e in main["Environment"]}
        assert env["PYTHONPATH"] == "/opt/hindsight-ext"
        assert env["HINDSIGHT_API_TENANT_EXTENSION"] == "hindsight_isolation.tenant:IsolationTenantExtension"
        assert env["HINDSIGHT_API_OPERATION_VALIDATOR_EXTENSION"] == (
            "hindsight_isolation.validator:IsolationOperationValidator"
        )
        assert env["HINDSIGHT_API_MCP_ENABLED"] == "false"
        assert "HINDSIGHT_API_MCP_AUTH_TOKEN" not in env
        assert "HINDSIGHT_API_TENANT_API_KEY" not in env
        assert "HINDSIGHT_API_DATABASE_URL" not in env
        assert main["HealthCheck"]["StartPeriod"] >= 60
        assert "/health/live" in " ".join(main["HealthCheck"]["Command"])


@pytest.mark.parametrize("variant", ALL)
def test_task_volumes_are_handed_to_uid_1000_by_a_root_first_step(synths: dict[str, Synth], variant: str) -> None:
    # Fargate creates task volumes root:root 0755 and the stock image declares no VOLUME: without this step the
    # extension install and the server (uid 1000) could write neither /opt/hindsight-ext nor /tmp.
    t = synths[variant].template("-MemoryService")
    for prefix in ("MemoryApiTask", "MemoryWorker1Task"):
        prepare = _containers(t, prefix)["PrepareVolumes"]
        assert prepare["User"] == "0:0"
        assert prepare["Essential"] is False
        assert prepare["ReadonlyRootFilesystem"] is True
        script = " ".join(prepare["Command"])
        assert "chown 1000:1000 /opt/hindsight-ext" in script
        assert "chmod 1777 /tmp" in script
        assert script.index("chmod 0755 /opt/hindsight-ext") < script.index("chown")  # chmod needs no FOWNER first
        assert {(m["ContainerPath"], m["ReadOnly"]) for m in prepare["MountPoints"]} == {
            ("/opt/hindsight-ext", False),
            ("/tmp", False),
        }
        dropped = set(prepare["LinuxParameters"]["Capabilities"]["Drop"])
        assert "CHOWN" not in dropped
        assert {"DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "NET_RAW"} <= dropped
        assert "Add" not in prepare["LinuxParameters"]["Capabilities"]


@pytest.mark.parametrize("variant", ALL)
def test_every_hindsight_task_runs_the_extension_as_required_with_imports_off(
    synths: dict[str, Synth], variant: str
) -> None:
    t = synths[variant].template("-MemoryService")
    tasks = [k for k in resources(t, "AWS::ECS::TaskDefinition") if k.startswith("Memory")]
    assert any(k.startswith("MemoryApiTask") for k in tasks)
    assert sum(k.startswith("MemoryWorker") for k in tasks) == synths[variant].config.hindsight.worker_count
    for prefix in tasks:
        env = {e["Name"]: e["Value"] for e in _containers(t, prefix)["Hindsight"]["Environment"]}
        assert env["HINDSIGHT_API_ENABLE_DOCUMENT_IMPORT_API"] == "false", prefix
        # all three slots, the request guard included (the same environment the local server runs with)
        assert {k: env.get(k) for k in SERVER_REQUIRED_ENV} == dict(SERVER_REQUIRED_ENV), prefix


@pytest.mark.parametrize("variant", ALL)
def test_secrets_reach_hindsight_only_as_ecs_secrets(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-MemoryService")
    main = _containers(t, "MemoryApiTask")["Hindsight"]
    secret_names = {s["Name"] for s in main["Secrets"]}
    assert {"DB_USERNAME", "DB_PASSWORD", "HINDSIGHT_API_TENANT_OPERATOR_KEY"} <= secret_names
    jwt = synth.config.auth.mode.value != "iam"
    assert ("HINDSIGHT_API_TENANT_JWT_STATIC_JWKS" in secret_names) == jwt
    assert ("HINDSIGHT_API_TENANT_AGENT_KEY" in secret_names) == (not jwt)
    # The database URL is assembled in the container from the secret's fields and never echoed.
    command = main["Command"][0]
    assert "HINDSIGHT_API_DATABASE_URL=" in command
    assert "sslmode=verify-full&sslrootcert=/tmp/rds-ca.pem" in command
    assert "set -x" not in command
    assert "echo" not in command
    # No generated secret value appears anywhere in any template.
    for template in synth.templates.values():
        for secret in resources(template, "AWS::SecretsManager::Secret").values():
            assert "SecretString" not in secret["Properties"]


@pytest.mark.parametrize("variant", ALL)
def test_services_roll_back_and_workers_keep_stable_ids(synths: dict[str, Synth], variant: str) -> None:
    t = synths[variant].template("-MemoryService")
    services = resources(t, "AWS::ECS::Service")
    for svc in services.values():
        cfg = svc["Properties"]["DeploymentConfiguration"]
        assert cfg["DeploymentCircuitBreaker"] == {"Enable": True, "Rollback": True}
        assert svc["Properties"]["NetworkConfiguration"]["AwsvpcConfiguration"]["AssignPublicIp"] == "DISABLED"
    workers = {k: v for k, v in services.items() if k.startswith("MemoryWorker")}
    assert workers
    for svc in workers.values():
        assert svc["Properties"]["DesiredCount"] == 1
        assert svc["Properties"]["DeploymentConfiguration"]["MaximumPercent"] == 100
    worker_env = {e["Name"]: e["Value"] for e in _containers(t, "MemoryWorker1Task")["Hindsight"]["Environment"]}
    assert worker_env["HINDSIGHT_API_WORKER_ID"] == "worker-1"
    api_env = {e["Name"]: e["Value"] for e in _containers(t, "MemoryApiTask")["Hindsight"]["Environment"]}
    assert api_env["HINDSIGHT_API_WORKER_ENABLED"] == "false"
    (scaling,) = resources(t, "AWS::ApplicationAutoScaling::ScalableTarget").values()
    assert scaling["Properties"]["MinCapacity"] >= 1


def test_cluster_has_container_insights_and_logs_are_encrypted(default: Synth) -> None:
    t = Template.from_json(default.template("-MemoryService"))
    t.has_resource_properties(
        "AWS::ECS::Cluster",
        {
            "ClusterSettings": [{"Name": "containerInsights", "Value": Match.string_like_regexp("enabled|enhanced")}],
        },
    )
    for template in default.templates.values():
        for group in resources(template, "AWS::Logs::LogGroup").values():
            assert "KmsKeyId" in group["Properties"]
            assert "RetentionInDays" in group["Properties"]


def test_load_balancer_is_internal_and_tls_when_configured(synths: dict[str, Synth]) -> None:
    for variant, synth in synths.items():
        t = synth.template("-MemoryService")
        (alb,) = resources(t, "AWS::ElasticLoadBalancingV2::LoadBalancer").values()
        assert alb["Properties"]["Scheme"] == "internal", variant
        attrs = {a["Key"]: a["Value"] for a in alb["Properties"]["LoadBalancerAttributes"]}
        assert attrs["routing.http.drop_invalid_header_fields.enabled"] == "true"
        assert attrs["access_logs.s3.enabled"] == "true"
        (listener,) = resources(t, "AWS::ElasticLoadBalancingV2::Listener").values()
        if synth.config.hindsight.certificate_arn:
            assert listener["Properties"]["Protocol"] == "HTTPS"
            assert synth.stacks.memory.memory.url == "https://memory.internal.example.com"
        else:
            assert listener["Properties"]["Protocol"] == "HTTP"
        (tg,) = resources(t, "AWS::ElasticLoadBalancingV2::TargetGroup").values()
        assert tg["Properties"]["HealthCheckPath"] == "/health"


def _mirror_copy(t: dict[str, Any]) -> dict[str, Any]:
    (copy,) = [r for r in t["Resources"].values() if r["Type"] == "Custom::CDKECRDeployment"]
    return dict(copy)


def test_image_mirror_copies_the_pinned_arm64_image(default: Synth) -> None:
    t = default.template("-MemoryService")
    text = _text(_mirror_copy(t)["Properties"])
    assert "ghcr.io/vectorize-io/hindsight-api:1.1.0-slim" in text
    assert "arm64" in text
    repo = next(iter(resources(t, "AWS::ECR::Repository").values()))
    assert repo["Properties"]["ImageScanningConfiguration"] == {"ScanOnPush": True}


def _statements(t: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    return [
        s
        for p in resources(t, "AWS::IAM::Policy").values()
        if any(r["Ref"].startswith(role_prefix) for r in p["Properties"]["Roles"])
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_image_mirror_may_push_only_to_its_one_repository(default: Synth) -> None:
    t = default.template("-MemoryService")
    (repo_id,) = resources(t, "AWS::ECR::Repository")
    # GIVEN the copy function runs with our role, not one the library fills with push rights on "*"
    (function,) = [
        f for k, f in resources(t, "AWS::Lambda::Function").items() if k.startswith("CustomCDKECRDeployment")
    ]
    assert "MemoryMirrorCopyRole" in _text(function["Properties"]["Role"])
    statements = _statements(t, "MemoryMirrorCopyRole")
    assert statements
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if statement["Resource"] == "*":
            # THEN the only unscoped action is the one ECR cannot scope
            assert actions == ["ecr:GetAuthorizationToken"]
        else:
            assert repo_id in _text(statement["Resource"]), statement
            assert "s3:" not in _text(actions)
    pushes = [s for s in statements if "ecr:PutImage" in _text(s["Action"])]
    assert len(pushes) == 1
    assert pushes[0]["Resource"] != "*"
    # ... and no role in the stack may push anywhere else
    for policy in resources(t, "AWS::IAM::Policy").values():
        for s in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "ecr:PutImage" in _text(s["Action"]) or "ecr:UploadLayerPart" in _text(s["Action"]):
                assert s["Resource"] != "*"


def test_image_mirror_is_idempotent_and_tasks_pull_by_digest(synths: dict[str, Synth]) -> None:
    t = synths["default"].template("-MemoryService")
    repo = next(iter(resources(t, "AWS::ECR::Repository").values()))["Properties"]
    copy = _mirror_copy(t)["Properties"]
    tag = copy["DestImage"]["Fn::Join"][1][-1].rsplit(":", 1)[-1]
    # GIVEN an immutable repository, the one tag the mirror writes may be written again (a repeated copy of the same
    # image, e.g. an update or a rollback, must not fail the deploy: cdk-ecr-deployment#207) ...
    assert repo["ImageTagMutability"] == "IMMUTABLE_WITH_EXCLUSION"
    assert repo["ImageTagMutabilityExclusionFilters"] == [
        {"ImageTagMutabilityExclusionFilterType": "WILDCARD", "ImageTagMutabilityExclusionFilterValue": tag}
    ]
    # ... and what runs never depends on a tag: the digest is read back after the copy and every task pulls by it.
    (lookup_id, lookup) = next(iter(resources(t, "Custom::AWS").items()))
    assert "describeImages" in _text(lookup["Properties"])
    assert any(d.startswith("MemoryMirrorCopy") for d in lookup["DependsOn"])
    for prefix in ("MemoryApiTask", "MemoryWorker1Task"):
        for container in _containers(t, prefix).values():
            image = _text(container["Image"])
            assert "@" in image, image
            assert lookup_id in image, image
            assert "imageDetails.0.imageDigest" in image, image


def test_a_configured_digest_pins_the_source_and_gets_its_own_tag(tmp_path: Any) -> None:
    from tests.infra.conftest import synthesize

    digest = "sha256:" + "0123456789ab" + "c" * 52
    synth = synthesize(tmp_path, {"hindsight.image_digest": digest}, nag=False)
    copy = _mirror_copy(synth.template("-MemoryService"))["Properties"]
    assert copy["SrcImage"] == f"docker://ghcr.io/vectorize-io/hindsight-api@{digest}"
    assert _text(copy["DestImage"]).endswith(':1.1.0-slim-0123456789ab"]]}')


def test_the_operator_key_is_never_granted_to_the_agent(synths: dict[str, Synth]) -> None:
    for synth in synths.values():
        agent = _text(synth.template("-Agent"))
        operator_id = next(
            k
            for k in resources(synth.template("-MemoryService"), "AWS::SecretsManager::Secret")
            if k.startswith("MemoryOperatorKey")
        )
        assert operator_id not in agent
        env = synth.stacks.agent.agent.environment
        assert "HINDSIGHT_API_KEY" not in env


# -- agent ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_runtime_is_code_deployed_in_vpc_with_the_right_authorizer(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-Agent")
    (runtime,) = resources(t, "AWS::BedrockAgentCore::Runtime").values()
    props = runtime["Properties"]
    code = props["AgentRuntimeArtifact"]["CodeConfiguration"]
    assert code["Runtime"] == "PYTHON_3_12"
    assert code["EntryPoint"] == ["main.py"]
    assert props["NetworkConfiguration"]["NetworkMode"] == "VPC"
    assert props["AgentRuntimeName"].replace("_", "").isalnum()
    mode = synth.config.auth.mode.value
    if mode == "iam":
        assert "AuthorizerConfiguration" not in props
        assert "RequestHeaderConfiguration" not in props
    else:
        jwt = props["AuthorizerConfiguration"]["CustomJWTAuthorizer"]
        assert _text(jwt["DiscoveryUrl"]).endswith('/.well-known/openid-configuration"]]}') or jwt[
            "DiscoveryUrl"
        ].endswith("/.well-known/openid-configuration")
        assert props["RequestHeaderConfiguration"]["RequestHeaderAllowlist"] == ["Authorization"]
    assert len(resources(t, "AWS::BedrockAgentCore::RuntimeEndpoint")) == 1


@pytest.mark.parametrize("variant", ALL)
def test_agent_role_invokes_only_its_model(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-Agent")
    statements = [
        s for p in resources(t, "AWS::IAM::Policy").values() for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    bedrock = [s for s in statements if "bedrock:InvokeModel" in _text(s["Action"])]
    assert len(bedrock) == 1
    assert synth.config.agent.model_id in _text(bedrock[0]["Resource"])
    assert "foundation-model/*" not in _text(bedrock[0]["Resource"])
    for s in statements:
        assert s["Action"] != "*"
        assert "secretsmanager:*" not in _text(s["Action"])


def _concrete_agent_env(synth: Synth) -> dict[str, str]:
    """The agent's environment with deploy-time tokens replaced by plausible values."""
    env = dict(synth.stacks.agent.agent.environment)
    return {
        k: (
            "arn:aws:secretsmanager:us-east-1:111122223333:secret:x"
            if k == "HINDSIGHT_API_KEY_SECRET_ARN"
            else "http://hindsight.internal"
            if k == "HINDSIGHT_API_URL"
            else "https://issuer.example.com/.well-known/openid-configuration"
            if k == "JWT_DISCOVERY_URL"
            else "https://sqs.us-east-1.amazonaws.com/111122223333/retains"
            if k == "HINDSIGHT_ADAPTER_SPOOL_QUEUE_URL"
            else "client-1"
            if "${Token" in v
            else v
        )
        for k, v in env.items()
    }


@pytest.mark.parametrize("variant", ALL)
def test_agent_environment_is_exactly_what_settings_reads(synths: dict[str, Synth], variant: str) -> None:
    from runtime_handler.settings import Settings

    env = dict(synths[variant].stacks.agent.agent.environment)
    ours = {k for k in env if not k.startswith("POWERTOOLS_")}
    assert ours <= set(Settings.env_names()), ours - set(Settings.env_names())
    # Deploy-time tokens stand in for real values; the settings must accept the combination.
    settings = Settings.from_env(_concrete_agent_env(synths[variant]))
    assert settings.agent_name == synths[variant].config.agent.name


JWT_VARIANTS = [name for name in ALL if VARIANTS[name].get("auth.mode", "cognito") != "iam"]


def _keys_resource_id(synth: Synth) -> str:
    (logical_id,) = resources(synth.template("-Identity"), "Custom::MirroredSigningKeys")
    return logical_id


@pytest.mark.parametrize("variant", JWT_VARIANTS)
def test_agent_reads_the_mirrored_signing_keys_not_the_issuer(synths: dict[str, Synth], variant: str) -> None:
    from memory_adapter.agentcore.identity import default_verifier
    from memory_adapter.agentcore.keys import MirroredKeysVerifier
    from runtime_handler.settings import Settings

    synth = synths[variant]
    (runtime,) = resources(synth.template("-Agent"), "AWS::BedrockAgentCore::Runtime").values()
    env = runtime["Properties"]["EnvironmentVariables"]
    # GIVEN a VPC without egress: no discovery URL (the agent would fetch the issuer's JWKS over the internet) ...
    assert "JWT_DISCOVERY_URL" not in env
    # ... but the mirrored parameter, and the same issuer Hindsight's extension expects.
    keys = _keys_resource_id(synth)
    assert env["JWT_JWKS_PARAMETER"] == f"/HindsightMemory/{synth.config.env_name}/identity/jwks"
    hindsight = {
        e["Name"]: e["Value"]
        for e in _containers(synth.template("-MemoryService"), "MemoryApiTask")["Hindsight"]["Environment"]
    }
    # The issuer is the discovery document's own `issuer` (read at deploy time by the keys' owner), never the
    # discovery URL minus its suffix: some issuers' `issuer` ends with a slash. It reaches the later stacks through
    # an SSM handoff (a new discovery URL changes it, which an export would refuse).
    issuer_name = f"/HindsightMemory/{synth.config.env_name}/identity/issuer"
    (handoff,) = [
        p["Properties"]
        for p in resources(synth.template("-Identity"), "AWS::SSM::Parameter").values()
        if p["Properties"]["Name"] == issuer_name
    ]
    assert handoff["Value"] == {"Fn::GetAtt": [keys, "Issuer"]}
    for stack, value in (
        ("-Agent", env["JWT_ISSUER"]),
        ("-MemoryService", hindsight["HINDSIGHT_API_TENANT_JWT_ISSUER"]),
    ):
        parameter = synth.template(stack)["Parameters"][value["Ref"]]
        assert (parameter["Type"], parameter["Default"]) == ("AWS::SSM::Parameter::Value<String>", issuer_name)
    # WHEN the agent starts with that environment THEN it verifies against the parameter's keys.
    settings = Settings.from_env(_concrete_agent_env(synth))
    assert settings.jwt is not None
    assert settings.jwt.discovery_url is None  # not the issuer
    assert isinstance(default_verifier(settings), MirroredKeysVerifier)


@pytest.mark.parametrize("variant", ALL)
def test_agent_role_reads_exactly_the_mirrored_keys_parameter(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    statements = [
        s
        for p in resources(synth.template("-Agent"), "AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    # (the memory gateway's URL parameter, read when agent.tools_via_gateway is set, is tested in test_gateway.py)
    ssm = [s for s in statements if "ssm:" in _text(s["Action"]) and "gateway/mcp-url" not in _text(s["Resource"])]
    if variant not in JWT_VARIANTS:
        assert ssm == []
        return
    (statement,) = ssm
    assert set(statement["Action"]) <= {
        "ssm:DescribeParameters",
        "ssm:GetParameter",
        "ssm:GetParameters",
        "ssm:GetParameterHistory",
    }
    assert "ssm:GetParameter" in statement["Action"]
    resource = statement["Resource"]
    assert isinstance(resource, dict)  # one ARN, not a list or a wildcard
    assert ":parameter" in _text(resource)
    assert f"/{synth.config.env_name}/identity/jwks" in _text(resource)
    assert "*" not in _text(resource)
    # A String parameter: the agent needs no KMS key for it (in JWT modes it holds no key material at all); the only
    # key anything in the stack uses is the retain queue's (the agent sends to it, the replay function reads it).
    agent = synth.stacks.agent
    queue_key = agent.resolve(agent.get_logical_id(agent.retain_queue.key.node.default_child))
    assert {_text(s["Resource"]) for s in statements if "kms:" in _text(s["Action"])} == {
        _text({"Fn::GetAtt": [queue_key, "Arn"]})
    }


def test_layer_is_arm64_and_published_to_ssm(default: Synth) -> None:
    t = Template.from_json(default.template("-Agent"))
    t.has_resource_properties(
        "AWS::Lambda::LayerVersion",
        {
            "CompatibleArchitectures": ["arm64"],
            "CompatibleRuntimes": Match.array_with(["python3.12"]),
        },
    )
    t.has_resource_properties("AWS::SSM::Parameter", {"Name": "/HindsightMemory/dev/memory-adapter-layer-arn"})
    outputs = default.template("-Agent")["Outputs"]
    assert any(k.startswith("MemoryAdapterLayerLayerArn") for k in outputs)
    assert any(k.startswith("AgentRuntimeArn") for k in outputs)


# -- identity -------------------------------------------------------------------------------------------------------


def test_signing_keys_are_mirrored_for_a_vpc_without_egress(default: Synth) -> None:
    t = default.template("-Identity")
    functions = resources(t, "AWS::Lambda::Function")
    mirror = next(f for k, f in functions.items() if k.startswith("IdentityMirror"))
    assert "VpcConfig" not in mirror["Properties"]  # it must reach the issuer on the internet
    rule = next(iter(resources(t, "AWS::Events::Rule").values()))
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 hour)"
    assert resources(t, "AWS::CloudWatch::Alarm")
    pool = next(iter(resources(t, "AWS::Cognito::UserPool").values()))
    assert pool["Properties"]["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    client = next(iter(resources(t, "AWS::Cognito::UserPoolClient").values()))
    assert client["Properties"]["GenerateSecret"] is False


@pytest.mark.parametrize("variant", JWT_VARIANTS)
def test_the_keys_parameter_belongs_to_the_mirror_function_not_to_cloudformation(
    synths: dict[str, Synth], variant: str
) -> None:
    synth = synths[variant]
    t = synth.template("-Identity")
    name = f"/HindsightMemory/{synth.config.env_name}/identity/jwks"
    # GIVEN no CloudFormation-managed parameter of that name: an update of one would reset the value the function
    # rewrote (the stack's only parameter is the issuer's handoff)
    assert [p["Properties"]["Name"] for p in resources(t, "AWS::SSM::Parameter").values()] == [
        f"/HindsightMemory/{synth.config.env_name}/identity/issuer"
    ]
    # THEN the mirror function owns it as a custom resource that runs on every deploy changing the issuer or itself
    ((keys_id, keys),) = resources(t, "Custom::MirroredSigningKeys").items()
    props = keys["Properties"]
    (mirror_id,) = [k for k in resources(t, "AWS::Lambda::Function") if k.startswith("IdentityMirror")]
    assert props["ServiceToken"] == {"Fn::GetAtt": [mirror_id, "Arn"]}
    assert props["ParameterName"] == name
    assert len(props["HandlerSha256"]) == 64
    if synth.config.auth.discovery_url:
        assert props["DiscoveryUrl"] == synth.config.auth.discovery_url
    # ... and the function may write and delete that one parameter, nothing else in SSM
    statements = [
        s for p in resources(t, "AWS::IAM::Policy").values() for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    (ssm,) = [s for s in statements if "ssm:" in _text(s["Action"])]
    assert set(ssm["Action"]) == {"ssm:GetParameter", "ssm:PutParameter", "ssm:DeleteParameter"}
    assert _text(ssm["Resource"]).endswith(f':parameter{name}"]]}}')
    # The schedule goes before its owner on delete, so no refresh re-creates a deleted parameter.
    (rule,) = resources(t, "AWS::Events::Rule").values()
    assert keys_id in rule["DependsOn"]


def test_iam_mode_has_no_identity_stack_and_a_scoped_agent_key(synths: dict[str, Synth]) -> None:
    synth = synths["iam-aurora"]
    assert synth.stacks.identity is None
    env = synth.stacks.agent.agent.environment
    assert env["AUTH_MODE"] == "iam"
    assert env["TENANT_ID"] == "acme"
    assert "HINDSIGHT_API_KEY_SECRET_ARN" in env


# -- alarms ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_every_alarm_notifies_the_encrypted_alerts_topic(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    network = synth.template("-Network")
    ((topic_id, topic),) = resources(network, "AWS::SNS::Topic").items()
    assert "KmsMasterKeyId" in topic["Properties"]
    export = next(
        o["Export"]["Name"] for o in network["Outputs"].values() if "Export" in o and o["Value"] == {"Ref": topic_id}
    )
    assert any(k.startswith("AlertsTopicArn") for k in network["Outputs"])  # for subscribing your alerting
    alarms = [a for t in synth.templates.values() for a in resources(t, "AWS::CloudWatch::Alarm").values()]
    assert alarms
    for alarm in alarms:
        assert alarm["Properties"]["AlarmActions"] == [{"Fn::ImportValue": export}]
        assert alarm["Properties"]["OKActions"] == [{"Fn::ImportValue": export}]


def test_the_alarm_email_subscribes_to_the_topic(tmp_path: Any) -> None:
    from tests.infra.conftest import synthesize

    synth = synthesize(tmp_path, {"alarms.email": "oncall@example.com"}, nag=False)
    (sub,) = resources(synth.template("-Network"), "AWS::SNS::Subscription").values()
    assert (sub["Properties"]["Protocol"], sub["Properties"]["Endpoint"]) == ("email", "oncall@example.com")


@pytest.mark.parametrize("variant", ALL)
def test_agent_logs_go_to_groups_we_create_with_retention_and_the_logs_key(
    synths: dict[str, Synth], variant: str
) -> None:
    synth = synths[variant]
    t = synth.template("-Agent")
    (runtime_id,) = resources(t, "AWS::BedrockAgentCore::Runtime")
    # (the agent's own groups are named by AgentCore, which may create them itself: claimed, not created; the retain
    # replay function's group is CDK-named)
    assert not [g for g in resources(t, "AWS::Logs::LogGroup").values() if "LogGroupName" in g["Properties"]]
    groups = {k: g for k, g in resources(t, "Custom::ServiceLogGroup").items()}
    names = sorted(_text(g["Properties"]["LogGroupName"]) for g in groups.values())
    # Both endpoints' groups, named after the runtime id AgentCore assigns, are claimed once the runtime exists ...
    assert len(names) == 2
    for name, endpoint in zip(names, ("-DEFAULT", "-live"), strict=True):
        assert "/aws/bedrock-agentcore/runtimes/" in name
        assert runtime_id in name
        assert "AgentRuntimeId" in name
        assert endpoint in name
    # ... with the configured agent.log_retention_days and the deployment's logs key (not "forever, unencrypted")
    for group in groups.values():
        assert group["Properties"]["RetentionInDays"] == str(synth.config.agent.log_retention_days)
        assert "Fn::ImportValue" in _text(group["Properties"]["KmsKeyArn"])


def test_hindsight_tasks_read_exactly_the_extension_object(default: Synth) -> None:
    t = default.template("-MemoryService")
    for prefix in ("MemoryApiTaskTaskRole", "MemoryWorker1TaskTaskRole"):
        s3 = [s for s in _statements(t, prefix) if "s3:" in _text(s["Action"])]
        assert len(s3) == 1
        assert s3[0]["Action"] == "s3:GetObject"
        resource = _text(s3[0]["Resource"])
        assert resource.endswith('.zip"]]}')  # one object key, no bucket-wide wildcard
        assert "*" not in resource


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
    assert alb_id in _text(record["Properties"]["AliasTarget"]["DNSName"])
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

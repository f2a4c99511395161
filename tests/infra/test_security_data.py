"""Security properties of the data stack (the database, its logins, rotation and TLS), asserted on the synthesized
templates of every variant."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match, Template

from tests.infra.conftest import Synth, resources
from tests.infra.security_helpers import ALL, as_text, task_containers

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
    (login_id,) = [k for k, v in secrets.items() if as_text(v).count('\\"username\\":\\"hindsight_app\\"')]
    (master_id,) = [k for k in secrets if k != login_id]
    # The login's secret names the master for the rotation (multi-user rotation reads it), like RDS's own pattern.
    assert "masterarn" in as_text(secrets[login_id]["Properties"]["GenerateSecretString"])
    (attachment_id,) = [
        k
        for k, v in resources(data, "AWS::SecretsManager::SecretTargetAttachment").items()
        if v["Properties"]["SecretId"] == {"Ref": login_id}
    ]
    outputs = data["Outputs"]
    login_export = next(o["Export"]["Name"] for o in outputs.values() if o["Value"] == {"Ref": attachment_id})
    main = task_containers(memory, "MemoryApiTask")["Hindsight"]
    creds = {s["Name"]: as_text(s["ValueFrom"]) for s in main["Secrets"] if s["Name"] in ("DB_USERNAME", "DB_PASSWORD")}
    assert len(creds) == 2
    for value in creds.values():
        assert login_export in value
    # Nothing in the memory service may even name the master's secret.
    master_exports = [o["Export"]["Name"] for o in outputs.values() if master_id in as_text(o["Value"])]
    for name in master_exports:
        assert name not in as_text(memory), name


@pytest.mark.parametrize("variant", ALL)
def test_the_login_rotates_with_alternating_users_after_provisioning(synths: dict[str, Synth], variant: str) -> None:
    data = synths[variant].template("-Data")
    mappings = as_text(data.get("Mappings", {}))
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
        assert port == synth.config.database.port or "Endpoint.Port" in as_text(port)


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
        main = task_containers(memory, prefix)["Hindsight"]
        (ca,) = [s for s in main["Secrets"] if s["Name"] == "DB_CA_BUNDLE"]
        assert export in as_text(ca["ValueFrom"])
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


@pytest.mark.parametrize("variant", ["default", "iam-aurora"])
def test_rds_may_assume_the_monitoring_role_only_for_this_accounts_databases(
    synths: dict[str, Synth], variant: str
) -> None:
    # GIVEN the data stack's Enhanced Monitoring role (an instance's, or the Aurora cluster's)
    t = synths[variant].template("-Data")
    (role,) = [
        r
        for r in resources(t, "AWS::IAM::Role").values()
        if r["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]
        == {"Service": "monitoring.rds.amazonaws.com"}
    ]
    (trust,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    # THEN RDS assumes it only for this account's databases (the conditions RDS documents for this role)
    account = synths[variant].config.account or {"Ref": "AWS::AccountId"}
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": account}
    assert list(trust["Condition"]["ArnLike"]) == ["aws:SourceArn"]
    sources = [as_text(source) for source in trust["Condition"]["ArnLike"]["aws:SourceArn"]]
    assert [s.endswith((':db:*"]]}', ':cluster:*"]]}')) and ":rds:" in s for s in sources] == [True, True]

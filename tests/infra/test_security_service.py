"""Security properties of the memory service (its tasks, secrets, load balancer and image mirror), asserted on the
synthesized templates of every variant."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from hindsight_isolation.settings import SERVER_REQUIRED_ENV
from tests.infra.conftest import Synth, resources
from tests.infra.security_helpers import ALL, as_text, task_containers

# -- memory service -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ALL)
def test_hindsight_tasks_are_non_root_read_only_and_load_the_extension(synths: dict[str, Synth], variant: str) -> None:
    t = synths[variant].template("-MemoryService")
    for prefix in ("MemoryApiTask", "MemoryWorker1Task"):
        containers = task_containers(t, prefix)
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
        prepare = task_containers(t, prefix)["PrepareVolumes"]
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
        env = {e["Name"]: e["Value"] for e in task_containers(t, prefix)["Hindsight"]["Environment"]}
        assert env["HINDSIGHT_API_ENABLE_DOCUMENT_IMPORT_API"] == "false", prefix
        # all three slots, the request guard included (the same environment the local server runs with)
        assert {k: env.get(k) for k in SERVER_REQUIRED_ENV} == dict(SERVER_REQUIRED_ENV), prefix


@pytest.mark.parametrize("variant", ALL)
def test_secrets_reach_hindsight_only_as_ecs_secrets(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    t = synth.template("-MemoryService")
    main = task_containers(t, "MemoryApiTask")["Hindsight"]
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
    worker_env = {e["Name"]: e["Value"] for e in task_containers(t, "MemoryWorker1Task")["Hindsight"]["Environment"]}
    assert worker_env["HINDSIGHT_API_WORKER_ID"] == "worker-1"
    api_env = {e["Name"]: e["Value"] for e in task_containers(t, "MemoryApiTask")["Hindsight"]["Environment"]}
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
    text = as_text(_mirror_copy(t)["Properties"])
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
    assert "MemoryMirrorCopyRole" in as_text(function["Properties"]["Role"])
    statements = _statements(t, "MemoryMirrorCopyRole")
    assert statements
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if statement["Resource"] == "*":
            # THEN the only unscoped action is the one ECR cannot scope
            assert actions == ["ecr:GetAuthorizationToken"]
        else:
            assert repo_id in as_text(statement["Resource"]), statement
            assert "s3:" not in as_text(actions)
    pushes = [s for s in statements if "ecr:PutImage" in as_text(s["Action"])]
    assert len(pushes) == 1
    assert pushes[0]["Resource"] != "*"
    # ... and no role in the stack may push anywhere else
    for policy in resources(t, "AWS::IAM::Policy").values():
        for s in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "ecr:PutImage" in as_text(s["Action"]) or "ecr:UploadLayerPart" in as_text(s["Action"]):
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
    assert "describeImages" in as_text(lookup["Properties"])
    assert any(d.startswith("MemoryMirrorCopy") for d in lookup["DependsOn"])
    for prefix in ("MemoryApiTask", "MemoryWorker1Task"):
        for container in task_containers(t, prefix).values():
            image = as_text(container["Image"])
            assert "@" in image, image
            assert lookup_id in image, image
            assert "imageDetails.0.imageDigest" in image, image


def test_a_configured_digest_pins_the_source_and_gets_its_own_tag(tmp_path: Any) -> None:
    from tests.infra.conftest import synthesize

    digest = "sha256:" + "0123456789ab" + "c" * 52
    synth = synthesize(tmp_path, {"hindsight.image_digest": digest}, nag=False)
    copy = _mirror_copy(synth.template("-MemoryService"))["Properties"]
    assert copy["SrcImage"] == f"docker://ghcr.io/vectorize-io/hindsight-api@{digest}"
    assert as_text(copy["DestImage"]).endswith(':1.1.0-slim-0123456789ab"]]}')


def test_the_operator_key_is_never_granted_to_the_agent(synths: dict[str, Synth]) -> None:
    for synth in synths.values():
        agent = as_text(synth.template("-Agent"))
        operator_id = next(
            k
            for k in resources(synth.template("-MemoryService"), "AWS::SecretsManager::Secret")
            if k.startswith("MemoryOperatorKey")
        )
        assert operator_id not in agent
        env = synth.stacks.agent.agent.environment
        assert "HINDSIGHT_API_KEY" not in env


def test_hindsight_tasks_read_exactly_the_extension_object(default: Synth) -> None:
    t = default.template("-MemoryService")
    for prefix in ("MemoryApiTaskTaskRole", "MemoryWorker1TaskTaskRole"):
        s3 = [s for s in _statements(t, prefix) if "s3:" in as_text(s["Action"])]
        assert len(s3) == 1
        assert s3[0]["Action"] == "s3:GetObject"
        resource = as_text(s3[0]["Resource"])
        assert resource.endswith('.zip"]]}')  # one object key, no bucket-wide wildcard
        assert "*" not in resource

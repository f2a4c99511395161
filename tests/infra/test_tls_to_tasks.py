"""``hindsight.tls_to_tasks``: TLS from the load balancer to the API tasks too, on ECS and EKS.

Each API task (pod) makes its own key and self-signed certificate at start (an init container, into the writable
``/tmp`` volume), the API serves HTTPS with them, and the target group and its health check speak HTTPS (the load
balancer verifies no target certificate). The certificate script itself runs here with the Hindsight virtualenv's
Python (the image's interpreter and ``cryptography``), and the task's liveness check, the very command, verifies
what it made."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from infra.config import ConfigError, load_config_from_cdk_json
from infra.config.eks import SUPPORTED_KUBERNETES_VERSIONS
from infra.constructs.eks_manifests import API_NAME, WORKER_NAME
from infra.constructs.hindsight_task import (
    MAKE_TASK_CERTIFICATE,
    TLS_CERT_FILE,
    TLS_DIR,
    TLS_KEY_FILE,
    liveness_command,
)
from tests.infra.conftest import ROOT, VARIANTS, Synth, resources, synthesize
from tests.infra.eks_template import CONTROLLER_KINDS, manifests_of, objects_by_kind, pod_specs, target_group_ref
from tests.infra.eks_variant import EKS_VARIANT
from tests.infra.exports import blocking_exports

TLS_FLAGS = f"--ssl-keyfile {TLS_KEY_FILE} --ssl-certfile {TLS_CERT_FILE}"
HINDSIGHT_PYTHON = ROOT / ".venv-hindsight" / "bin" / "python"


@pytest.fixture(scope="module")
def ecs_tls(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The prod ECS variant (HTTPS listener, private DNS name) with TLS to the tasks, with both nag packs."""
    return synthesize(tmp_path_factory.mktemp("cdk-tls"), {**VARIANTS["jwt-import"], "hindsight.tls_to_tasks": "true"})


@pytest.fixture(scope="module")
def ecs_plain(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The same variant with the setting at its default (off)."""
    return synthesize(tmp_path_factory.mktemp("cdk-plain"), VARIANTS["jwt-import"], nag=False)


@pytest.fixture(scope="module")
def eks_tls(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(
        tmp_path_factory.mktemp("cdk-eks-tls"), {**EKS_VARIANT, "hindsight.tls_to_tasks": "true"}, nag=False
    )


def _target_group(synth: Synth) -> dict[str, Any]:
    (group,) = resources(synth.template("-MemoryService"), "AWS::ElasticLoadBalancingV2::TargetGroup").values()
    properties: dict[str, Any] = group["Properties"]
    return properties


def _task_containers(synth: Synth, family_part: str) -> dict[str, dict[str, Any]]:
    """The containers, by name, of the one task definition whose logical id contains ``family_part``."""
    (task,) = [
        t
        for logical_id, t in resources(synth.template("-MemoryService"), "AWS::ECS::TaskDefinition").items()
        if family_part in logical_id
    ]
    return {c["Name"]: c for c in task["Properties"]["ContainerDefinitions"]} | {"_task": task["Properties"]}


# -- configuration ------------------------------------------------------------------------------------------------


def test_it_is_off_by_default_in_every_environment() -> None:
    assert load_config_from_cdk_json().hindsight.tls_to_tasks is False
    prod = load_config_from_cdk_json(
        {
            "env": "prod",
            "hindsight.certificate_arn": VARIANTS["jwt-import"]["hindsight.certificate_arn"],
            "hindsight.domain_name": "memory.internal.example.com",
        }
    )
    assert prod.hindsight.tls_to_tasks is False


def test_it_is_refused_without_https_at_the_load_balancer() -> None:
    with pytest.raises(ConfigError, match=r"hindsight\.tls_to_tasks needs hindsight\.certificate_arn"):
        load_config_from_cdk_json({"hindsight.tls_to_tasks": "true"})


def test_off_keeps_http_to_the_tasks(ecs_plain: Synth) -> None:
    group = _target_group(ecs_plain)
    assert group["Protocol"] == "HTTP"
    assert "HealthCheckProtocol" not in group
    api = _task_containers(ecs_plain, "ApiTask")
    assert "MakeCertificate" not in api
    assert TLS_FLAGS not in api["Hindsight"]["Command"][0]


# -- ECS ------------------------------------------------------------------------------------------------------------


def test_the_target_group_and_its_health_check_speak_https(ecs_tls: Synth) -> None:
    group = _target_group(ecs_tls)
    assert (group["Protocol"], group["Port"], group["TargetType"]) == ("HTTPS", 8888, "ip")
    assert (group["HealthCheckProtocol"], group["HealthCheckPath"], group["Matcher"]) == (
        "HTTPS",
        "/health",
        {"HttpCode": "200"},
    )
    (listener,) = resources(ecs_tls.template("-MemoryService"), "AWS::ElasticLoadBalancingV2::Listener").values()
    assert (listener["Properties"]["Protocol"], listener["Properties"]["Port"]) == ("HTTPS", 443)


def test_an_init_container_makes_the_tasks_certificate_before_the_api_starts(ecs_tls: Synth) -> None:
    api = _task_containers(ecs_tls, "ApiTask")
    make = api["MakeCertificate"]
    assert make["Essential"] is False
    assert make["User"] == "1000:1000"
    assert make["ReadonlyRootFilesystem"] is True
    assert make["LinuxParameters"]["Capabilities"] == {"Drop": ["ALL"]}
    assert make["EntryPoint"] == ["/app/api/.venv/bin/python", "-c"]
    assert make["Command"] == [MAKE_TASK_CERTIFICATE]
    # only the task's writable /tmp volume: no extension, no secrets, no environment
    assert make["MountPoints"] == [{"ContainerPath": "/tmp", "ReadOnly": False, "SourceVolume": "tmp"}]
    assert "Environment" not in make
    assert "Secrets" not in make
    assert make["DependsOn"] == [{"Condition": "SUCCESS", "ContainerName": "PrepareVolumes"}]
    assert {"Name": "tmp"} in api["_task"]["Volumes"]
    main = api["Hindsight"]
    assert {"Condition": "SUCCESS", "ContainerName": "MakeCertificate"} in main["DependsOn"]
    assert main["Command"][0].endswith("exec /app/api/.venv/bin/python -m hindsight_api.main " + TLS_FLAGS)
    assert main["HealthCheck"]["Command"] == [
        "CMD",
        "curl",
        "-fsS",
        "--cacert",
        TLS_CERT_FILE,
        "https://127.0.0.1:8888/health/live",
    ]
    assert main["ReadonlyRootFilesystem"] is True
    assert main["User"] == "1000:1000"


def test_workers_and_the_maintenance_task_are_unchanged(ecs_tls: Synth) -> None:
    for part in ("Worker1Task", "MaintenanceTask"):
        containers = _task_containers(ecs_tls, part)
        assert "MakeCertificate" not in containers, part
        assert "--ssl-keyfile" not in json.dumps(containers["Hindsight"]), part


def test_turning_it_on_or_off_changes_no_export_another_stack_imports(ecs_plain: Synth, ecs_tls: Synth) -> None:
    # The target group is replaced (its protocol changes): nothing outside its stack may name it.
    assert set(ecs_plain.templates) == set(ecs_tls.templates)
    assert blocking_exports(ecs_plain.templates, ecs_tls.templates) == {}
    assert blocking_exports(ecs_tls.templates, ecs_plain.templates) == {}


def test_cdk_nag_has_no_unacknowledged_findings(ecs_tls: Synth) -> None:
    violations = [
        (v["ruleName"], c["constructPath"])
        for plugin in (ecs_tls.nag_report or {}).get("pluginReports", [])
        for v in plugin["violations"]
        for c in v["violatingConstructs"]
    ]
    assert ecs_tls.nag_error is None, violations
    assert violations == []


# -- EKS ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_manifest_is_valid_for_each_supported_version(eks_tls: Synth, version: str) -> None:
    for manifest in manifests_of(eks_tls):
        if manifest["kind"] not in CONTROLLER_KINDS:
            kubernetes_validate.validate(manifest, f"{version}.0", strict=True)


def test_the_api_pods_make_their_certificate_and_serve_https(eks_tls: Synth) -> None:
    assert (_target_group(eks_tls)["Protocol"], _target_group(eks_tls)["HealthCheckProtocol"]) == ("HTTPS", "HTTPS")
    api = pod_specs(eks_tls)[API_NAME]
    init = {c["name"]: c for c in api["initContainers"]}
    assert list(init) == ["fetch-secrets", "install-extension", "make-certificate"]
    make = init["make-certificate"]
    assert make["command"] == ["/app/api/.venv/bin/python", "-c", MAKE_TASK_CERTIFICATE]
    assert make["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
    assert make["securityContext"] == init["install-extension"]["securityContext"]  # uid 1000, read-only, no caps
    assert make["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}} in api["volumes"]
    main = api["containers"][0]
    assert main["command"][-1].endswith(TLS_FLAGS)
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert main[probe]["httpGet"]["scheme"] == "HTTPS", probe
    assert main["readinessProbe"]["httpGet"]["path"] == "/health"
    assert main["ports"] == [{"name": "https", "containerPort": 8888, "protocol": "TCP"}]


def test_the_service_and_a_new_binding_point_at_the_https_port(eks_tls: Synth) -> None:
    objects = objects_by_kind(eks_tls)
    assert objects[("Service", API_NAME)]["spec"]["ports"] == [
        {"name": "https", "port": 8888, "targetPort": "https", "protocol": "TCP"}
    ]
    # The target group is replaced (its protocol changed) and a binding's ARN is immutable: another binding.
    assert ("TargetGroupBinding", API_NAME) not in objects
    binding = objects[("TargetGroupBinding", f"{API_NAME}-tls")]
    assert binding["spec"]["serviceRef"] == {"name": API_NAME, "port": 8888}
    assert binding["spec"]["targetGroupARN"] == target_group_ref(eks_tls)  # the HTTPS target group


def test_the_workers_pods_are_unchanged(eks_tls: Synth) -> None:
    worker = pod_specs(eks_tls)[WORKER_NAME]
    assert [c["name"] for c in worker["initContainers"]] == ["fetch-secrets", "install-extension"]
    main = worker["containers"][0]
    assert "--ssl-keyfile" not in main["command"][-1]
    assert "scheme" not in main["livenessProbe"]["httpGet"]


# -- the certificate script, run -------------------------------------------------------------------------------------


class _Live(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/health/live" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


def test_the_script_makes_a_private_key_and_a_certificate_the_liveness_check_verifies(tmp_path: Path) -> None:
    # GIVEN the init container's script, writing into a temporary directory instead of the task's /tmp/tls
    tls_dir = tmp_path / "tls"
    script = MAKE_TASK_CERTIFICATE.replace(TLS_DIR, str(tls_dir))
    # WHEN it runs with Hindsight's interpreter (the image's Python and cryptography)
    done = subprocess.run(
        [str(HINDSIGHT_PYTHON), "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    # THEN it made a key only its owner reads, and a certificate
    assert done.returncode == 0, done.stderr
    assert "task certificate made, sha256" in done.stdout
    key, cert = tls_dir / "key.pem", tls_dir / "cert.pem"
    assert os.stat(key).st_mode & 0o777 == 0o600
    assert os.stat(tls_dir).st_mode & 0o777 == 0o700
    assert "PRIVATE KEY" not in cert.read_text()
    # AND a server using them (as uvicorn does) passes the task's liveness check, the very command
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Live)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        check = [str(cert) if arg == TLS_CERT_FILE else arg for arg in liveness_command(port, tls=True)[1:]]
        assert subprocess.run(check, capture_output=True, timeout=30, check=False).returncode == 0
        # ... which does verify: another task's certificate is refused
        other = tmp_path / "other"
        subprocess.run(
            [str(HINDSIGHT_PYTHON), "-c", MAKE_TASK_CERTIFICATE.replace(TLS_DIR, str(other))], check=True, timeout=60
        )
        check[3] = str(other / "cert.pem")
        assert subprocess.run(check, capture_output=True, timeout=30, check=False).returncode != 0
    finally:
        server.shutdown()
        server.server_close()

"""HindsightTaskDefinition: one Hindsight task (the API's or a worker's), with the isolation extension loaded into it.

How the extension gets in without building an image: an init container (the same image, non-essential) downloads
the extension zip (a CDK S3 asset, checked against its SHA-256) into a task-scoped volume; the Hindsight container
starts only after the init container succeeded, mounts that volume read-only and has it on ``PYTHONPATH``. Both
containers run as uid 1000 with a read-only root filesystem; ``/tmp`` is a task volume.

Fargate creates task volumes owned by root (mode 0755), and the stock image declares no ``VOLUME`` that would copy
ownership in, so uid 1000 could write neither. A first, non-essential container runs as root for exactly one
command (hand the extension directory to uid 1000, make ``/tmp`` 1777) with every capability dropped but the one
that needs; both other containers start only after it succeeded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import Aws, Duration
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from infra.config import HindsightConfig, LlmProvider
from infra.constructs.database import (
    ENV_DB_CA_BUNDLE,
    ENV_DB_HOST,
    ENV_DB_NAME,
    ENV_DB_PASSWORD,
    ENV_DB_PORT,
    ENV_DB_USERNAME,
)
from infra.constructs.rds_ca_bundle import CA_FILE
from infra.constructs.secret_source import SecretSource
from infra.permissions import grant_bedrock_invoke
from memory_adapter import hindsight_routes as routes
from memory_adapter.constants import RECALL_SERVER_SETTINGS, RETAIN_SERVER_SETTINGS

#: The stock image's user (``hindsight``), set explicitly so the task never runs as root.
CONTAINER_USER = "1000:1000"
#: The volume-preparation step runs as root: a non-root process cannot change a root-owned directory.
ROOT_USER = "0:0"
IMAGE_PYTHON = "/app/api/.venv/bin/python"
EXTENSION_DIR = "/opt/hindsight-ext"
WORKER_HTTP_PORT = 8889
#: Memories a (bank, fact type) needs before it gets its own HNSW index (Hindsight's suggested start, docs/capacity.md).
VECTOR_INDEX_MIN_ROWS = 10_000

#: Assembles the database URL from the secret's fields inside the container, so it never appears in the task
#: definition, the template or a log line (no ``set -x``), then runs the API or the worker module of the image's
#: venv directly (the image's ``start-all.sh`` may start more than the API). The login is Hindsight's own (never the
#: master), and TLS verifies the server against the RDS certificate bundle (``verify-full``: encrypted *and* the
#: right server), which arrives as an ECS secret and is written to the task's /tmp first.
_DATABASE_URL = (
    f"printf '%s\\n' \"${ENV_DB_CA_BUNDLE}\" > {CA_FILE}; unset {ENV_DB_CA_BUNDLE}; "
    f'export HINDSIGHT_API_DATABASE_URL="postgresql://${ENV_DB_USERNAME}:${ENV_DB_PASSWORD}@${ENV_DB_HOST}:${ENV_DB_PORT}/'
    f'${ENV_DB_NAME}?sslmode=verify-full&sslrootcert={CA_FILE}"; unset {ENV_DB_PASSWORD}; '
)
API_COMMAND = "set -eu; " + _DATABASE_URL + f"exec {IMAGE_PYTHON} -m hindsight_api.main"
WORKER_COMMAND = (
    "set -eu; " + _DATABASE_URL + f"exec {IMAGE_PYTHON} -m hindsight_api.worker.main --http-port {WORKER_HTTP_PORT}"
)
#: Where each API task keeps the key and certificate it serves TLS with (``hindsight.tls_to_tasks``): inside the
#: task's writable ``/tmp`` volume, made at start by the init step (:data:`MAKE_TASK_CERTIFICATE`), never in the image,
#: the task definition or the template.
TLS_DIR = "/tmp/tls"  # noqa: S108 (a task-scoped volume)
TLS_KEY_FILE = f"{TLS_DIR}/key.pem"
TLS_CERT_FILE = f"{TLS_DIR}/cert.pem"
#: The API serving HTTPS (uvicorn's ``ssl_keyfile``/``ssl_certfile``, which ``hindsight-api`` passes through).
API_TLS_COMMAND = API_COMMAND + f" --ssl-keyfile {TLS_KEY_FILE} --ssl-certfile {TLS_CERT_FILE}"
#: The task's own certificate: a fresh RSA key (never leaves the task) and a self-signed certificate for
#: ``localhost``/``127.0.0.1`` (the liveness check verifies against it). The load balancer verifies neither the
#: name nor the chain nor the expiry of a target's certificate, so no CA is needed and the 10-year validity can
#: never stop a long-running task. Runs with the image's Python (``cryptography`` is a Hindsight dependency); prints
#: the certificate's SHA-256 fingerprint so a log line names the certificate each task served.
MAKE_TASK_CERTIFICATE = (
    "import datetime, ipaddress, os\n"
    "from cryptography import x509\n"
    "from cryptography.hazmat.primitives import hashes, serialization\n"
    "from cryptography.hazmat.primitives.asymmetric import rsa\n"
    "from cryptography.x509.oid import NameOID\n"
    "key = rsa.generate_private_key(public_exponent=65537, key_size=2048)\n"
    "name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'hindsight-task')])\n"
    "now = datetime.datetime.now(datetime.timezone.utc)\n"
    "names = [x509.DNSName('localhost'), x509.IPAddress(ipaddress.ip_address('127.0.0.1'))]\n"
    "cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())\n"
    "    .serial_number(x509.random_serial_number())\n"
    "    .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=3650))\n"
    "    .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)\n"
    "    .add_extension(x509.SubjectAlternativeName(names), critical=False)\n"
    "    .sign(key, hashes.SHA256()))\n"
    f"os.makedirs('{TLS_DIR}', mode=0o700, exist_ok=True)\n"
    "def write(path, data, mode):\n"
    "    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)\n"
    "    with os.fdopen(fd, 'wb') as f:\n"
    "        f.write(data)\n"
    f"write('{TLS_KEY_FILE}', key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,\n"
    "    serialization.NoEncryption()), 0o600)\n"
    f"write('{TLS_CERT_FILE}', cert.public_bytes(serialization.Encoding.PEM), 0o644)\n"
    "print('task certificate made, sha256', cert.fingerprint(hashes.SHA256()).hex())\n"
)
#: The operator's restore and re-embedding (``memory_adapter.admin.maintenance``, shipped in the extension bundle),
#: with the task's command as its arguments (``ecs run-task`` overrides only those: ``["restore", "s3://..."]``).
MAINTENANCE_COMMAND = "set -eu; " + _DATABASE_URL + f'exec {IMAGE_PYTHON} -m memory_adapter.admin.maintenance "$@"'
#: What the maintenance task runs when started without arguments.
MAINTENANCE_DEFAULT_ARGUMENTS = ("--help",)

#: Hands the (root-owned) task volumes to the image's user; /tmp is world-writable with the sticky bit, like /tmp.
PREPARE_VOLUMES = (
    f"set -eu; chmod 0755 {EXTENSION_DIR}; chmod 1777 /tmp; chown {CONTAINER_USER} {EXTENSION_DIR}; "
    f"ls -ldn {EXTENSION_DIR} /tmp"
)
#: Linux capabilities dropped from the root step: it only needs CHOWN (chmod of a root-owned path needs none).
PREPARE_DROPPED_CAPABILITIES = (
    ecs.Capability.AUDIT_WRITE,
    ecs.Capability.DAC_OVERRIDE,
    ecs.Capability.FOWNER,
    ecs.Capability.FSETID,
    ecs.Capability.KILL,
    ecs.Capability.MKNOD,
    ecs.Capability.NET_BIND_SERVICE,
    ecs.Capability.NET_RAW,
    ecs.Capability.SETFCAP,
    ecs.Capability.SETGID,
    ecs.Capability.SETPCAP,
    ecs.Capability.SETUID,
    ecs.Capability.SYS_CHROOT,
)

#: The init container's program: fetch the extension zip through the S3 gateway endpoint, check its digest,
#: unpack it into the shared volume. Runs with the image's Python (boto3 is a Hindsight dependency).
INSTALL_EXTENSION = (
    "import hashlib, io, os, zipfile, boto3\n"
    "body = boto3.client('s3').get_object(Bucket=os.environ['EXT_BUCKET'], Key=os.environ['EXT_KEY'])['Body'].read()\n"
    "digest = hashlib.sha256(body).hexdigest()\n"
    "assert digest == os.environ['EXT_SHA256'], 'extension digest mismatch: ' + digest\n"
    f"zipfile.ZipFile(io.BytesIO(body)).extractall('{EXTENSION_DIR}')\n"
    "print('isolation extension installed', digest)\n"
)


@dataclass(frozen=True)
class HindsightTaskParts:
    """What every Hindsight task is built from (the same image, extension, environment and secrets), so the API and
    the workers cannot drift apart.

    Args:
        secrets: What each task reads at start, by variable (ECS injects each as a container secret).
        execution_grants: Grants each task's execution role needs beyond its secrets (the database key's decrypt,
            the mirrored image's pull), called with the task definition.
    """

    config: HindsightConfig
    image: ecs.ContainerImage
    extension: s3_assets.Asset
    extension_sha256: str
    environment: Mapping[str, str]
    secrets: Mapping[str, SecretSource]
    log_group: logs.ILogGroup
    execution_grants: tuple[Callable[[ecs.TaskDefinition], object], ...] = ()


def api_command(config: HindsightConfig) -> str:
    """The API's command: HTTPS with the task's own certificate when ``hindsight.tls_to_tasks``, else HTTP."""
    return API_TLS_COMMAND if config.tls_to_tasks else API_COMMAND


def hindsight_environment(config: HindsightConfig, *, database: Mapping[str, str]) -> dict[str, str]:
    """The Hindsight server's plain settings, with ``database`` (where it connects; the extension's are added by
    the service)."""
    env = {
        "HINDSIGHT_API_HOST": "0.0.0.0",  # noqa: S104 (inside the task; reachable only through the load balancer SG)
        "HINDSIGHT_API_PORT": str(config.port),
        "HINDSIGHT_API_WORKER_ENABLED": "false",  # the worker services do the background work
        "HINDSIGHT_API_MCP_ENABLED": "true" if config.mcp_enabled else "false",
        "HINDSIGHT_API_LLM_PROVIDER": config.llm_provider.value,
        "HINDSIGHT_API_LLM_MODEL": config.llm_model,
        "HINDSIGHT_API_SKIP_LLM_VERIFICATION": "true",  # the first deploy must not hinge on model access
        "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "litellm-sdk",
        "HINDSIGHT_API_EMBEDDINGS_LITELLM_SDK_MODEL": config.embeddings_model,
        **reranker_environment(config),
        **RECALL_SERVER_SETTINGS,  # recall defaults chosen by make eval (memory_adapter.constants)
        **RETAIN_SERVER_SETTINGS,  # retains queue in Hindsight's retain lane, never refused for load
        "HINDSIGHT_API_LOG_LEVEL": "info",
        # Scaling (docs/capacity.md, measured with make bench-scale). Per-process pool (Hindsight's default is
        # 100): (api_max_count + worker_count) x pool must fit the database's connections.
        "HINDSIGHT_API_DB_POOL_MAX_SIZE": str(config.db_pool_max_size),
        # Retains a worker runs at once (default 10): with a 1.5 s LLM, 30 slots absorbed 2.1x the default's rate.
        "HINDSIGHT_API_WORKER_MAX_SLOTS": str(config.worker_max_slots),
        # Banks are per user: below this many memories a bank is searched exactly instead of owning three HNSW
        # indexes on the shared table (default 0: every bank; 3,039 indexes made planning 103-508 ms a statement).
        "HINDSIGHT_API_VECTOR_INDEX_MIN_ROWS": str(VECTOR_INDEX_MIN_ROWS),
        "AWS_REGION": Aws.REGION,
        "AWS_DEFAULT_REGION": Aws.REGION,
        "HOME": "/tmp",  # noqa: S108 (a task-scoped volume; the root filesystem is read-only)
        "XDG_CACHE_HOME": "/tmp/.cache",  # noqa: S108
        "HF_HUB_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of the price map from the internet at import
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": EXTENSION_DIR,
        # Where Hindsight (and the isolation extension, which follows it) keeps the banks; a re-embedding fills a
        # new schema, and this setting moves the service onto it (docs/operating.md).
        "HINDSIGHT_API_DATABASE_SCHEMA": config.database_schema,
        **database,
    }
    if config.llm_provider is LlmProvider.OPENAI:
        assert config.llm_base_url is not None
        env["HINDSIGHT_API_LLM_BASE_URL"] = config.llm_base_url
    return env


def extension_environment(extension: s3_assets.Asset, sha256: str) -> dict[str, str]:
    """What the install step (:data:`INSTALL_EXTENSION`, in a task or a pod) reads: where the extension is, and the
    digest it must have."""
    return {
        "EXT_BUCKET": extension.s3_bucket_name,
        "EXT_KEY": extension.s3_object_key,
        "EXT_SHA256": sha256,
        "AWS_REGION": Aws.REGION,
    }


def extension_read_statement(extension: s3_assets.Asset) -> iam.PolicyStatement:
    """Exactly what the install step reads: one object of the asset bucket (CDK's grant_read adds List* and
    GetBucket* on the whole bootstrap bucket)."""
    return iam.PolicyStatement(
        actions=["s3:GetObject"], resources=[extension.bucket.arn_for_objects(extension.s3_object_key)]
    )


#: Candidates Hindsight hands the reranker per recall (its default is 300): Bedrock bills a rerank query per 100
#: documents, and the fused list's top 100 held most of what its top 300 did (docs/deploying.md).
RERANK_CANDIDATES = 100


def reranker_environment(config: HindsightConfig) -> dict[str, str]:
    """Hindsight's reranker: ``hindsight.reranker_model`` on Bedrock through LiteLLM (``litellm-sdk``, which sends the
    model string after ``bedrock/`` as the model ARN), or none (``rrf``: the fused ranks; the slim image ships no
    local models)."""
    if config.reranker_model is None:
        return {"HINDSIGHT_API_RERANKER_PROVIDER": "rrf"}
    model = config.reranker_model.removeprefix("bedrock/")
    return {
        "HINDSIGHT_API_RERANKER_PROVIDER": "litellm-sdk",
        "HINDSIGHT_API_RERANKER_LITELLM_SDK_MODEL": (
            f"bedrock/arn:{Aws.PARTITION}:bedrock:{Aws.REGION}::foundation-model/{model}"
        ),
        "HINDSIGHT_API_RERANKER_MAX_CANDIDATES": str(RERANK_CANDIDATES),
    }


def bedrock_models(config: HindsightConfig) -> list[str]:
    """The Bedrock models Hindsight calls: the embeddings model, the LLM when it is Bedrock's, the reranker if any."""
    models = [config.embeddings_model.removeprefix("bedrock/")]
    if config.llm_provider is LlmProvider.BEDROCK:
        models.append(config.llm_model)
    if config.reranker_model is not None:
        models.append(config.reranker_model.removeprefix("bedrock/"))
    return models


def grant_bedrock(scope: Construct, grantee: iam.IGrantable, config: HindsightConfig) -> None:
    """Invoke exactly :func:`bedrock_models`; with a reranker also ``bedrock:Rerank``, an action IAM cannot scope to a
    resource (the model it calls is scoped by ``bedrock:InvokeModel``)."""
    grant_bedrock_invoke(scope, grantee, bedrock_models(config))
    if config.reranker_model is not None:
        iam.Grant.add_to_principal(grantee=grantee, actions=["bedrock:Rerank"], resource_arns=["*"])


class HindsightTaskDefinition(ecs.FargateTaskDefinition):
    """A Fargate task (ARM64) of three containers: ``PrepareVolumes`` (root, one command), ``InstallExtension`` and
    ``Hindsight`` (the API, or a worker when ``worker_id`` is given); exposes ``main_container``.

    ``arguments`` makes it a one-off task (``ecs run-task``, no service): no port and no health check, and
    ``command`` (a bash script) receives the container's command as ``"$@"``, ``arguments`` by default, so a
    run-task override names only the arguments.

    ``serve_tls`` (the API with ``hindsight.tls_to_tasks``; ``command`` is then :data:`API_TLS_COMMAND`) adds a
    fourth container, ``MakeCertificate`` (uid 1000, read-only root, non-essential), which writes the task's key and
    certificate into ``/tmp`` before the API starts; the liveness check then speaks HTTPS and verifies that
    certificate.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        parts: HindsightTaskParts,
        command: str,
        log_prefix: str,
        worker_id: str | None = None,
        arguments: tuple[str, ...] | None = None,
        serve_tls: bool = False,
    ) -> None:
        config, image, extension = parts.config, parts.image, parts.extension
        super().__init__(
            scope,
            construct_id,
            cpu=config.cpu,
            memory_limit_mib=config.memory_mib,
            runtime_platform=ecs.RuntimePlatform(
                cpu_architecture=ecs.CpuArchitecture.ARM64, operating_system_family=ecs.OperatingSystemFamily.LINUX
            ),
        )
        self.add_volume(name="extension")
        self.add_volume(name="tmp")
        self.add_to_task_role_policy(extension_read_statement(extension))
        grant_bedrock(self, self.task_role, config)
        logging = ecs.LogDrivers.aws_logs(stream_prefix=log_prefix, log_group=parts.log_group)
        prepare = self._step(
            "PrepareVolumes",
            PREPARE_VOLUMES,
            image=image,
            logging=logging,
            user=ROOT_USER,
            interpreter="/bin/sh",
            linux_parameters=self._prepare_linux_parameters(),
        )
        _mount_volumes(prepare, extension_read_only=False)
        prepared = _succeeded(prepare)
        init = self._step(
            "InstallExtension",
            INSTALL_EXTENSION,
            image=image,
            logging=logging,
            environment={
                **extension_environment(extension, parts.extension_sha256),
                "HOME": "/tmp",  # noqa: S108
            },
        )
        _mount_volumes(init, extension_read_only=False)
        init.add_container_dependencies(prepared)
        before_main = [prepared, _succeeded(init)]
        if serve_tls:
            certificate = self._step(
                "MakeCertificate",
                MAKE_TASK_CERTIFICATE,
                image=image,
                logging=logging,
                linux_parameters=self._no_capabilities(),
            )
            certificate.add_mount_points(_tmp_mount())
            certificate.add_container_dependencies(prepared)
            before_main.append(_succeeded(certificate))
        env = dict(parts.environment)
        health_port = config.port
        if worker_id is not None:
            env["HINDSIGHT_API_WORKER_ID"] = worker_id
            env["HINDSIGHT_API_WORKER_ENABLED"] = "true"
            health_port = WORKER_HTTP_PORT
        one_off = arguments is not None
        self.main_container = self.add_container(
            "Hindsight",
            image=image,
            essential=True,
            user=CONTAINER_USER,
            readonly_root_filesystem=config.readonly_root_filesystem,
            # A one-off task's script gets its arguments from the command ("$0" names it in error messages).
            entry_point=["/bin/bash", "-c", command, log_prefix] if one_off else ["/bin/bash", "-c"],
            command=list(arguments or ()) if one_off else [command],
            environment=env,
            secrets={name: source.ecs_secret() for name, source in parts.secrets.items()},
            port_mappings=[ecs.PortMapping(container_port=config.port)] if worker_id is None and not one_off else [],
            # Liveness: the process answers without touching the database. Readiness (/health, which checks the
            # database) is the load balancer's health check. A one-off task serves nothing to check.
            health_check=None
            if one_off
            else ecs.HealthCheck(
                command=liveness_command(health_port, tls=serve_tls),
                interval=Duration.seconds(30),
                timeout=Duration.seconds(5),
                retries=3,
                start_period=Duration.seconds(180),
            ),
            stop_timeout=Duration.seconds(30),
            logging=logging,
        )
        _mount_volumes(self.main_container, extension_read_only=True)
        self.main_container.add_container_dependencies(*before_main)
        for grant in parts.execution_grants:
            grant(self)

    def _step(
        self,
        construct_id: str,
        script: str,
        *,
        image: ecs.ContainerImage,
        logging: ecs.LogDriver,
        user: str = CONTAINER_USER,
        interpreter: str = IMAGE_PYTHON,
        **options: Any,
    ) -> ecs.ContainerDefinition:
        """A container that runs ``script`` once before Hindsight starts (non-essential, read-only root filesystem;
        the image's Python unless ``interpreter`` says otherwise)."""
        return self.add_container(
            construct_id,
            image=image,
            essential=False,
            user=user,
            readonly_root_filesystem=True,
            entry_point=[interpreter, "-c"],
            command=[script],
            logging=logging,
            **options,
        )

    def _no_capabilities(self) -> ecs.LinuxParameters:
        """No Linux capability at all (the certificate step only writes files it owns)."""
        parameters = ecs.LinuxParameters(self, "CertificateLinux")
        parameters.drop_capabilities(ecs.Capability.ALL)
        return parameters

    def _prepare_linux_parameters(self) -> ecs.LinuxParameters:
        parameters = ecs.LinuxParameters(self, "PrepareLinux")
        parameters.drop_capabilities(*PREPARE_DROPPED_CAPABILITIES)
        return parameters


def liveness_command(port: int, *, tls: bool) -> list[str]:
    """The container's health check: ``/health/live`` over HTTP, or over HTTPS verified against the task's own
    certificate (made for ``127.0.0.1``, so no ``--insecure``)."""
    if tls:
        return ["CMD", "curl", "-fsS", "--cacert", TLS_CERT_FILE, f"https://127.0.0.1:{port}{routes.LIVE}"]
    return ["CMD", "curl", "-fsS", f"http://127.0.0.1:{port}{routes.LIVE}"]


def _succeeded(container: ecs.ContainerDefinition) -> ecs.ContainerDependency:
    """Start only after ``container`` exited with success."""
    return ecs.ContainerDependency(container=container, condition=ecs.ContainerDependencyCondition.SUCCESS)


def _mount_volumes(container: ecs.ContainerDefinition, *, extension_read_only: bool) -> None:
    """The task's two volumes: the extension directory and ``/tmp`` (the only writable paths)."""
    container.add_mount_points(
        ecs.MountPoint(container_path=EXTENSION_DIR, source_volume="extension", read_only=extension_read_only),
        _tmp_mount(),
    )


def _tmp_mount() -> ecs.MountPoint:
    """The task's ``/tmp`` volume (writable)."""
    return ecs.MountPoint(container_path="/tmp", source_volume="tmp", read_only=False)  # noqa: S108

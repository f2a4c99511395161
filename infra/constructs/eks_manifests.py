"""The Kubernetes objects of Hindsight on EKS (``hindsight.platform=eks``), as plain manifests.

The same processes as the Fargate tasks (:mod:`infra.constructs.hindsight_task`: the same commands, environment,
extension install and sizes) with the same posture: uid 1000, non-root, read-only root filesystem, every capability
dropped, no privilege escalation, the runtime's default seccomp profile, no Kubernetes API token. Kubernetes creates
``emptyDir`` volumes writable by the pod, so the Fargate task's root step that prepares its volumes has no
counterpart here.

Secrets: an init container (the image's Python and boto3, with the pod's own AWS role) reads each value from
Secrets Manager or SSM into a memory-backed volume, one file per variable, readable only by uid 1000; the Hindsight
container exports them just before it starts (:data:`LOAD_SECRETS`). No value is in a manifest, the template or a
plain environment variable of the pod spec, and the cluster needs no Secrets Store CSI driver: the prerequisite
would buy nothing, since Hindsight reads the database URL once at start either way (rotation restarts the pods,
:mod:`infra.functions.eks_restart`).

:func:`hindsight_manifests` takes plain values (CDK tokens in a synthesis, strings in tests); every object is
validated against the Kubernetes schemas of the supported versions in ``tests/infra/test_eks.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from infra.config import EksConfig, HindsightConfig
from infra.constructs.hindsight_task import (
    EXTENSION_DIR,
    IMAGE_PYTHON,
    INSTALL_EXTENSION,
    MAKE_TASK_CERTIFICATE,
    WORKER_HTTP_PORT,
)
from infra.constructs.secret_source import PARAMETER_PREFIX, SECRET_ARN_PREFIX, SECRET_FIELD_PREFIX
from memory_adapter import hindsight_routes as routes

Manifest = dict[str, Any]

#: The stock image's user and group (``hindsight``).
UID = 1000
API_NAME = "hindsight-api"
WORKER_NAME = "hindsight-worker"
SERVICE_ACCOUNT = "hindsight"
MAINTENANCE_SERVICE_ACCOUNT = "hindsight-maintenance"
#: What the restart function patches (``kubectl rollout restart`` sets the same kind of annotation).
RESTARTED_AT_ANNOTATION = "hindsight.memory/restarted-at"
#: The Kubernetes group the restart function's access entry maps its role to (RBAC below).
RESTARTER_GROUP = "hindsight-restarter"
SECRETS_DIR = "/run/hindsight-secrets"
PART_OF = {"app.kubernetes.io/part-of": "hindsight"}

#: The init step: every value named by the ``SECRET_ARN_``/``SECRET_FIELD_``/``PARAMETER_NAME_`` variables, read with
#: the pod's role and written to one file per variable (mode 0400); names are printed, values never.
FETCH_SECRETS = (
    "import json, os, boto3\n"
    "sm, ssm, env = boto3.client('secretsmanager'), boto3.client('ssm'), os.environ\n"
    "def write(name, value):\n"
    f"    fd = os.open(os.path.join('{SECRETS_DIR}', name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o400)\n"
    "    with os.fdopen(fd, 'w') as f:\n"
    "        f.write(value)\n"
    "for key in sorted(env):\n"
    f"    if key.startswith('{SECRET_ARN_PREFIX}'):\n"
    f"        name = key[len('{SECRET_ARN_PREFIX}'):]\n"
    "        value = sm.get_secret_value(SecretId=env[key])['SecretString']\n"
    f"        field = env.get('{SECRET_FIELD_PREFIX}' + name)\n"
    "        write(name, json.loads(value)[field] if field else value)\n"
    f"    elif key.startswith('{PARAMETER_PREFIX}'):\n"
    f"        name = key[len('{PARAMETER_PREFIX}'):]\n"
    "        write(name, ssm.get_parameter(Name=env[key], WithDecryption=True)['Parameter']['Value'])\n"
    "    else:\n"
    "        continue\n"
    "    print('read', name)\n"
)
#: Prepended to the Hindsight container's command: the init step's files become the variables the ECS task gets from
#: its secrets (then the same script assembles the database URL).
LOAD_SECRETS = f'for f in {SECRETS_DIR}/*; do export "${{f##*/}}=$(cat "$f")"; done; '


@dataclass(frozen=True)
class ManifestInputs:
    """What the manifests name (tokens at synthesis).

    Args:
        secret_environment: The init step's variables (:meth:`SecretSource.pod_environment`): where each value is.
        extension_environment: ``EXT_BUCKET``, ``EXT_KEY`` and ``EXT_SHA256`` of the isolation extension.
        workload_role_arn: The IRSA role's ARN, or None with EKS Pod Identity (an association names the role).
    """

    image: str
    environment: Mapping[str, str]
    secret_environment: Mapping[str, str]
    extension_environment: Mapping[str, str]
    workload_role_arn: str | None
    maintenance_role_arn: str | None
    pod_security_group_id: str
    target_group_arn: str
    api_command: str
    worker_command: str


def hindsight_manifests(config: HindsightConfig, eks: EksConfig, inputs: ManifestInputs) -> list[Manifest]:
    """Every object, namespace first (``kubectl apply`` creates them in this order)."""
    ns = eks.namespace
    api_port_name = "https" if config.tls_to_tasks else "http"
    api_labels = {**PART_OF, "app.kubernetes.io/name": API_NAME}
    worker_labels = {**PART_OF, "app.kubernetes.io/name": WORKER_NAME}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": dict(PART_OF)}},
        _service_account(SERVICE_ACCOUNT, ns, inputs.workload_role_arn),
        _service_account(MAINTENANCE_SERVICE_ACCOUNT, ns, inputs.maintenance_role_arn),
        {
            # Security groups for pods: the Hindsight pods get the stack's group (which the database and the load
            # balancer admit) instead of the nodes'.
            "apiVersion": "vpcresources.k8s.aws/v1beta1",
            "kind": "SecurityGroupPolicy",
            "metadata": {"name": "hindsight", "namespace": ns},
            "spec": {
                "podSelector": {"matchLabels": dict(PART_OF)},
                "securityGroups": {"groupIds": [inputs.pod_security_group_id]},
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": API_NAME, "namespace": ns, "labels": api_labels},
            "spec": {
                # No replicas: the HorizontalPodAutoscaler owns the count (minReplicas is the floor); a count here
                # would reset the scale to it at every apply.
                "selector": {"matchLabels": api_labels},
                # Like the ECS service (100 % healthy, 200 % max): a new pod is ready before an old one goes.
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
                "template": _pod_template(
                    config, inputs, labels=api_labels, command=inputs.api_command, port=config.port, worker=False
                ),
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": API_NAME, "namespace": ns, "labels": api_labels},
            "spec": {
                "type": "ClusterIP",
                "selector": api_labels,
                "ports": [{"name": api_port_name, "port": config.port, "targetPort": api_port_name, "protocol": "TCP"}],
            },
        },
        {
            # The stack's load balancer (the same as ECS's: TLS, access logs, alarm, DNS name); the AWS Load
            # Balancer Controller registers the API pods' IPs in its target group. Security group rules are the
            # stack's, so the controller manages none. A binding's targetGroupARN is immutable, and turning
            # hindsight.tls_to_tasks on or off replaces the target group (its protocol): the binding is then
            # another object (another name), created anew while the old one is pruned.
            "apiVersion": "elbv2.k8s.aws/v1beta1",
            "kind": "TargetGroupBinding",
            "metadata": {"name": f"{API_NAME}-tls" if config.tls_to_tasks else API_NAME, "namespace": ns},
            "spec": {
                "serviceRef": {"name": API_NAME, "port": config.port},
                "targetGroupARN": inputs.target_group_arn,
                "targetType": "ip",
            },
        },
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": API_NAME, "namespace": ns},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": API_NAME},
                "minReplicas": config.api_min_count,
                "maxReplicas": config.api_max_count,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": config.cpu_target_percent},
                        },
                    }
                ],
            },
        },
        _disruption_budget(API_NAME, ns, api_labels),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": WORKER_NAME, "namespace": ns, "labels": worker_labels},
            "spec": {
                "clusterIP": "None",
                "selector": worker_labels,
                "ports": [{"name": "health", "port": WORKER_HTTP_PORT}],
            },
        },
        {
            # Stable worker ids: a StatefulSet's pod keeps its name (hindsight-worker-<n>) across replacement and
            # never runs twice at once; Hindsight reclaims a dead worker's tasks only for the same id.
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": WORKER_NAME, "namespace": ns, "labels": worker_labels},
            "spec": {
                "replicas": config.worker_count,
                "serviceName": WORKER_NAME,
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": worker_labels},
                "updateStrategy": {"type": "RollingUpdate"},
                "template": _pod_template(
                    config,
                    inputs,
                    labels=worker_labels,
                    command=inputs.worker_command,
                    port=WORKER_HTTP_PORT,
                    worker=True,
                ),
            },
        },
        _disruption_budget(WORKER_NAME, ns, worker_labels),
        {
            # What the restart function may do after a rotation: restart these two workloads, nothing else.
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": RESTARTER_GROUP, "namespace": ns},
            "rules": [
                {
                    "apiGroups": ["apps"],
                    "resources": ["deployments"],
                    "resourceNames": [API_NAME],
                    "verbs": ["get", "patch"],
                },
                {
                    "apiGroups": ["apps"],
                    "resources": ["statefulsets"],
                    "resourceNames": [WORKER_NAME],
                    "verbs": ["get", "patch"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": RESTARTER_GROUP, "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": RESTARTER_GROUP},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": RESTARTER_GROUP}],
        },
    ]


def _service_account(name: str, namespace: str, role_arn: str | None) -> Manifest:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(PART_OF)}
    if role_arn is not None:  # IRSA; with Pod Identity an association names the role
        metadata["annotations"] = {"eks.amazonaws.com/role-arn": role_arn}
    # Hindsight never calls the Kubernetes API: no token is mounted (IRSA's AWS token is a separate volume).
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata, "automountServiceAccountToken": False}


def _disruption_budget(name: str, namespace: str, labels: Mapping[str, str]) -> Manifest:
    """At most one pod of the workload evicted at a time (a node drain waits for the replacement)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(labels)}},
    }


def container_security_context(*, read_only_root: bool) -> Manifest:
    """Every container's: non-root uid 1000, no privilege escalation, no capability at all."""
    return {
        "runAsUser": UID,
        "runAsGroup": UID,
        "runAsNonRoot": True,
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": read_only_root,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def resources(config: HindsightConfig) -> Manifest:
    """The Fargate task's size (``hindsight.cpu`` units, ``memory_mib``) as requests equal to limits (Guaranteed
    QoS: the capacity model of docs/capacity.md holds per pod as it does per task)."""
    size = {"cpu": f"{config.cpu * 1000 // 1024}m", "memory": f"{config.memory_mib}Mi"}
    return {"requests": dict(size), "limits": dict(size)}


def _env(values: Mapping[str, str]) -> list[Manifest]:
    return [{"name": k, "value": v} for k, v in sorted(values.items())]


def _init_step(
    image: str, name: str, script: str, mounts: list[Manifest], environment: Mapping[str, str] | None = None
) -> Manifest:
    """An init container that runs ``script`` with the image's Python once before Hindsight starts (read-only root,
    small resources; ``HOME`` in the pod's ``/tmp`` when it gets an environment)."""
    step: Manifest = {"name": name, "image": image, "command": [IMAGE_PYTHON, "-c", script]}
    if environment is not None:
        step["env"] = _env({**environment, "HOME": "/tmp"})  # noqa: S108
    return step | {
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}},
        "securityContext": container_security_context(read_only_root=True),
        "volumeMounts": mounts,
    }


def _pod_template(
    config: HindsightConfig,
    inputs: ManifestInputs,
    *,
    labels: Mapping[str, str],
    command: str,
    port: int,
    worker: bool,
) -> Manifest:
    tmp = {"name": "tmp", "mountPath": "/tmp"}  # noqa: S108 (a pod-scoped volume; the root filesystem is read-only)
    mounts = [{"name": "extension", "mountPath": EXTENSION_DIR}, tmp]
    env = _env(inputs.environment)
    if worker:
        env = [e for e in env if e["name"] != "HINDSIGHT_API_WORKER_ENABLED"]
        env += [
            {"name": "HINDSIGHT_API_WORKER_ENABLED", "value": "true"},
            {"name": "HINDSIGHT_API_WORKER_ID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ]
    # hindsight.tls_to_tasks: the API serves HTTPS with the pod's own certificate (the kubelet verifies none).
    tls = config.tls_to_tasks and not worker
    scheme = {"scheme": "HTTPS"} if tls else {}
    live = {"httpGet": {"path": routes.LIVE, "port": port, **scheme}}
    main: Manifest = {
        "name": "hindsight",
        "image": inputs.image,
        "command": ["/bin/bash", "-c", LOAD_SECRETS + command],
        "env": env,
        "ports": [
            {
                "name": "health" if worker else "https" if tls else "http",
                "containerPort": port,
                "protocol": "TCP",
            }
        ],
        "resources": resources(config),
        "securityContext": container_security_context(read_only_root=config.readonly_root_filesystem),
        # Liveness: the process answers without the database (the ECS health check's command). Readiness: /health,
        # which checks the database (the load balancer's check). The start-up allowance is the task's 180 s.
        "startupProbe": {**live, "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 18},
        "livenessProbe": {**live, "periodSeconds": 30, "timeoutSeconds": 5, "failureThreshold": 3},
        "readinessProbe": {
            # A worker serves only its liveness route (its port is not behind the load balancer).
            "httpGet": {"path": routes.LIVE if worker else routes.HEALTH, "port": port, **scheme},
            "periodSeconds": 15,
            "timeoutSeconds": 5,
            "failureThreshold": 3,
        },
        "volumeMounts": [
            {"name": "extension", "mountPath": EXTENSION_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108
            {"name": "secrets", "mountPath": SECRETS_DIR, "readOnly": True},
        ],
    }
    return {
        "metadata": {"labels": dict(labels)},
        "spec": {
            "serviceAccountName": SERVICE_ACCOUNT,
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 30,
            # The mirrored image is arm64 (like the Fargate tasks): Graviton nodes only.
            "nodeSelector": {"kubernetes.io/arch": "arm64", "kubernetes.io/os": "linux"},
            "securityContext": {
                "runAsUser": UID,
                "runAsGroup": UID,
                "fsGroup": UID,
                "runAsNonRoot": True,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": dict(labels)},
                }
            ],
            "initContainers": [
                _init_step(
                    inputs.image,
                    "fetch-secrets",
                    FETCH_SECRETS,
                    [*mounts, {"name": "secrets", "mountPath": SECRETS_DIR}],
                    inputs.secret_environment,
                ),
                _init_step(inputs.image, "install-extension", INSTALL_EXTENSION, mounts, inputs.extension_environment),
                # The pod's key and certificate, into its /tmp volume (the ECS task's MakeCertificate container).
                *([_init_step(inputs.image, "make-certificate", MAKE_TASK_CERTIFICATE, [tmp])] if tls else []),
            ],
            "containers": [main],
            "volumes": [
                {"name": "extension", "emptyDir": {"sizeLimit": "256Mi"}},
                {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},
                {"name": "secrets", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
            ],
        },
    }

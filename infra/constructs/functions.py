"""The project's own Lambda functions (``infra/functions/<name>``), declared once: Python on arm64, each with its
own KMS-encrypted log group kept three months."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import (
    AssetHashType,
    BundlingOptions,
    CfnResource,
    DockerImage,
    Duration,
    ILocalBundling,
    Names,
    RemovalPolicy,
    Stack,
)
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

#: Where the functions' sources live (``make build`` bundles those with dependencies into ``build/``).
FUNCTIONS_DIR = Path(__file__).resolve().parent.parent / "functions"
RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
LOG_RETENTION = logs.RetentionDays.THREE_MONTHS
#: The settings machinery (standard library only), copied beside the functions that run without the memory adapter
#: layer so that they declare their settings like every other process (``memory_adapter.settings_fields``).
SETTINGS_PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "memory_adapter" / "src" / "memory_adapter"
SETTINGS_MODULES = ("constants.py", "settings_reader.py", "settings_fields.py")


#: Modules of ``infra.functions`` that several handlers import (copied at the same dotted path; pass them to
#: :func:`settings_code` and :func:`handler_sha256` both).
OWNED_PARAMETER = FUNCTIONS_DIR / "owned_parameter.py"
CFN_RESPONSE = FUNCTIONS_DIR / "cfn_response.py"


@jsii.implements(ILocalBundling)
class _WithSettings:
    """Local bundling (no Docker): the function's source plus :data:`SETTINGS_MODULES` as ``memory_adapter`` and the
    ``shared`` modules of ``infra.functions``."""

    def __init__(self, source: Path, shared: Sequence[Path] = ()) -> None:
        self._source, self._shared = source, shared

    def try_bundle(self, output_dir: str, *options: Any, **named: Any) -> bool:
        del options, named  # jsii passes the bundling options; nothing in them applies
        out = Path(output_dir)
        shutil.copytree(self._source, out, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
        package = out / "memory_adapter"
        package.mkdir(exist_ok=True)
        (package / "__init__.py").write_text('"""The memory adapter\'s settings machinery only."""\n')
        for name in SETTINGS_MODULES:
            shutil.copyfile(SETTINGS_PACKAGE / name, package / name)
        if self._shared:
            functions = out / "infra" / "functions"
            functions.mkdir(parents=True, exist_ok=True)
            for init in (out / "infra" / "__init__.py", functions / "__init__.py"):
                init.write_text("")
            for module in self._shared:
                shutil.copyfile(module, functions / module.name)
        return True


def settings_code(source: Path, *, shared: Sequence[Path] = ()) -> lambda_.Code:
    """``source`` with the settings machinery (and the ``shared`` modules of ``infra.functions``), for a function
    without the memory adapter layer."""
    local = _WithSettings(source, shared)
    return lambda_.Code.from_asset(
        str(source),
        asset_hash_type=AssetHashType.OUTPUT,
        bundling=BundlingOptions(image=DockerImage.from_registry("unused-local-bundling"), local=local),
    )


def function_log_group(
    scope: Construct, construct_id: str, logs_key: kms.IKey, *, retention: logs.RetentionDays = LOG_RETENTION
) -> logs.LogGroup:
    """A function's log group: encrypted with the logs key, kept ``retention``, deleted with its function."""
    return logs.LogGroup(
        scope, construct_id, retention=retention, encryption_key=logs_key, removal_policy=RemovalPolicy.DESTROY
    )


def python_function(
    scope: Construct,
    construct_id: str,
    *,
    source: Path,
    description: str,
    timeout: Duration,
    logs_key: kms.IKey,
    log_group_id: str,
    log_scope: Construct | None = None,
    memory_size: int = 128,
    environment: Mapping[str, str] | None = None,
    json_logs: bool = False,
    vpc: ec2.IVpc | None = None,
    vpc_subnets: ec2.SubnetSelection | None = None,
    security_groups: Sequence[ec2.ISecurityGroup] | None = None,
    handler: str = "index.handler",
    runtime: lambda_.Runtime = RUNTIME,
    layers: Sequence[lambda_.ILayerVersion] | None = None,
    log_retention: logs.RetentionDays = LOG_RETENTION,
    code: lambda_.Code | None = None,
) -> lambda_.Function:
    """A function running ``handler`` (default ``index.handler``) from ``source``, logging to ``log_group_id`` (in
    ``log_scope``, default ``scope``) kept ``log_retention``; inside the VPC when ``vpc`` is given. Functions on a
    layer take the layer's ``runtime`` (its compiled wheels are built for one Python). ``json_logs`` makes Lambda
    write JSON log records (with ``level``), which metric filters can count. ``code`` replaces ``source``'s plain
    asset (:func:`settings_code`)."""
    log_group = function_log_group(log_scope or scope, log_group_id, logs_key, retention=log_retention)
    return lambda_.Function(
        scope,
        construct_id,
        description=description,
        runtime=runtime,
        architecture=ARCHITECTURE,
        handler=handler,
        code=code or lambda_.Code.from_asset(str(source)),
        timeout=timeout,
        memory_size=memory_size,
        log_group=log_group,
        logging_format=lambda_.LoggingFormat.JSON if json_logs else None,
        environment=dict(environment) if environment else None,
        vpc=vpc,
        vpc_subnets=vpc_subnets,
        security_groups=list(security_groups) if security_groups else None,
        layers=list(layers) if layers else None,
    )


def provider_framework(
    scope: Construct, construct_id: str, *, on_event_handler: lambda_.IFunction, logs_key: kms.IKey
) -> cr.Provider:
    """CDK's provider framework around ``on_event_handler`` (it answers CloudFormation from outside the VPC), its own
    function logging to ``<construct_id>Logs`` in scope, kept :data:`LOG_RETENTION` with the logs key."""
    log_group = function_log_group(scope, f"{construct_id}Logs", logs_key)
    return cr.Provider(scope, construct_id, on_event_handler=on_event_handler, log_group=log_group)


def own_helper_function_logs(stack: Stack, logs_key: kms.IKey) -> list[logs.LogGroup]:
    """Give each Lambda function in stack without a log group of its own one kept :data:`LOG_RETENTION` with the
    logs key, and point the function at it (``LoggingConfig.LogGroup``).

    These are the functions CDK and its libraries add (the custom-resource providers behind ``AwsCustomResource``
    and the VPC's default-security-group restriction, the image copy), which would otherwise create
    ``/aws/lambda/<name>`` at their first run, kept forever and unencrypted. The group exists before the function
    (CloudFormation creates it first), so nothing else can create it; their roles already write logs anywhere
    (``AWSLambdaBasicExecutionRole``).
    """
    groups = []
    for node in stack.node.find_all():
        if not isinstance(node, CfnResource) or node.cfn_resource_type != "AWS::Lambda::Function":
            continue
        if Stack.of(node).node.path != stack.node.path:  # a nested stack's (jsii proxies of one stack may differ)
            continue
        if isinstance(node, lambda_.CfnFunction) and _log_group_of(node) is not None:
            continue  # python_function's: it has its own group
        group = function_log_group(stack, f"{Names.unique_id(node)}Logs", logs_key)
        node.add_property_override("LoggingConfig.LogGroup", group.log_group_name)
        groups.append(group)
    return groups


def _log_group_of(function: lambda_.CfnFunction) -> object | None:
    """The function's own log group, if it names one (a provider framework's logging settings may name none)."""
    config = function.logging_config
    return getattr(config, "log_group", None) if config is not None else None


def handler_sha256(source: Path, *shared: Path) -> str:
    """The SHA-256 of a function's ``index.py`` (and the ``shared`` modules it carries, in any order): a custom
    resource property, so changed code runs again at the next deploy (the handlers are idempotent)."""
    return hashlib.sha256(b"".join(p.read_bytes() for p in (source / "index.py", *sorted(shared)))).hexdigest()

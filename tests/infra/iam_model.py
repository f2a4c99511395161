"""How IAM reads a call and a policy: the IAM actions an API operation (or an AWS SDK call) needs, from botocore's
models and the Service Authorization Reference's exceptions, and the identity-policy decision for one action on one
resource. Used by :mod:`tests.infra.permission_check`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from tests.infra.code_walk import botocore_session, sdk_services

__all__ = [
    "AWS_MANAGED_POLICIES",
    "IAM_ACTION_EXCEPTIONS",
    "IAM_PREFIX_EXCEPTIONS",
    "allowed",
    "granted_somewhere",
    "iam_actions",
    "iam_prefix",
    "operations",
    "sdk_call_actions",
    "waiters",
]

#: What the AWS managed policies CDK attaches to functions' roles grant (their documents as published).
AWS_MANAGED_POLICIES: dict[str, list[dict[str, Any]]] = {
    "service-role/AWSLambdaBasicExecutionRole": [
        {
            "Effect": "Allow",
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": "*",
        },
    ],
    "service-role/AWSLambdaVPCAccessExecutionRole": [
        {
            "Effect": "Allow",
            "Resource": "*",
            "Action": [
                "logs:CreateLogGroup",
                "logs:CreateLogStream",
                "logs:PutLogEvents",
                "ec2:CreateNetworkInterface",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeSubnets",
                "ec2:DeleteNetworkInterface",
                "ec2:AssignPrivateIpAddresses",
                "ec2:UnassignPrivateIpAddresses",
            ],
        },
    ],
    "AmazonEC2ContainerRegistryPullOnly": [
        {
            "Effect": "Allow",
            "Resource": "*",
            "Action": [
                "ecr:GetAuthorizationToken",
                "ecr:BatchCheckLayerAvailability",
                "ecr:GetDownloadUrlForLayer",
                "ecr:BatchGetImage",
                "ecr:BatchImportUpstreamImage",
            ],
        },
    ],
    "AmazonElasticContainerRegistryPublicReadOnly": [
        {
            "Effect": "Allow",
            "Resource": "*",
            "Action": [
                "ecr-public:GetAuthorizationToken",
                "sts:GetServiceBearerToken",
                "ecr-public:BatchCheckLayerAvailability",
                "ecr-public:GetRepositoryPolicy",
                "ecr-public:DescribeRepositories",
                "ecr-public:DescribeRegistries",
                "ecr-public:DescribeImages",
                "ecr-public:DescribeImageTags",
                "ecr-public:GetRepositoryCatalogData",
                "ecr-public:GetRegistryCatalogData",
            ],
        },
    ],
}
#: IAM actions whose name is not ``<prefix>:<Operation>`` (Service Authorization Reference).
IAM_ACTION_EXCEPTIONS: dict[str, tuple[str, ...]] = {
    "lambda:Invoke": ("lambda:InvokeFunction",),
    "s3:ListObjectsV2": ("s3:ListBucket",),
    "s3:ListObjects": ("s3:ListBucket",),
    "s3:HeadBucket": ("s3:ListBucket",),
    "s3:HeadObject": ("s3:GetObject",),
    "s3:DeleteObjects": ("s3:DeleteObject",),
    "s3:CopyObject": ("s3:GetObject", "s3:PutObject"),
    "s3:CreateMultipartUpload": ("s3:PutObject",),
    "s3:UploadPart": ("s3:PutObject",),
    "s3:CompleteMultipartUpload": ("s3:PutObject",),
    "s3:AbortMultipartUpload": ("s3:AbortMultipartUpload",),
    "sqs:SendMessageBatch": ("sqs:SendMessage",),
    "sqs:DeleteMessageBatch": ("sqs:DeleteMessage",),
    "sqs:ChangeMessageVisibilityBatch": ("sqs:ChangeMessageVisibility",),
    # Needs no permission (it answers who the caller is, even when everything else is denied).
    "sts:GetCallerIdentity": (),
}
#: Signing names that are not the IAM prefix.
IAM_PREFIX_EXCEPTIONS = {"monitoring": "cloudwatch"}


# ----------------------------------------------------------------------------------------------------------- matching


def _glob(pattern: str, *, ignore_case: bool) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(f"^{body}$", re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL)


def _matches(patterns: Any, value: str, *, ignore_case: bool) -> bool:
    items = patterns if isinstance(patterns, list) else [patterns]
    return any(isinstance(p, str) and _glob(p, ignore_case=ignore_case).match(value) for p in items)


def _applies(statement: Mapping[str, Any], action: str, resource: str) -> bool:
    if "Action" in statement:
        if not _matches(statement["Action"], action, ignore_case=True):
            return False
    elif "NotAction" not in statement or _matches(statement["NotAction"], action, ignore_case=True):
        return False
    if "Resource" in statement:
        return _matches(statement["Resource"], resource, ignore_case=False)
    return "NotResource" in statement and not _matches(statement["NotResource"], resource, ignore_case=False)


def allowed(statements: Iterable[Mapping[str, Any]], action: str, resource: str) -> bool:
    """IAM's identity-policy decision for one action on one resource (``*`` in ``resource`` is literal)."""
    listed = list(statements)
    if any(s.get("Effect") == "Deny" and _applies(s, action, resource) for s in listed):
        return False
    return any(s.get("Effect") == "Allow" and _applies(s, action, resource) for s in listed)


def granted_somewhere(statements: Iterable[Mapping[str, Any]], action: str) -> bool:
    """Whether some ``Allow`` grants ``action`` on some resource (and no ``Deny`` of it on everything)."""
    listed = list(statements)
    if any(
        s.get("Effect") == "Deny" and _applies(s, action, "*") and _matches(s.get("Resource"), "*", ignore_case=False)
        for s in listed
    ):
        return False
    for s in listed:
        if s.get("Effect") != "Allow":
            continue
        if "Action" in s and not _matches(s["Action"], action, ignore_case=True):
            continue
        if "Action" not in s and ("NotAction" not in s or _matches(s["NotAction"], action, ignore_case=True)):
            continue
        if "Resource" in s and any(
            isinstance(r, str) for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
        ):
            return True
        if "NotResource" in s:
            return True
    return False


# ------------------------------------------------------------------------------------------------------ botocore model


@cache
def _model(service: str) -> Any:
    return botocore_session().get_service_model(service)


@cache
def operations(service: str) -> dict[str, str]:
    """snake_case method name -> Operation name."""
    from botocore import xform_name

    return {xform_name(op): op for op in _model(service).operation_names}


@cache
def waiters(service: str) -> dict[str, str]:
    """snake_case waiter name -> the operation it polls."""
    from botocore import xform_name

    try:
        model = botocore_session().get_waiter_model(service)
    except Exception:  # a service without waiters
        return {}
    return {xform_name(name): model.get_waiter(name).operation for name in model.waiter_names}


def iam_prefix(service: str) -> str:
    """The IAM action prefix of a botocore service (its signing name, with IAM's exceptions)."""
    model = _model(service)
    name = str(model.signing_name or model.endpoint_prefix)
    return IAM_PREFIX_EXCEPTIONS.get(name, name)


def iam_actions(service: str, operation: str) -> tuple[str, ...]:
    """The IAM actions one API operation needs."""
    action = f"{iam_prefix(service)}:{operation}"
    return IAM_ACTION_EXCEPTIONS.get(action, (action,))


@cache
def _sdk_service_names() -> dict[str, str]:
    """AWS SDK (JavaScript v2/v3) service names, lower case without spaces, -> botocore's service name."""
    names: dict[str, str] = {}
    for service in sdk_services():
        model = _model(service)
        names[model.service_id.replace(" ", "").lower()] = service
        names.setdefault(service.replace("-", "").lower(), service)
    return names


def sdk_call_actions(service: str, action: str) -> tuple[str, ...]:
    """The IAM actions of an ``AwsCustomResource`` call (``{"service": "ECR", "action": "describeImages"}``)."""
    key = service.removeprefix("@aws-sdk/client-").replace("-", "").replace(" ", "").lower()
    direct = {name.replace("-", ""): name for name in sdk_services()}  # most SDK names are botocore's (ECR, SSM)
    botocore_name = direct.get(key) or _sdk_service_names().get(key)  # else by service id (CloudWatchLogs: logs)
    if botocore_name is None:
        raise KeyError(f"unknown SDK service {service!r}")
    operation = action[0].upper() + action[1:]
    if operation.endswith("Command"):
        operation = operation.removesuffix("Command")
    return iam_actions(botocore_name, operation)

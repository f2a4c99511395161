"""A deploy-time function that owns one SSM parameter (the mirrored signing keys, the RDS CA bundle).

Both carry the same shared modules (the owned parameter's labelled history, CloudFormation's response protocol), are
granted the same rights on their parameter and their stack's status (a rollback restores from the history instead of
fetching again), and put the same digest on their custom resource, so changed code runs again at the next deploy.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from aws_cdk import Duration, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.constructs.functions import CFN_RESPONSE, OWNED_PARAMETER, handler_sha256, python_function, settings_code
from infra.permissions import grant_owned_parameter

#: The modules of ``infra.functions`` every owner of a parameter carries beside its ``index.py``.
SHARED: Final = (OWNED_PARAMETER, CFN_RESPONSE)


def owned_parameter_function(
    scope: Construct,
    construct_id: str,
    *,
    source: Path,
    parameter_name: str,
    description: str,
    timeout: Duration,
    logs_key: kms.IKey,
    log_group_id: str,
    environment: Mapping[str, str] | None = None,
    read: bool = False,
) -> lambda_.Function:
    """The function in ``source``, owning ``parameter_name`` (and reading its value when ``read``). The grant names the
    parameter by its configured name, not a resource's attribute: the policy must exist before the resource."""
    function = python_function(
        scope,
        construct_id,
        log_group_id=log_group_id,
        source=source,
        description=description,
        timeout=timeout,
        logs_key=logs_key,
        code=settings_code(source, shared=SHARED),
        environment=environment,
    )
    parameter_arn = Stack.of(scope).format_arn(
        service="ssm", resource="parameter", resource_name=parameter_name.lstrip("/")
    )
    grant_owned_parameter(scope, function, parameter_arn, read=read)
    return function


def owned_parameter_digest(source: Path) -> str:
    """The ``HandlerSha256`` property of the custom resource ``source``'s function serves."""
    return handler_sha256(source, *SHARED)

"""Own a log group that a service creates by itself: create it if it is missing, then set retention and the key.

AgentCore writes a runtime endpoint's logs to ``/aws/bedrock-agentcore/runtimes/<id>-<endpoint>``, RDS its log
exports to ``/aws/rds/...`` and Lambda to ``/aws/lambda/<name>`` for functions whose template this project does not
write (the rotation functions); each creates the group when it first writes, kept forever and unencrypted. When that
happens is not documented for all of them (for AgentCore's ``-DEFAULT`` group public reports disagree: at runtime
creation, or at the first invocation), so a plain ``AWS::Logs::LogGroup`` of that name can fail with AlreadyExists and
roll the stack back. This custom resource is idempotent instead: CreateLogGroup (ResourceAlreadyExistsException is
success), then PutRetentionPolicy, and AssociateKmsKey when the group existed without this key; the group keeps
whatever the service already wrote. CloudWatch Logs encrypts with the key under the key's own policy (the logs service
principal for this account's log groups), so the function needs only the logs actions.

Delete removes the group only when ``RemoveOnDelete`` is ``"true"`` (groups of resources that are deleted with the
stack); a missing group is no error.
"""

from __future__ import annotations

import contextlib
from typing import Any

import boto3

from infra.functions import cfn_response


def on_event(event: dict[str, Any], logs: Any) -> str:
    """Create/update: make sure the group exists with the retention and key asked for; delete: remove it if asked.
    Returns the physical id (the group's name)."""
    properties = event["ResourceProperties"]
    name = str(properties["LogGroupName"])
    if event["RequestType"] == "Delete":
        if properties.get("RemoveOnDelete") == "true" and event.get("PhysicalResourceId") == name:
            with contextlib.suppress(logs.exceptions.ResourceNotFoundException):
                logs.delete_log_group(logGroupName=name)
        return str(event.get("PhysicalResourceId") or name)
    key = properties["KmsKeyArn"]
    try:
        logs.create_log_group(logGroupName=name, kmsKeyId=key)
        created = True
    except logs.exceptions.ResourceAlreadyExistsException:
        created = False  # the service was first: keep what it wrote
    logs.put_retention_policy(logGroupName=name, retentionInDays=int(properties["RetentionInDays"]))
    if not created and current_key(logs, name) != key:
        logs.associate_kms_key(logGroupName=name, kmsKeyId=key)
    return name


def current_key(logs: Any, name: str) -> str | None:
    """The KMS key of the group called name (None if it has none)."""
    for page in logs.get_paginator("describe_log_groups").paginate(logGroupNamePrefix=name):
        for group in page["logGroups"]:
            if group["logGroupName"] == name:
                key: str | None = group.get("kmsKeyId")
                return key
    return None


def handler(
    event: dict[str, Any], context: Any, *, logs: Any = None, respond: cfn_response.Respond = cfn_response.send_response
) -> dict[str, Any]:
    """CloudFormation custom resource entry point; always answers CloudFormation (or the stack waits an hour)."""
    del context
    return cfn_response.answer(
        event, lambda: (on_event(event, logs or boto3.client("logs")), {}), message="log group", respond=respond
    )

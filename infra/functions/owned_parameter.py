"""An SSM parameter that a deploy-time custom resource fills from outside (an issuer's keys, AWS's CA bundle) and whose
rollback reads nothing from outside.

CloudFormation rolls a failed update back by sending the custom resource another Update, with the previous
properties. A handler that fetched again would make the rollback depend on the outside source: down, it fails the
rollback too (UPDATE_ROLLBACK_FAILED); changed, the rollback stores content no deploy checked. So every write labels
the new parameter version with :func:`content_label` of what decided the content (the URL it came from), and during a
rollback (the stack in ``UPDATE_ROLLBACK_IN_PROGRESS``) :func:`roll_back` puts back the version last labelled for the
old properties: SSM's own version history, no fetch. Only without such a version (content written before the labels
existed: the rollback of the first update to this code) does a handler fetch as before.

A Delete (:func:`release`) never fails the stack and never removes what another resource still uses: a parameter this
resource did not create, or one another resource of the stack now holds under the same name (a renamed construct:
the old resource's cleanup after the new one took the name over, or the new one's delete when the update rolls back).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping
from typing import Any

#: The stack status during which CloudFormation's Updates are a rollback's.
ROLLBACK_STATUS = "UPDATE_ROLLBACK_IN_PROGRESS"


def content_label(*inputs: str) -> str:
    """The version label of content decided by ``inputs`` (SSM labels: letters, digits, ``.-_``, up to 100)."""
    return "content-" + hashlib.sha256("\n".join(inputs).encode()).hexdigest()[:32]


def ssm_client() -> Any:
    import boto3

    return boto3.client("ssm")


def cloudformation_client() -> Any:
    import boto3

    return boto3.client("cloudformation")


def write(name: str, value: str, label: str, description: str = "", *, ssm: Any = None) -> None:
    """Store ``value`` as the parameter's new version (``description`` beside it, e.g. what the content came from)
    and label that version ``label`` (the label moves to it)."""
    ssm = ssm or ssm_client()
    extra = {"Description": description} if description else {}
    put = {"Name": name, "Value": value, "Overwrite": True, "Tier": "Advanced", "Type": "String", **extra}
    try:
        version = ssm.put_parameter(**put)["Version"]
    except ssm.exceptions.ParameterMaxVersionLimitExceeded:
        # SSM keeps 100 versions and drops the oldest, unless it is labelled: forget the oldest content's label.
        oldest = _history(ssm, name)[0]
        ssm.unlabel_parameter_version(Name=name, ParameterVersion=oldest["Version"], Labels=oldest["Labels"])
        version = ssm.put_parameter(**put)["Version"]
    label_current(name, label, version, ssm=ssm)


def label_current(name: str, label: str, version: int, *, ssm: Any = None) -> None:
    """Label ``version`` (content already stored, unchanged) ``label``; the label moves to it."""
    (ssm or ssm_client()).label_parameter_version(Name=name, ParameterVersion=version, Labels=[label])


def _history(ssm: Any, name: str) -> list[dict[str, Any]]:
    """The parameter's versions, oldest first."""
    pages = ssm.get_paginator("get_parameter_history").paginate(Name=name)
    return [v for page in pages for v in page["Parameters"]]


def is_rollback(stack_id: str, cloudformation: Any = None) -> bool:
    """Whether the stack that sent the event is rolling an update back."""
    cloudformation = cloudformation or cloudformation_client()
    (stack,) = cloudformation.describe_stacks(StackName=stack_id)["Stacks"]
    return bool(stack["StackStatus"] == ROLLBACK_STATUS)


def roll_back(name: str, label: str, *, ssm: Any = None) -> dict[str, Any] | None:
    """Make the version last labelled ``label`` current again (written anew when a later one is current) and answer
    it (``Value``, ``Description``); ``None`` when no version has the label (the parameter is left as it is)."""
    ssm = ssm or ssm_client()
    try:
        versions = _history(ssm, name)
    except ssm.exceptions.ParameterNotFound:
        return None
    labelled = [v for v in versions if label in v.get("Labels", [])]
    if not labelled:
        return None
    kept: dict[str, Any] = labelled[-1]
    if kept["Version"] != max(v["Version"] for v in versions):
        write(name, kept["Value"], label, kept.get("Description", ""), ssm=ssm)
    return kept


def release(event: Mapping[str, Any], *, ssm: Any = None, cloudformation: Any = None) -> str:
    """A Delete's work: remove the parameter when this resource created it (its physical id is the name) and no other
    resource of the stack holds that name; answer the physical id. Never raises: a failed Delete would leave the
    stack in DELETE_FAILED or ROLLBACK_FAILED, while a parameter left behind is logged and harmless (a later Create
    overwrites it)."""
    physical_id = str(event.get("PhysicalResourceId") or event["LogicalResourceId"])
    name = event["ResourceProperties"].get("ParameterName")
    if physical_id != name:  # a failed create's id, or a replaced resource's properties: not this resource's
        return physical_id
    ssm = ssm or ssm_client()
    try:
        holder = _other_holder(event, cloudformation or cloudformation_client())
        if holder is None:
            with contextlib.suppress(ssm.exceptions.ParameterNotFound):
                ssm.delete_parameter(Name=name)
            return physical_id
        outcome = f"kept: {holder} holds it"
    except Exception as exc:  # a Delete must not fail the stack; the parameter stays, logged
        outcome = f"kept: {type(exc).__name__}: {exc}"
    print(json.dumps({"message": "parameter not deleted", "parameter": name, "outcome": outcome[:1000]}))
    return physical_id


def _other_holder(event: Mapping[str, Any], cloudformation: Any) -> str | None:
    """The logical id of another resource of the event's stack, not being deleted, whose physical id is this one's."""
    pages = cloudformation.get_paginator("list_stack_resources").paginate(StackName=event["StackId"])
    for page in pages:
        for resource in page["StackResourceSummaries"]:
            if (
                resource.get("PhysicalResourceId") == event["PhysicalResourceId"]
                and resource["LogicalResourceId"] != event["LogicalResourceId"]
                and not resource["ResourceStatus"].startswith("DELETE_")
            ):
                return str(resource["LogicalResourceId"])
    return None

"""CloudFormation's custom resource protocol for the functions that CloudFormation invokes directly (no CDK provider
framework in between): answer the pre-signed URL once, success or failure.

An unanswered event keeps the stack waiting an hour; a raised exception makes Lambda retry the event. So the handler
answers every event, a failure as ``FAILED`` with the exception as the reason (CloudFormation shows it in the stack's
events; the answer must stay under 4 KB, hence :data:`MAX_REASON_CHARS`).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

#: A failure's reason is cut to this many characters (the whole answer must stay under 4 KB).
MAX_REASON_CHARS = 1000

#: Sends the answer: ``(ResponseURL, body)``; tests pass one that records it.
Respond = Callable[[str, dict[str, Any]], None]
#: Runs the event: ``(physical id, attributes)``.
Run = Callable[[], tuple[str, Mapping[str, str]]]


def send_response(url: str, body: dict[str, Any]) -> None:
    """PUT the custom resource's result to CloudFormation's pre-signed URL (the functions run outside the VPC)."""
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="PUT", headers={"Content-Type": ""})  # noqa: S310
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (CloudFormation's https URL)
        response.read()


def reason(exc: BaseException) -> str:
    """A failure's reason for CloudFormation: the exception's type and message, cut to :data:`MAX_REASON_CHARS`."""
    return f"{type(exc).__name__}: {exc}"[:MAX_REASON_CHARS]


def answer(event: Mapping[str, Any], run: Run, *, message: str, respond: Respond = send_response) -> dict[str, Any]:
    """Run the event and answer CloudFormation with its outcome (``run``'s physical id and attributes, or its
    exception as a ``FAILED`` reason); logs one line ``message`` and returns ``{"status": ...}``."""
    body: dict[str, Any] = {
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
        "PhysicalResourceId": event.get("PhysicalResourceId") or event["LogicalResourceId"],
    }
    try:
        physical_id, data = run()
        body.update(Status="SUCCESS", PhysicalResourceId=physical_id, Data=dict(data))
    except Exception as exc:  # every failure must reach CloudFormation
        body.update(Status="FAILED", Reason=reason(exc))
    print(json.dumps({"message": message, "type": event["RequestType"], "status": body["Status"]}))
    # Answered, not raised: a raise would make Lambda retry the event; the failed deploy is the signal.
    respond(event["ResponseURL"], body)
    return {"status": body["Status"]}

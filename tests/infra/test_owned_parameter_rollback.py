"""The custom resources that fill an SSM parameter from outside (the issuer's signing keys, AWS's RDS CA bundle) roll
back without asking the outside again: CloudFormation's rollback is another Update with the old properties, sent
while the stack is ``UPDATE_ROLLBACK_IN_PROGRESS`` (moto's CloudFormation and SSM; the outside source is down)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from infra.functions import owned_parameter
from infra.functions.jwks_mirror import index as mirror
from infra.functions.rds_ca import index as rds_ca

NAME = "/p/dev/identity/jwks"
KEY_A = {"kty": "RSA", "kid": "a1", "n": "abc", "e": "AQAB", "use": "sig"}
KEY_B = {**KEY_A, "kid": "b1"}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """moto's SSM, and a stack of moto's CloudFormation whose status a test sets: (ssm client, stack)."""
    import boto3
    from moto import mock_aws
    from moto.cloudformation.models import cloudformation_backends

    for variable, value in (
        ("AWS_DEFAULT_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "t"),
        ("AWS_SECRET_ACCESS_KEY", "t"),
    ):
        monkeypatch.setenv(variable, value)
    with mock_aws():
        template = json.dumps({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}})
        stack_id = boto3.client("cloudformation").create_stack(StackName="s", TemplateBody=template)["StackId"]
        (backend,) = [regions["us-east-1"] for regions in cloudformation_backends.values() if "us-east-1" in regions]
        yield boto3.client("ssm"), backend.stacks[stack_id]


def _issuer(name: str, key: dict[str, Any]) -> dict[str, Any]:
    base = f"https://{name}.example.com/pool"
    return {
        base + mirror.DISCOVERY_SUFFIX: {"issuer": base + "/", "jwks_uri": base + "/jwks"},
        base + "/jwks": {"keys": [key]},
    }


def _down(url: str) -> Any:
    raise OSError(f"connection refused: {url}")


def _mirror_event(stack: Any, request: str, issuer: str, **extra: Any) -> dict[str, Any]:
    url = f"https://{issuer}.example.com/pool" + mirror.DISCOVERY_SUFFIX
    return {
        "RequestType": request,
        "ResponseURL": "https://cloudformation-response.example.com/signed",
        "StackId": stack.stack_id,
        "RequestId": "r",
        "LogicalResourceId": "IdentityKeys",
        "ResourceProperties": {"DiscoveryUrl": url, "ParameterName": NAME, "HandlerSha256": "h"},
        **extra,
    }


def _run(event: dict[str, Any], ssm: Any, fetch: Any) -> dict[str, Any]:
    answers: list[dict[str, Any]] = []
    mirror.handler(event, None, ssm=ssm, fetch=fetch, respond=lambda _url, body: answers.append(body))
    (answer,) = answers
    return answer


def _keys(ssm: Any) -> list[str]:
    return [k["kid"] for k in json.loads(ssm.get_parameter(Name=NAME)["Parameter"]["Value"])["keys"]]


def test_a_rollback_puts_back_the_old_issuers_keys_without_asking_it(aws: tuple[Any, Any]) -> None:
    ssm, stack = aws
    docs = {**_issuer("a", KEY_A), **_issuer("b", KEY_B)}
    # GIVEN issuer a deployed, then an update to issuer b that succeeded before another resource failed
    assert _run(_mirror_event(stack, "Create", "a"), ssm, docs.__getitem__)["Status"] == "SUCCESS"
    stack.status = "UPDATE_IN_PROGRESS"
    assert _run(_mirror_event(stack, "Update", "b", PhysicalResourceId=NAME), ssm, docs.__getitem__)["Status"] == (
        "SUCCESS"
    )
    assert _keys(ssm) == ["b1"]
    # WHEN CloudFormation rolls back to issuer a while every issuer is down
    stack.status = "UPDATE_ROLLBACK_IN_PROGRESS"
    answer = _run(_mirror_event(stack, "Update", "a", PhysicalResourceId=NAME), ssm, _down)
    # THEN the rollback succeeds with a's keys and a's issuer (its trailing slash included), asking nobody
    assert answer["Status"] == "SUCCESS", answer.get("Reason")
    assert answer["Data"] == {"Issuer": "https://a.example.com/pool/", "ParameterName": NAME}
    assert _keys(ssm) == ["a1"]


def test_the_rollback_of_a_failed_fetch_leaves_the_parameter_alone(aws: tuple[Any, Any]) -> None:
    ssm, stack = aws
    assert _run(_mirror_event(stack, "Create", "a"), ssm, _issuer("a", KEY_A).__getitem__)["Status"] == "SUCCESS"
    version = ssm.get_parameter(Name=NAME)["Parameter"]["Version"]
    # GIVEN an update to an issuer that is down: the deploy fails, the keys stay
    stack.status = "UPDATE_IN_PROGRESS"
    assert _run(_mirror_event(stack, "Update", "b", PhysicalResourceId=NAME), ssm, _down)["Status"] == "FAILED"
    # WHEN it rolls back to issuer a, down too THEN it succeeds and writes nothing (no new version: no task restart)
    stack.status = "UPDATE_ROLLBACK_IN_PROGRESS"
    answer = _run(_mirror_event(stack, "Update", "a", PhysicalResourceId=NAME), ssm, _down)
    assert answer["Status"] == "SUCCESS", answer.get("Reason")
    assert ssm.get_parameter(Name=NAME)["Parameter"]["Version"] == version
    assert answer["Data"]["Issuer"] == "https://a.example.com/pool/"


def test_a_forward_update_to_an_earlier_issuer_fetches_its_current_keys(aws: tuple[Any, Any]) -> None:
    ssm, stack = aws
    rotated = {**KEY_A, "kid": "a2"}
    assert _run(_mirror_event(stack, "Create", "a"), ssm, _issuer("a", KEY_A).__getitem__)["Status"] == "SUCCESS"
    stack.status = "UPDATE_IN_PROGRESS"
    _run(_mirror_event(stack, "Update", "b", PhysicalResourceId=NAME), ssm, _issuer("b", KEY_B).__getitem__)
    # An update (not a rollback) back to a stores a's keys of today, not the ones kept in the history.
    _run(_mirror_event(stack, "Update", "a", PhysicalResourceId=NAME), ssm, _issuer("a", rotated).__getitem__)
    assert _keys(ssm) == ["a2"]


def test_the_schedules_refresh_keeps_the_rollback_point_current(
    aws: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    ssm, stack = aws
    docs = _issuer("a", KEY_A)
    assert _run(_mirror_event(stack, "Create", "a"), ssm, docs.__getitem__)["Status"] == "SUCCESS"
    # GIVEN the issuer rotated and the schedule mirrored the new key
    rotated = _issuer("a", {**KEY_A, "kid": "a2"})
    monkeypatch.setenv("PARAMETER_NAME", NAME)
    monkeypatch.setenv("DISCOVERY_URL", _mirror_event(stack, "Create", "a")["ResourceProperties"]["DiscoveryUrl"])
    assert mirror.handler({}, None, ssm=ssm, fetch=rotated.__getitem__) == {"changed": True}
    # WHEN a failed update rolls back THEN the rotated key stays (not the deploy's older one)
    stack.status = "UPDATE_ROLLBACK_IN_PROGRESS"
    assert _run(_mirror_event(stack, "Update", "a", PhysicalResourceId=NAME), ssm, _down)["Status"] == "SUCCESS"
    assert _keys(ssm) == ["a2"]


def test_the_rds_bundle_rolls_back_without_downloading(aws: tuple[Any, Any]) -> None:
    ssm, stack = aws
    pem = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ0FRB29vdA==\n-----END CERTIFICATE-----\n"
    answers: list[dict[str, Any]] = []
    event = {
        **_mirror_event(stack, "Create", "a"),
        "ResourceProperties": {"BundleUrl": "https://truststore.example/r.pem", "ParameterName": "/p/ca"},
    }
    respond = lambda _url, body: answers.append(body)  # noqa: E731
    rds_ca.handler(event, None, ssm=ssm, download=lambda _url: pem, respond=respond)
    # GIVEN an update to another bundle URL (a new region's store) that stored it, then a rollback with the store down
    other = {**event, "RequestType": "Update", "PhysicalResourceId": "/p/ca"}
    other["ResourceProperties"] = {**event["ResourceProperties"], "BundleUrl": "https://truststore.example/s.pem"}
    stack.status = "UPDATE_IN_PROGRESS"
    rds_ca.handler(other, None, ssm=ssm, download=lambda _url: pem + pem, respond=respond)
    stack.status = "UPDATE_ROLLBACK_IN_PROGRESS"
    back = {**other, "ResourceProperties": event["ResourceProperties"]}
    rds_ca.handler(back, None, ssm=ssm, download=_down, respond=respond)
    # THEN the rollback succeeds with the old URL's bundle
    assert [a["Status"] for a in answers] == ["SUCCESS", "SUCCESS", "SUCCESS"], answers[-1].get("Reason")
    assert ssm.get_parameter(Name="/p/ca")["Parameter"]["Value"] == pem
    assert answers[-1]["Data"]["Certificates"] == "1"


def test_a_labelled_oldest_version_does_not_stop_the_hundredth_write(aws: tuple[Any, Any]) -> None:
    ssm, _ = aws
    # SSM keeps 100 versions and refuses a new one while the oldest carries a label (ParameterMaxVersionLimitExceeded).
    owned_parameter.write(NAME, "v0", owned_parameter.content_label("old"), ssm=ssm)
    for n in range(1, 101):
        owned_parameter.write(NAME, f"v{n}", owned_parameter.content_label("new"), ssm=ssm)
    assert ssm.get_parameter(Name=NAME)["Parameter"]["Value"] == "v100"


def _stack_holding(name: str) -> str:
    """A stack (moto's CloudFormation) in which another resource, ``IdentityKeysBefore``, has ``name`` as physical
    id: what a renamed construct leaves while its old and new resources both exist (moto makes it a plain
    ``AWS::SSM::Parameter``; the check compares only logical and physical ids)."""
    import boto3

    old = {"Type": "AWS::SSM::Parameter", "Properties": {"Name": name, "Type": "String", "Value": "v"}}
    template = json.dumps({"Resources": {"IdentityKeysBefore": old}})
    return str(boto3.client("cloudformation").create_stack(StackName="renamed", TemplateBody=template)["StackId"])


def test_a_delete_leaves_the_parameter_another_resource_of_the_stack_holds(aws: tuple[Any, Any]) -> None:
    ssm, _ = aws
    # GIVEN the construct renamed: a new resource (IdentityKeys) created under the same parameter name
    stack = SimpleNamespace(stack_id=_stack_holding(NAME))
    assert _run(_mirror_event(stack, "Create", "a"), ssm, _issuer("a", KEY_A).__getitem__)["Status"] == "SUCCESS"
    # WHEN the update fails and CloudFormation deletes the new resource (or, had it succeeded, the old one)
    answer = _run(_mirror_event(stack, "Delete", "a", PhysicalResourceId=NAME), ssm, _down)
    # THEN the delete succeeds and the parameter the remaining resource uses stays
    assert answer["Status"] == "SUCCESS", answer.get("Reason")
    assert _keys(ssm) == ["a1"]


def test_a_delete_that_cannot_check_the_stack_succeeds_and_keeps_the_parameter(aws: tuple[Any, Any]) -> None:
    ssm, stack = aws
    assert _run(_mirror_event(stack, "Create", "a"), ssm, _issuer("a", KEY_A).__getitem__)["Status"] == "SUCCESS"
    # WHEN the stack's resources cannot be listed (here: an unknown stack; in an account, say, throttling)
    gone = SimpleNamespace(stack_id="arn:aws:cloudformation:us-east-1:123456789012:stack/gone/1")
    answer = _run(_mirror_event(gone, "Delete", "a", PhysicalResourceId=NAME), ssm, _down)
    # THEN the stack is not blocked (DELETE_FAILED, ROLLBACK_FAILED) and nothing is removed on a guess
    assert answer["Status"] == "SUCCESS", answer.get("Reason")
    assert _keys(ssm) == ["a1"]


def test_the_rollback_of_a_renamed_parameter_deletes_only_the_new_one(aws: tuple[Any, Any]) -> None:
    ssm, stack = aws
    bundle = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ0FRB29vdA==\n-----END CERTIFICATE-----\n"
    first = {
        **_mirror_event(stack, "Create", "a"),
        "ResourceProperties": {"BundleUrl": "https://truststore.example/r.pem", "ParameterName": "/p/ca"},
    }
    answers: list[dict[str, Any]] = []
    respond = lambda _url, body: answers.append(body)  # noqa: E731
    rds_ca.handler(first, None, ssm=ssm, download=lambda _url: bundle, respond=respond)
    # GIVEN an update to another parameter name: a new physical id, so CloudFormation treats it as a replacement
    renamed = {**first, "RequestType": "Update", "PhysicalResourceId": "/p/ca"}
    renamed["ResourceProperties"] = {**first["ResourceProperties"], "ParameterName": "/q/ca"}
    rds_ca.handler(renamed, None, ssm=ssm, download=lambda _url: bundle, respond=respond)
    assert answers[-1]["PhysicalResourceId"] == "/q/ca"
    # WHEN the update rolls back: CloudFormation keeps the old resource and deletes the new physical id (with the
    # new properties); with the old properties (never the case, but harmless) nothing is deleted either
    rds_ca.handler({**renamed, "RequestType": "Delete", "PhysicalResourceId": "/q/ca"}, None, ssm=ssm, respond=respond)
    rds_ca.handler({**first, "RequestType": "Delete", "PhysicalResourceId": "/q/ca"}, None, ssm=ssm, respond=respond)
    # THEN the old parameter stays untouched and the new one is gone
    assert [a["Status"] for a in answers] == ["SUCCESS"] * 4, answers[-1].get("Reason")
    assert ssm.get_parameter(Name="/p/ca")["Parameter"]["Value"] == bundle
    assert [p["Name"] for p in ssm.describe_parameters()["Parameters"]] == ["/p/ca"]

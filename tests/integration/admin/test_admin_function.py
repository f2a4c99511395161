"""The admin function's handlers (infra/functions/memory_admin) against the real local Hindsight, with the AWS APIs
it calls (Secrets Manager, S3 with a KMS key) served by moto."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from infra.functions.memory_admin import index
from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.admin import OperatorClient
from memory_adapter.observability import short_hash
from memory_adapter.transport import HttpTransport
from tests.integration.admin.conftest import FailingDelete, Users

pytestmark = pytest.mark.integration

ROLE = "arn:aws:sts::123456789012:assumed-role/MemoryOperators/alex"


@dataclass
class LambdaContext:
    function_name: str = "memory-admin"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:memory-admin"
    aws_request_id: str = "req-1"


@pytest.fixture
def aws(local_hindsight: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "HindsightMemoryTest")
    with mock_aws():
        key = boto3.client("kms").create_key()["KeyMetadata"]["Arn"]
        boto3.client("s3").create_bucket(Bucket="memory-admin")
        secret = boto3.client("secretsmanager").create_secret(Name="op", SecretString=local_hindsight.operator_key)
        env = {
            "HINDSIGHT_API_URL": local_hindsight.url,
            "OPERATOR_KEY_SECRET_ARN": secret["ARN"],
            "ADMIN_BUCKET": "memory-admin",
            "ADMIN_BUCKET_KEY_ARN": key,
            "MEMORY_RETENTION_DAYS": json.dumps({"plan": 30}),
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        index._deps.cache_clear()
        yield boto3.client("s3")
        index._deps.cache_clear()


def _url_event(body: Any, *, principal: str | None = ROLE) -> dict[str, Any]:
    context: dict[str, Any] = {"http": {"method": "POST"}}
    if principal is not None:
        context["authorizer"] = {"iam": {"userArn": principal, "accountId": "123456789012"}}
    return {"requestContext": context, "body": body if isinstance(body, str) else json.dumps(body)}


def test_export_through_the_function_url_lands_encrypted_in_the_bucket(aws: Any, users: Users) -> None:
    users.retain("oli", "Oli plays the trumpet.")
    answer = index.handler(_url_event({"action": "export", "user": users.name("oli")}), LambdaContext())
    assert answer["statusCode"] == 200
    result = json.loads(answer["body"])
    head = aws.head_object(Bucket="memory-admin", Key=result["key"])
    assert head["ServerSideEncryption"] == "aws:kms"
    body = aws.get_object(Bucket="memory-admin", Key=result["key"])["Body"].read().decode()
    assert "trumpet" in body
    assert json.loads(body.splitlines()[0])["requested_by"] == ROLE


def test_the_function_url_refuses_what_it_cannot_attribute_or_parse(aws: Any, users: Users) -> None:
    assert (
        index.handler(_url_event({"action": "banks", "user": "x"}, principal=None), LambdaContext())["statusCode"]
        == 403
    )
    bad = index.handler(_url_event("{not json"), LambdaContext())
    assert bad["statusCode"] == 400
    assert "not JSON" in json.loads(bad["body"])["message"]
    users.retain("pia", "Pia's bike is red.")
    refused = index.handler(_url_event({"action": "forget-user", "user": users.name("pia")}), LambdaContext())
    assert refused["statusCode"] == 409
    assert users.recall("pia", "bike colour")


def test_a_partial_erasure_through_the_function_url_answers_502_with_its_receipt_and_a_re_run_completes(
    aws: Any, users: Users, local_hindsight: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN quinn with two banks, and Hindsight failing the delete of his travel bank once
    users.retain("quinn", "Quinn's desk is on floor 3.")
    users.retain("quinn", "Quinn travels to Rome in May.", agent="travel")
    quinn, travel = users.name("quinn"), users.bank("quinn", "travel")
    deps = index._deps()
    failing = OperatorClient(
        local_hindsight.url, local_hindsight.operator_key, transport=FailingDelete(local_hindsight.url, travel)
    )
    request = _url_event({"action": "forget-user", "user": quinn, "confirm": quinn})
    # WHEN quinn is forgotten through the function URL
    with monkeypatch.context() as patched:
        patched.setattr(index, "_deps", lambda: dataclasses.replace(deps, client=failing))
        answer = index.handler(request, LambdaContext())
    # THEN it answers 502 erasure_incomplete with the receipt, written to the bucket (partial, the travel bank failed)
    assert answer["statusCode"] == 502
    body = json.loads(answer["body"])
    assert body["error"] == "erasure_incomplete"
    first = body["receipt"]
    assert (first["outcome"], [f["bank_id"] for f in first["failed"]]) == ("partial", [travel])
    stored = json.loads(aws.get_object(Bucket="memory-admin", Key=first["key"])["Body"].read())
    assert stored["outcome"] == "partial"
    # WHEN it is run again, THEN it completes and names the partial receipt (found in the bucket) it continues
    again = index.handler(request, LambdaContext())
    assert again["statusCode"] == 200
    result = json.loads(again["body"])
    assert (result["outcome"], result["continues"]) == ("complete", first["key"])
    assert deps.client.bank_stats(travel) is None


def test_scheduled_expiry_and_backup(aws: Any, users: Users, capsys: pytest.CaptureFixture[str]) -> None:
    users.retain("quinn", "Quinn plans to repaint the kitchen.", kind="plan")
    event = {"resources": ["arn:aws:events:us-east-1:123456789012:rule/expiry"], "detail-type": "Scheduled Event"}
    report = index.expire_handler(event, LambdaContext())
    assert report["dry_run"] is False  # nothing is 30 days old yet: the real clock
    assert report["expired"].get("plan", 0) == 0
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert any("MemoriesExpired" in line for line in emf)
    manifest = index.backup_handler(event, LambdaContext())
    assert manifest["banks"] >= 1
    key = manifest["location"].removeprefix("s3://memory-admin/")
    listed = json.loads(aws.get_object(Bucket="memory-admin", Key=key)["Body"].read())
    assert users.bank("quinn") in {b["bank_id"] for b in listed["banks"]}


def test_the_scheduled_backup_skips_and_reports_a_bank_hindsight_cannot_serve(
    aws: Any,
    users: Users,
    local_hindsight: Any,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a bank an operator named with an id that is not Latin-1 (Hindsight 1.1.0 answers 500 to its archive's
    # download: the id goes raw into a Content-Disposition header), beside a user's bank with a memory
    odd = f"bäckup-✓-{users.run}"
    operator = HindsightApi(HttpTransport(local_hindsight.url), timeout=30, bearer=local_hindsight.operator_key)
    operator.create_bank(odd, {})
    users.retain("rae", "Rae keeps bees on the roof.")
    try:
        # WHEN the scheduled backup runs
        event = {"resources": ["arn:aws:events:us-east-1:123456789012:rule/backup"], "detail-type": "Scheduled Event"}
        result = index.backup_handler(event, LambdaContext())
        # THEN the user's bank is in the backup, the odd one is reported, and the run says it is partial
        listed = json.loads(
            aws.get_object(Bucket="memory-admin", Key=result["location"].removeprefix("s3://memory-admin/"))[
                "Body"
            ].read()
        )
        assert users.bank("rae") in {b["bank_id"] for b in listed["banks"]}
        assert odd not in {b["bank_id"] for b in listed["banks"]}
        (failed,) = [f for f in result["failed"] if f["bank_id"] == odd]
        assert (failed["status"], failed["attempts"]) == (500, 1)
        assert (result["outcome"], listed["outcome"]) == ("partial", "partial")
        assert listed["failed"] == result["failed"]
        # AND a metric counts the failed banks (EMF), and the log line names the bank only by its hash
        out = capsys.readouterr()
        emf = [json.loads(line) for line in out.out.splitlines() if '"_aws"' in line]
        assert any(sum(line.get(index.METRIC_BACKUP_FAILED, [])) >= 1 for line in emf)
        logged = out.out + out.err + caplog.text
        assert short_hash(odd) in logged
        assert odd not in logged
    finally:
        operator.delete_bank(odd)  # other tests back up every bank of the shared server
    assert odd not in OperatorClient(local_hindsight.url, local_hindsight.operator_key).bank_ids()


def test_bad_settings_are_reported_at_once() -> None:
    with pytest.raises(ValueError, match="HINDSIGHT_API_URL is required") as err:
        index.FunctionSettings.from_env({"MEMORY_RETENTION_DAYS": '{"plans": 3}', "EXPIRY_BATCH_SIZE": "0"})
    for part in ("OPERATOR_KEY_SECRET_ARN", "ADMIN_BUCKET", "unknown kind 'plans'", "EXPIRY_BATCH_SIZE"):
        assert part in str(err.value)


def test_a_body_nested_past_the_parser_is_a_400_not_a_crash() -> None:
    # before: RecursionError escaped the handler, and the function URL answered AWS's own 502 with no reason
    for body in ("[" * 60_000, '{"action": ' + "[" * 60_000):
        answer = index.handler(_url_event(body), LambdaContext())
        assert answer["statusCode"] == 400
        assert "nested too deeply" in json.loads(answer["body"])["message"]

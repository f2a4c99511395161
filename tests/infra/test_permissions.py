"""Permissions as the account enforces them (tests/infra/permission_check.py): every function's role grants what its
code calls, in every variant; and the check itself fails where AWS would (the claim function without
``logs:DescribeLogGroups`` was the deploy blocker of issue 30)."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path
from typing import Any

import pytest

from infra.constructs.functions import FUNCTIONS_DIR
from tests.infra import iam_model
from tests.infra import permission_check as check
from tests.infra.code_walk import code_calls
from tests.infra.conftest import VARIANTS, Synth

CLAIM_FUNCTION = "ServiceLogGroupsFunction"


def _findings(synth: Synth, templates: dict[str, Any] | None = None) -> list[str]:
    return check.findings(
        templates or synth.templates, synth.outdir, region=synth.config.region, account=synth.config.account
    )


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_function_is_granted_what_it_calls(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    functions = check.functions(synth.templates, synth.outdir, region=synth.config.region, account=synth.config.account)
    # Every function is one the check can read (a new kind of function is a finding, not a pass) ...
    assert [(f.name, f.problems) for f in functions if f.problems] == []
    # ... it read what the claim function calls, paginator included ...
    claims = [f for f in functions if CLAIM_FUNCTION in f.logical_id]
    assert claims
    for claim in claims:
        assert {"logs:DescribeLogGroups", *check.CLAIM_ACTIONS} <= {n.action for n in claim.needs}
    # ... and every role grants what its function needs.
    assert _findings(synth) == []


def _without(templates: dict[str, Any], action: str) -> dict[str, Any]:
    """The templates with ``action`` removed from the claim function's policies (the role before the fix)."""
    changed = copy.deepcopy(templates)
    for template in changed.values():
        for logical, resource in template["Resources"].items():
            if resource["Type"] == "AWS::IAM::Policy" and logical.startswith(CLAIM_FUNCTION):
                document = resource["Properties"]["PolicyDocument"]
                document["Statement"] = [s for s in document["Statement"] if s["Action"] != action]
    return changed


def test_the_claim_function_without_describe_log_groups_fails(default: Synth) -> None:
    """The blocker of issue 30: moto passes the handler, the account refuses its paginator's DescribeLogGroups."""
    found = _findings(default, _without(default.templates, "logs:DescribeLogGroups"))
    stacks = sorted({stack for stack, t in default.templates.items() if CLAIM_FUNCTION + "D7E41BFE" in t["Resources"]})
    assert len(stacks) >= 2  # the agent's runtime groups and the database's exports
    assert len(found) == len(stacks)
    for stack, line in zip(stacks, found, strict=True):
        assert line.startswith(f"{stack}/{CLAIM_FUNCTION}")
        assert "logs:DescribeLogGroups on arn:aws:logs:us-east-1:123456789012:log-group:* not granted" in line
        assert "logs.DescribeLogGroups at index:" in line


def test_describe_log_groups_scoped_to_one_group_fails(default: Synth) -> None:
    """DescribeLogGroups cannot be scoped: a grant on the claimed groups only is still AccessDenied."""
    templates = copy.deepcopy(default.templates)
    for template in templates.values():
        for logical, resource in template["Resources"].items():
            if resource["Type"] == "AWS::IAM::Policy" and logical.startswith(CLAIM_FUNCTION):
                for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                    if statement["Action"] == "logs:DescribeLogGroups":
                        statement["Resource"] = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/*"
    found = _findings(default, templates)
    assert found
    assert all("logs:DescribeLogGroups" in line for line in found)


def test_a_claim_whose_group_is_not_granted_fails(default: Synth) -> None:
    templates = copy.deepcopy(default.templates)
    agent = next(t for name, t in templates.items() if name.endswith("-Agent"))
    for logical, resource in agent["Resources"].items():
        if resource["Type"] == "AWS::IAM::Policy" and logical.startswith(CLAIM_FUNCTION):
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                if isinstance(statement["Action"], list):  # the claims: scoped to another prefix
                    statement["Resource"] = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/other/*"
    found = _findings(default, templates)
    # CreateLogGroup stays granted on every group by AWSLambdaBasicExecutionRole (a managed policy the check reads).
    assert {line.split(": ", 1)[1].split(" ", 1)[0] for line in found} == set(check.CLAIM_ACTIONS) - {
        "logs:CreateLogGroup"
    }
    assert all("claim Agent" in line for line in found)


def _revoke(templates: dict[str, Any], function_prefix: str, action: str) -> tuple[str, dict[str, Any]]:
    """The templates with ``action`` taken out of every policy on the role of the function whose logical id starts
    with ``function_prefix`` (and the function's ``stack/logical id``)."""
    changed = copy.deepcopy(templates)
    for stack, template in changed.items():
        found = [
            k
            for k, r in template["Resources"].items()
            if r["Type"] == "AWS::Lambda::Function" and k.startswith(function_prefix)
        ]
        if not found:
            continue
        (logical,) = found
        role = check._token_target(template["Resources"][logical]["Properties"]["Role"])
        documents = [p["PolicyDocument"] for p in template["Resources"][role]["Properties"].get("Policies", [])]
        documents += [
            r["Properties"]["PolicyDocument"]
            for r in template["Resources"].values()
            if r["Type"] == "AWS::IAM::Policy" and {"Ref": role} in r["Properties"]["Roles"]
        ]
        for document in documents:
            for statement in document["Statement"]:
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                statement["Action"] = [a for a in actions if a != action] or ["none:None"]
        return f"{stack}/{logical}", changed
    raise AssertionError(f"no function {function_prefix}")


@pytest.mark.parametrize(
    ("function", "action"),
    [
        ("DatabaseLoginProviderframeworkonEvent", "lambda:InvokeFunction"),  # CDK's framework -> the user handler
        ("AWS679f53fac002430cb0da5b7982bd2287", "ecr:DescribeImages"),  # an AwsCustomResource call
        ("CustomVpcRestrictDefaultSG", "ec2:RevokeSecurityGroupEgress"),
        ("MemoryRedeployOnRotation", "ecs:UpdateService"),
        ("IdentityMirror", "ssm:PutParameter"),
        ("DatabaseCaBundleFunction", "ssm:PutParameter"),
        ("IdentityMirror", "cloudformation:DescribeStacks"),  # a rollback's Update reads no issuer (owned_parameter)
        ("DatabaseCaBundleFunction", "cloudformation:ListStackResources"),  # a Delete's check, through a paginator
        ("DatabaseCaBundleFunction", "ssm:GetParameterHistory"),  # ... and finds the old content through a paginator
        ("IdentityMirror", "ssm:LabelParameterVersion"),
        ("DatabaseLoginFunction", "secretsmanager:GetSecretValue"),
        ("RetainReplayFunction", "sqs:DeleteMessage"),  # through getattr(client, "delete_message") in the layer
        ("MemoryAdminFunction", "s3:PutObject"),  # the layer's S3Store
        ("MemoryAdminBackup", "secretsmanager:GetSecretValue"),  # Powertools parameters.get_secret
        ("MemoryGatewayTarget", "ssm:GetParameter"),  # the layer's mirrored-keys reader
    ],
)
def test_each_function_fails_without_a_grant_it_needs(default: Synth, function: str, action: str) -> None:
    """The check reads a real need of every kind of function: taking the grant away is a finding for it alone."""
    name, templates = _revoke(default.templates, function, action)
    found = _findings(default, templates)
    assert found
    assert all(line.startswith(f"{name}: {action}") for line in found), found


#: Reads that CDK's L2 grants add beside the one a function calls (grant_read of a parameter or a secret, the
#: rotation redeploy's old action list): granted only where a function's code (or its event source) calls them.
UNCALLED_READS = (
    "ssm:GetParameters",
    "ssm:DescribeParameters",
    "ssm:GetParameterHistory",
    "secretsmanager:DescribeSecret",
    "ecs:DescribeServices",
)


def _uncalled(synth: Synth) -> list[str]:
    """``stack/function: action`` for each of :data:`UNCALLED_READS` a function's role grants and it never calls."""
    lines = []
    region, account = synth.config.region, synth.config.account or check.ACCOUNT
    for fn in check.functions(synth.templates, synth.outdir, region=region, account=account):
        template = synth.templates[fn.stack]
        role = check._token_target(fn.properties.get("Role"))
        if role is None or role not in template["Resources"]:
            continue
        statements = check.role_statements(template, role, check.Resolver(template, region, account))
        called = {n.action for n in fn.needs}
        lines += [
            f"{fn.name}: {a}" for a in UNCALLED_READS if a not in called and iam_model.granted_somewhere(statements, a)
        ]
    return sorted(lines)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_no_function_is_granted_reads_its_code_never_calls(synths: dict[str, Synth], variant: str) -> None:
    """The gateway's interceptor and target, the login and the mirrored keys' readers call GetParameter only; the
    admin functions GetSecretValue only; the rotation redeploy UpdateService only."""
    assert _uncalled(synths[variant]) == []


def test_a_function_the_check_cannot_read_is_a_finding(default: Synth) -> None:
    templates = copy.deepcopy(default.templates)
    agent = next(t for name, t in templates.items() if name.endswith("-Agent"))
    agent["Resources"]["Mystery"] = {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "Runtime": "nodejs24.x",
            "Handler": "index.handler",
            "Code": {"ZipFile": "x"},
            "Role": {"Fn::GetAtt": ["MysteryRole", "Arn"]},
        },
    }
    found = [line for line in _findings(default, templates) if "/Mystery:" in line]
    assert any("no model of what this function calls" in line for line in found)
    assert any("its role is not in the template" in line for line in found)


# -- what code calls ---------------------------------------------------------------------------------------------


def test_the_claim_handlers_calls_are_read_from_its_code() -> None:
    source = FUNCTIONS_DIR / "log_groups"
    needs = check.code_needs(code_calls([source / "index.py"], [source]))
    assert {n.action for n in needs} == {
        "logs:CreateLogGroup",
        "logs:PutRetentionPolicy",
        "logs:AssociateKmsKey",
        "logs:DeleteLogGroup",
        "logs:DescribeLogGroups",  # through get_paginator("describe_log_groups")
    }


def test_waiters_dynamic_names_helpers_and_powertools_are_calls(tmp_path: Path) -> None:
    (tmp_path / "index.py").write_text(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING

            import boto3
            from aws_lambda_powertools.utilities import parameters

            from helper import put

            if TYPE_CHECKING:
                import never_read

            def handler(event, context, other):
                s3 = boto3.client("s3")
                s3.get_waiter("object_exists").wait(Bucket="b", Key="k")
                other.delete_document(Name="not an SSM call: this module makes no SSM client")
                parameters.get_secret("arn:aws:secretsmanager:us-east-1:123456789012:secret:s")
                put(event)
            """
        )
    )
    (tmp_path / "helper.py").write_text(
        textwrap.dedent(
            """
            def _client(service):
                import boto3
                return boto3.client(service)

            def put(record):
                sqs = _client("sqs")
                return getattr(sqs, "send_message_batch")(QueueUrl="u", Entries=[record])
            """
        )
    )
    needs = check.code_needs(code_calls([tmp_path / "index.py"], [tmp_path]))
    assert {n.action for n in needs} == {
        "s3:GetObject",  # the ObjectExists waiter polls HeadObject, which IAM names s3:GetObject
        "secretsmanager:GetSecretValue",
        "sqs:SendMessage",  # SendMessageBatch is authorized as SendMessage
    }


def test_sdk_calls_of_aws_custom_resources_map_to_iam_actions() -> None:
    assert iam_model.sdk_call_actions("ECR", "describeImages") == ("ecr:DescribeImages",)
    assert iam_model.sdk_call_actions("CloudWatchLogs", "putRetentionPolicy") == ("logs:PutRetentionPolicy",)
    assert iam_model.sdk_call_actions("@aws-sdk/client-cloudwatch", "PutMetricDataCommand") == (
        "cloudwatch:PutMetricData",
    )
    assert iam_model.sdk_call_actions("Lambda", "invoke") == ("lambda:InvokeFunction",)
    with pytest.raises(KeyError):
        iam_model.sdk_call_actions("NoSuchService", "x")


# -- IAM's matching --------------------------------------------------------------------------------------------------


def test_iam_matching() -> None:
    group = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/x"
    scoped = {"Effect": "Allow", "Action": "logs:Describe*", "Resource": f"{group}*"}
    assert iam_model.allowed([scoped], "logs:DescribeLogGroups", group)
    assert iam_model.allowed([scoped], "LOGS:describeloggroups", group)  # actions are case-insensitive
    assert not iam_model.allowed([scoped], "logs:DescribeLogGroups", group.upper())  # resources are not
    # A statement's wildcard does not cover a request on every group ('*' in the request is literal).
    assert not iam_model.allowed([scoped], "logs:DescribeLogGroups", "arn:aws:logs:us-east-1:123456789012:log-group:*")
    everything_but_iam = {"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}
    assert iam_model.allowed([everything_but_iam], "logs:PutRetentionPolicy", group)
    assert not iam_model.allowed([everything_but_iam], "iam:PassRole", "*")
    deny = {"Effect": "Deny", "Action": "logs:*", "NotResource": f"{group}*"}
    assert iam_model.allowed([everything_but_iam, deny], "logs:PutRetentionPolicy", group)
    assert not iam_model.allowed([everything_but_iam, deny], "logs:PutRetentionPolicy", group.replace("/x", "/y"))
    single = {"Effect": "Allow", "Action": "ssm:GetParamete?", "Resource": "arn:aws:ssm:*:*:parameter/a"}
    assert iam_model.allowed([single], "ssm:GetParameter", "arn:aws:ssm:us-east-1:1:parameter/a")
    assert not iam_model.allowed([single], "ssm:GetParameters", "arn:aws:ssm:us-east-1:1:parameter/a")
    conditional = {"Effect": "Allow", "Action": "logs:*", "Resource": {"Fn::If": ["C", "*", "x"]}}
    assert not iam_model.granted_somewhere([conditional], "logs:DescribeLogGroups")


# -- the claim's update and its rollback -----------------------------------------------------------------------------


class _RecordedLogs:
    """moto's CloudWatch Logs client, recording every operation called (AssociateKmsKey, which moto lacks, is
    recorded and then shown by DescribeLogGroups as CloudWatch Logs would)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.exceptions = client.exceptions
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.keys: dict[str, str] = {}
        client.meta.events.register("provide-client-params.logs.*", self._record)

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls.append((model.name, dict(params)))

    def associate_kms_key(self, *, logGroupName: str, kmsKeyId: str) -> None:
        self.calls.append(("AssociateKmsKey", {"logGroupName": logGroupName, "kmsKeyId": kmsKeyId}))
        self.keys[logGroupName] = kmsKeyId

    def get_paginator(self, name: str) -> Any:
        pages = self._client.get_paginator(name)
        keys = self.keys

        class _Pages:
            def paginate(self, **kwargs: Any) -> Any:
                for page in pages.paginate(**kwargs):
                    for group in page["logGroups"]:
                        if group["logGroupName"] in keys:
                            group["kmsKeyId"] = keys[group["logGroupName"]]
                    yield page

        return _Pages()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def group(self, name: str) -> dict[str, Any]:
        (found,) = [
            g
            for g in self._client.describe_log_groups(logGroupNamePrefix=name)["logGroups"]
            if g["logGroupName"] == name
        ]
        if name in self.keys:
            found["kmsKeyId"] = self.keys[name]
        return dict(found)


def _refused(calls: list[tuple[str, dict[str, Any]]], statements: list[dict[str, Any]], account: str) -> list[str]:
    """The recorded calls the role's statements do not allow (log-group actions on the group's ARN, either form)."""
    refused = []
    for operation, params in calls:
        for action in iam_model.iam_actions("logs", operation):
            unscoped = check.UNSCOPED_RESOURCES.get(action)
            if unscoped is not None:
                arns = [unscoped.format(region="us-east-1", account=account)]
            else:
                arn = f"arn:aws:logs:us-east-1:{account}:log-group:{params['logGroupName']}"
                arns = [arn, f"{arn}:*"]
            if not any(iam_model.allowed(statements, action, a) for a in arns):
                refused.append(f"{action} {params.get('logGroupName', '')}")
    return refused


def test_a_claims_update_and_its_rollback_are_granted_and_restore_the_group(default: Synth) -> None:
    """The runtime is replaced (a new id): the claim's Update claims the new runtime's group with a new key and
    retention; a later resource fails, and CloudFormation rolls the claim back (an Update to the previous group)
    *before* it rolls back the role's policy, then deletes the new group in the rollback's cleanup. Every call of
    every step runs against moto and is checked against the synthesized role as it stands at that step (the new
    template, its references resolved to the new runtime)."""
    import boto3
    from moto import mock_aws

    from infra.functions.log_groups import index

    stack = next(name for name in default.templates if name.endswith("-Agent"))
    template = default.templates[stack]
    (runtime,) = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::BedrockAgentCore::Runtime"]
    (claim_id,) = [k for k in template["Resources"] if k.startswith("AgentDefaultLogsClaim")]
    claim = template["Resources"][claim_id]["Properties"]
    function = template["Resources"][check._token_target(claim["ServiceToken"]) or ""]["Properties"]
    role = check._token_target(function["Role"]) or ""
    account = check.ACCOUNT

    def name_for(runtime_id: str) -> str:
        resolve = check.Resolver(template, "us-east-1", values={f"{runtime}.AgentRuntimeId": runtime_id})
        return str(resolve(claim["LogGroupName"]))

    def role_with(runtime_id: str) -> list[dict[str, Any]]:
        resolve = check.Resolver(template, "us-east-1", values={f"{runtime}.AgentRuntimeId": runtime_id})
        return check.role_statements(template, role, resolve)

    old, new = name_for("memory_agent-Abc1234567"), name_for("memory_agent-Xyz7654321")
    with mock_aws():
        logs = _RecordedLogs(boto3.client("logs", region_name="us-east-1"))
        kms = boto3.client("kms", region_name="us-east-1")
        old_key, new_key = (kms.create_key()["KeyMetadata"]["Arn"] for _ in range(2))
        answers: list[dict[str, Any]] = []

        def run(kind: str, props: dict[str, str], physical: str | None, before: dict[str, str] | None = None) -> str:
            event: dict[str, Any] = {
                "RequestType": kind,
                "StackId": "s",
                "RequestId": "r",
                "LogicalResourceId": claim_id,
                "ResponseURL": "https://example.invalid/",
                "ResourceProperties": props,
            }
            if physical is not None:
                event["PhysicalResourceId"] = physical
            if before is not None:
                event["OldResourceProperties"] = before
            logs.calls.clear()
            assert index.handler(event, None, logs=logs, respond=lambda _u, body: answers.append(body)) == {
                "status": "SUCCESS"
            }, answers[-1]
            return str(answers[-1]["PhysicalResourceId"])

        first = {"LogGroupName": old, "RetentionInDays": "90", "KmsKeyArn": old_key, "RemoveOnDelete": "true"}
        second = {"LogGroupName": new, "RetentionInDays": "30", "KmsKeyArn": new_key, "RemoveOnDelete": "true"}
        # GIVEN the deployed claim of the old runtime's group, which AgentCore had created first
        logs.create_log_group(logGroupName=old)
        physical = run("Create", first, None)
        assert _refused(logs.calls, role_with("memory_agent-Abc1234567"), account) == []
        # WHEN the update claims the new runtime's group (the new runtime created it too: the key is associated)
        logs.create_log_group(logGroupName=new)
        physical = run("Update", second, physical, first)
        assert physical == new
        assert _refused(logs.calls, role_with("memory_agent-Xyz7654321"), account) == []
        assert {"DescribeLogGroups", "AssociateKmsKey"} <= {op for op, _ in logs.calls}
        # AND the deploy fails later: the claim is rolled back while the role still has the new policy
        physical = run("Update", first, physical, second)
        assert physical == old
        assert _refused(logs.calls, role_with("memory_agent-Xyz7654321"), account) == []
        # THEN the old group is as it was, and the rollback's cleanup deletes the new one (old policy again)
        assert logs.group(old)["retentionInDays"] == 90
        assert logs.group(old)["kmsKeyId"] == old_key
        run("Delete", second, new)
        assert _refused(logs.calls, role_with("memory_agent-Abc1234567"), account) == []
        assert not logs.describe_log_groups(logGroupNamePrefix=new)["logGroups"]
        assert logs.group(old)["retentionInDays"] == 90

"""ServiceLogGroup: a log group a service creates by itself (AgentCore, RDS exports, functions this project does not
write), claimed by an idempotent custom resource that gives it retention and the logs key.

A plain ``AWS::Logs::LogGroup`` of such a name fails with AlreadyExists whenever the service created the group first
(AgentCore's ``-DEFAULT`` group: possibly at runtime creation), and without one the group is kept forever,
unencrypted. The handler (``infra/functions/log_groups``) creates the group if it is missing and then sets
retention and key, so it succeeds whichever came first. One function per stack serves every claim in it.
"""

from __future__ import annotations

import re

from aws_cdk import ArnFormat, CustomResource, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.constructs.functions import CFN_RESPONSE, FUNCTIONS_DIR, handler_sha256, python_function, settings_code
from infra.permissions import LOG_GROUP_CLAIM_ACTIONS, LOG_GROUP_DESCRIBE_ACTIONS

SOURCE = FUNCTIONS_DIR / "log_groups"
#: The function's id in each stack (one per stack, found again by it).
FUNCTION_ID = "ServiceLogGroupsFunction"
#: An unresolved part of a name (a runtime's id, an instance's identifier) as CDK encodes it in a string.
_TOKEN = re.compile(r"\$\{Token\[[^\]]+\]\}")


def rollback_stable_name(log_group_name: str) -> str:
    """The name the claim's grant uses: every part a replacement can change (a token) is ``*``.

    When such a part changes (the runtime or the database is replaced), the claim's Update claims the new group; if the
    deploy then fails, CloudFormation rolls the claim back (an Update to the previous name) *before* it rolls back the
    role's policy, so a grant of the new name only would refuse the rollback (UPDATE_ROLLBACK_FAILED).
    """
    return _TOKEN.sub("*", log_group_name)


class ServiceLogGroup(Construct):
    """Exposes ``resource`` (the custom resource) and ``log_group_name``.

    Args:
        log_group_name: The name the service writes to (may hold tokens, e.g. a runtime's id).
        retention_days: One of CloudWatch Logs' retention values (the configuration's rules check them).
        remove_on_delete: Delete the group with the resource (for groups of resources the stack deletes too).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        log_group_name: str,
        retention_days: int,
        logs_key: kms.IKey,
        remove_on_delete: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group_name = log_group_name
        function = _function(Stack.of(self), logs_key)
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=list(LOG_GROUP_CLAIM_ACTIONS),
                # The group's ARN in both forms IAM matches log-group actions against (with and without ":*"), with
                # the parts a replacement changes as "*" so that a rollback to the previous group is still granted.
                resources=[
                    _log_group_arn(self, name)
                    for name in (rollback_stable_name(log_group_name), f"{rollback_stable_name(log_group_name)}:*")
                ],
            )
        )
        # Not "Resource": a claim must get a logical id of its own, never that of a log group it replaces
        # (CloudFormation refuses to change a resource's type).
        self.resource = CustomResource(
            self,
            "Claim",
            service_token=function.function_arn,
            resource_type="Custom::ServiceLogGroup",
            properties={
                "LogGroupName": log_group_name,
                "RetentionInDays": str(retention_days),
                "KmsKeyArn": logs_key.key_arn,
                "RemoveOnDelete": "true" if remove_on_delete else "false",
                "HandlerSha256": handler_sha256(SOURCE, CFN_RESPONSE),
            },
        )
        # The role's policy (every claim's statement) exists before any claim runs.
        assert function.role is not None
        self.resource.node.add_dependency(function.role)


def _log_group_arn(scope: Construct, name: str) -> str:
    return Stack.of(scope).format_arn(
        service="logs", resource="log-group", resource_name=name, arn_format=ArnFormat.COLON_RESOURCE_NAME
    )


def _function(stack: Stack, logs_key: kms.IKey) -> lambda_.Function:
    existing = stack.node.try_find_child(FUNCTION_ID)
    if isinstance(existing, lambda_.Function):
        return existing
    function = python_function(
        stack,
        FUNCTION_ID,
        log_group_id=f"{FUNCTION_ID}Logs",
        source=SOURCE,
        code=settings_code(SOURCE, shared=[CFN_RESPONSE]),
        description="Gives log groups that services create themselves a retention and the logs key (idempotent)",
        timeout=Duration.seconds(30),
        logs_key=logs_key,
    )
    # The handler reads an existing group's key (DescribeLogGroups): authorized only on every group.
    function.add_to_role_policy(
        iam.PolicyStatement(actions=list(LOG_GROUP_DESCRIBE_ACTIONS), resources=[_log_group_arn(stack, "*")])
    )
    return function

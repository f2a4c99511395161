"""Named IAM action lists and the one place that scopes Bedrock model access."""

from __future__ import annotations

import re

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

BEDROCK_INVOKE_ACTIONS = ("bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream")
#: The rotation redeploy (infra/functions/redeploy_on_rotation): a forced new deployment, nothing read.
ECS_REDEPLOY_ACTIONS = ("ecs:UpdateService",)
#: The EKS pods' restart function: the cluster's endpoint and CA (the restart itself is a Kubernetes API call).
EKS_DESCRIBE_ACTIONS = ("eks:DescribeCluster",)
#: An operator's run of the maintenance task (MemoryService.maintenance_policy), and following it.
MAINTENANCE_RUN_ACTIONS = ("ecs:RunTask",)
MAINTENANCE_FOLLOW_ACTIONS = ("ecs:DescribeTasks", "ecs:StopTask")
PASS_ROLE_ACTION = "iam:PassRole"  # noqa: S105 (an IAM action, not a password)
#: A parameter a deploy-time function fills from outside (infra/functions/owned_parameter.py): write it, label each
#: version with what decided its content, find that version again at a rollback, forget the oldest one's label, and
#: delete it with the stack.
SSM_OWNED_PARAMETER_ACTIONS = (
    "ssm:PutParameter",
    "ssm:LabelParameterVersion",
    "ssm:UnlabelParameterVersion",
    "ssm:GetParameterHistory",
    "ssm:DeleteParameter",
)
#: What an AgentCore gateway does with its customer managed key (Bedrock AgentCore Developer Guide, "Encrypt your
#: AgentCore gateway with a customer-managed KMS key"), and the grant it creates for its own use of the key.
GATEWAY_KEY_ACTIONS = ("kms:DescribeKey", "kms:Decrypt", "kms:GenerateDataKey")
GATEWAY_KEY_GRANT_ACTIONS = ("kms:CreateGrant",)
#: The tag that marks the maintenance task's or pods' role (its value: the deployment's parameter prefix). The
#: -Operations stack reads that role's ARN from an SSM handoff, which anyone who may write the prefix could point
#: elsewhere; its grants on the administration bucket hold only for a role of this account carrying this tag.
MAINTENANCE_ROLE_TAG = "hindsight-memory:maintenance-role"
#: Whether the stack is rolling back, and whether another of its resources holds a parameter a Delete would remove
#: (the function's own stack only; ListStackResources through its paginator).
STACK_STATUS_ACTIONS = ("cloudformation:DescribeStacks", "cloudformation:ListStackResources")
#: Claiming a log group a service creates itself (constructs/service_log_group.py): create, keep, encrypt, delete.
LOG_GROUP_CLAIM_ACTIONS = (
    "logs:CreateLogGroup",
    "logs:PutRetentionPolicy",
    "logs:AssociateKmsKey",
    "logs:DeleteLogGroup",
)
#: Reading a claimed log group's current key (DescribeLogGroups, through its paginator). CloudWatch Logs authorizes
#: it only against every group of the account and region (``log-group:*``): it cannot be scoped to one group.
LOG_GROUP_DESCRIBE_ACTIONS = ("logs:DescribeLogGroups",)
#: Reading one parameter's value (what every reader calls; the L2's ``grant_read`` adds GetParameters,
#: DescribeParameters and GetParameterHistory, which none of them calls).
SSM_READ_ACTIONS = ("ssm:GetParameter",)
#: The administration bucket: the admin functions only write new objects (exports, receipts, backups); the
#: maintenance task only reads them (a restore); with SSE-KMS a write needs a data key, a read the decrypt.
ADMIN_BUCKET_WRITE_ACTIONS = ("s3:PutObject",)
ADMIN_BUCKET_READ_ACTIONS = ("s3:GetObject",)
ADMIN_KEY_WRITE_ACTIONS = ("kms:GenerateDataKey",)
ADMIN_KEY_READ_ACTIONS = ("kms:Decrypt",)
#: Calling an IAM-authorized function URL (since October 2025 both actions are required; InvokeFunction only with
#: ``lambda:InvokedViaFunctionUrl``, so a direct invoke cannot carry a forged caller in its event).
FUNCTION_URL_INVOKE_ACTION = "lambda:InvokeFunctionUrl"
FUNCTION_INVOKE_ACTION = "lambda:InvokeFunction"
#: Reading one secret's value: GetSecretValue is all the readers call (boto3, Powertools' SecretsProvider);
#: ``Secret.grant_read`` adds DescribeSecret, which none of them calls.
SECRET_READ_ACTIONS = ("secretsmanager:GetSecretValue",)
#: What copying an image into one ECR repository needs on that repository (skopeo checks, uploads, tags).
ECR_PUSH_ACTIONS = (
    "ecr:BatchCheckLayerAvailability",
    "ecr:BatchGetImage",
    "ecr:CompleteLayerUpload",
    "ecr:DescribeImages",
    "ecr:GetDownloadUrlForLayer",
    "ecr:InitiateLayerUpload",
    "ecr:PutImage",
    "ecr:UploadLayerPart",
)

#: Cross-region inference profile ids start with a geography (``us.amazon.nova-lite-v1:0``).
_INFERENCE_PROFILE = re.compile(r"^(us|eu|apac|us-gov|global|jp|au|ca)\.(.+)$")


def bedrock_model_arns(scope: Construct, model_id: str) -> list[str]:
    """ARNs that allow invoking exactly one model id, whether a foundation model or an inference profile.

    An inference profile routes to the same foundation model in several regions of its geography, so the
    foundation-model ARN is granted in any region, but only for that one model.
    """
    stack = Stack.of(scope)
    profile = _INFERENCE_PROFILE.match(model_id)
    if profile is None:
        return [
            stack.format_arn(
                service="bedrock",
                account="",
                resource="foundation-model",
                resource_name=model_id,
                arn_format=ArnFormat.SLASH_RESOURCE_NAME,
            )
        ]
    return [
        stack.format_arn(
            service="bedrock",
            resource="inference-profile",
            resource_name=model_id,
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        ),
        stack.format_arn(
            service="bedrock",
            region="*",
            account="",
            resource="foundation-model",
            resource_name=profile.group(2),
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        ),
    ]


def grant_bedrock_invoke(scope: Construct, grantee: iam.IGrantable, model_ids: list[str]) -> iam.Grant:
    """Let grantee invoke only the listed Bedrock models (the L2s grant no Bedrock access themselves)."""
    arns = sorted({arn for model_id in model_ids for arn in bedrock_model_arns(scope, model_id)})
    return iam.Grant.add_to_principal(grantee=grantee, actions=list(BEDROCK_INVOKE_ACTIONS), resource_arns=arns)


#: A producer of an SQS queue: the agent (the retain queue) and the replay function (the dead letters).
SQS_SEND_ACTIONS = ("sqs:SendMessage",)
#: What Lambda documents its execution role needs to run an SQS event source mapping (services-sqs-configure.html,
#: the AWSLambdaSQSQueueExecutionRole policy); with partial batch responses Lambda deletes the processed messages.
SQS_EVENT_SOURCE_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
#: What EventBridge Pipes documents a pipe's execution role needs for an SQS source (eb-pipes-permissions.html,
#: "Amazon SQS execution role permissions"): the pipe deletes a batch once its target took it. Its own statement of
#: the same three actions as Lambda's, not that one: each service documents its poller separately.
PIPES_SQS_SOURCE_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
#: What sending to an SSE-KMS queue needs on its key (the data key, and decrypting it to reuse it).
SQS_PRODUCER_KEY_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")
#: What EventBridge needs on a customer key that encrypts a bus and its archive (memory events with text).
EVENTS_KEY_SERVICE_ACTIONS = ("kms:DescribeKey", "kms:GenerateDataKey", "kms:Decrypt", "kms:ReEncrypt*")
#: What EventBridge needs on a log group a rule writes to (its resource policy).
LOG_DELIVERY_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents")


def grant_owned_parameter(
    scope: Construct, function: iam.IGrantable, parameter_arn: str, *, read: bool = False
) -> None:
    """Let a deploy-time function own one parameter (and read its value when ``read``), and read the status of
    ``scope``'s stack (a rollback restores from the parameter's history instead of fetching again)."""
    actions = [*SSM_OWNED_PARAMETER_ACTIONS, *(SSM_READ_ACTIONS if read else ())]
    iam.Grant.add_to_principal(grantee=function, actions=actions, resource_arns=[parameter_arn])
    stack_id = Stack.of(scope).stack_id
    iam.Grant.add_to_principal(grantee=function, actions=list(STACK_STATUS_ACTIONS), resource_arns=[stack_id])

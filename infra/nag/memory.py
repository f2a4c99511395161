"""The ``-MemoryService`` stack's acknowledgements: the tasks (ECS) or CDK's kubectl provider (EKS), the secrets, the
load balancer and its logs, the restart and image-mirror functions, the maintenance policy."""

from __future__ import annotations

from aws_cdk import Stack
from constructs import Construct

from infra.config import AppConfig, ImageSource
from infra.nag import common
from infra.stacks.service_stack import MemoryServiceStack

ECR_DEPLOYMENT_PREFIX = "Custom::CDKECRDeployment"
#: The singleton function behind every ``AwsCustomResource`` in a stack (its id is fixed by CDK).
AWS_CUSTOM_RESOURCE_ID = "AWS679f53fac002430cb0da5b7982bd2287"
#: The id suffix of the nested stack CDK creates for an imported cluster's kubectl function.
KUBECTL_PROVIDER_SUFFIX = "-KubectlProvider"


def acknowledge(stack: MemoryServiceStack, config: AppConfig) -> None:
    """Hindsight on ECS or EKS, its secrets, load balancer and helper functions."""
    memory = stack.memory
    tasks = (
        []
        if memory.eks is not None  # pods, not tasks: _memory_on_eks
        else [memory.api_task, memory.maintenance_task, *(s.task_definition for s in memory.worker_services)]
    )
    for task in tasks:
        common.ack(
            task,
            "AwsSolutions-ECS2",
            "only non-secret settings are plain environment variables; credentials "
            "(database, operator/agent keys, signing keys) are ECS secrets from Secrets Manager and SSM",
        )
        execution_role = task.execution_role
        assert execution_role is not None
        if config.hindsight.image_source is not ImageSource.REGISTRY:  # pulled from ECR
            common.ack(
                execution_role,
                "AwsSolutions-IAM5[Resource::*]",
                "ecr:GetAuthorizationToken supports no resource "
                "scoping; image pulls themselves are scoped to the one repository",
            )
    common.ack(
        memory.secrets.operator_key,
        "AwsSolutions-SMG4",
        "the operator key is rotated by an operator (docs/deploying.md: "
        "put-secret-value, then redeploy the services); automatic rotation would need a custom rotation function",
    )
    common.ack(
        memory.secrets.operator_key,
        "NIST.800.53.R5-SecretsManagerRotationEnabled",
        "rotated by an operator (see docs/deploying.md); the services read it at start",
    )
    if memory.secrets.agent_key is not None:
        common.ack(
            memory.secrets.agent_key,
            "AwsSolutions-SMG4",
            "rotated by an operator together with a redeploy of the agent and the services (docs/deploying.md)",
        )
        common.ack(
            memory.secrets.agent_key,
            "NIST.800.53.R5-SecretsManagerRotationEnabled",
            "rotated by an operator together with a redeploy of the agent and the services (docs/deploying.md)",
        )
    llm_key = memory.secrets.llm_api_key
    if llm_key is not None and isinstance(llm_key, Construct) and llm_key.node.try_find_child("Resource"):
        for rule in ("AwsSolutions-SMG4", "NIST.800.53.R5-SecretsManagerRotationEnabled"):
            common.ack(
                llm_key,
                rule,
                "an external provider's API key: it is issued and rotated at the provider, then "
                "stored here with put-secret-value (docs/deploying.md)",
            )
    alb = memory.load_balancing.load_balancer
    common.ack(
        alb,
        "NIST.800.53.R5-ALBWAFEnabled",
        "internal load balancer in isolated subnets that only the agent's "
        "security group may reach; every request is authenticated by the isolation extension",
    )
    common.ack(
        alb,
        "NIST.800.53.R5-ELBDeletionProtectionEnabled",
        "stateless and recreated by the stack; deletion protection would block teardown",
    )
    if not config.hindsight.certificate_arn:
        listener = alb.node.find_child("Http")
        reason = (
            "no hindsight.certificate_arn configured: plain HTTP inside the VPC between the agent and the "
            "internal load balancer only; set certificate_arn and domain_name for TLS"
        )
        common.ack(listener, "NIST.800.53.R5-ALBHttpToHttpsRedirection", reason)
        common.ack(listener, "NIST.800.53.R5-ELBv2ACMCertificateRequired", reason)
    logs_bucket = memory.load_balancing.access_logs
    common.ack(
        logs_bucket,
        "AwsSolutions-S1",
        "this bucket receives the load balancer's access logs; logging it to itself would loop",
    )
    common.ack(
        logs_bucket,
        "NIST.800.53.R5-S3BucketLoggingEnabled",
        "this is the access-log bucket itself; logging it to itself would loop",
    )
    common.ack(
        logs_bucket,
        "NIST.800.53.R5-S3BucketReplicationEnabled",
        "90-day access logs; replicate centrally if your log archive requires it",
    )
    common.ack(logs_bucket, "NIST.800.53.R5-S3DefaultEncryptionKMS", "load balancer access logs support SSE-S3 only")
    if memory.eks is not None:
        _memory_on_eks(stack)
        restart = memory.eks.restart_function
        common.lambda_common(restart, "invoked by EventBridge with retries")
        common.ack(
            restart.role or restart,
            common.VPC_ACCESS_POLICY,
            "the AWS-managed policy a Lambda function in a VPC needs to manage its network interfaces",
        )
    if memory.redeploy is not None:
        common.lambda_outside_vpc(
            memory.redeploy.function,
            "it calls only the ECS API (no data path); keeping it out of the VPC avoids an ECS endpoint per AZ",
        )
    mirror = memory.mirror
    if mirror is not None:
        for child in stack.node.children:
            if child.node.id.startswith(ECR_DEPLOYMENT_PREFIX):
                common.lambda_outside_vpc(
                    child, "it copies the pinned Hindsight image from the public registry into ECR at deploy time"
                )
            if child.node.id == AWS_CUSTOM_RESOURCE_ID:
                common.lambda_outside_vpc(
                    child, "it only reads the mirrored image's digest from the ECR API at deploy time"
                )
        common.ack(
            mirror.role,
            "AwsSolutions-IAM5[Resource::*]",
            "only ecr:GetAuthorizationToken, which supports no resource scoping; every push and read action is "
            "granted on the one mirror repository",
        )
        common.ack(
            mirror.role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "the AWS-managed basic execution policy grants only log writes",
        )


def _memory_on_eks(stack: Stack) -> None:
    """CDK's kubectl provider (a nested stack of the memory service's): its handler applies the manifests at deploy
    time with the kubectl role, inside the VPC; the provider framework fronts it from outside the VPC
    (:meth:`~infra.constructs.eks_workloads.HindsightOnEks._place_kubectl_provider`)."""
    (provider,) = [c for c in stack.node.children if c.node.id.endswith(KUBECTL_PROVIDER_SUFFIX)]
    handler = provider.node.find_child("Handler")
    framework = provider.node.find_child("Provider").node.find_child("framework-onEvent")
    common.lambda_common(handler, "invoked only by CloudFormation (the kubectl custom resource) at deploy time")
    handler_role = handler.node.find_child("ServiceRole")
    common.ack(
        handler_role,
        common.VPC_ACCESS_POLICY,
        "the AWS-managed policy a Lambda function in a VPC needs to manage its network interfaces",
    )
    common.lambda_outside_vpc(
        framework,
        "CDK's custom resource framework calls the Lambda API and answers CloudFormation's pre-signed S3 URL, "
        "neither of which the isolated VPC reaches (the kubectl handler itself runs inside the VPC)",
    )
    common.ack(
        handler_role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly]",
        "CDK's kubectl handler: image pulls for a kubectl image (none here: it runs from its layer)",
    )
    common.ack(
        handler_role,
        'AwsSolutions-IAM4[Policy::{"Fn::If":["HandlerHasEcrPublic195AF58A",{"Fn::Join":["",["arn:",{"Ref":'
        '"AWS::Partition"},":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},{"Ref":"AWS::NoValue"}]}]',
        "CDK's kubectl handler, only in regions with ECR Public (helm charts from it); this stack installs none",
    )
    common.ack(
        handler,
        "AwsSolutions-L1",
        "CDK's kubectl handler pins the Python runtime its layer (kubectl, helm, the AWS CLI) is built for",
    )
    handler_id = stack.resolve(Stack.of(handler).get_logical_id(handler.node.default_child))  # type: ignore[arg-type]
    common.ack(
        framework.node.find_child("ServiceRole"),
        f"AwsSolutions-IAM5[Resource::<{handler_id}.Arn>:*]",
        "the provider framework may invoke any version of the one kubectl handler it fronts",
    )


def acknowledge_maintenance_policy(service: MemoryServiceStack) -> None:
    """The maintenance task's run policy (ECS only: on EKS a service account runs it)."""
    memory = service.memory
    stack = Stack.of(memory)
    task = memory.maintenance_task
    for resource in (
        stack.format_arn(service="ecs", resource="task-definition", resource_name=f"{task.family}:*"),
        stack.format_arn(service="ecs", resource="task", resource_name=f"{memory.cluster.cluster_name}/*"),
    ):
        common.ack(
            memory.maintenance_policy,
            f"AwsSolutions-IAM5[Resource::{common.rendered(stack, stack.resolve(resource))}]",
            "every revision of the one maintenance task family, and the tasks of the one cluster (run-task and "
            "describe/stop are conditioned on that cluster)",
        )

"""cdk-nag acknowledgements: each names the resource it applies to and the specific reason it is acceptable.

Reviewed against AwsSolutions and NIST 800-53 rev 5 (cdk-nag 3.x ``Validations``). Acknowledgements are attached to
the exact construct (never a whole stack), and those that depend on configuration (single-AZ database, no TLS
certificate) are added only when that configuration is chosen.
"""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Acknowledgment, ArnFormat, CfnElement, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct, IConstruct

from infra.app_builder import Stacks
from infra.bootstrap import asset_bucket_name
from infra.config import AppConfig, ImageSource
from infra.constructs.service_log_group import FUNCTION_ID as LOG_GROUPS_FUNCTION_ID
from infra.constructs.service_log_group import ServiceLogGroup, rollback_stable_name
from infra.stacks.external_memory_stack import ExternalMemoryStack

ECR_DEPLOYMENT_PREFIX = "Custom::CDKECRDeployment"
#: The singleton function behind every ``AwsCustomResource`` in a stack (its id is fixed by CDK).
AWS_CUSTOM_RESOURCE_ID = "AWS679f53fac002430cb0da5b7982bd2287"


def _ack(scope: IConstruct, rule: str, reason: str) -> None:
    Validations.of(scope).acknowledge(Acknowledgment(id=rule, reason=f"{scope.node.path}: {reason}"))


def _asset_read_findings(stack: Stack) -> list[str]:
    """The findings CDK's asset grant (read of the bootstrap bucket's objects) produces, for this stack's bucket.

    The bucket's name comes from the stack's synthesizer, so a custom bootstrap qualifier
    (``-c @aws-cdk/core:bootstrapQualifier=...``) names its own bucket here.
    """
    bucket = asset_bucket_name(stack, account="<AWS::AccountId>")
    return [
        "AwsSolutions-IAM5[Action::s3:GetBucket*]",
        "AwsSolutions-IAM5[Action::s3:GetObject*]",
        "AwsSolutions-IAM5[Action::s3:List*]",
        f"AwsSolutions-IAM5[Resource::arn:aws:s3:::{bucket}/*]",
    ]


def acknowledge_findings(stacks: Stacks, config: AppConfig) -> None:
    """Acknowledge the findings reviewed and accepted for this design."""
    for stack in stacks.all():
        _inline_policies(stack)
    _network(stacks)
    if stacks.data is not None:
        _data(stacks, config)
    if stacks.identity is not None:
        _identity(stacks)
    if stacks.memory is not None:
        _memory(stacks, config)
    if stacks.external is not None:
        _external_memory(stacks.external)
    _agent(stacks, config)
    if stacks.gateway is not None:
        _gateway(stacks)
    _operations(stacks)
    # -- deploy-safety (issue 21) --
    for stack in stacks.all():
        _service_log_groups(stack)
    if stacks.memory is not None and stacks.memory.memory.eks is None:  # ECS run-task's; EKS: a service account
        _maintenance_policy(stacks)


def _inline_policies(stack: Stack) -> None:
    for construct in stack.node.find_all():
        if isinstance(construct, iam.Policy | iam.CfnPolicy) and construct.node.id in ("DefaultPolicy", "Resource"):
            target = construct if isinstance(construct, iam.Policy) else construct.node.scope
            assert target is not None
            _ack(
                target,
                "NIST.800.53.R5-IAMNoInlinePolicy",
                "CDK grant methods write least-privilege statements inline on this one role; a customer-managed "
                "policy would only be attached to the same single role",
            )


def _network(stacks: Stacks) -> None:
    network = stacks.network.network
    if network.endpoint_security_group is not None:
        del network  # the endpoint group only admits 443 from the VPC CIDR: nothing to acknowledge


def _data(stacks: Stacks, config: AppConfig) -> None:
    assert stacks.data is not None
    db = stacks.data.database
    instance = db.node.try_find_child("Instance")  # RDS for PostgreSQL; Aurora has a Cluster (its rules differ)
    resource = instance if instance is not None else db.node.find_child("Cluster")
    if instance is not None:
        _ack(
            instance,
            "AwsSolutions-RDS11",
            "the port is reachable only from the Hindsight tasks', the provisioning and the rotation "
            "functions' security groups in isolated subnets; a non-standard port adds no protection",
        )
    if instance is None:  # Aurora: the plan selects the cluster, the rule looks for each instance
        _ack(
            resource,
            "NIST.800.53.R5-RDSInBackupPlan",
            "the Aurora cluster is in this stack's AWS Backup plan (database.backup_plan_*); AWS Backup selects a "
            "cluster as a whole, never its instances, which is what the rule looks for",
        )
    backup_role = stacks.data.backup_plan.selection.node.find_child("Role")
    _ack(
        backup_role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AWSBackupServiceRolePolicyForBackup]",
        "the AWS-managed policy AWS Backup documents for the role that takes a plan's backups",
    )
    if not config.database.multi_az and instance is not None:
        _ack(
            instance,
            "AwsSolutions-RDS3",
            f"env '{config.env_name}' sets database.multi_az=false (cost); production sets it true",
        )
        _ack(
            instance,
            "NIST.800.53.R5-RDSMultiAZSupport",
            f"env '{config.env_name}' sets database.multi_az=false (cost); production sets it true",
        )
    monitoring = resource.node.try_find_child("MonitoringRole")
    if monitoring is not None:
        _ack(
            monitoring,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonRDSEnhancedMonitoringRole]",
            "AmazonRDSEnhancedMonitoringRole is the AWS-documented policy for "
            "RDS Enhanced Monitoring and grants only CloudWatch Logs writes for RDSOSMetrics",
        )
    rotation_rules = [c for c in db.security_group.node.children if "RotationSecurityGroup" in c.node.id]
    assert len(rotation_rules) == 2  # the master's and the login's rotation
    for rule in rotation_rules:
        for check in ("NIST.800.53.R5-EC2RestrictedCommonPorts", "NIST.800.53.R5-EC2RestrictedSSH"):
            _ack(
                rule,
                check,
                "ingress from a rotation function's security group to the database port only "
                "(the port is a token, so the rule cannot be evaluated at synth)",
            )
    _lambda_outside_vpc(
        db.ca_bundle.function,
        "it downloads AWS's public RDS certificate bundle at deploy time, which the isolated VPC cannot reach",
    )
    login = db.login
    _lambda_common(login.function, "invoked only by CloudFormation (through the provider framework) at deploy time")
    _ack(
        login.function.role or login.function,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]",
        "the AWS-managed policy a Lambda function in a VPC needs to manage its network interfaces",
    )
    framework = login.provider.node.find_child("framework-onEvent")
    _lambda_outside_vpc(
        framework,
        "CDK's custom resource framework answers CloudFormation's pre-signed S3 URL, which the isolated VPC "
        "cannot reach (the provisioning function itself runs inside the VPC)",
    )
    stack = Stack.of(login.function)
    function_id = stack.resolve(stack.get_logical_id(login.function.node.default_child))  # type: ignore[arg-type]
    _ack(
        framework.node.find_child("ServiceRole"),
        f"AwsSolutions-IAM5[Resource::<{function_id}.Arn>:*]",
        "the provider framework may invoke any version of the one provisioning function it fronts",
    )


# --- EKS (issue 25) -------------------------------------------------------------------------------------------------
#: The id suffix of the nested stack CDK creates for an imported cluster's kubectl function.
KUBECTL_PROVIDER_SUFFIX = "-KubectlProvider"
_VPC_ACCESS_POLICY = (
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]"
)


def _memory_on_eks(stack: Stack) -> None:
    """CDK's kubectl provider (a nested stack of the memory service's): its handler applies the manifests at deploy
    time with the kubectl role, inside the VPC; the provider framework fronts it from outside the VPC
    (:meth:`~infra.constructs.eks_workloads.HindsightOnEks._place_kubectl_provider`)."""
    (provider,) = [c for c in stack.node.children if c.node.id.endswith(KUBECTL_PROVIDER_SUFFIX)]
    handler = provider.node.find_child("Handler")
    framework = provider.node.find_child("Provider").node.find_child("framework-onEvent")
    _lambda_common(handler, "invoked only by CloudFormation (the kubectl custom resource) at deploy time")
    handler_role = handler.node.find_child("ServiceRole")
    _ack(
        handler_role,
        _VPC_ACCESS_POLICY,
        "the AWS-managed policy a Lambda function in a VPC needs to manage its network interfaces",
    )
    _lambda_outside_vpc(
        framework,
        "CDK's custom resource framework calls the Lambda API and answers CloudFormation's pre-signed S3 URL, "
        "neither of which the isolated VPC reaches (the kubectl handler itself runs inside the VPC)",
    )
    _ack(
        handler_role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly]",
        "CDK's kubectl handler: image pulls for a kubectl image (none here: it runs from its layer)",
    )
    _ack(
        handler_role,
        'AwsSolutions-IAM4[Policy::{"Fn::If":["HandlerHasEcrPublic195AF58A",{"Fn::Join":["",["arn:",{"Ref":'
        '"AWS::Partition"},":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},{"Ref":"AWS::NoValue"}]}]',
        "CDK's kubectl handler, only in regions with ECR Public (helm charts from it); this stack installs none",
    )
    _ack(
        handler,
        "AwsSolutions-L1",
        "CDK's kubectl handler pins the Python runtime its layer (kubectl, helm, the AWS CLI) is built for",
    )
    handler_id = stack.resolve(Stack.of(handler).get_logical_id(handler.node.default_child))  # type: ignore[arg-type]
    _ack(
        framework.node.find_child("ServiceRole"),
        f"AwsSolutions-IAM5[Resource::<{handler_id}.Arn>:*]",
        "the provider framework may invoke any version of the one kubectl handler it fronts",
    )


# --- end EKS -------------------------------------------------------------------------------------------------------


def _external_memory(stack: ExternalMemoryStack) -> None:
    """The isolation probe: a function in the VPC behind the provider framework (hindsight.mode=external)."""
    probe = stack.memory.probe
    _lambda_common(probe.function, "invoked by CloudFormation through the provider framework at deploy time")
    _ack(
        probe.function,
        "AwsSolutions-L1",
        "it runs on the Python version the memory adapter layer is built for (infra.build.TARGET_PYTHON)",
    )
    role = probe.function.node.find_child("ServiceRole")
    _ack(
        role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]",
        "the AWS-managed policy a Lambda function in a VPC needs to manage its network interfaces",
    )
    _ack(
        role.node.find_child("DefaultPolicy"),
        "AwsSolutions-IAM5[Resource::*]",
        "cloudwatch:PutMetricData has no resource type; the statement is limited to the probe's namespace",
    )
    framework = probe.provider.node.find_child("framework-onEvent")
    _lambda_outside_vpc(
        framework,
        "CDK's custom resource framework answers CloudFormation's pre-signed S3 URL, which the isolated VPC "
        "cannot reach (the probe itself runs inside the VPC)",
    )
    function_id = stack.resolve(stack.get_logical_id(probe.function.node.default_child))  # type: ignore[arg-type]
    _ack(
        framework.node.find_child("ServiceRole"),
        f"AwsSolutions-IAM5[Resource::<{function_id}.Arn>:*]",
        "the provider framework may invoke any version of the one probe function it fronts",
    )


def _identity(stacks: Stacks) -> None:
    assert stacks.identity is not None
    identity = stacks.identity.identity
    if identity.user_pool is not None:
        _ack(
            identity.user_pool,
            "AwsSolutions-COG2",
            "quick-start pool: MFA is optional (TOTP) so administrator-"
            "created users can sign in from the CLI; enterprises bring their own IdP with auth.mode=jwt",
        )
        _ack(
            identity.user_pool,
            "AwsSolutions-COG8",
            "the Plus feature plan (threat protection) is a per-user cost "
            "the quick start does not impose; enable it on the pool if wanted",
        )
    mirror = identity.mirror_function
    _lambda_outside_vpc(mirror, "it must reach the token issuer's public JWKS URL, which the isolated VPC cannot")


def _lambda_outside_vpc(function: IConstruct, why: str) -> None:
    _ack(function, "NIST.800.53.R5-LambdaInsideVPC", f"runs outside the VPC because {why}")
    _lambda_common(function, "invoked by EventBridge/CloudFormation with retries")


def _lambda_common(function: IConstruct, invoked: str) -> None:
    _ack(
        function,
        "NIST.800.53.R5-LambdaConcurrency",
        "reserved concurrency would fail the first deploy in accounts "
        "at the default 10-execution limit (Lambda keeps 10 unreserved); the function runs rarely and briefly",
    )
    _ack(
        function,
        "NIST.800.53.R5-LambdaDLQ",
        f"{invoked}; a failure raises an alarm or fails the deploy, and there is no payload worth keeping",
    )
    role = function.node.try_find_child("ServiceRole")
    if role is not None:
        _ack(
            role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "the AWS-managed basic execution policy grants only log writes",
        )


def _memory(stacks: Stacks, config: AppConfig) -> None:
    assert stacks.memory is not None
    memory = stacks.memory.memory
    stack = stacks.memory
    tasks = (
        []
        if memory.eks is not None  # pods, not tasks: _memory_on_eks
        else [memory.api_task, memory.maintenance_task, *(s.task_definition for s in memory.worker_services)]
    )
    for task in tasks:
        _ack(
            task,
            "AwsSolutions-ECS2",
            "only non-secret settings are plain environment variables; credentials "
            "(database, operator/agent keys, signing keys) are ECS secrets from Secrets Manager and SSM",
        )
        execution_role = task.execution_role
        assert execution_role is not None
        if config.hindsight.image_source is not ImageSource.REGISTRY:  # pulled from ECR
            _ack(
                execution_role,
                "AwsSolutions-IAM5[Resource::*]",
                "ecr:GetAuthorizationToken supports no resource "
                "scoping; image pulls themselves are scoped to the one repository",
            )
    _ack(
        memory.secrets.operator_key,
        "AwsSolutions-SMG4",
        "the operator key is rotated by an operator (docs/deploying.md: "
        "put-secret-value, then redeploy the services); automatic rotation would need a custom rotation function",
    )
    _ack(
        memory.secrets.operator_key,
        "NIST.800.53.R5-SecretsManagerRotationEnabled",
        "rotated by an operator (see docs/deploying.md); the services read it at start",
    )
    if memory.secrets.agent_key is not None:
        _ack(
            memory.secrets.agent_key,
            "AwsSolutions-SMG4",
            "rotated by an operator together with a redeploy of the agent and the services (docs/deploying.md)",
        )
        _ack(
            memory.secrets.agent_key,
            "NIST.800.53.R5-SecretsManagerRotationEnabled",
            "rotated by an operator together with a redeploy of the agent and the services (docs/deploying.md)",
        )
    llm_key = memory.secrets.llm_api_key
    if llm_key is not None and isinstance(llm_key, Construct) and llm_key.node.try_find_child("Resource"):
        for rule in ("AwsSolutions-SMG4", "NIST.800.53.R5-SecretsManagerRotationEnabled"):
            _ack(
                llm_key,
                rule,
                "an external provider's API key: it is issued and rotated at the provider, then "
                "stored here with put-secret-value (docs/deploying.md)",
            )
    alb = memory.load_balancing.load_balancer
    _ack(
        alb,
        "NIST.800.53.R5-ALBWAFEnabled",
        "internal load balancer in isolated subnets that only the agent's "
        "security group may reach; every request is authenticated by the isolation extension",
    )
    _ack(
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
        _ack(listener, "NIST.800.53.R5-ALBHttpToHttpsRedirection", reason)
        _ack(listener, "NIST.800.53.R5-ELBv2ACMCertificateRequired", reason)
    logs_bucket = memory.load_balancing.access_logs
    _ack(
        logs_bucket,
        "AwsSolutions-S1",
        "this bucket receives the load balancer's access logs; logging it to itself would loop",
    )
    _ack(
        logs_bucket,
        "NIST.800.53.R5-S3BucketLoggingEnabled",
        "this is the access-log bucket itself; logging it to itself would loop",
    )
    _ack(
        logs_bucket,
        "NIST.800.53.R5-S3BucketReplicationEnabled",
        "90-day access logs; replicate centrally if your log archive requires it",
    )
    _ack(logs_bucket, "NIST.800.53.R5-S3DefaultEncryptionKMS", "load balancer access logs support SSE-S3 only")
    if memory.eks is not None:
        _memory_on_eks(stack)
        restart = memory.eks.restart_function
        _lambda_common(restart, "invoked by EventBridge with retries")
        _ack(
            restart.role or restart,
            _VPC_ACCESS_POLICY,
            "the AWS-managed policy a Lambda function in a VPC needs to manage its network interfaces",
        )
    if memory.redeploy is not None:
        _lambda_outside_vpc(
            memory.redeploy.function,
            "it calls only the ECS API (no data path); keeping it out of the VPC avoids an ECS endpoint per AZ",
        )
    mirror = memory.mirror
    if mirror is not None:
        for child in stack.node.children:
            if child.node.id.startswith(ECR_DEPLOYMENT_PREFIX):
                _lambda_outside_vpc(
                    child, "it copies the pinned Hindsight image from the public registry into ECR at deploy time"
                )
            if child.node.id == AWS_CUSTOM_RESOURCE_ID:
                _lambda_outside_vpc(child, "it only reads the mirrored image's digest from the ECR API at deploy time")
        _ack(
            mirror.role,
            "AwsSolutions-IAM5[Resource::*]",
            "only ecr:GetAuthorizationToken, which supports no resource scoping; every push and read action is "
            "granted on the one mirror repository",
        )
        _ack(
            mirror.role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "the AWS-managed basic execution policy grants only log writes",
        )


def _agent(stacks: Stacks, config: AppConfig) -> None:
    runtime = stacks.agent.agent.runtime
    region = config.region
    reasons = {
        f"AwsSolutions-IAM5[Resource::arn:aws:logs:{region}:<AWS::AccountId>:log-group:/aws/bedrock-agentcore/"
        "runtimes/*]": "AgentCore names the runtime's log groups at deploy time under this prefix",
        f"AwsSolutions-IAM5[Resource::arn:aws:logs:{region}:<AWS::AccountId>:log-group:/aws/bedrock-agentcore/"
        "runtimes/*:log-stream:*]": "log streams are created per session under the runtime's log groups",
        f"AwsSolutions-IAM5[Resource::arn:aws:logs:{region}:<AWS::AccountId>:log-group:*]": "logs:DescribeLogGroups "
        "(set by the AgentCore L2) is a list action without resource scoping",
        "AwsSolutions-IAM5[Resource::*]": "X-Ray segment upload and cloudwatch:PutMetricData (namespace-"
        "conditioned by the L2) support no resource ARNs",
        f"AwsSolutions-IAM5[Resource::arn:aws:bedrock-agentcore:{region}:<AWS::AccountId>:workload-identity-"
        "directory/default/workload-identity/*]": "workload access tokens for this runtime's identity, whose name "
        "AgentCore assigns at deploy time",
    }
    for finding in _asset_read_findings(stacks.agent):
        reasons[finding] = "AgentCore reads the agent's code bundle (a CDK asset) through CDK's asset grant"
    for finding, reason in reasons.items():
        _ack(runtime.role, finding, reason)
    _retain_replay(stacks)


def _retain_replay(stacks: Stacks) -> None:
    function = stacks.agent.retain_replay.function
    _ack(
        function,
        "AwsSolutions-L1",
        "it runs on the Python version the memory adapter layer is built for (its bytecode and compiled wheels, "
        "infra.build.TARGET_PYTHON); the layer and this runtime move to a newer version together",
    )
    _ack(
        function,
        "NIST.800.53.R5-LambdaConcurrency",
        "the queue's event source mapping caps its concurrency (retain_queue.max_concurrency); reserved concurrency "
        "would fail the first deploy in accounts at the default 10-execution limit",
    )
    _ack(
        function,
        "NIST.800.53.R5-LambdaDLQ",
        "invoked synchronously by the SQS event source mapping: a message it does not process stays on the retain "
        "queue, whose own dead-letter queue (alarmed) receives it after its last allowed receive",
    )
    role = function.role
    assert role is not None
    _ack(
        role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
        "the AWS-managed basic execution policy grants only log writes",
    )
    _ack(
        role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]",
        "the AWS-managed policy a Lambda function in a VPC needs to manage its network interfaces",
    )


def _gateway(stacks: Stacks) -> None:
    assert stacks.gateway is not None
    gateway = stacks.gateway.gateway
    for function in (gateway.interceptor, gateway.target_function):
        _ack(
            function,
            "AwsSolutions-L1",
            "runs on the memory adapter layer, whose compiled wheels (cryptography, cffi) are built for CPython 3.12 "
            "(infra.build TARGET_PYTHON, the agent's AgentCore runtime too)",
        )
        _ack(
            function,
            "NIST.800.53.R5-LambdaConcurrency",
            "runs for every MCP request: reserved concurrency would cap every user's calls (and fail the first "
            "deploy in accounts at the default 10-execution limit); the gateway throttles in front of it",
        )
        _ack(
            function,
            "NIST.800.53.R5-LambdaDLQ",
            "invoked synchronously by the gateway, which answers the MCP client with the outcome; a dead-letter "
            "queue applies to asynchronous invocations only, and failures raise the function's alarm",
        )
        assert function.role is not None
        _ack(
            function.role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "the AWS-managed basic execution policy grants only log writes",
        )
    _ack(
        gateway.interceptor,
        "NIST.800.53.R5-LambdaInsideVPC",
        "runs outside the VPC because it touches no data: it only verifies tokens with the mirrored keys it reads "
        "from SSM, and a VPC would add network interfaces to the path of every MCP request",
    )
    target_role = gateway.target_function.role
    assert target_role is not None
    _ack(
        target_role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]",
        "the AWS-managed policy a Lambda function in a VPC needs to manage its network interfaces",
    )
    role = gateway.gateway.role
    stack = Stack.of(gateway)
    for function in (gateway.interceptor, gateway.target_function):
        cfn_function = function.node.default_child
        assert isinstance(cfn_function, CfnElement)
        function_id = stack.resolve(stack.get_logical_id(cfn_function))
        _ack(
            role,
            f"AwsSolutions-IAM5[Resource::<{function_id}.Arn>:*]",
            "the gateway may invoke any version of its one interceptor and one target function (the L2's grant)",
        )
    for action in ("kms:GenerateDataKey*", "kms:ReEncrypt*"):
        _ack(
            role,
            f"AwsSolutions-IAM5[Action::{action}]",
            "the gateway encrypts with its own key only; the wildcard covers that key's data-key and re-encrypt "
            "variants (the L2's grant, scoped to the key's ARN)",
        )


def _operations(stacks: Stacks) -> None:
    operations = stacks.operations
    admin = operations.admin
    bucket = operations.bucket
    for function in admin.functions:
        _ack(
            function,
            "NIST.800.53.R5-LambdaConcurrency",
            "reserved concurrency would fail the first deploy in accounts at the default 10-execution limit; the "
            "scheduled runs are hourly or daily and the function URL serves a few operators",
        )
        _ack(
            function,
            "NIST.800.53.R5-LambdaDLQ",
            "the URL answers its caller and the schedules retry; a failure raises the function's alarm, and an "
            "event holds nothing worth keeping (a schedule's time, or an operator's request they can repeat)",
        )
        _ack(
            function,
            "AwsSolutions-L1",
            "it runs on the Python version the memory adapter layer is built for (its bytecode and compiled wheels, "
            "infra.build.TARGET_PYTHON); the layer and this runtime move to a newer version together",
        )
        role = function.node.find_child("ServiceRole")
        for policy, why in (
            ("AWSLambdaBasicExecutionRole", "the AWS-managed basic execution policy grants only log writes"),
            (
                "AWSLambdaVPCAccessExecutionRole",
                "the AWS-managed policy a Lambda function in a VPC needs to manage its network interfaces",
            ),
        ):
            _ack(role, f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/{policy}]", why)
    bucket_id = operations.resolve(operations.get_logical_id(bucket.bucket.node.default_child))  # type: ignore[arg-type]
    for function in (f for f in (admin.function, admin.backup_function) if f is not None):
        _ack(
            function.node.find_child("ServiceRole").node.find_child("DefaultPolicy"),
            f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/*]",
            "s3:PutObject only, on the objects of the one administration bucket: exports, receipts and backups are "
            "new objects whose keys carry the time they were written",
        )
    for target in (bucket.bucket, bucket.access_logs):
        _ack(
            target,
            "NIST.800.53.R5-S3BucketReplicationEnabled",
            "versioned, KMS- or SSE-S3-encrypted and retained in this region; replicate it centrally if your "
            "records policy requires a second region (exports hold personal data: replicas need the same erasure)",
        )
    _ack(
        bucket.access_logs,
        "NIST.800.53.R5-S3DefaultEncryptionKMS",
        "S3 server access logs can be delivered only to a bucket encrypted with SSE-S3",
    )


# -- deploy-safety (issue 21) ------------------------------------------------------------------------------------------


def _rendered(stack: Stack, value: Any) -> str:
    """A resolved template value as cdk-nag writes it into a finding's id: literals as they are, ``<AWS::...>`` and
    ``<LogicalId>`` for Refs, ``<LogicalId.Attr>`` for GetAtts, other intrinsics as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Fn::Join":
            return str(arg[0]).join(_rendered(stack, v) for v in arg[1])
        if key == "Ref":
            return f"<{arg}>"
        if key == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>"
    return json.dumps(value, separators=(",", ":"))


def _service_log_groups(stack: Stack) -> None:
    """The function that claims log groups services create themselves (constructs/service_log_group.py)."""
    function = stack.node.try_find_child(LOG_GROUPS_FUNCTION_ID)
    if not isinstance(function, lambda_.Function):
        return
    _lambda_outside_vpc(
        function, "it only calls the CloudWatch Logs API at deploy time and answers CloudFormation's pre-signed URL"
    )
    role = function.node.find_child("ServiceRole")
    reasons = {
        "*": "logs:DescribeLogGroups (reading a claimed group's key) is authorized only on every log group",
    }
    for claim in (c for c in stack.node.find_all() if isinstance(c, ServiceLogGroup)):
        name = rollback_stable_name(claim.log_group_name)
        reasons[f"{name}:*"] = (
            "a log group's ARN in the form IAM matches log-group actions against (':*' ends every log-group ARN "
            "CloudFormation reports); the claim's own group only"
        )
        if "*" in name:
            reasons[name] = (
                "the claim's own group, with the part a replacement changes (the runtime's id, the instance's "
                "identifier) as '*': a rollback after a replacement claims the previous group under the new policy"
            )
    for name, reason in reasons.items():
        arn = stack.format_arn(
            service="logs", resource="log-group", resource_name=name, arn_format=ArnFormat.COLON_RESOURCE_NAME
        )
        _ack(role, f"AwsSolutions-IAM5[Resource::{_rendered(stack, stack.resolve(arn))}]", reason)


def _maintenance_policy(stacks: Stacks) -> None:
    assert stacks.memory is not None
    memory = stacks.memory.memory
    stack = Stack.of(memory)
    task = memory.maintenance_task
    for resource in (
        stack.format_arn(service="ecs", resource="task-definition", resource_name=f"{task.family}:*"),
        stack.format_arn(service="ecs", resource="task", resource_name=f"{memory.cluster.cluster_name}/*"),
    ):
        _ack(
            memory.maintenance_policy,
            f"AwsSolutions-IAM5[Resource::{_rendered(stack, stack.resolve(resource))}]",
            "every revision of the one maintenance task family, and the tasks of the one cluster (run-task and "
            "describe/stop are conditioned on that cluster)",
        )

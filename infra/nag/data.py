"""The ``-Data`` stack's acknowledgements: the database, its backup plan, its login function and CA bundle."""

from __future__ import annotations

from aws_cdk import Stack

from infra.config import AppConfig
from infra.nag import common
from infra.stacks.data_stack import DataStack


def acknowledge(data: DataStack, config: AppConfig) -> None:
    """The database and what serves it."""
    db = data.database
    instance = db.node.try_find_child("Instance")  # RDS for PostgreSQL; Aurora has a Cluster (its rules differ)
    resource = instance if instance is not None else db.node.find_child("Cluster")
    if instance is not None:
        common.ack(
            instance,
            "AwsSolutions-RDS11",
            "the port is reachable only from the Hindsight tasks', the provisioning and the rotation "
            "functions' security groups in isolated subnets; a non-standard port adds no protection",
        )
    if instance is None:  # Aurora: the plan selects the cluster, the rule looks for each instance
        common.ack(
            resource,
            "NIST.800.53.R5-RDSInBackupPlan",
            "the Aurora cluster is in this stack's AWS Backup plan (database.backup_plan_*); AWS Backup selects a "
            "cluster as a whole, never its instances, which is what the rule looks for",
        )
    backup_role = data.backup_plan.selection.node.find_child("Role")
    common.ack(
        backup_role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AWSBackupServiceRolePolicyForBackup]",
        "the AWS-managed policy AWS Backup documents for the role that takes a plan's backups",
    )
    if not config.database.multi_az and instance is not None:
        common.ack(
            instance,
            "AwsSolutions-RDS3",
            f"env '{config.env_name}' sets database.multi_az=false (cost); production sets it true",
        )
        common.ack(
            instance,
            "NIST.800.53.R5-RDSMultiAZSupport",
            f"env '{config.env_name}' sets database.multi_az=false (cost); production sets it true",
        )
    monitoring = resource.node.try_find_child("MonitoringRole")
    if monitoring is not None:
        common.ack(
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
            common.ack(
                rule,
                check,
                "ingress from a rotation function's security group to the database port only "
                "(the port is a token, so the rule cannot be evaluated at synth)",
            )
    common.lambda_outside_vpc(
        db.ca_bundle.function,
        "it downloads AWS's public RDS certificate bundle at deploy time, which the isolated VPC cannot reach",
    )
    login = db.login
    common.lambda_common(
        login.function, "invoked only by CloudFormation (through the provider framework) at deploy time"
    )
    common.ack(
        login.function.role or login.function,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]",
        "the AWS-managed policy a Lambda function in a VPC needs to manage its network interfaces",
    )
    framework = login.provider.node.find_child("framework-onEvent")
    common.lambda_outside_vpc(
        framework,
        "CDK's custom resource framework answers CloudFormation's pre-signed S3 URL, which the isolated VPC "
        "cannot reach (the provisioning function itself runs inside the VPC)",
    )
    stack = Stack.of(login.function)
    function_id = stack.resolve(stack.get_logical_id(login.function.node.default_child))  # type: ignore[arg-type]
    common.ack(
        framework.node.find_child("ServiceRole"),
        f"AwsSolutions-IAM5[Resource::<{function_id}.Arn>:*]",
        "the provider framework may invoke any version of the one provisioning function it fronts",
    )

"""DatabaseLogin: Hindsight's own least-privilege database login, provisioned by the master and rotated safely.

- A provisioning function inside the VPC (``infra/functions/db_provisioning``, behind CDK's provider framework so
  CloudFormation's answer goes out from outside the VPC) connects as the master with verified TLS and creates the
  extensions, the owner role and the two alternating logins. It is the master's only user besides rotation.
- The login's secret rotates with Secrets Manager's alternating-users rotation: it changes the password of the
  login not in use and then points the secret at it, so tasks that started with the previous credentials keep a
  valid password until the next rotation (the services are redeployed after each rotation anyway).
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from aws_cdk import CustomResource, Duration
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.constructs.database_props import DatabaseProps
from infra.constructs.functions import FUNCTIONS_DIR, handler_sha256, provider_framework, python_function
from infra.constructs.network import Network
from infra.constructs.rds_ca_bundle import RdsCaBundle
from infra.permissions import SECRET_READ_ACTIONS

#: The provisioning function's source (``make build`` bundles it with its driver into ``database.provisioning_path``).
PROVISIONING_SRC = FUNCTIONS_DIR / "db_provisioning"
#: Characters kept out of generated passwords: Hindsight's Alembic config breaks on ``%`` and the database URL on
#: ``@:/?#``; excluding all punctuation keeps the URL assembly trivially safe.
PASSWORD_EXCLUDED_CHARACTERS = string.punctuation + " "
#: The login Hindsight uses; rotation alternates it with ``<name>_clone``.
APP_USERNAME = "hindsight_app"


@dataclass(frozen=True)
class DatabaseLoginProps:
    """What the login is built from: the database's props and the server the database made for it.

    Args:
        database: The database's own props (its section: the port, the rotation's days, the provisioning bundle).
        server: The instance or cluster the login is made on (and whose multi-user rotation it gets).
        endpoint: Where the provisioning function connects.
        database_name: The database the logins are made in.
        security_group: The server's group, which admits the provisioning function.
        master_secret: The master's login, which the provisioning function (and the rotation) uses.
        key: The database's key, which encrypts the login's secret.
        ca_bundle: The RDS CA bundle the provisioning function verifies the server against.
    """

    database: DatabaseProps
    server: rds.DatabaseInstance | rds.DatabaseCluster
    endpoint: rds.Endpoint
    database_name: str
    security_group: ec2.ISecurityGroup
    master_secret: secretsmanager.ISecret
    key: kms.IKey
    ca_bundle: RdsCaBundle


class DatabaseLogin(Construct):
    """Exposes ``secret`` (the login Hindsight uses), ``provisioning``, ``function`` and ``rotation``.

    Workloads in other stacks read ``secret`` by ARN plus a decrypt grant on the key (an object grant would write
    their roles into this stateful stack's key policy).
    """

    def __init__(self, scope: Construct, construct_id: str, props: DatabaseLoginProps) -> None:
        super().__init__(scope, construct_id)
        foundation, server, master_secret = props.database.foundation, props.server, props.master_secret
        config, network, logs_key = props.database.config, foundation.network, foundation.logs_key
        app = rds.DatabaseSecret(
            self,
            "Secret",
            username=APP_USERNAME,
            master_secret=master_secret,
            encryption_key=props.key,
            exclude_characters=PASSWORD_EXCLUDED_CHARACTERS,
        )
        self.secret: secretsmanager.ISecret = app.attach(server)
        security_group = network.workload_security_group(
            self,
            "SecurityGroup",
            description="Database provisioning function: to PostgreSQL and the AWS endpoints only",
        )
        security_group.connections.allow_to(props.security_group, ec2.Port.tcp(config.port), "Provisioning")
        function = python_function(
            self,
            "Function",
            log_group_id="Logs",
            source=config.provisioning_path,
            description="Creates Hindsight's extensions, owner role and alternating logins as the master user",
            timeout=Duration.minutes(2),
            memory_size=256,
            logs_key=logs_key,
            vpc=network.vpc,
            vpc_subnets=network.subnets,
            security_groups=[security_group],
        )
        # GetSecretValue only (the handler's one call; Secret.grant_read adds DescribeSecret); both secrets are
        # encrypted with key.
        iam.Grant.add_to_principal(
            grantee=function,
            actions=list(SECRET_READ_ACTIONS),
            resource_arns=[master_secret.secret_arn, self.secret.secret_arn],
        )
        props.key.grant_decrypt(function)
        props.ca_bundle.grant_read(function)
        self.function = function
        self.provider = provider_framework(self, "Provider", on_event_handler=function, logs_key=logs_key)
        self.provisioning = CustomResource(
            self,
            "Provisioning",
            service_token=self.provider.service_token,
            resource_type="Custom::HindsightDatabaseLogin",
            properties={
                "MasterSecretArn": master_secret.secret_arn,
                "AppSecretArn": self.secret.secret_arn,
                "CaParameterName": props.ca_bundle.parameter.parameter_name,
                "Host": props.endpoint.hostname,
                "Port": str(config.port),
                "DatabaseName": props.database_name,
                # Changed SQL runs again at the next deploy (the statements are idempotent).
                "HandlerSha256": handler_sha256(PROVISIONING_SRC),
            },
        )
        # The server itself (for Aurora also its writer instance, without which the endpoint does not answer); not the
        # whole construct, whose children include the rotations that in turn wait for this resource.
        for resource in server.node.find_all():
            if isinstance(resource, rds.CfnDBInstance | rds.CfnDBCluster):
                self.provisioning.node.add_dependency(resource)
        self.rotation = server.add_rotation_multi_user(
            "AppLoginRotation",
            secret=self.secret,
            automatically_after=Duration.days(config.rotation_days),
            exclude_characters=PASSWORD_EXCLUDED_CHARACTERS,
            vpc_subnets=network.subnets,
            security_group=rotation_security_group(self, "RotationSecurityGroup", network),
        )
        # The first rotation runs as soon as it is scheduled: only after both logins exist.
        self.rotation.node.add_dependency(self.provisioning)


def rotation_security_group(scope: Construct, construct_id: str, network: Network) -> ec2.SecurityGroup:
    """A rotation function's group: HTTPS to the endpoints (Secrets Manager); the database admits it itself (CDK's
    rotation wiring adds the rule to the database's port)."""
    return network.workload_security_group(
        scope,
        construct_id,
        description="Secret rotation function: to PostgreSQL and the AWS endpoints only",
        egress_description="HTTPS to AWS endpoints (Secrets Manager)",
        rules_in_group=True,
    )

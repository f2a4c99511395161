"""VectorDatabase: Hindsight's PostgreSQL with pgvector, encrypted, TLS-only, backed up and rotated.

Hindsight never holds the master's credentials: it logs in as its own least-privilege login (``login``, see
``database_login.py``), verifying the server's certificate against the RDS bundle (``ca_bundle``).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_backup as backup
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_rds as rds
from aws_cdk import aws_sam as sam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.config import DatabaseConfig, DatabaseEngine
from infra.constructs.database_login import (
    PASSWORD_EXCLUDED_CHARACTERS,
    DatabaseLogin,
    DatabaseLoginProps,
    rotation_security_group,
)
from infra.constructs.database_props import DatabaseProps
from infra.constructs.network import Network
from infra.constructs.rds_ca_bundle import RdsCaBundle
from infra.constructs.secret_source import SecretSource
from infra.constructs.service_log_group import ServiceLogGroup

#: Pinned minor versions (pgvector 0.8 on both; cfn-lint flags deprecated ones).
#: Bump deliberately and run the isolation tests.
POSTGRES_VERSION = rds.PostgresEngineVersion.VER_17_6
AURORA_POSTGRES_VERSION = rds.AuroraPostgresEngineVersion.VER_17_7
DATABASE_NAME = "hindsight"
#: The master user (rds_superuser on RDS): used only to provision Hindsight's login (extensions, roles) and by rotation.
MASTER_USERNAME = "hindsight"
#: The variables a container connects with: plain (host, port, name) and secret (login, CA bundle).
ENV_DB_HOST, ENV_DB_PORT, ENV_DB_NAME = "DB_HOST", "DB_PORT", "DB_NAME"
ENV_DB_USERNAME, ENV_DB_PASSWORD, ENV_DB_CA_BUNDLE = "DB_USERNAME", "DB_PASSWORD", "DB_CA_BUNDLE"
#: Server parameters of either engine: TLS only, and every connection and disconnection logged.
SERVER_PARAMETERS = {"rds.force_ssl": "1", "log_connections": "1", "log_disconnections": "1"}
#: The rotations' windows (UTC): the login's ``rate()`` window opens at midnight; the master's starts at 04:00.
LOGIN_ROTATION_WINDOW = "2h"
MASTER_ROTATION_WINDOW = "2h"
MASTER_ROTATION_HOUR = 4
#: How long the groups RDS and the rotation functions create are kept (as the project's functions' own groups).
SERVICE_LOG_RETENTION_DAYS = 90
#: Secrets Manager's CloudTrail events of a rotation that did not complete.
ROTATION_FAILURE_EVENTS = ("RotationFailed", "RotationAbandoned")


def master_rotation_schedule(rotation_days: int) -> str:
    """The master's ``cron()``: at :data:`MASTER_ROTATION_HOUR` UTC on day 1 of each month and every
    ``rotation_days`` after it (only day 1 when that is a month or more)."""
    days = f"1/{rotation_days}" if rotation_days < 28 else "1"
    return f"cron(0 {MASTER_ROTATION_HOUR} {days} * ? *)"


def rotation_failed_pattern(secret_arns: list[str]) -> events.EventPattern:
    """The events of a rotation of one of secret_arns failing (Secrets Manager emits no metric for it)."""
    return events.EventPattern(
        source=["aws.secretsmanager"],
        detail_type=["AWS Service Event via CloudTrail"],
        detail={"eventName": list(ROTATION_FAILURE_EVENTS), "additionalEventData": {"SecretId": secret_arns}},
    )


def _trust_only_own_databases(database: Construct) -> None:
    """Enhanced Monitoring's role (CDK makes it for ``monitoring_interval``) may be assumed by RDS only for this
    account's databases: the confused deputy conditions the RDS User Guide documents for it ("Setting up and enabling
    Enhanced Monitoring", USER_Monitoring.OS.confused-deputy). The database is ``*``: naming it would make the role
    depend on the database that depends on the role; ``cluster:*`` too, as monitoring can be set on a cluster.
    Changes the role in place."""
    role = database.node.find_child("MonitoringRole")
    assert isinstance(role.node.default_child, iam.CfnRole)
    stack = Stack.of(database)
    sources = [
        stack.format_arn(service="rds", resource=kind, resource_name="*", arn_format=ArnFormat.COLON_RESOURCE_NAME)
        for kind in ("db", "cluster")
    ]
    role.node.default_child.add_property_override(
        "AssumeRolePolicyDocument.Statement.0.Condition",
        {"StringEquals": {"aws:SourceAccount": stack.account}, "ArnLike": {"aws:SourceArn": sources}},
    )


def _rotation_schedule(secret: secretsmanager.ISecret) -> secretsmanager.CfnRotationSchedule:
    """The rotation schedule CDK's rotation wiring put under secret."""
    (schedule,) = [c for c in secret.node.find_all() if isinstance(c, secretsmanager.CfnRotationSchedule)]
    return schedule


class VectorDatabase(Construct):
    """RDS PostgreSQL (or Aurora Serverless v2); exposes ``connections``, ``master_secret``, ``login`` (Hindsight's
    own login: ``login.secret``), ``ca_bundle``, ``port``, ``endpoint_address`` and ``database_name``.

    Workloads in other stacks connect through ``allow_from``, ``container_environment``, ``secret_sources``
    and ``grant_connect``; each writes what it needs into the workload's stack, so this stateful stack never
    references (or depends on) a stateless one. Monitoring reads ``metric(name)`` (with ``engine`` and
    ``allocated_storage_gb``); the backup plan selects ``backup_resource()``.
    """

    def __init__(self, scope: Construct, construct_id: str, props: DatabaseProps) -> None:
        super().__init__(scope, construct_id)
        config, removal_policy = props.config, props.removal_policy
        network, logs_key, alerts = props.foundation.network, props.foundation.logs_key, props.foundation.alerts
        self.key = kms.Key(
            self,
            "Key",
            description="Hindsight database storage, backups, Performance Insights and credentials",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        credentials = rds.Credentials.from_generated_secret(
            MASTER_USERNAME, encryption_key=self.key, exclude_characters=PASSWORD_EXCLUDED_CHARACTERS
        )
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=network.vpc,
            description="Hindsight database: the Hindsight tasks and the rotation function only",
            allow_all_outbound=False,
        )
        self.port = config.port
        self.database_name = DATABASE_NAME
        self.engine = config.engine
        self.allocated_storage_gb = config.allocated_storage_gb
        common = {
            "vpc": network.vpc,
            "vpc_subnets": network.subnets,
            "security_groups": [self.security_group],
            "credentials": credentials,
            "storage_encryption_key": self.key,
            "deletion_protection": True,
            "removal_policy": removal_policy,
            "port": config.port,
            "iam_authentication": True,
            "cloudwatch_logs_exports": ["postgresql", "upgrade"],
        }
        if config.engine is DatabaseEngine.POSTGRES:
            self._instance(config, common)
        else:
            self._aurora(config, common, network)
        secret = self._resource.secret
        assert secret is not None
        self.master_secret: secretsmanager.ISecret = secret
        self.connections: ec2.Connections = self._resource.connections
        self.endpoint_address = self._endpoint.hostname
        self.ca_bundle = RdsCaBundle(
            self, "CaBundle", parameter_name=f"{props.parameter_prefix}/database/rds-ca-bundle", logs_key=logs_key
        )
        self.login = DatabaseLogin(
            self,
            "Login",
            DatabaseLoginProps(
                database=props,
                server=self._resource,
                endpoint=self._endpoint,
                database_name=DATABASE_NAME,
                security_group=self.security_group,
                master_secret=secret,
                key=self.key,
                ca_bundle=self.ca_bundle,
            ),
        )
        master_rotation = self._resource.add_rotation_single_user(
            automatically_after=Duration.days(config.rotation_days),
            exclude_characters=PASSWORD_EXCLUDED_CHARACTERS,
            vpc_subnets=network.subnets,
            security_group=rotation_security_group(self, "MasterRotationSecurityGroup", network),
            # The master's generated password is minutes old at creation; rotating it at once would run beside the
            # login's first rotation, which logs in with the master's password.
            rotate_immediately_on_update=False,
        )
        # Not while the provisioning function is using the master's password.
        master_rotation.node.add_dependency(self.login.provisioning)
        self._order_rotations(config.rotation_days)
        self.log_groups = self._claim_log_groups(
            removal_policy, logs_key, rotations=[master_rotation, self.login.rotation]
        )
        self.rotation_failed_rule = alerts.route(
            events.Rule(
                self,
                "RotationFailed",
                description="A rotation of the database's master or login secret failed: the alerts topic",
                event_pattern=rotation_failed_pattern([secret.secret_arn, self.login.secret.secret_arn]),
            )
        )

    def _claim_log_groups(
        self,
        removal_policy: RemovalPolicy,
        logs_key: kms.IKey,
        *,
        rotations: list[secretsmanager.SecretRotation],
    ) -> list[ServiceLogGroup]:
        """Retention and the logs key for the groups RDS and the rotation functions create themselves: RDS's log
        exports (connection logging is on) and ``/aws/lambda/<name>`` of each rotation function (deployed from the
        Serverless Application Repository, whose template sets no log group). Each rotation's schedule waits for its
        group, so the first rotation already logs into it."""
        if isinstance(self._resource, rds.DatabaseInstance):
            base = f"/aws/rds/instance/{self._resource.instance_identifier}"
            exports = ["postgresql", "upgrade"]
        else:
            base = f"/aws/rds/cluster/{self._resource.cluster_identifier}"
            exports = ["postgresql"]
        keep = removal_policy is not RemovalPolicy.DESTROY  # the exports' history goes when the database goes
        groups = [
            ServiceLogGroup(
                self,
                f"{export.title()}Logs",
                log_group_name=f"{base}/{export}",
                retention_days=SERVICE_LOG_RETENTION_DAYS,
                logs_key=logs_key,
                remove_on_delete=not keep,
            )
            for export in exports
        ]
        for rotation, secret, name in zip(
            rotations, (self.master_secret, self.login.secret), ("MasterRotation", "LoginRotation"), strict=True
        ):
            (application,) = [c for c in rotation.node.find_all() if isinstance(c, sam.CfnApplication)]
            # The name CDK gives the application's function (a literal): the claim's grant names exactly its group.
            parameters = application.parameters
            assert isinstance(parameters, dict), "the rotation application's parameters are literal"
            function_name = parameters["functionName"]
            group = ServiceLogGroup(
                self,
                f"{name}Logs",
                log_group_name=f"/aws/lambda/{function_name}",
                retention_days=SERVICE_LOG_RETENTION_DAYS,
                logs_key=logs_key,
                remove_on_delete=True,
            )
            _rotation_schedule(secret).node.add_dependency(group)
            groups.append(group)
        return groups

    def _order_rotations(self, rotation_days: int) -> None:
        """Keep the two rotations apart: the login's alternating-users rotation logs in as the master, so it must
        never run while the master's own rotation changes that password.

        The login's schedule is created after the master's, and each rotates in its own UTC window
        (:data:`LOGIN_ROTATION_WINDOW`, :data:`MASTER_ROTATION_WINDOW`): the login every ``rotation_days`` from
        midnight (a ``rate()`` window opens at 00:00 UTC), the master on a ``cron()`` from 04:00 on the same days
        of each month (``1/<days>``; monthly for longer periods).
        """
        master, login = (_rotation_schedule(s) for s in (self.master_secret, self.login.secret))
        login.node.add_dependency(master)
        login.add_property_override(
            "RotationRules",
            {"ScheduleExpression": f"rate({rotation_days} days)", "Duration": LOGIN_ROTATION_WINDOW},
        )
        master.add_property_override(
            "RotationRules",
            {"ScheduleExpression": master_rotation_schedule(rotation_days), "Duration": MASTER_ROTATION_WINDOW},
        )

    # -- for workloads ---------------------------------------------------------------------------------------------

    def allow_from(self, scope: Construct, peer: ec2.ISecurityGroup, *, description: str) -> None:
        """Let peer reach the database port; both rules are written in scope's stack (through an imported handle
        on the database's group)."""
        handle = ec2.SecurityGroup.from_security_group_id(
            scope, "DatabaseSecurityGroup", self.security_group.security_group_id, allow_all_outbound=False
        )
        peer.connections.allow_to(handle, ec2.Port.tcp(self.port), description)

    def container_environment(self) -> dict[str, str]:
        """Where to connect: host, port and database name (plain values)."""
        return {ENV_DB_HOST: self.endpoint_address, ENV_DB_PORT: str(self.port), ENV_DB_NAME: self.database_name}

    def secret_sources(self, scope: Construct) -> dict[str, SecretSource]:
        """Hindsight's login and the RDS CA bundle, by the variable each becomes.

        The login is referenced by ARN (a handle in scope), not by object: granting through the object would write
        the workload's roles into this stack's key policy; :meth:`grant_connect` grants the decrypt instead.
        """
        login = secretsmanager.Secret.from_secret_complete_arn(scope, "DatabaseSecret", self.login.secret.secret_arn)
        return {
            ENV_DB_USERNAME: SecretSource(secret=login, field="username"),
            ENV_DB_PASSWORD: SecretSource(secret=login, field="password"),
            ENV_DB_CA_BUNDLE: SecretSource(parameter=self.ca_bundle.parameter),
        }

    def grant_connect(self, task: ecs.TaskDefinition) -> None:
        """Let task's execution role decrypt the login (with :meth:`secret_sources`, all a task needs)."""
        self.grant_login_decrypt(task.obtain_execution_role())

    def grant_login_decrypt(self, grantee: iam.IGrantable) -> None:
        """Let grantee (a task's execution role, or a pod's role on EKS) decrypt the login."""
        self.key.grant_decrypt(grantee)

    def metric(self, metric_name: str, **props: object) -> cloudwatch.Metric:
        """An ``AWS/RDS`` metric of this database: the instance's (RDS) or the cluster's (Aurora)."""
        return self._resource.metric(metric_name, **props)  # type: ignore[arg-type]

    def backup_resource(self) -> backup.BackupResource:
        """This database as an AWS Backup selection (the instance, or the Aurora cluster as a whole)."""
        if isinstance(self._resource, rds.DatabaseInstance):
            return backup.BackupResource.from_rds_database_instance(self._resource)
        return backup.BackupResource.from_rds_database_cluster(self._resource)

    def login_rotation_pattern(self) -> events.EventPattern:
        """The event of Secrets Manager having rotated Hindsight's login (its readers must restart)."""
        return events.EventPattern(
            source=["aws.secretsmanager"],
            detail_type=["AWS Service Event via CloudTrail"],
            detail={
                "eventName": ["RotationSucceeded"],
                "additionalEventData": {"SecretId": [self.login.secret.secret_arn]},
            },
        )

    def _parameter_group(self, engine: rds.IEngine, description: str) -> rds.ParameterGroup:
        return rds.ParameterGroup(
            self, "Parameters", engine=engine, description=description, parameters=dict(SERVER_PARAMETERS)
        )

    def _instance(self, config: DatabaseConfig, common: dict[str, object]) -> None:
        engine = rds.DatabaseInstanceEngine.postgres(version=POSTGRES_VERSION)
        parameters = self._parameter_group(engine, "Hindsight PostgreSQL: TLS only, connection logging")
        instance = rds.DatabaseInstance(
            self,
            "Instance",
            engine=engine,
            instance_type=ec2.InstanceType(config.instance_type),
            parameter_group=parameters,
            multi_az=config.multi_az,
            allocated_storage=config.allocated_storage_gb,
            max_allocated_storage=config.max_allocated_storage_gb,
            storage_type=rds.StorageType.GP3,
            storage_encrypted=True,
            database_name=DATABASE_NAME,
            backup_retention=Duration.days(config.backup_retention_days),
            copy_tags_to_snapshot=True,
            auto_minor_version_upgrade=False,  # the minor version is pinned; pgvector upgrades are deliberate
            enable_performance_insights=True,
            performance_insight_encryption_key=self.key,
            monitoring_interval=Duration.seconds(60),
            publicly_accessible=False,
            **common,  # type: ignore[arg-type]
        )
        self._resource: rds.DatabaseInstance | rds.DatabaseCluster = instance
        self._endpoint = instance.instance_endpoint
        _trust_only_own_databases(instance)

    def _aurora(self, config: DatabaseConfig, common: dict[str, object], network: Network) -> None:
        engine = rds.DatabaseClusterEngine.aurora_postgres(version=AURORA_POSTGRES_VERSION)
        parameters = self._parameter_group(engine, "Hindsight Aurora PostgreSQL: TLS only, connection logging")
        del common["vpc"], common["vpc_subnets"], common["storage_encryption_key"]
        common["cloudwatch_logs_exports"] = ["postgresql"]  # Aurora has no "upgrade" log
        readers = (
            [rds.ClusterInstance.serverless_v2("Reader", scale_with_writer=True, enable_performance_insights=True)]
            if config.multi_az
            else []
        )
        cluster = rds.DatabaseCluster(
            self,
            "Cluster",
            engine=engine,
            parameter_group=parameters,
            vpc=network.vpc,
            vpc_subnets=network.subnets,
            writer=rds.ClusterInstance.serverless_v2("Writer", enable_performance_insights=True),
            readers=readers,
            serverless_v2_min_capacity=config.min_capacity_acu,
            serverless_v2_max_capacity=config.max_capacity_acu,
            storage_encrypted=True,
            storage_encryption_key=self.key,
            performance_insight_encryption_key=self.key,
            default_database_name=DATABASE_NAME,
            backup=rds.BackupProps(retention=Duration.days(config.backup_retention_days)),
            copy_tags_to_snapshot=True,
            monitoring_interval=Duration.seconds(60),
            **common,  # type: ignore[arg-type]
        )
        self._resource = cluster
        self._endpoint = cluster.cluster_endpoint
        _trust_only_own_databases(cluster)

"""AdminBucket: where memory administration writes exports, erasure receipts and logical backups.

Private (every public access blocked, objects owned by the bucket owner), TLS only, versioned, encrypted with its own
customer-managed key (S3 Bucket Keys on), server access logs in a bucket of their own. Lifecycle:

- ``exports/`` (a user's memories, personal data) expire after ``export_retention_days``;
- ``backups/`` (every bank's transfer archive) expire after ``backup_retention_days``;
- ``erasure-receipts/`` are kept: they are the proof that a user was forgotten (they hold bank ids and counts,
  never memory content);
- a replaced or expired version is deleted :data:`NONCURRENT_VERSION_DAYS` later, so an export is gone for good
  ``export_retention_days + NONCURRENT_VERSION_DAYS`` days after it was written (the erasure receipt says exports
  remain until their retention ends).

The name is fixed by :func:`admin_bucket_name` up to the stack's creation id
(:func:`~infra.constructs.creation.creation_id`), so the network stack, created first, can let the VPC's S3 gateway
reach exactly this account's buckets of that pattern (:func:`admin_bucket_pattern`), and a deployment created again
after ``cdk destroy`` (the bucket is retained) gets a new name instead of failing on the old one's. Grants:
:meth:`grant_write` (the admin functions, in this stack: ``s3:PutObject`` and the key's data keys) and
:meth:`grant_read` (the maintenance task's role, in an earlier stack: through the bucket's and
the key's resource policies, so that stack never depends on this one).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.config import OperationsConfig
from infra.constructs.access_logs import access_log_bucket
from infra.constructs.props import raise_if_invalid
from infra.permissions import (
    ADMIN_BUCKET_READ_ACTIONS,
    ADMIN_BUCKET_WRITE_ACTIONS,
    ADMIN_KEY_READ_ACTIONS,
    ADMIN_KEY_WRITE_ACTIONS,
)

#: The key prefixes of what memory administration writes that expires (``memory_adapter.admin``: export, backup;
#: forget's erasure receipts are kept, so no rule names their prefix).
EXPORTS_PREFIX = "exports/"
BACKUPS_PREFIX = "backups/"
#: Days a replaced or expired object version is kept (an undo window for a mistaken delete, then gone).
NONCURRENT_VERSION_DAYS = 7
#: Server access logs are kept this long.
ACCESS_LOG_DAYS = 365
#: 63 characters minus "-admin-", a 12-digit account, "-", the longest region name, "-" and an 8-character creation id.
_MAX_LABEL = 20


def admin_bucket_name(stack_prefix: str, *, account: str, region: str, creation: str) -> str:
    """``<prefix>-<env>-admin-<account>-<region>-<creation>`` in lower case (a long prefix is shortened with a digest,
    so every deployment keeps its own name within S3's 63 characters); ``creation`` is
    :func:`~infra.constructs.creation.creation_id`."""
    return f"{_label(stack_prefix)}-admin-{account}-{region}-{creation}"


def admin_bucket_pattern(stack_prefix: str, *, account: str, region: str) -> str:
    """Every name :func:`admin_bucket_name` gives this deployment, whatever its creation id."""
    return admin_bucket_name(stack_prefix, account=account, region=region, creation="*")


def _label(stack_prefix: str) -> str:
    label = stack_prefix.lower()
    if len(label) > _MAX_LABEL:
        label = f"{label[: _MAX_LABEL - 9]}-{hashlib.sha256(label.encode()).hexdigest()[:8]}"
    return label


@dataclass(frozen=True)
class AdminBucketProps:
    """What the administration bucket is built from.

    Args:
        config: The ``operations`` section (``export_retention_days``, ``logical_backup_retention_days``).
        bucket_name: Its name (:func:`admin_bucket_name`).
        removal_policy: What deleting the stack does to the bucket, its key and its access logs.
    """

    config: OperationsConfig
    bucket_name: str
    removal_policy: RemovalPolicy


class AdminBucket(Construct):
    """Exposes ``bucket``, ``key`` and ``access_logs``; ``grant_write(grantee)``, ``grant_read(role)``."""

    def __init__(self, scope: Construct, construct_id: str, props: AdminBucketProps) -> None:
        super().__init__(scope, construct_id)
        export_retention_days = props.config.export_retention_days
        backup_retention_days = props.config.logical_backup_retention_days
        removal_policy = props.removal_policy
        raise_if_invalid(
            self.node.path,
            [
                f"{name} must be at least 1 day, got {days}"
                for name, days in (
                    ("export_retention_days", export_retention_days),
                    ("backup_retention_days", backup_retention_days),
                )
                if days < 1
            ],
        )
        self.key = kms.Key(
            self,
            "Key",
            description="Memory administration: exports, erasure receipts and logical backups",
            enable_key_rotation=True,
            removal_policy=removal_policy,
        )
        self.access_logs = access_log_bucket(
            self,
            "AccessLogs",
            expiration_days=ACCESS_LOG_DAYS,
            noncurrent_version_days=NONCURRENT_VERSION_DAYS,
            removal_policy=removal_policy,
        )
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            bucket_name=props.bucket_name,
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.key,
            bucket_key_enabled=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="admin/",
            lifecycle_rules=[
                s3.LifecycleRule(id="Exports", prefix=EXPORTS_PREFIX, expiration=Duration.days(export_retention_days)),
                s3.LifecycleRule(id="Backups", prefix=BACKUPS_PREFIX, expiration=Duration.days(backup_retention_days)),
                s3.LifecycleRule(
                    id="OldVersions",
                    noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS),
                    expired_object_delete_marker=True,
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                ),
            ],
            removal_policy=removal_policy,
        )

    @property
    def bucket_name(self) -> str:
        """The bucket's name."""
        return self.bucket.bucket_name

    def grant_write(self, grantee: iam.IGrantable) -> None:
        """Let grantee (in this stack) write new objects, encrypted with the bucket's key; nothing else."""
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=list(ADMIN_BUCKET_WRITE_ACTIONS),
            resource_arns=[self.bucket.arn_for_objects("*")],
        )
        iam.Grant.add_to_principal(
            grantee=grantee, actions=list(ADMIN_KEY_WRITE_ACTIONS), resource_arns=[self.key.key_arn]
        )

    def grant_read(self, role: iam.IRole, *, tag: tuple[str, str]) -> None:
        """Let role (the maintenance task's, in an earlier stack) read objects, through the bucket policy and the
        key policy: this stack names the role, the role's stack never names this bucket. The role's ARN comes from
        an SSM handoff, so each grant also requires a principal of this account carrying ``tag`` (key, value): a
        handoff pointed at another role grants it nothing."""
        trusted = {"aws:PrincipalAccount": self.bucket.stack.account, f"aws:PrincipalTag/{tag[0]}": tag[1]}
        self.bucket.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ArnPrincipal(role.role_arn)],
                actions=list(ADMIN_BUCKET_READ_ACTIONS),
                resources=[self.bucket.arn_for_objects("*")],
                conditions={"StringEquals": trusted},
            )
        )
        via_s3 = {"kms:ViaService": f"s3.{self.bucket.stack.region}.amazonaws.com"}
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ArnPrincipal(role.role_arn)],
                actions=list(ADMIN_KEY_READ_ACTIONS),
                resources=["*"],  # in a key policy, "*" means this key
                conditions={"StringEquals": {**via_s3, **trusted}},
            )
        )

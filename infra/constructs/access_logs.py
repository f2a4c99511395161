"""The bucket S3 server access logs and load balancer logs go to: one shape for every log bucket in the stacks."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct


def access_log_bucket(
    scope: Construct,
    construct_id: str,
    *,
    expiration_days: int,
    noncurrent_version_days: int,
    removal_policy: RemovalPolicy,
) -> s3.Bucket:
    """A private, TLS-only, versioned log bucket whose logs expire after ``expiration_days``.

    SSE-S3, not KMS: neither S3 server access logging nor load balancer access logs can write to a KMS-encrypted
    bucket.
    """
    return s3.Bucket(
        scope,
        construct_id,
        encryption=s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        versioned=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        lifecycle_rules=[
            s3.LifecycleRule(
                expiration=Duration.days(expiration_days),
                noncurrent_version_expiration=Duration.days(noncurrent_version_days),
            )
        ],
        removal_policy=removal_policy,
    )

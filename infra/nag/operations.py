"""The ``-Operations`` stack's acknowledgements: the admin functions and the administration bucket."""

from __future__ import annotations

from infra.nag import common
from infra.stacks.operations_stack import OperationsStack


def acknowledge(operations: OperationsStack) -> None:
    """The admin functions, their writes to the bucket, the bucket and its access logs."""
    admin = operations.admin
    bucket = operations.bucket
    for function in admin.functions:
        common.ack(
            function,
            "NIST.800.53.R5-LambdaConcurrency",
            "reserved concurrency would fail the first deploy in accounts at the default 10-execution limit; the "
            "scheduled runs are hourly or daily and the function URL serves a few operators",
        )
        common.ack(
            function,
            "NIST.800.53.R5-LambdaDLQ",
            "the URL answers its caller and the schedules retry; a failure raises the function's alarm, and an "
            "event holds nothing worth keeping (a schedule's time, or an operator's request they can repeat)",
        )
        common.ack(
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
            common.ack(
                role, f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/{policy}]", why
            )
    bucket_id = operations.resolve(operations.get_logical_id(bucket.bucket.node.default_child))  # type: ignore[arg-type]
    for function in (f for f in (admin.function, admin.backup_function) if f is not None):
        common.ack(
            function.node.find_child("ServiceRole").node.find_child("DefaultPolicy"),
            f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/*]",
            "s3:PutObject only, on the objects of the one administration bucket: exports, receipts and backups are "
            "new objects whose keys carry the time they were written",
        )
    for target in (bucket.bucket, bucket.access_logs):
        common.ack(
            target,
            "NIST.800.53.R5-S3BucketReplicationEnabled",
            "versioned, KMS- or SSE-S3-encrypted and retained in this region; replicate it centrally if your "
            "records policy requires a second region (exports hold personal data: replicas need the same erasure)",
        )
    common.ack(
        bucket.access_logs,
        "NIST.800.53.R5-S3DefaultEncryptionKMS",
        "S3 server access logs can be delivered only to a bucket encrypted with SSE-S3",
    )

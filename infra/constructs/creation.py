"""The id of one creation of a stack: for physical names of resources kept after ``cdk destroy``.

A retained resource with a fixed name (the administration bucket, the backup vault) makes the next deployment under
the same prefix and env fail with AlreadyExists. Ending such a name in :func:`creation_id` keeps it stable for the
stack's whole life and gives a deployment created again another one.
"""

from __future__ import annotations

from aws_cdk import Aws, Fn


def creation_id() -> str:
    """The first eight hex digits of the stack id (a UUID CloudFormation draws when it creates the stack), of the stack
    whose template uses it."""
    return Fn.select(0, Fn.split("-", Fn.select(2, Fn.split("/", Aws.STACK_ID))))

"""The id of one creation of a stack: for physical names of resources kept after ``cdk destroy``.

A retained resource with a fixed name (the administration bucket, the backup vault) makes the next deployment under
the same prefix and env fail with AlreadyExists. Ending such a name in :func:`creation_id` keeps it stable for the
stack's whole life and gives a deployment created again another one.

A feature that can be turned off and on again in the same stack needs more: its retained resources outlive the
feature, not the stack, so their names end in :func:`instance_id` of a resource the feature creates with them (a
KMS key's generated id), which is new each time the feature is turned on.
"""

from __future__ import annotations

from aws_cdk import Aws, Fn


def creation_id() -> str:
    """The first eight hex digits of the stack id (a UUID CloudFormation draws when it creates the stack), of the stack
    whose template uses it."""
    return Fn.select(0, Fn.split("-", Fn.select(2, Fn.split("/", Aws.STACK_ID))))


def instance_id(generated_id: str) -> str:
    """The first eight hex digits of ``generated_id``, a UUID CloudFormation's resource draws at its creation (a KMS
    key's id): stable for that resource's life, another one when it is created again."""
    return Fn.select(0, Fn.split("-", generated_id))

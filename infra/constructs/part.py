"""Part: group one job's resources in their own construct without changing a single logical id.

CloudFormation identifies a resource by its logical id, and CDK derives that id from the construct path: moving a
secret from ``Memory/OperatorKey`` to ``Memory/Secrets/OperatorKey`` would replace it (a new operator key), moving a
security-group rule would fail the deploy (EC2 refuses the "new" rule as a duplicate of the old). A :class:`Part`
is a real construct (its own class, props and grant methods) whose children keep the logical ids they would have
as children of its ``home`` (by default the construct it is created in). :class:`PartAwareStack` applies that when
it allocates logical ids; every other element keeps CDK's own id.

Only logical ids are kept. Values CDK derives from a node's *unique id* (the peer's id inside a security-group
rule's id, a task definition's family, an EventBridge rule's invoke permission) follow the real path, so the
constructs those come from stay where they were; a construct can keep such a child's unique id by naming it
``"Default"``, which CDK leaves out of both ids.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from aws_cdk import App, CfnElement, Stack
from constructs import Construct, IConstruct

from infra.constructs.props import PropsError

#: CDK leaves this id out of logical and unique ids (``core/lib/private/uniqueid.ts``: ``HIDDEN_ID``).
HIDDEN_ID = "Default"
#: CDK leaves this id out of the readable part of a logical id (``HIDDEN_FROM_HUMAN_ID``).
HIDDEN_FROM_HUMAN_ID = "Resource"
_HASH_LEN = 8
_MAX_HUMAN_LEN = 240
_MAX_ID_LEN = 255


class Part(Construct):
    """A construct whose resources keep the logical ids they would have as children of ``home``.

    Args:
        scope: Where the part lives in the construct tree.
        construct_id: Its id (not part of any logical id).
        home: The construct whose children its children are, for logical ids; default ``scope``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, home: Construct | None = None) -> None:
        super().__init__(scope, construct_id)
        self.home: Construct = home if home is not None else scope
        if self.home is not scope and self.home not in scope.node.scopes:
            raise PropsError(self.node.path, [f"home must be {scope.node.path} or one of its parents in its stack"])
        if isinstance(self.home, App) or Stack.of(self.home) is not Stack.of(scope):
            raise PropsError(self.node.path, ["home must be in the part's own stack"])


class PartAwareStack(Stack):
    """A stack whose logical ids ignore :class:`Part` levels (every stack of this app, so any construct may use
    parts)."""

    def _allocate_logical_id(self, cfn_element: CfnElement) -> str:
        scopes = list(cfn_element.node.scopes)
        if not any(isinstance(s, Part) for s in scopes):
            return super()._allocate_logical_id(cfn_element)
        return make_unique_id(logical_path(cfn_element, self))


def logical_path(construct: IConstruct, stack: Stack) -> list[str]:
    """The ids below ``stack`` that make ``construct``'s logical id: a :class:`Part` stands for its ``home``."""
    path: list[str] = []
    for scope in _below(construct, stack):
        if isinstance(scope, Part):
            path = logical_path(scope.home, stack) if scope.home is not stack else []
        else:
            path.append(scope.node.id)
    return path


def _below(construct: IConstruct, stack: Stack) -> list[IConstruct]:
    scopes = list(construct.node.scopes)
    paths = [s.node.path for s in scopes]
    return scopes[paths.index(stack.node.path) + 1 :]


def make_unique_id(components: Sequence[str]) -> str:
    """CDK's logical id of a path (``makeUniqueId`` in aws-cdk-lib ``core/lib/private/uniqueid.ts``): the readable
    ids, then a hash of the whole path."""
    components = [c for c in components if c != HIDDEN_ID]
    if not components:
        raise ValueError("a logical id needs at least one path component")
    if len(components) == 1:
        top = _alphanumeric(components[0])
        if len(top) <= _MAX_ID_LEN:
            return top
    digest = hashlib.md5("/".join(components).encode(), usedforsecurity=False).hexdigest()[:_HASH_LEN].upper()
    readable: list[str] = []
    for component in components:
        if not readable or not readable[-1].endswith(component):
            readable.append(component)
    human = "".join(_alphanumeric(c) for c in readable if c != HIDDEN_FROM_HUMAN_ID)
    return human[:_MAX_HUMAN_LEN] + digest


def _alphanumeric(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "", text)

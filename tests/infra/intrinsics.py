"""Template values as the account would see them: CloudFormation's intrinsic functions resolved against a sample
account, or :data:`UNRESOLVED` where the value is only known once another resource exists."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

#: A value only known at deploy time (a reference to a resource, an attribute).
UNRESOLVED: Final = object()
ACCOUNT: Final = "111122223333"
#: The form of a stack id's last part (a lower-case UUID).
STACK_UUID: Final = "51af3dc0-da77-11e4-872e-1234567db123"


def pseudo_parameters(stack_name: str, region: str) -> dict[str, str]:
    """What ``Ref`` of each pseudo parameter resolves to in the sample account."""
    return {
        "AWS::AccountId": ACCOUNT,
        "AWS::Region": region,
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
        "AWS::StackName": stack_name,
        "AWS::StackId": f"arn:aws:cloudformation:{region}:{ACCOUNT}:stack/{stack_name}/{STACK_UUID}",
    }


def resolve(value: Any, pseudo: Mapping[str, str]) -> Any:
    """``value`` with ``Ref`` (pseudo parameters), ``Fn::Join``, ``Fn::Select``, ``Fn::Split`` and ``Fn::Sub``
    (pseudo parameters only) resolved; :data:`UNRESOLVED` if any part refers to a resource."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list):
        items = [resolve(v, pseudo) for v in value]
        return UNRESOLVED if any(i is UNRESOLVED for i in items) else items
    if not isinstance(value, dict) or len(value) != 1:
        return UNRESOLVED
    ((fn, arg),) = value.items()
    if fn == "Ref":
        return pseudo.get(arg, UNRESOLVED)
    if fn == "Fn::Join":
        parts = resolve(arg[1], pseudo)
        return UNRESOLVED if parts is UNRESOLVED else str(arg[0]).join(str(p) for p in parts)
    if fn == "Fn::Select":
        items = resolve(arg[1], pseudo)
        return UNRESOLVED if items is UNRESOLVED else items[int(arg[0])]
    if fn == "Fn::Split":
        text = resolve(arg[1], pseudo)
        return UNRESOLVED if text is UNRESOLVED else text.split(arg[0])
    if fn == "Fn::Sub" and isinstance(arg, str):
        text = arg
        for name, sample in pseudo.items():
            text = text.replace("${" + name + "}", sample)
        return UNRESOLVED if "${" in text else text
    return UNRESOLVED

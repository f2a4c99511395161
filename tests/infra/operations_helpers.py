"""What the operations tests (``test_operations*.py``) share: the variants they cover, template values as text, one
resource by its construct path, a role's statements, and what a handed-off SSM parameter stands for."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.infra.conftest import VARIANTS, Synth, resources

ALL = list(VARIANTS)


def render(value: Any) -> str:
    """A template value as text: literals as they are, intrinsics as ``<...>`` placeholders."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join(render(v) for v in value)
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Fn::Join":
            return str(arg[0]).join(render(v) for v in arg[1])
        if key == "Ref":
            return f"<{arg}>"
        if key == "Fn::GetAtt":
            return f"<{'.'.join(arg) if isinstance(arg, list) else arg}>"
        if key == "Fn::ImportValue":
            return f"<import:{arg}>"
        if key == "Fn::Select":
            return f"<select:{arg[0]}:{render(arg[1])}>"
        if key == "Fn::Split":
            return f"<split:{arg[0]}:{render(arg[1])}>"
    return json.dumps(value, sort_keys=True)


def one_resource(template: dict[str, Any], type_name: str, path: str) -> tuple[str, dict[str, Any]]:
    """The one resource whose logical id is ``path`` (the construct path, CDK's repeated words removed) + its hash."""
    pattern = re.compile(rf"{path}[0-9A-F]{{8}}")
    (found,) = [(k, v) for k, v in resources(template, type_name).items() if pattern.fullmatch(k)]
    return found


def role_statements(template: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    (role_id,) = [k for k in resources(template, "AWS::IAM::Role") if k.startswith(role_prefix)]
    return [
        s
        for p in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def handed_off(synth: Synth, rendered: str) -> Any:
    """What ``<parameter>`` (a rendered reference to one of -Operations' SSM parameters) stands for: the value an
    earlier stack's handoff writes under that parameter's name."""
    parameter = synth.template("-Operations")["Parameters"][rendered.strip("<>")]
    assert parameter["Type"] == "AWS::SSM::Parameter::Value<String>"
    (value,) = [
        p["Properties"]["Value"]
        for t in synth.templates.values()
        for p in resources(t, "AWS::SSM::Parameter").values()
        if p["Properties"].get("Name") == parameter["Default"]
    ]
    return value

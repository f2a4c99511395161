"""Which cross-stack exports an update would have to remove or change while another stack still imports them.

CloudFormation updates the producing stack first (``cdk deploy --all`` keeps the stacks' order) and refuses to
remove or change an export that any stack imports at that moment, i.e. as the *old* templates have it. So an update
from ``before`` to ``after`` is blocked by each export of ``before`` that ``after`` removes or may change and that a
``before`` stack other than its producer imports.

"May change": the export's value expression differs, or it is an attribute of a custom resource whose properties
differ (a handler's attributes are whatever it answers; CloudFormation re-runs it on any property change). Plain
resources' ids and attributes are treated as stable unless the expression changes (a replacement is not modelled).
"""

from __future__ import annotations

import json
from typing import Any

Templates = dict[str, dict[str, Any]]


def exports(templates: Templates) -> dict[str, tuple[str, Any]]:
    """Export name -> (producing stack, value expression)."""
    found: dict[str, tuple[str, Any]] = {}
    for stack, template in templates.items():
        for output in template.get("Outputs", {}).values():
            if "Export" in output:
                found[_name(stack, output["Export"]["Name"])] = (stack, output["Value"])
    return found


def imports(templates: Templates) -> dict[str, set[str]]:
    """Export name -> the stacks that import it."""
    found: dict[str, set[str]] = {}
    for stack, template in templates.items():
        for name in _import_values(template):
            found.setdefault(_name(stack, name), set()).add(stack)
    return found


def blocking_exports(before: Templates, after: Templates) -> dict[str, set[str]]:
    """Exports of ``before`` that ``after`` removes or may change while a ``before`` stack imports them: name ->
    the importing stacks. Empty when the update can go through."""
    old, new, importers = exports(before), exports(after), imports(before)
    blocked: dict[str, set[str]] = {}
    for name, (stack, value) in old.items():
        users = importers.get(name, set()) - {stack}
        if users and (name not in new or _may_change(value, new[name][1], before[stack], after.get(stack, {}))):
            blocked[name] = users
    return blocked


def _may_change(old: Any, new: Any, old_template: dict[str, Any], new_template: dict[str, Any]) -> bool:
    if json.dumps(old, sort_keys=True) != json.dumps(new, sort_keys=True):
        return True
    if isinstance(old, dict) and "Fn::GetAtt" in old:
        logical_id = old["Fn::GetAtt"][0]
        was, now = (t.get("Resources", {}).get(logical_id, {}) for t in (old_template, new_template))
        custom = (
            str(was.get("Type", "")).startswith("Custom::") or was.get("Type") == "AWS::CloudFormation::CustomResource"
        )
        return custom and json.dumps(was.get("Properties"), sort_keys=True) != json.dumps(
            now.get("Properties"), sort_keys=True
        )
    return False


def _name(stack: str, export_name: Any) -> str:
    """Export names CDK writes are plain strings (``<stack>:ExportsOutput...``)."""
    return export_name if isinstance(export_name, str) else f"{stack}:{json.dumps(export_name, sort_keys=True)}"


def _import_values(node: Any) -> list[Any]:
    if isinstance(node, dict):
        if "Fn::ImportValue" in node:
            return [node["Fn::ImportValue"]]
        return [v for child in node.values() for v in _import_values(child)]
    if isinstance(node, list):
        return [v for child in node for v in _import_values(child)]
    return []

"""Which physical names a sequence of deployments would create twice: the AlreadyExists a real account answers.

CloudFormation creates a resource's new instance before it deletes the old one (a new logical id, or a change of a
property the resource cannot update in place), and a resource whose ``DeletionPolicy`` (``UpdateReplacePolicy`` for a
replaced instance) is ``Retain`` stays in the account after the stack lets go of it, with its name. So a deployment
fails when it creates a resource whose name an existing instance holds: one the stack still has, or one it retained
earlier (events on, off, on again: the kept bus's name). And a resource whose own name stays while a property forces
its replacement cannot be updated at all ("cannot update a stack when a custom-named resource requires replacing").

:func:`name_collisions` walks a sequence of synthesized template sets (the stacks keep their ids throughout, as
``cdk deploy`` updates them) and answers every such clash. A name is its template expression with the stack's
pseudo parameters resolved and each reference to a resource of the stack resolved to that resource's instance: a
resource created again is another instance, so a name built from a generated id (a key's, the stack's) changes with
it. Which properties force a replacement comes from the resource schemas cfn-lint ships (``createOnlyProperties``).

Approximations: the stacks of one deployment are updated one after the other in name order (``cdk deploy --all``
follows dependencies; a name moving between stacks is the one case where the order matters); a template parameter
(an SSM handoff) keeps its value; a name the check cannot see (an unlisted type) is not compared.
"""

from __future__ import annotations

import importlib.resources
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

Templates = dict[str, dict[str, Any]]

#: The property holding a resource's physical name, per type this app creates; ``None``: CloudFormation always
#: generates it (nothing can collide). Every type a template retains must be listed (the check refuses unknown ones).
NAME_PROPERTIES: dict[str, str | None] = {
    "AWS::Backup::BackupVault": "BackupVaultName",
    "AWS::Cognito::UserPool": None,  # UserPoolName is not unique; the id is generated
    "AWS::DynamoDB::Table": "TableName",
    "AWS::EC2::VPC": None,
    "AWS::ECR::Repository": "RepositoryName",
    "AWS::Events::Archive": "ArchiveName",
    "AWS::Events::EventBus": "Name",
    "AWS::KMS::Alias": "AliasName",
    "AWS::KMS::Key": None,
    "AWS::Lambda::LayerVersion": None,  # versions of one layer name never collide
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::RDS::DBCluster": "DBClusterIdentifier",
    "AWS::RDS::DBInstance": "DBInstanceIdentifier",
    "AWS::RDS::DBSubnetGroup": "DBSubnetGroupName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::SecretsManager::Secret": "Name",
    "AWS::SQS::Queue": "QueueName",
    "AWS::SSM::Parameter": "Name",
}
_RETAINED = ("Retain", "RetainExceptOnCreate")
_PSEUDO = {"AWS::Region", "AWS::AccountId", "AWS::Partition", "AWS::URLSuffix"}


@dataclass(frozen=True)
class Collision:
    """One deployment of the sequence that fails: ``step`` (1: the first update), the stack and logical id of the
    resource it creates, its name, and what already holds the name."""

    step: int
    stack: str
    logical_id: str
    name: str
    holder: str


@dataclass
class _Account:
    #: (stack, logical id) -> instance number of what the stack holds.
    instances: dict[tuple[str, str], int] = field(default_factory=dict)
    #: name -> what holds it (a live resource or one retained earlier).
    names: dict[str, str] = field(default_factory=dict)
    created: int = 0

    def new_instance(self) -> int:
        self.created += 1
        return self.created


def name_collisions(sequence: list[Templates]) -> list[Collision]:
    """Every clash of physical names when the first template set is deployed, then each next one as an update."""
    account = _Account()
    found: list[Collision] = []
    previous: Templates = {}
    for step, templates in enumerate(sequence):
        for stack in sorted(set(previous) | set(templates)):
            found += _update(account, step, stack, previous.get(stack, {}), templates.get(stack, {}))
        previous = templates
    return found


def retained_types(templates: Templates) -> set[str]:
    """The types of every resource a template retains (on delete or on replacement)."""
    return {
        r["Type"]
        for t in templates.values()
        for r in t.get("Resources", {}).values()
        if r.get("DeletionPolicy") in _RETAINED or r.get("UpdateReplacePolicy") in _RETAINED
    }


def _update(account: _Account, step: int, stack: str, before: dict[str, Any], after: dict[str, Any]) -> list[Collision]:
    old, new = before.get("Resources", {}), after.get("Resources", {})
    fresh = _fresh(old, new)
    found: list[Collision] = []
    # Names of the instances this update creates: references to a fresh resource name its new instance.
    pending = {logical_id: account.new_instance() for logical_id in fresh}
    instances = {**{k: v for (s, k), v in account.instances.items() if s == stack}, **pending}
    for logical_id in sorted(fresh):
        resource = new[logical_id]
        name = _name(stack, resource, instances)
        if name is None:
            continue
        if logical_id in old and name == _name(stack, old[logical_id], _instances_of(account, stack)):
            found.append(Collision(step, stack, logical_id, name, "itself: a custom-named resource cannot be replaced"))
        elif name in account.names:
            found.append(Collision(step, stack, logical_id, name, account.names[name]))
        account.names[name] = f"{stack}/{logical_id} (created at step {step})"
    # The old instances the update lets go of: removed, or replaced.
    for logical_id, resource in old.items():
        if logical_id in new and logical_id not in fresh:
            continue
        name = _name(stack, resource, _instances_of(account, stack))
        policy = resource.get("UpdateReplacePolicy" if logical_id in new else "DeletionPolicy")
        if name is not None and account.names.get(name, "").startswith(f"{stack}/{logical_id} "):
            if policy in _RETAINED:
                account.names[name] = f"{stack}/{logical_id} (retained at step {step})"
            else:
                del account.names[name]
        account.instances.pop((stack, logical_id), None)
    for logical_id, instance in pending.items():
        account.instances[(stack, logical_id)] = instance
    return found


def _instances_of(account: _Account, stack: str) -> dict[str, int]:
    return {k: v for (s, k), v in account.instances.items() if s == stack}


def _fresh(old: dict[str, Any], new: dict[str, Any]) -> set[str]:
    """The logical ids the update creates an instance of: new ones, ones whose type changes, ones a create-only
    property change replaces (including a reference to a resource the update creates again)."""
    fresh = {k for k, r in new.items() if k not in old or old[k]["Type"] != r["Type"]}
    changed = True
    while changed:
        changed = False
        for logical_id, resource in new.items():
            if logical_id in fresh:
                continue
            was = old[logical_id].get("Properties", {})
            now = resource.get("Properties", {})
            for prop in create_only_properties(resource["Type"]):
                if _text(was.get(prop)) != _text(now.get(prop)) or _refs(now.get(prop)) & fresh:
                    fresh.add(logical_id)
                    changed = True
                    break
    return fresh


def _name(stack: str, resource: dict[str, Any], instances: dict[str, int]) -> str | None:
    prop = NAME_PROPERTIES.get(resource["Type"])
    value = resource.get("Properties", {}).get(prop) if prop else None
    if value is None:
        return None
    return f"{resource['Type']} {_text(_resolve(stack, value, instances))}"


def _resolve(stack: str, node: Any, instances: dict[str, int]) -> Any:
    """The expression with pseudo parameters and references to the stack's resources made values."""
    if isinstance(node, dict):
        if set(node) == {"Ref"}:
            return _ref(stack, node["Ref"], instances)
        if set(node) == {"Fn::GetAtt"}:
            target, attribute = _get_att(node["Fn::GetAtt"])
            return f"{_ref(stack, target, instances)}.{attribute}"
        if set(node) == {"Fn::Sub"} and isinstance(node["Fn::Sub"], str):
            return re.sub(r"\$\{([^}!]+)\}", lambda m: str(_ref(stack, m.group(1), instances)), node["Fn::Sub"])
        return {k: _resolve(stack, v, instances) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(stack, v, instances) for v in node]
    return node


def _ref(stack: str, target: str, instances: dict[str, int]) -> str:
    if target == "AWS::StackName":
        return stack
    if target == "AWS::StackId":
        return f"<id of {stack}>"  # the stacks are never created again in a sequence
    if target in _PSEUDO:
        return f"<{target}>"
    if target in instances:
        return f"<{stack}/{target}#{instances[target]}>"
    return f"<{stack} parameter {target}>"


def _get_att(value: Any) -> tuple[str, str]:
    target, attribute = value if isinstance(value, list) else str(value).split(".", 1)
    return str(target), _text(attribute)


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        if set(node) == {"Ref"}:
            return {node["Ref"]}
        if set(node) == {"Fn::GetAtt"} and isinstance(node["Fn::GetAtt"], list):
            return {node["Fn::GetAtt"][0]}
        return {r for v in node.values() for r in _refs(v)}
    if isinstance(node, list):
        return {r for v in node for r in _refs(v)}
    return set()


@cache
def create_only_properties(type_name: str) -> tuple[str, ...]:
    """The top-level properties whose change replaces a resource of ``type_name`` (cfn-lint's copy of the
    CloudFormation resource schema); none for custom resources and unknown types."""
    schema = _schemas().get(type_name)
    if schema is None:
        return ()
    paths = schema.get("createOnlyProperties", [])
    return tuple(sorted({p.split("/")[2] for p in paths if p.startswith("/properties/")}))


@cache
def _schemas() -> dict[str, dict[str, Any]]:
    root = Path(str(importlib.resources.files("cfnlint"))) / "data" / "schemas"
    index: dict[str, str] = json.loads((root / "providers" / "us-east-1.json").read_text())
    return _Lazy(root / "resources", index)


class _Lazy(dict[str, dict[str, Any]]):
    """Reads a type's schema when first asked."""

    def __init__(self, folder: Path, index: dict[str, str]) -> None:
        super().__init__()
        self._folder, self._index = folder, index

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self and key in self._index:
            self[key] = json.loads((self._folder / f"{self._index[key]}.json").read_text())
        return super().get(key, default)


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def updated_in_place(before: Templates, after: Templates) -> set[tuple[str, str, str]]:
    """The custom resources an update from ``before`` to ``after`` sends an Update (stack, logical id, type): same
    logical id, other properties. Its rollback is another Update, with the old properties."""
    found: set[tuple[str, str, str]] = set()
    for stack, template in after.items():
        old = before.get(stack, {}).get("Resources", {})
        for logical_id, resource in template.get("Resources", {}).items():
            kind = resource["Type"]
            custom = kind.startswith("Custom::") or kind == "AWS::CloudFormation::CustomResource"
            was = old.get(logical_id)
            if custom and was is not None and _text(was.get("Properties")) != _text(resource.get("Properties")):
                found.add((stack, logical_id, resource["Type"]))
    return found

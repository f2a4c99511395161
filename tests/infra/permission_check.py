"""Permissions: every AWS API operation a deployed function can call is granted by its synthesized role.

moto grants everything, so a handler test passes whatever the role allows; this check reads what the account would.
For each ``AWS::Lambda::Function`` of a synthesized cloud assembly (nested stacks included) it derives the IAM actions
the function needs and matches them against the identity policies attached to its role in the template (inline
policies, ``AWS::IAM::Policy``/``ManagedPolicy`` resources naming the role, and the AWS managed policies CDK attaches),
with IAM's semantics: ``Action``/``NotAction`` and ``Resource``/``NotResource`` wildcards (``*``, ``?``; actions
case-insensitive), an explicit ``Deny`` wins; intrinsic functions are resolved to the resource they point at
(``Ref``/``Fn::GetAtt`` become placeholders that only match themselves, pseudo parameters fixed values).
IAM's side (actions of an operation, the policy decision, the managed policies) is :mod:`tests.infra.iam_model`; what
the code loads and calls is :mod:`tests.infra.code_walk`.

What a function calls:

- The project's Python functions: read from the deployed code itself (the function's asset in the cloud assembly and
  the ``memory_adapter`` layer), statically: in each module, the services it makes clients for
  (``boto3.client("logs")``, ``session.client(...)``, helpers named ``*client``) and every call of theirs it makes
  (methods, ``getattr(client, "op")`` with a constant name, paginators and waiters mapped to their operation with
  botocore's service models), and Powertools utilities that call AWS (parameters, providers, idempotency). Imports
  are followed through the function's own modules and ``memory_adapter``. An operation maps to
  ``<prefix>:<Operation>`` with the model's signing name as the prefix, except where IAM names the action differently
  (:data:`IAM_ACTION_EXCEPTIONS`). A call that only an environment variable enables is needed, on the resource it
  names, only when the function sets it (:data:`CALLS_NAMED_BY_ENVIRONMENT`); calls in loaded modules that an entry
  point never reaches are listed with the reason (:data:`NOT_REACHED`).
- CDK's own functions (provider framework, ``AwsCustomResource``, the default-security-group restriction, the image
  copy, the kubectl handler): from what the template tells them to call (the framework's user handler, each
  ``AwsCustomResource`` call's ``service``/``action``, ...). A function the check has no model of is itself a finding,
  so a new kind of function cannot pass unchecked.

Resource scoping is checked where a wrong scope is a known deploy failure: operations IAM authorizes only against a
wildcard (``logs:DescribeLogGroups`` needs ``log-group:*``, ``cloudwatch:PutMetricData`` needs ``*``) and the log
groups each ``Custom::ServiceLogGroup`` claims; elsewhere any resource in an ``Allow`` counts.

Limits: the analysis is per module, not per code path (an operation in a module the handler loads counts even if
this entry point never reaches it, unless :data:`NOT_REACHED` says why); a client used in another module than the
one that made it, operation names computed at run time, third-party code other than Powertools, ``Condition``
blocks (an ``Allow`` with a condition counts as granting), resource policies, SCPs, permission boundaries and what a
call implies on other services (``kms:Decrypt`` of a secret's key, ``kms:GenerateDataKey`` for an SSE-KMS put) are
not modelled; outside the claims and the wildcard-only operations, any resource in an ``Allow`` counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.permissions import SQS_EVENT_SOURCE_ACTIONS
from tests.infra.code_walk import (
    POWERTOOLS_CALLS,
    ModuleCalls,
    code_calls,
    module_file,
)
from tests.infra.iam_model import (
    AWS_MANAGED_POLICIES,
    allowed,
    granted_somewhere,
    iam_actions,
    operations,
    sdk_call_actions,
    waiters,
)

#: The account every ``AWS::AccountId`` resolves to (any fixed value: both sides resolve alike).
ACCOUNT = "123456789012"
PARTITION = "aws"
URL_SUFFIX = "amazonaws.com"

#: Actions IAM authorizes only against a wildcard resource: the resource (``{region}``/``{account}`` filled in) a
#: statement must cover. Scoping them to one resource is a deploy-time AccessDenied that moto never shows.
UNSCOPED_RESOURCES: dict[str, str] = {
    "logs:DescribeLogGroups": "arn:aws:logs:{region}:{account}:log-group:*",
    "cloudwatch:PutMetricData": "*",
    "ecr:GetAuthorizationToken": "*",
    "ec2:DescribeSecurityGroups": "*",
    "ec2:DescribeVpcEndpoints": "*",
    "ec2:DescribeNetworkInterfaces": "*",
}


#: Calls a module makes only when the function's environment names the resource: (module, action) -> the variable.
#: The need is then on exactly that resource; without the variable the call never happens.
CALLS_NAMED_BY_ENVIRONMENT: dict[tuple[str, str], str] = {
    # AgentKey: the replay reads the agent key in IAM mode only (HINDSIGHT_API_KEY_SECRET_ARN set).
    ("memory_adapter.agentcore.credentials", "secretsmanager:GetSecretValue"): "HINDSIGHT_API_KEY_SECRET_ARN",
}
#: Calls in a module a function loads that its entry point never reaches: (handler, module, action) -> why
#: (``*``: every handler). Each is a claim about the code a reviewer can check; keep the list short.
NOT_REACHED: dict[tuple[str, str, str], str] = {
    ("*", "memory_adapter.admin.store", "s3:GetObject"): "S3Store.get: only the maintenance task's restore reads",
    ("*", "memory_adapter.admin.store", "s3:ListBucket"): "S3Store.keys: only the maintenance task's restore lists",
    ("index.expire_handler", "memory_adapter.admin.store", "s3:PutObject"): (
        "the expiry entry runs only the expire action, which writes nothing to the bucket"
    ),
    **{
        ("index.handler", "memory_adapter.sqs_spool", f"sqs:{op}"): "the replay only sends dead letters: its event "
        "source mapping receives and deletes (mapping_needs)"
        for op in ("ReceiveMessage", "DeleteMessage", "GetQueueAttributes", "ChangeMessageVisibility")
    },
}
#: Packages of the project whose code a function's imports are followed into (third-party code is not read).
OWN_PACKAGES = frozenset({"memory_adapter"})
#: The log-group actions a ``Custom::ServiceLogGroup`` claim performs on the group it names (besides the reads).
CLAIM_ACTIONS = ("logs:CreateLogGroup", "logs:PutRetentionPolicy", "logs:AssociateKmsKey", "logs:DeleteLogGroup")


@dataclass(frozen=True)
class Need:
    """One IAM action a function needs, on any of ``resources`` (``None``: on some resource)."""

    action: str
    resources: tuple[str, ...] | None = None
    why: str = ""
    module: str = ""  # the module whose code makes the call (project functions only)


@dataclass
class Function:
    """One deployed function as the template states it."""

    stack: str
    logical_id: str
    properties: dict[str, Any]
    needs: list[Need] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.stack}/{self.logical_id}"


# ---------------------------------------------------------------------------------------------------------- templates


class Resolver:
    """Intrinsic functions of one template as strings: references become ``${Logical.Attr}`` placeholders."""

    def __init__(
        self, template: Mapping[str, Any], region: str, account: str = ACCOUNT, values: Mapping[str, str] | None = None
    ) -> None:
        self.template = template
        self.region = region
        self.account = account
        self.values = dict(values or {})  # "Logical" / "Logical.Attr" -> a deployed value (else a placeholder)

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str | int | float | bool) or value is None:
            return value
        if isinstance(value, list):
            return [self(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1:
            return {k: self(v) for k, v in value.items()}
        ((key, arg),) = value.items()
        if key == "Ref":
            pseudo = {
                "AWS::AccountId": self.account,
                "AWS::Partition": PARTITION,
                "AWS::Region": self.region,
                "AWS::URLSuffix": URL_SUFFIX,
            }
            return pseudo.get(arg, self.values.get(str(arg), "${" + str(arg) + "}"))
        if key == "Fn::GetAtt":
            target, attr = arg if isinstance(arg, list) else str(arg).split(".", 1)
            return self.values.get(f"{target}.{attr}", "${" + f"{target}.{attr}" + "}")
        if key == "Fn::Join":
            separator, parts = arg
            resolved = [self(p) for p in parts] if isinstance(parts, list) else [self(parts)]
            return separator.join(p if isinstance(p, str) else json.dumps(p) for p in resolved)
        if key == "Fn::Sub":
            text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])

            def sub(match: re.Match[str]) -> str:
                name = match.group(1)
                if name in variables:
                    return str(self(variables[name]))
                if "." in name:
                    return "${" + name + "}"
                return str(self({"Ref": name}))

            return re.sub(r"\$\{([^}!]+)\}", sub, text)
        if key == "Fn::Select":
            index, items = arg
            items = self(items)
            return items[int(index)] if isinstance(items, list) else "${Select(" + str(index) + ")}"
        if key == "Fn::Split":
            return "${Split}"  # opaque: a part of a reference
        if key == "Fn::ImportValue":
            return "${Import:" + str(self(arg)) + "}"
        if key == "Fn::If":
            return {"Fn::If": arg}  # conditional: never counted as granted
        return value


def _statements(document: Any) -> list[dict[str, Any]]:
    statements = document.get("Statement", []) if isinstance(document, dict) else []
    return [s for s in (statements if isinstance(statements, list) else [statements]) if isinstance(s, dict)]


def role_statements(template: Mapping[str, Any], role: str, resolve: Resolver) -> list[dict[str, Any]]:
    """Every identity-policy statement attached to the role with logical id ``role``, resolved."""
    resources = template.get("Resources", {})
    found: list[dict[str, Any]] = []
    props = resources.get(role, {}).get("Properties", {})
    for policy in props.get("Policies", []) or []:
        found.extend(_statements(policy.get("PolicyDocument")))
    managed = list(props.get("ManagedPolicyArns", []) or [])
    for logical, resource in resources.items():
        rprops = resource.get("Properties", {})
        if resource.get("Type") in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy") and {"Ref": role} in (
            rprops.get("Roles") or []
        ):
            found.extend(_statements(rprops.get("PolicyDocument")))
        if resource.get("Type") == "AWS::IAM::ManagedPolicy" and {"Ref": logical} in managed:
            found.extend(_statements(rprops.get("PolicyDocument")))
    for arn in managed:
        text = resolve(arn)
        if isinstance(text, str) and ":iam::aws:policy/" in text:
            found.extend(AWS_MANAGED_POLICIES.get(text.split(":iam::aws:policy/", 1)[1], []))
    return [resolve(s) for s in found]


# ------------------------------------------------------------------------------------------------------ code analysis


def code_needs(modules: Iterable[ModuleCalls]) -> list[Need]:
    """The IAM actions of what the modules call."""
    needs: list[Need] = []
    for calls in modules:
        used: dict[tuple[str, str], set[int]] = {}
        for service in calls.services:
            ops, polls = operations(service), waiters(service)
            for table, names in (
                (calls.methods, ops),
                (calls.strings, ops),
                (calls.paginators, ops),
                (calls.waiters, polls),
            ):
                for name, lines in table.items():
                    if name in names:
                        used.setdefault((service, names[name]), set()).update(lines)
        for (service, operation), lines in sorted(used.items()):
            where = f"{calls.name}:{','.join(map(str, sorted(lines)))}"
            needs.extend(
                Need(a, why=f"{service}.{operation} at {where}", module=calls.name)
                for a in iam_actions(service, operation)
            )
        for name, lines in sorted(calls.powertools.items()):
            where = f"{calls.name}:{','.join(map(str, sorted(lines)))}"
            needs.extend(
                Need(a, why=f"Powertools {name} at {where}", module=calls.name) for a in POWERTOOLS_CALLS[name]
            )
    return needs


# ------------------------------------------------------------------------------------------------------ the functions


def _token_target(value: Any) -> str | None:
    """The logical id a ``ServiceToken``/ARN reference points at (``Fn::GetAtt [X, Arn]`` or ``Ref X``)."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        arg = value["Fn::GetAtt"]
        return str(arg[0] if isinstance(arg, list) else str(arg).split(".")[0])
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    return None


def _asset_dir(outdir: Path, code: Mapping[str, Any]) -> Path | None:
    key = code.get("S3Key")
    if not isinstance(key, str) or not key.endswith(".zip"):
        return None
    path = outdir / f"asset.{key.removesuffix('.zip')}"
    return path if path.is_dir() else None


def _custom_resources(template: Mapping[str, Any], function: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (logical, resource)
        for logical, resource in template.get("Resources", {}).items()
        if (
            resource.get("Type", "").startswith("Custom::")
            or resource.get("Type") == "AWS::CloudFormation::CustomResource"
        )
        and _token_target(resource.get("Properties", {}).get("ServiceToken")) == function
    ]


def function_needs(fn: Function, template: Mapping[str, Any], outdir: Path, resolve: Resolver) -> None:
    """Fill ``fn.needs`` (or ``fn.problems`` when the check has no model of the function)."""
    props = fn.properties
    handler = str(props.get("Handler", ""))
    runtime = str(props.get("Runtime", ""))
    env = (props.get("Environment") or {}).get("Variables") or {}
    custom = _custom_resources(template, fn.logical_id)
    types = {r.get("Type") for _, r in custom}
    asset = _asset_dir(outdir, props.get("Code") or {})
    if handler == "framework.onEvent":  # CDK's provider framework: invokes the user's handlers
        for variable in ("USER_ON_EVENT_FUNCTION_ARN", "USER_IS_COMPLETE_FUNCTION_ARN"):
            if variable in env:
                fn.needs.append(Need("lambda:InvokeFunction", (str(resolve(env[variable])),), f"framework {variable}"))
        if "WAITER_STATE_MACHINE_ARN" in env:
            fn.needs.append(Need("states:StartExecution", (str(resolve(env["WAITER_STATE_MACHINE_ARN"])),), "waiter"))
        return
    if types and types <= {"Custom::AWS"}:  # AwsCustomResource: the SDK calls its resources name
        for logical, resource in custom:
            for phase in ("Create", "Update", "Delete"):
                call = resource["Properties"].get(phase)
                if call is None:
                    continue
                text = resolve(call)
                try:
                    parsed = json.loads(text) if isinstance(text, str) else None
                    actions = sdk_call_actions(parsed["service"], parsed["action"]) if parsed else ()
                except (KeyError, TypeError, ValueError) as exc:
                    fn.problems.append(f"{logical}.{phase}: cannot read the SDK call ({exc})")
                    continue
                fn.needs.extend(Need(a, why=f"{logical}.{phase}") for a in actions)
        return
    if types == {"Custom::VpcRestrictDefaultSG"}:
        for logical, resource in custom:
            group = resolve(resource["Properties"].get("DefaultSecurityGroupId"))
            arn = f"arn:aws:ec2:{resolve.region}:{resolve.account}:security-group/{group}"
            for action in (
                "AuthorizeSecurityGroupIngress",
                "AuthorizeSecurityGroupEgress",
                "RevokeSecurityGroupIngress",
                "RevokeSecurityGroupEgress",
            ):
                fn.needs.append(Need(f"ec2:{action}", (arn,), logical))
        return
    if types == {"Custom::CDKECRDeployment"}:  # cdk-ecr-deployment: logs in to ECR, pushes to the repository
        fn.needs.append(Need("ecr:GetAuthorizationToken", why="image copy"))
        for action in (
            "ecr:InitiateLayerUpload",
            "ecr:UploadLayerPart",
            "ecr:CompleteLayerUpload",
            "ecr:PutImage",
            "ecr:BatchCheckLayerAvailability",
        ):
            fn.needs.append(Need(action, why="image copy (destination repository)"))
        return
    if asset is not None and (asset / "apply" / "__init__.py").is_file() and (asset / "patch").is_dir():
        # CDK's kubectl handler: `aws eks update-kubeconfig --role-arn` (DescribeCluster, then the kubectl role).
        fn.needs.append(Need("eks:DescribeCluster", why="kubectl handler: update-kubeconfig"))
        fn.needs.append(Need("sts:AssumeRole", why="kubectl handler: the cluster's kubectl role"))
        return
    if runtime.startswith("python") and asset is not None:
        module = handler.rsplit(".", 1)[0]
        entry = module_file([asset], module)
        if entry is None:
            fn.problems.append(f"handler module {module} not in the asset")
            return
        roots = [asset, *_layer_roots(props, template, outdir)]
        for found in code_needs(code_calls([entry], roots, OWN_PACKAGES)):
            if (handler, found.module, found.action) in NOT_REACHED or ("*", found.module, found.action) in NOT_REACHED:
                continue
            need: Need = found
            named_by = CALLS_NAMED_BY_ENVIRONMENT.get((found.module, found.action))
            if named_by is not None:
                if named_by not in env:
                    continue
                need = Need(need.action, (str(resolve(env[named_by])),), f"{need.why} ({named_by})", need.module)
            fn.needs.append(need)
        fn.needs.extend(mapping_needs(template, fn.logical_id, resolve))
        if "Custom::ServiceLogGroup" in types:
            for logical, resource in custom:
                name = resolve(resource["Properties"]["LogGroupName"])
                base = f"arn:aws:logs:{resolve.region}:{resolve.account}:log-group:{name}"
                fn.needs.extend(Need(a, (base, f"{base}:*"), f"claim {logical}") for a in CLAIM_ACTIONS)
        return
    fn.problems.append(f"no model of what this function calls (runtime {runtime}, handler {handler})")


def mapping_needs(template: Mapping[str, Any], function: str, resolve: Resolver) -> list[Need]:
    """What the function's role needs for Lambda to run its SQS event source mappings, on each queue."""
    resources, needs = template.get("Resources", {}), list[Need]()
    for logical, resource in resources.items():
        props = resource.get("Properties", {})
        source = resources.get(_token_target(props.get("EventSourceArn")) or "", {}).get("Type")
        if source == "AWS::SQS::Queue" and _token_target(props.get("FunctionName")) == function:
            arn = str(resolve(props["EventSourceArn"]))
            needs.extend(Need(a, (arn,), f"event source {logical}") for a in SQS_EVENT_SOURCE_ACTIONS)
    return needs


def _layer_roots(props: Mapping[str, Any], template: Mapping[str, Any], outdir: Path) -> list[Path]:
    roots = []
    for layer in props.get("Layers") or []:
        target = _token_target(layer)
        resource = template.get("Resources", {}).get(target or "", {})
        asset = _asset_dir(outdir, resource.get("Properties", {}).get("Content") or {})
        if asset is not None and (asset / "python").is_dir():
            roots.append(asset / "python")
    return roots


def functions(
    templates: Mapping[str, Mapping[str, Any]], outdir: Path, *, region: str, account: str | None = None
) -> list[Function]:
    """Every function of the cloud assembly (``outdir``) with what it needs."""
    found = []
    for stack, template in sorted(templates.items()):
        resolve = Resolver(template, region, account or ACCOUNT)
        for logical, resource in template.get("Resources", {}).items():
            if resource.get("Type") != "AWS::Lambda::Function":
                continue
            fn = Function(stack, logical, resource.get("Properties", {}))
            function_needs(fn, template, outdir, resolve)
            found.append(fn)
    return found


def findings(
    templates: Mapping[str, Mapping[str, Any]], outdir: Path, *, region: str, account: str | None = None
) -> list[str]:
    """One line per action a function needs and its role does not grant (or per function the check cannot read).

    ``templates``: stack name -> template of one cloud assembly in ``outdir`` (nested stacks included); ``region``
    and ``account`` (``None``: environment-agnostic) those of its stacks."""
    lines: list[str] = []
    account = account or ACCOUNT
    for fn in functions(templates, outdir, region=region, account=account):
        lines.extend(f"{fn.name}: {problem}" for problem in fn.problems)
        template = templates[fn.stack]
        resolve = Resolver(template, region, account)
        role = _token_target(fn.properties.get("Role"))
        if role is None or role not in template.get("Resources", {}):
            lines.append(f"{fn.name}: its role is not in the template ({fn.properties.get('Role')!r})")
            continue
        statements = role_statements(template, role, resolve)
        for need in fn.needs:
            resources = need.resources
            unscoped = UNSCOPED_RESOURCES.get(need.action)
            if unscoped is not None:
                resources = (unscoped.format(region=region, account=account),)
            if resources is None:
                ok = granted_somewhere(statements, need.action)
            else:
                ok = any(allowed(statements, need.action, r) for r in resources)
            if not ok:
                on = f" on {' or '.join(resources)}" if resources else ""
                lines.append(f"{fn.name}: {need.action}{on} not granted to {role} ({need.why})")
    return sorted(set(lines))

"""Permissions: every AWS API operation a deployed function can call is granted by its synthesized role.

moto grants everything, so a handler test passes whatever the role allows; this check reads what the account would.
For each ``AWS::Lambda::Function`` of a synthesized cloud assembly (nested stacks included) it derives the IAM actions
the function needs and matches them against the identity policies attached to its role in the template (inline
policies, ``AWS::IAM::Policy``/``ManagedPolicy`` resources naming the role, and the AWS managed policies CDK attaches),
with IAM's semantics: ``Action``/``NotAction`` and ``Resource``/``NotResource`` wildcards (``*``, ``?``; actions
case-insensitive), an explicit ``Deny`` wins; intrinsic functions are resolved to the resource they point at
(``Ref``/``Fn::GetAtt`` become placeholders that only match themselves, pseudo parameters fixed values).

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

import ast
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

#: The account every ``AWS::AccountId`` resolves to (any fixed value: both sides resolve alike).
ACCOUNT = "123456789012"
PARTITION = "aws"
URL_SUFFIX = "amazonaws.com"

#: IAM actions whose name is not ``<prefix>:<Operation>`` (Service Authorization Reference).
IAM_ACTION_EXCEPTIONS: dict[str, tuple[str, ...]] = {
    "lambda:Invoke": ("lambda:InvokeFunction",),
    "s3:ListObjectsV2": ("s3:ListBucket",),
    "s3:ListObjects": ("s3:ListBucket",),
    "s3:HeadBucket": ("s3:ListBucket",),
    "s3:HeadObject": ("s3:GetObject",),
    "s3:DeleteObjects": ("s3:DeleteObject",),
    "s3:CopyObject": ("s3:GetObject", "s3:PutObject"),
    "s3:CreateMultipartUpload": ("s3:PutObject",),
    "s3:UploadPart": ("s3:PutObject",),
    "s3:CompleteMultipartUpload": ("s3:PutObject",),
    "s3:AbortMultipartUpload": ("s3:AbortMultipartUpload",),
    "sqs:SendMessageBatch": ("sqs:SendMessage",),
    "sqs:DeleteMessageBatch": ("sqs:DeleteMessage",),
    "sqs:ChangeMessageVisibilityBatch": ("sqs:ChangeMessageVisibility",),
    # Needs no permission (it answers who the caller is, even when everything else is denied).
    "sts:GetCallerIdentity": (),
}
#: Signing names that are not the IAM prefix.
IAM_PREFIX_EXCEPTIONS = {"monitoring": "cloudwatch"}

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

#: Powertools utilities that call AWS: the callable's name -> the IAM actions it needs.
POWERTOOLS_CALLS: dict[str, tuple[str, ...]] = {
    "get_secret": ("secretsmanager:GetSecretValue",),
    "get_secrets_by_name": ("secretsmanager:BatchGetSecretValue",),
    "get_parameter": ("ssm:GetParameter",),
    "get_parameters": ("ssm:GetParametersByPath",),
    "get_parameters_by_name": ("ssm:GetParameters", "ssm:GetParameter"),
    "get_app_config": ("appconfig:StartConfigurationSession", "appconfig:GetLatestConfiguration"),
    "DynamoDBPersistenceLayer": ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"),
    "SecretsProvider": ("secretsmanager:GetSecretValue",),
    "SSMProvider": ("ssm:GetParameter", "ssm:GetParametersByPath"),
    "DynamoDBProvider": ("dynamodb:GetItem", "dynamodb:Query"),
    "AppConfigProvider": ("appconfig:StartConfigurationSession", "appconfig:GetLatestConfiguration"),
}
#: Powertools classes whose mere use calls AWS (the rest of :data:`POWERTOOLS_CALLS` are functions called by name).
POWERTOOLS_CLASSES = frozenset(
    {"DynamoDBPersistenceLayer", "SecretsProvider", "SSMProvider", "DynamoDBProvider", "AppConfigProvider"}
)

#: What the AWS managed policies CDK attaches to functions' roles grant (their documents as published).
AWS_MANAGED_POLICIES: dict[str, list[dict[str, Any]]] = {
    "service-role/AWSLambdaBasicExecutionRole": [
        {
            "Effect": "Allow",
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": "*",
        },
    ],
    "service-role/AWSLambdaVPCAccessExecutionRole": [
        {
            "Effect": "Allow",
            "Resource": "*",
            "Action": [
                "logs:CreateLogGroup",
                "logs:CreateLogStream",
                "logs:PutLogEvents",
                "ec2:CreateNetworkInterface",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeSubnets",
                "ec2:DeleteNetworkInterface",
                "ec2:AssignPrivateIpAddresses",
                "ec2:UnassignPrivateIpAddresses",
            ],
        },
    ],
    "AmazonEC2ContainerRegistryPullOnly": [
        {
            "Effect": "Allow",
            "Resource": "*",
            "Action": [
                "ecr:GetAuthorizationToken",
                "ecr:BatchCheckLayerAvailability",
                "ecr:GetDownloadUrlForLayer",
                "ecr:BatchGetImage",
                "ecr:BatchImportUpstreamImage",
            ],
        },
    ],
    "AmazonElasticContainerRegistryPublicReadOnly": [
        {
            "Effect": "Allow",
            "Resource": "*",
            "Action": [
                "ecr-public:GetAuthorizationToken",
                "sts:GetServiceBearerToken",
                "ecr-public:BatchCheckLayerAvailability",
                "ecr-public:GetRepositoryPolicy",
                "ecr-public:DescribeRepositories",
                "ecr-public:DescribeRegistries",
                "ecr-public:DescribeImages",
                "ecr-public:DescribeImageTags",
                "ecr-public:GetRepositoryCatalogData",
                "ecr-public:GetRegistryCatalogData",
            ],
        },
    ],
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


# ----------------------------------------------------------------------------------------------------------- matching


def _glob(pattern: str, *, ignore_case: bool) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(f"^{body}$", re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL)


def _matches(patterns: Any, value: str, *, ignore_case: bool) -> bool:
    items = patterns if isinstance(patterns, list) else [patterns]
    return any(isinstance(p, str) and _glob(p, ignore_case=ignore_case).match(value) for p in items)


def _applies(statement: Mapping[str, Any], action: str, resource: str) -> bool:
    if "Action" in statement:
        if not _matches(statement["Action"], action, ignore_case=True):
            return False
    elif "NotAction" not in statement or _matches(statement["NotAction"], action, ignore_case=True):
        return False
    if "Resource" in statement:
        return _matches(statement["Resource"], resource, ignore_case=False)
    return "NotResource" in statement and not _matches(statement["NotResource"], resource, ignore_case=False)


def allowed(statements: Iterable[Mapping[str, Any]], action: str, resource: str) -> bool:
    """IAM's identity-policy decision for one action on one resource (``*`` in ``resource`` is literal)."""
    listed = list(statements)
    if any(s.get("Effect") == "Deny" and _applies(s, action, resource) for s in listed):
        return False
    return any(s.get("Effect") == "Allow" and _applies(s, action, resource) for s in listed)


def granted_somewhere(statements: Iterable[Mapping[str, Any]], action: str) -> bool:
    """Whether some ``Allow`` grants ``action`` on some resource (and no ``Deny`` of it on everything)."""
    listed = list(statements)
    if any(
        s.get("Effect") == "Deny" and _applies(s, action, "*") and _matches(s.get("Resource"), "*", ignore_case=False)
        for s in listed
    ):
        return False
    for s in listed:
        if s.get("Effect") != "Allow":
            continue
        if "Action" in s and not _matches(s["Action"], action, ignore_case=True):
            continue
        if "Action" not in s and ("NotAction" not in s or _matches(s["NotAction"], action, ignore_case=True)):
            continue
        if "Resource" in s and any(
            isinstance(r, str) for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
        ):
            return True
        if "NotResource" in s:
            return True
    return False


# ------------------------------------------------------------------------------------------------------ botocore model


@cache
def _session() -> Any:
    import botocore.session

    return botocore.session.get_session()


@cache
def _services() -> frozenset[str]:
    return frozenset(_session().get_available_services())


@cache
def _model(service: str) -> Any:
    return _session().get_service_model(service)


@cache
def _operations(service: str) -> dict[str, str]:
    """snake_case method name -> Operation name."""
    from botocore import xform_name

    return {xform_name(op): op for op in _model(service).operation_names}


@cache
def _waiters(service: str) -> dict[str, str]:
    """snake_case waiter name -> the operation it polls."""
    from botocore import xform_name

    try:
        model = _session().get_waiter_model(service)
    except Exception:  # a service without waiters
        return {}
    return {xform_name(name): model.get_waiter(name).operation for name in model.waiter_names}


def iam_prefix(service: str) -> str:
    """The IAM action prefix of a botocore service (its signing name, with IAM's exceptions)."""
    model = _model(service)
    name = str(model.signing_name or model.endpoint_prefix)
    return IAM_PREFIX_EXCEPTIONS.get(name, name)


def iam_actions(service: str, operation: str) -> tuple[str, ...]:
    """The IAM actions one API operation needs."""
    action = f"{iam_prefix(service)}:{operation}"
    return IAM_ACTION_EXCEPTIONS.get(action, (action,))


@cache
def _sdk_service_names() -> dict[str, str]:
    """AWS SDK (JavaScript v2/v3) service names, lower case without spaces, -> botocore's service name."""
    names: dict[str, str] = {}
    for service in _services():
        model = _model(service)
        names[model.service_id.replace(" ", "").lower()] = service
        names.setdefault(service.replace("-", "").lower(), service)
    return names


def sdk_call_actions(service: str, action: str) -> tuple[str, ...]:
    """The IAM actions of an ``AwsCustomResource`` call (``{"service": "ECR", "action": "describeImages"}``)."""
    key = service.removeprefix("@aws-sdk/client-").replace("-", "").replace(" ", "").lower()
    direct = {name.replace("-", ""): name for name in _services()}  # most SDK names are botocore's (ECR, SSM)
    botocore_name = direct.get(key) or _sdk_service_names().get(key)  # else by service id (CloudWatchLogs: logs)
    if botocore_name is None:
        raise KeyError(f"unknown SDK service {service!r}")
    operation = action[0].upper() + action[1:]
    if operation.endswith("Command"):
        operation = operation.removesuffix("Command")
    return iam_actions(botocore_name, operation)


# ------------------------------------------------------------------------------------------------------ code analysis


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, skipping ``if TYPE_CHECKING:`` blocks (imports for the type checker only)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def _module_file(roots: Iterable[Path], dotted: str) -> Path | None:
    parts = dotted.split(".")
    for root in roots:
        base = root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _module_name(roots: Iterable[Path], path: Path) -> str:
    for root in roots:
        if path.is_relative_to(root):
            rel = path.relative_to(root).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            return ".".join(parts)
    return path.stem


@dataclass
class ModuleCalls:
    """What one module calls: the services it makes clients for and every name that may be an operation of them.

    Operations are matched within the module that makes the client (the project's code keeps a client and its calls
    together); a method name of another object that happens to equal an operation of a service this module does not
    use is never counted.
    """

    name: str
    services: set[str] = field(default_factory=set)
    methods: dict[str, set[int]] = field(default_factory=dict)  # called attribute -> lines
    strings: dict[str, set[int]] = field(default_factory=dict)  # string constants (getattr(client, "op")(...))
    paginators: dict[str, set[int]] = field(default_factory=dict)
    waiters: dict[str, set[int]] = field(default_factory=dict)
    powertools: dict[str, set[int]] = field(default_factory=dict)


def _callee(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    if isinstance(node.func, ast.Name):
        return node.func.id
    return None


def _first_string(node: ast.Call, keyword: str) -> str | None:
    if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    for kw in node.keywords:
        if kw.arg == keyword and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
            return kw.value.value
    return None


def _imports(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement loads (``from a import b`` may load module ``a.b``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def read_module(path: Path, name: str) -> tuple[ModuleCalls, list[str]]:
    """One module's calls and the dotted names it imports (type-checking imports excluded)."""
    return _read_source(path.read_text(), name, path.name == "__init__.py")


@cache
def _read_source(text: str, name: str, is_package: bool) -> tuple[ModuleCalls, list[str]]:
    """:func:`read_module` by the module's text: every synthesis bundles the same files (parsed once a session)."""
    tree = ast.parse(text, filename=name)
    calls = ModuleCalls(name)
    imported: list[str] = []
    for node in _walk(tree):
        imported.extend(_imports(node, name, is_package))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            calls.strings.setdefault(node.value, set()).add(node.lineno)
        if isinstance(node, ast.Name | ast.Attribute):
            ref = node.id if isinstance(node, ast.Name) else node.attr
            if ref in POWERTOOLS_CLASSES:
                calls.powertools.setdefault(ref, set()).add(node.lineno)
        if not isinstance(node, ast.Call) or (callee := _callee(node)) is None:
            continue
        if callee in ("client", "resource") or callee.endswith("_client"):
            service = _first_string(node, "service_name")
            if service in _services():
                calls.services.add(service)
        if callee == "get_paginator" and (operation := _first_string(node, "operation_name")):
            calls.paginators.setdefault(operation, set()).add(node.lineno)
        elif callee == "get_waiter" and (waiter := _first_string(node, "waiter_name")):
            calls.waiters.setdefault(waiter, set()).add(node.lineno)
        elif isinstance(node.func, ast.Attribute):
            calls.methods.setdefault(callee, set()).add(node.lineno)
        if callee in POWERTOOLS_CALLS and callee not in POWERTOOLS_CLASSES:
            calls.powertools.setdefault(callee, set()).add(node.lineno)
    if not any(i.startswith("aws_lambda_powertools.utilities") for i in imported):
        calls.powertools.clear()
    return calls, imported


def code_calls(entry: Path, roots: list[Path]) -> list[ModuleCalls]:
    """Every module ``entry`` loads among the function's own modules and :data:`OWN_PACKAGES`, with its calls."""
    own_top = {p.stem for p in roots[0].glob("*.py")} | set(OWN_PACKAGES)
    found: list[ModuleCalls] = []
    queue, seen = [entry], set()
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        calls, imported = read_module(path, _module_name(roots, path))
        found.append(calls)
        for dotted in imported:
            parts = dotted.split(".")
            if not dotted or parts[0] not in own_top:
                continue
            for i in range(1, len(parts) + 1):  # a package's __init__ runs before its submodules
                module = _module_file(roots, ".".join(parts[:i]))
                if module is not None:
                    queue.append(module)
    return found


def code_needs(modules: Iterable[ModuleCalls]) -> list[Need]:
    """The IAM actions of what the modules call."""
    needs: list[Need] = []
    for calls in modules:
        used: dict[tuple[str, str], set[int]] = {}
        for service in calls.services:
            operations, waiters = _operations(service), _waiters(service)
            for table, names in (
                (calls.methods, operations),
                (calls.strings, operations),
                (calls.paginators, operations),
                (calls.waiters, waiters),
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
        entry = _module_file([asset], module)
        if entry is None:
            fn.problems.append(f"handler module {module} not in the asset")
            return
        roots = [asset, *_layer_roots(props, template, outdir)]
        for found in code_needs(code_calls(entry, roots)):
            if (handler, found.module, found.action) in NOT_REACHED or ("*", found.module, found.action) in NOT_REACHED:
                continue
            need: Need = found
            named_by = CALLS_NAMED_BY_ENVIRONMENT.get((found.module, found.action))
            if named_by is not None:
                if named_by not in env:
                    continue
                need = Need(need.action, (str(resolve(env[named_by])),), f"{need.why} ({named_by})", need.module)
            fn.needs.append(need)
        if "Custom::ServiceLogGroup" in types:
            for logical, resource in custom:
                name = resolve(resource["Properties"]["LogGroupName"])
                base = f"arn:aws:logs:{resolve.region}:{resolve.account}:log-group:{name}"
                fn.needs.extend(Need(a, (base, f"{base}:*"), f"claim {logical}") for a in CLAIM_ACTIONS)
        return
    fn.problems.append(f"no model of what this function calls (runtime {runtime}, handler {handler})")


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

"""The one code walker of the infra checks: which modules an entry point loads (following imports into the project's
own code, ``runpy.run_module`` included, ``if TYPE_CHECKING:`` imports skipped) and what each calls (the AWS clients
it makes, every name that may be an operation of them, Powertools utilities that call AWS).

``permission_check`` turns the calls into IAM actions; ``reach_check`` into the VPC endpoints they need.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "POWERTOOLS_CALLS",
    "POWERTOOLS_CLASSES",
    "ModuleCalls",
    "botocore_session",
    "code_calls",
    "module_file",
    "own_modules",
    "read_module",
    "sdk_services",
]

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


@cache
def botocore_session() -> Any:
    import botocore.session

    return botocore.session.get_session()


@cache
def sdk_services() -> frozenset[str]:
    return frozenset(botocore_session().get_available_services())


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


def module_file(roots: Iterable[Path], dotted: str) -> Path | None:
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


def _run_module(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "run_module"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def _imports(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement loads (``from a import b`` may load module ``a.b``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if _run_module(node):  # runpy.run_module("package") runs the package's __main__
        assert isinstance(node, ast.Call)
        assert isinstance(node.args[0], ast.Constant)
        run = str(node.args[0].value)
        return [run, f"{run}.__main__"]
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
            if service in sdk_services():
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


def own_modules(root: Path) -> set[str]:
    """The top-level modules and packages of ``root`` that are its own code (not a dependency installed there, which
    its ``*.dist-info/RECORD`` names)."""
    vendored: set[str] = set()
    for record in root.glob("*.dist-info/RECORD"):
        for line in record.read_text().splitlines():
            vendored.add(line.split(",", 1)[0].split("/", 1)[0].removesuffix(".py"))
    packages = {p.name for p in root.iterdir() if (p / "__init__.py").is_file()} if root.is_dir() else set()
    return ({p.stem for p in root.glob("*.py")} | packages) - vendored


def code_calls(entries: Iterable[Path], roots: Sequence[Path], also: Iterable[str] = ()) -> list[ModuleCalls]:
    """Every module the ``entries`` load among the first root's own modules (:func:`own_modules`) and the packages
    ``also`` names (the project's, wherever a root holds them), with its calls; the first root that has a module
    wins. Third-party code is not read."""
    own_top = own_modules(roots[0]) | set(also)
    found: list[ModuleCalls] = []
    queue, seen = list(entries), set()
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
                module = module_file(roots, ".".join(parts[:i]))
                if module is not None:
                    queue.append(module)
    return found

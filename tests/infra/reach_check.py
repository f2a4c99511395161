"""Reachability: every workload in the VPC can reach each AWS service it calls.

The VPC has no NAT and no internet gateway: a call from inside it reaches an AWS API only through an interface (or S3
gateway) endpoint in the VPC; without one the SDK retries until the function or custom resource times out (and so
does its rollback: aws/aws-cdk#12608). For each synthesized app this check lists the workloads in the VPC and what
they call, and fails for each call no endpoint serves:

- Lambda functions with a ``VpcConfig``: the project's Python functions from their deployed code (the function's
  asset and the project's packages on its layers, following imports: every ``*client("<service>")`` call and the
  Powertools parameters utility); CDK's provider framework (``framework.onEvent`` invokes its handler through the
  Lambda API); CDK's kubectl handler (``aws eks update-kubeconfig``: EKS and STS); the Secrets Manager rotation
  applications (Secrets Manager). A function in the VPC of no known kind is itself a finding.
- the ECS task definitions (Hindsight): image pulls from ECR (ECR API, ECR Docker, S3 for the layers), the awslogs
  driver, secrets injected from Secrets Manager or SSM, the inline ``boto3.client(...)`` of a container's command,
  Bedrock when it is the LLM or embeddings provider, and what the isolation extension's code calls;
- the AgentCore Runtime in VPC mode: its agent's code bundle, from the entry point, as for functions;
- the EKS pods (manifests): their role's credentials (IRSA: STS; Pod Identity: ``eks-auth``), the secrets their init
  step reads, Bedrock as above.

What serves a call: the endpoints the templates create (``AWS::EC2::VPCEndpoint``, any stack), or, with
``network.create_endpoints=false``, the endpoints ``docs/deploying.md`` tells the customer their VPC must have
(``infra.config.ENDPOINT_NAMES``); the endpoints ``network.skip_endpoints`` names are the customer's too. Egress
a variant declares (``hindsight.image_source=registry``, ``hindsight.llm_provider=openai``) serves only what it was
declared for, never an AWS API.

Limits: per module set, not per code path (a client a handler's module makes counts even if this entry point never
uses it); calls through names computed at run time are not seen.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Final

import botocore.session
from aws_cdk import aws_ec2 as ec2

from infra.config import ENDPOINT_NAMES, AppConfig
from infra.constructs.network import INTERFACE_ENDPOINTS, ON_DEMAND_ENDPOINTS
from tests.infra.intrinsics import pseudo_parameters, resolve

#: The project's packages, followed into a function's layers (anything else on a layer is a dependency).
PROJECT_PACKAGES: Final = frozenset({"memory_adapter", "hindsight_isolation"})
#: Powertools' parameters utility: function -> the service it calls.
POWERTOOLS_CALLS: Final = {
    "get_parameter": "ssm",
    "get_parameters": "ssm",
    "get_parameters_by_name": "ssm",
    "SSMProvider": "ssm",
    "get_secret": "secretsmanager",
    "get_secrets_by_name": "secretsmanager",
    "SecretsProvider": "secretsmanager",
}
#: An endpoint prefix (botocore's ``endpointPrefix``) -> the VPC endpoint's service name where they differ.
ENDPOINT_SERVICE: Final = {"api.ecr": "ecr.api"}
KUBECTL_HANDLER: Final = "onEvent handler for EKS kubectl resource provider"
_ROTATION_APPLICATION = "SecretsManagerRDS"


@dataclass
class Workload:
    """One thing in the VPC and the endpoint services it calls."""

    name: str
    calls: set[str] = field(default_factory=set)
    unknown: bool = False


@dataclass
class ReachReport:
    """The workloads in the VPC, what serves calls from it, and every call nothing serves."""

    workloads: list[Workload] = field(default_factory=list)
    served: set[str] = field(default_factory=set)
    findings: list[str] = field(default_factory=list)


@cache
def endpoint_service(client_name: str) -> str:
    """The VPC endpoint service name (``com.amazonaws.<region>.<this>``) of a boto3 client's API."""
    model = botocore.session.get_session().get_service_model(client_name)
    prefix = str(model.metadata["endpointPrefix"])
    return ENDPOINT_SERVICE.get(prefix, prefix)


def endpoint_services(names: Iterable[str]) -> set[str]:
    """The services of endpoints by their ``network.skip_endpoints`` names."""
    tables = {
        **INTERFACE_ENDPOINTS,
        **ON_DEMAND_ENDPOINTS,
        "CognitoIdp": ec2.InterfaceVpcEndpointAwsService.COGNITO_IDP,
    }
    return {"s3" if name == "S3" else tables[name].short_name for name in names}


def _short(service_name: str) -> str:
    """``com.amazonaws.us-east-1.ecr.api`` (or the token CDK writes for the region) -> ``ecr.api``."""
    return re.sub(r"^(com\.amazonaws|aws\.api\.global|aws\.sagemaker)\.[^.]+\.", "", service_name)


# -- code ---------------------------------------------------------------------------------------------------------


def _vendored(root: Path) -> set[str]:
    """Top-level names the dependencies bundled in root install (from their dist-info ``RECORD``)."""
    names: set[str] = set()
    for record in root.glob("*.dist-info/RECORD"):
        for line in record.read_text().splitlines():
            top = line.split(",", 1)[0].split("/", 1)[0]
            names.add(top.removesuffix(".py"))
    return names


def _module_file(roots: Iterable[Path], module: str) -> Path | None:
    parts = module.split(".")
    for root in roots:
        for candidate in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")):
            if candidate.is_file():
                return candidate
    return None


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1] if package else []
                base = ".".join([*anchor, *([base] if base else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif _run_module(node):  # runpy.run_module("package") runs the package's __main__
            assert isinstance(node, ast.Call)
            assert isinstance(node.args[0], ast.Constant)
            package = str(node.args[0].value)
            yield from (package, f"{package}.__main__")


def _run_module(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "run_module"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def _calls(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name.endswith("client") and node.args and isinstance(node.args[0], ast.Constant):
            if isinstance(node.args[0].value, str):
                yield endpoint_service(node.args[0].value)
        elif name in POWERTOOLS_CALLS:
            yield POWERTOOLS_CALLS[name]


def code_calls(entry_modules: Iterable[str], asset: Path, layers: Iterable[Path]) -> set[str]:
    """The endpoint services the code reachable from the entry modules calls."""
    vendored = _vendored(asset)
    local_roots, layer_roots = [asset], list(layers)
    seen: set[str] = set()
    todo = list(entry_modules)
    services: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen or not module:
            continue
        seen.add(module)
        top = module.split(".")[0]
        if top in PROJECT_PACKAGES:
            path = _module_file([*layer_roots, *local_roots], module)
        else:
            path = None if top in vendored else _module_file(local_roots, module)
        if path is None:
            continue
        calls, imported = _read_source(path.read_text(), module, path.name == "__init__.py")
        services |= calls
        todo += imported
    return services


@cache
def _read_source(text: str, module: str, is_package: bool) -> tuple[frozenset[str], tuple[str, ...]]:
    """A module's endpoint services and imports, by its text: every synthesis bundles the same files (parsed once)."""
    tree = ast.parse(text)
    return frozenset(_calls(tree)), tuple(m for m in _imports(tree, module, is_package) if m.split(".")[0] != "")


def _command_calls(text: str) -> set[str]:
    """The clients an inline Python command makes (``boto3.client('s3')``)."""
    return {endpoint_service(s) for s in re.findall(r"client\(\s*['\"]([a-z0-9-]+)['\"]", text)}


# -- workloads ----------------------------------------------------------------------------------------------------


def _asset_dir(outdir: Path, code: Any) -> Path | None:
    key = code.get("S3Key") if isinstance(code, dict) else None
    if not isinstance(key, str):
        return None
    path = outdir / f"asset.{key.split('.')[0]}"
    return path if path.is_dir() else None


def _layer_dirs(outdir: Path, template: dict[str, Any], layers: Any) -> list[Path]:
    dirs = []
    for layer in layers or []:
        target = template["Resources"].get(layer.get("Ref")) if isinstance(layer, dict) else None
        asset = _asset_dir(outdir, target["Properties"].get("Content")) if target else None
        if asset is not None and (asset / "python").is_dir():
            dirs.append(asset / "python")
    return dirs


def _function(outdir: Path, template: dict[str, Any], name: str, props: dict[str, Any]) -> Workload:
    workload = Workload(name)
    handler = str(props.get("Handler", ""))
    env = (props.get("Environment") or {}).get("Variables") or {}
    asset = _asset_dir(outdir, props.get("Code"))
    if handler == "framework.onEvent" or "USER_ON_EVENT_FUNCTION_ARN" in env:
        workload.calls.add("lambda")  # the provider framework invokes its handler through the Lambda API
    elif props.get("Description") == KUBECTL_HANDLER:
        workload.calls |= {"eks", "sts"}  # aws eks update-kubeconfig (DescribeCluster), then assumes the kubectl role
    elif asset is not None and any(asset.glob("*.py")):
        entry = handler.rpartition(".")[0]
        workload.calls = code_calls([entry], asset, _layer_dirs(outdir, template, props.get("Layers")))
    else:
        workload.unknown = True
    return workload


def _runtime(outdir: Path, name: str, props: dict[str, Any]) -> Workload:
    """The AgentCore Runtime's agent: its code bundle, from the entry point."""
    code = (props.get("AgentRuntimeArtifact") or {}).get("CodeConfiguration") or {}
    s3 = (code.get("Code") or {}).get("S3") or {}
    asset = _asset_dir(outdir, {"S3Key": s3.get("Prefix")})
    if asset is None:
        return Workload(name, unknown=True)
    entry = [str(e).removesuffix(".py").replace("/", ".") for e in code.get("EntryPoint", [])]
    return Workload(name, code_calls(entry, asset, []))


def _image_calls(image: Any) -> set[str]:
    text = json.dumps(image)
    if ".dkr.ecr." in text or "Repository" in text or "AWS::URLSuffix" in text:
        return {"ecr.api", "ecr.dkr", "s3"}
    return set()  # a public registry: the variant's declared egress (hindsight.image_source=registry)


def _bedrock(env: dict[str, Any]) -> bool:
    return env.get("HINDSIGHT_API_LLM_PROVIDER") == "bedrock" or any(
        isinstance(v, str) and v.startswith("bedrock/") for v in env.values()
    )


def _task(name: str, props: dict[str, Any], extension: set[str]) -> Workload:
    workload = Workload(name)
    for container in props.get("ContainerDefinitions", []):
        workload.calls |= _image_calls(container.get("Image"))
        if (container.get("LogConfiguration") or {}).get("LogDriver") == "awslogs":
            workload.calls.add("logs")
        for secret in container.get("Secrets", []):
            workload.calls.add("ssm" if ":ssm:" in json.dumps(secret["ValueFrom"]) else "secretsmanager")
        workload.calls |= _command_calls(json.dumps([container.get("Command"), container.get("EntryPoint")]))
        env = {e["Name"]: e.get("Value") for e in container.get("Environment", [])}
        if _bedrock(env):
            workload.calls.add("bedrock-runtime")
        if any(isinstance(v, str) and v.startswith("hindsight_isolation.") for v in env.values()):
            workload.calls |= extension
    return workload


def _pods(name: str, manifest: str, extension: set[str], *, irsa: bool) -> Workload | None:
    """The pods of a manifest's Deployments and StatefulSets (the manifest as text: references stay unresolved)."""
    text = manifest.replace('\\"', '"').replace(" ", "")
    if not re.search(r'"kind":"(Deployment|StatefulSet)"', text):
        return None
    workload = Workload(name)
    workload.calls.add("sts" if irsa else "eks-auth")  # AssumeRoleWithWebIdentity, or AssumeRoleForPodIdentity
    if ":secretsmanager:" in text or ":secret:" in text or "secretsmanager" in text:
        workload.calls.add("secretsmanager")
    if '"HINDSIGHT_API_LLM_PROVIDER","value":"bedrock"' in text or '"bedrock/' in text:
        workload.calls.add("bedrock-runtime")
    if "hindsight_isolation." in text:
        workload.calls |= extension
    workload.calls |= _command_calls(text)
    return workload


def _network_mode(props: dict[str, Any]) -> Any:
    return (props.get("NetworkConfiguration") or {}).get("NetworkMode")


def _rotation(props: dict[str, Any]) -> bool:
    text = json.dumps(props)
    return _ROTATION_APPLICATION in text or "vpcSubnetIds" in text


def check(templates: dict[str, dict[str, Any]], outdir: Path, config: AppConfig, repo: Path) -> ReachReport:
    """Check one synthesized app (stack name -> template, its cloud assembly directory)."""
    report = ReachReport()
    for stack, template in templates.items():
        pseudo = pseudo_parameters(stack.removesuffix(".nested"), config.region)
        for resource in template.get("Resources", {}).values():
            if resource["Type"] == "AWS::EC2::VPCEndpoint":
                service = resolve(resource["Properties"]["ServiceName"], pseudo)
                if isinstance(service, str):
                    report.served.add(_short(service))
    # The endpoints the customer's VPC has: the skipped ones, or every one the docs list (create_endpoints=false).
    report.served |= endpoint_services(config.network.skip_endpoints)
    if not config.network.create_endpoints:
        report.served |= endpoint_services(ENDPOINT_NAMES)
    extension = code_calls(["hindsight_isolation.tenant", "hindsight_isolation.http_extension"], repo, [repo])
    extension |= code_calls(["hindsight_isolation.validator"], repo, [repo])
    for stack, template in templates.items():
        for logical_id, resource in template.get("Resources", {}).items():
            props = resource.get("Properties") or {}
            where = f"{stack}/{logical_id}"
            kind = resource["Type"]
            workload: Workload | None = None
            if kind == "AWS::Lambda::Function" and "VpcConfig" in props:
                workload = _function(outdir, template, where, props)
            elif kind == "AWS::BedrockAgentCore::Runtime" and _network_mode(props) == "VPC":
                workload = _runtime(outdir, where, props)
            elif kind == "AWS::Serverless::Application" and _rotation(props):
                workload = Workload(where, {"secretsmanager"})
            elif kind == "AWS::ECS::TaskDefinition" and props.get("NetworkMode") == "awsvpc":
                workload = _task(where, props, extension)
            elif kind == "Custom::AWSCDK-EKS-KubernetesResource":
                workload = _pods(where, json.dumps(props.get("Manifest")), extension, irsa=not config.eks.pod_identity)
            if workload is None:
                continue
            report.workloads.append(workload)
            if workload.unknown:
                report.findings.append(f"{where}: a function in the VPC whose calls this check has no model of")
            for service in sorted(workload.calls - report.served):
                report.findings.append(f"{where} calls {service} and the VPC has no endpoint for it (and no egress)")
    return report

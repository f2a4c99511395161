"""The stacks' small Lambda handlers, against fakes of the issuer and of SSM/ECS."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from infra.constructs.functions import FUNCTIONS_DIR, handler_sha256
from infra.functions import cfn_response
from infra.functions.jwks_mirror import index as mirror
from infra.functions.redeploy_on_rotation import index as redeploy
from tests.infra.conftest import resources

ISSUER = "https://issuer.example.com/pool"
DISCOVERY = ISSUER + "/.well-known/openid-configuration"
KEY = {"kty": "RSA", "kid": "k1", "n": "abc", "e": "AQAB", "use": "sig", "alg": "RS256"}


def _fetch(documents: dict[str, Any]):
    return lambda url: documents[url]


@pytest.fixture
def ssm(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A real boto3 SSM client against moto's SSM."""
    import boto3
    from moto import mock_aws

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield boto3.client("ssm", region_name="us-east-1")


@pytest.fixture
def stack_id(ssm: Any) -> str:
    """A stack of moto's CloudFormation, updating (a mirror's Update asks whether it is a rollback's)."""
    import boto3

    template = json.dumps({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}})
    stack: str = boto3.client("cloudformation").create_stack(StackName="x", TemplateBody=template)["StackId"]
    return stack


def _docs(issuer: str = ISSUER, keys: list[Any] | None = None) -> dict[str, Any]:
    base = issuer.rstrip("/")
    return {
        base + "/.well-known/openid-configuration": {"issuer": issuer, "jwks_uri": base + "/jwks"},
        base + "/jwks": {"keys": [KEY] if keys is None else keys},
    }


def _event(request_type: str, **extra: Any) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResponseURL": "https://cloudformation-response.example.com/signed",
        "StackId": "arn:aws:cloudformation:us-east-1:111122223333:stack/x/1",
        "RequestId": "req-1",
        "LogicalResourceId": "IdentityKeys",
        "ResourceProperties": {"DiscoveryUrl": DISCOVERY, "ParameterName": "/p/dev/identity/jwks"},
        **extra,
    }


def test_the_schedule_stores_public_keys_once(monkeypatch: pytest.MonkeyPatch, ssm: Any) -> None:
    monkeypatch.setenv("PARAMETER_NAME", "/jwks")
    monkeypatch.setenv("DISCOVERY_URL", DISCOVERY)
    # GIVEN no parameter yet (the schedule may fire first): it is created
    assert mirror.handler({}, None, ssm=ssm, fetch=_fetch(_docs())) == {"changed": True}
    stored = ssm.get_parameter(Name="/jwks")["Parameter"]
    assert json.loads(stored["Value"]) == {"keys": [KEY]}
    assert ssm.describe_parameters()["Parameters"][0]["Tier"] == "Advanced"
    # WHEN nothing changed THEN nothing is written
    assert mirror.handler({}, None, ssm=ssm, fetch=_fetch(_docs())) == {"changed": False}
    assert ssm.get_parameter(Name="/jwks")["Parameter"]["Version"] == stored["Version"]


def test_the_custom_resource_owns_the_parameter_and_returns_the_real_issuer(ssm: Any, stack_id: str) -> None:
    responses: list[tuple[str, dict[str, Any]]] = []
    respond = lambda url, body: responses.append((url, body))  # noqa: E731
    # GIVEN an issuer whose `issuer` ends with a slash (the discovery URL cannot carry it)
    docs = _fetch(_docs(issuer=ISSUER + "/"))
    # WHEN CloudFormation creates the resource
    assert mirror.handler(_event("Create"), None, ssm=ssm, fetch=docs, respond=respond) == {"status": "SUCCESS"}
    (url, body) = responses[-1]
    assert url == "https://cloudformation-response.example.com/signed"
    # THEN the keys are stored, the physical id is the parameter, and the issuer is the document's, slash included
    assert body["Status"] == "SUCCESS"
    assert body["PhysicalResourceId"] == "/p/dev/identity/jwks"
    assert body["Data"] == {"Issuer": ISSUER + "/", "ParameterName": "/p/dev/identity/jwks"}
    assert (body["StackId"], body["RequestId"], body["LogicalResourceId"]) == (
        "arn:aws:cloudformation:us-east-1:111122223333:stack/x/1",
        "req-1",
        "IdentityKeys",
    )
    assert json.loads(ssm.get_parameter(Name="/p/dev/identity/jwks")["Parameter"]["Value"]) == {"keys": [KEY]}
    # WHEN a stack update runs the resource again with rotated keys THEN the parameter holds the new keys (no reset)
    rotated = {**KEY, "kid": "k2"}
    update = _event("Update", PhysicalResourceId="/p/dev/identity/jwks", StackId=stack_id)
    mirror.handler(update, None, ssm=ssm, fetch=_fetch(_docs(issuer=ISSUER + "/", keys=[rotated])), respond=respond)
    assert responses[-1][1]["Status"] == "SUCCESS"
    assert json.loads(ssm.get_parameter(Name="/p/dev/identity/jwks")["Parameter"]["Value"]) == {"keys": [rotated]}
    # WHEN the stack is deleted THEN the parameter goes with it
    delete = _event("Delete", PhysicalResourceId="/p/dev/identity/jwks", StackId=stack_id)
    mirror.handler(delete, None, ssm=ssm, respond=respond)
    assert responses[-1][1]["Status"] == "SUCCESS"
    assert ssm.describe_parameters()["Parameters"] == []


def test_a_failing_issuer_fails_the_deploy_with_a_reason_and_keeps_the_keys(ssm: Any, stack_id: str) -> None:
    responses: list[dict[str, Any]] = []
    ssm.put_parameter(Name="/p/dev/identity/jwks", Value='{"keys":[1]}', Type="String", Tier="Advanced")
    docs = _fetch(_docs(keys=[{**KEY, "d": "secret"}]))
    result = mirror.handler(
        _event("Update", PhysicalResourceId="/p/dev/identity/jwks", StackId=stack_id),
        None,
        ssm=ssm,
        fetch=docs,
        respond=lambda _url, body: responses.append(body),
    )
    # THEN CloudFormation is answered (never left waiting), the deploy fails with the reason, the old keys stay
    assert result == {"status": "FAILED"}
    assert responses[0]["Status"] == "FAILED"
    assert "private key material" in responses[0]["Reason"]
    assert ssm.get_parameter(Name="/p/dev/identity/jwks")["Parameter"]["Value"] == '{"keys":[1]}'


def test_delete_never_removes_a_parameter_this_resource_did_not_create(ssm: Any) -> None:
    ssm.put_parameter(Name="/p/dev/identity/jwks", Value="{}", Type="String")
    # A failed create reports the logical id as physical id; its delete must leave someone else's parameter alone.
    mirror.handler(_event("Delete", PhysicalResourceId="IdentityKeys"), None, ssm=ssm, respond=lambda _url, _body: None)
    assert ssm.get_parameter(Name="/p/dev/identity/jwks")["Parameter"]["Value"] == "{}"


@pytest.mark.parametrize(
    ("discovery", "jwks", "reason"),
    [
        ({"issuer": "https://evil.example.com", "jwks_uri": ISSUER + "/jwks"}, {"keys": [KEY]}, "issuer"),
        ({"issuer": ISSUER, "jwks_uri": ISSUER + "/jwks"}, {"keys": [{**KEY, "d": "secret"}]}, "private"),
        ({"issuer": ISSUER, "jwks_uri": ISSUER + "/jwks"}, {"keys": [{"kty": "oct", "k": "x"}]}, "asymmetric"),
        ({"issuer": ISSUER, "jwks_uri": ISSUER + "/jwks"}, {"keys": []}, "no keys"),
    ],
)
def test_mirror_refuses_unusable_documents(discovery: Any, jwks: Any, reason: str) -> None:
    docs = {DISCOVERY: discovery, ISSUER + "/jwks": jwks}
    with pytest.raises(mirror.MirrorError, match=reason):
        mirror.mirror_issuer(DISCOVERY, fetch=_fetch(docs))


def test_an_issuer_ending_with_a_slash_is_accepted_verbatim() -> None:
    assert mirror.mirror_issuer(DISCOVERY, fetch=_fetch(_docs(issuer=ISSUER + "/"))).issuer == ISSUER + "/"


def test_mirror_refuses_plain_http() -> None:
    with pytest.raises(mirror.MirrorError, match="non-https"):
        mirror.fetch_json("http://issuer.example.com/.well-known/openid-configuration")


def test_redeploy_forces_new_deployments(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    class FakeEcs:
        def update_service(self, **kwargs: Any) -> None:
            calls.append(kwargs)

    monkeypatch.setenv("CLUSTER_ARN", "arn:cluster")
    monkeypatch.setenv("SERVICE_ARNS", "arn:a,arn:b")
    assert redeploy.handler({"detail-type": "x"}, None, ecs=FakeEcs()) == {"redeployed": 2}
    assert [c["service"] for c in calls] == ["arn:a", "arn:b"]
    assert all(c["forceNewDeployment"] for c in calls)


def _pem(body: str = "MIIBszCCAVmgAwIBAgIUQ0FRB29vdA==") -> str:
    return f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"


def test_the_rds_bundle_is_stored_and_owned_by_its_custom_resource(ssm: Any, stack_id: str) -> None:
    from infra.functions.rds_ca import index as rds_ca

    responses: list[dict[str, Any]] = []
    event = {
        **_event("Create"),
        "ResourceProperties": {"BundleUrl": "https://truststore.example/r.pem", "ParameterName": "/p/dev/ca"},
    }
    bundle = _pem() + _pem("MIIBtDCCAVmgAwIBAgIUQ0FRB29vdB==")
    result = rds_ca.handler(
        event, None, ssm=ssm, download=lambda _url: bundle, respond=lambda _u, b: responses.append(b)
    )
    assert result == {"status": "SUCCESS"}
    assert responses[0]["Data"] == {"ParameterName": "/p/dev/ca", "Certificates": "2"}
    assert ssm.get_parameter(Name="/p/dev/ca")["Parameter"]["Value"] == bundle
    rds_ca.handler(
        {**event, "RequestType": "Delete", "PhysicalResourceId": "/p/dev/ca", "StackId": stack_id},
        None,
        ssm=ssm,
        respond=lambda _u, b: responses.append(b),
    )
    assert ssm.describe_parameters()["Parameters"] == []


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ("<html>not found</html>", "other than PEM certificates"),
        (_pem() + "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "other than PEM certificates"),
        ("-----BEGIN CERTIFICATE-----\n%%%%\n-----END CERTIFICATE-----\n", "other than PEM certificates"),
        ("", "other than PEM certificates"),
    ],
)
def test_the_rds_bundle_must_hold_only_certificates(document: str, reason: str) -> None:
    from infra.functions.rds_ca import index as rds_ca

    with pytest.raises(rds_ca.BundleError, match=reason):
        rds_ca.certificates(document)


def test_a_failed_bundle_download_fails_the_deploy_with_its_reason(ssm: Any) -> None:
    from infra.functions.rds_ca import index as rds_ca

    responses: list[dict[str, Any]] = []
    event = {**_event("Create"), "ResourceProperties": {"BundleUrl": "http://x", "ParameterName": "/p/dev/ca"}}
    assert rds_ca.handler(event, None, ssm=ssm, respond=lambda _u, b: responses.append(b)) == {"status": "FAILED"}
    assert "non-https" in responses[0]["Reason"]


def test_the_functions_without_the_layer_carry_the_settings_modules(default: Any) -> None:
    # GIVEN the synthesized assets of the functions that run without the memory adapter layer
    import subprocess
    import sys

    from infra.constructs.functions import SETTINGS_MODULES

    handlers = {}
    for template in default.templates.values():
        for function in resources(template, "AWS::Lambda::Function").values():
            variables = function["Properties"].get("Environment", {}).get("Variables", {})
            for name, marker in (("redeploy", "SERVICE_ARNS"), ("mirror", "PARAMETER_NAME")):
                if marker in variables:
                    key = function["Properties"]["Code"]["S3Key"]
                    handlers[name] = "asset." + key.removesuffix(".zip")
    assert set(handlers) == {"redeploy", "mirror"}, handlers
    for name, asset in handlers.items():
        folder = default.outdir / asset
        assert {p.name for p in (folder / "memory_adapter").iterdir()} >= set(SETTINGS_MODULES), name
        # WHEN the handler module is imported from its asset alone (the stub package first on the path)
        code = f"import sys; sys.path.insert(0, {str(folder)!r}); import index, memory_adapter as m; print(m.__file__)"
        run = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=False)
        # THEN it imports, with the settings machinery from the asset
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip().startswith(str(folder)), run.stdout


def _shared_imports(source: Path) -> list[Path]:
    """The modules of ``infra.functions`` that the handler in ``source`` imports."""
    tree = ast.parse((source / "index.py").read_text())
    return [
        FUNCTIONS_DIR / f"{alias.name}.py"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "infra.functions"
        for alias in node.names
    ]


def test_each_custom_resource_carries_and_digests_the_shared_modules_it_imports(default: Any) -> None:
    """A handler importing ``infra.functions.cfn_response`` (or ``owned_parameter``) runs from its asset alone, and
    a change to that module changes its resource's ``HandlerSha256`` (so the resource runs the new code)."""
    import subprocess
    import sys

    # GIVEN every custom resource with a handler digest, and the asset of the function its service token names
    assets: dict[str, list[Path]] = {}
    for template in default.templates.values():
        functions = resources(template, "AWS::Lambda::Function")
        for resource in template["Resources"].values():
            properties = resource.get("Properties", {})
            if isinstance(properties.get("HandlerSha256"), str):
                (logical, _) = properties["ServiceToken"]["Fn::GetAtt"]
                key = functions[logical]["Properties"]["Code"]["S3Key"]
                assets.setdefault(properties["HandlerSha256"], []).append(
                    default.outdir / ("asset." + key.removesuffix(".zip"))
                )
    importing = [d for d in sorted(FUNCTIONS_DIR.iterdir()) if (d / "index.py").exists() and _shared_imports(d)]
    assert {d.name for d in importing} >= {"log_groups", "rds_ca", "jwks_mirror"}
    for source in importing:
        shared = _shared_imports(source)
        # WHEN the digest covers the handler and every shared module it imports
        folders = assets.get(handler_sha256(source, *shared), [])
        assert folders, f"no custom resource's HandlerSha256 covers {source.name} with {[p.name for p in shared]}"
        for folder in folders:
            # THEN its asset carries those modules as they are, and the handler imports from the asset alone
            assert (folder / "index.py").read_bytes() == (source / "index.py").read_bytes(), source.name
            for module in shared:
                assert (folder / "infra" / "functions" / module.name).read_bytes() == module.read_bytes()
            code = f"import sys; sys.path.insert(0, {str(folder)!r}); import index"
            run = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=False)
            assert run.returncode == 0, run.stderr


def test_every_failure_answers_cloudformation_with_a_bounded_reason() -> None:
    answers: list[tuple[str, dict[str, Any]]] = []

    def fail() -> tuple[str, dict[str, str]]:
        raise RuntimeError("x" * 5000)

    event = _event("Update", PhysicalResourceId="physical")
    status = cfn_response.answer(event, fail, message="m", respond=lambda url, body: answers.append((url, body)))
    assert status == {"status": "FAILED"}
    ((url, body),) = answers
    assert url == event["ResponseURL"]
    assert body["PhysicalResourceId"] == "physical"  # a failed update keeps the resource it had
    assert body["Reason"].startswith("RuntimeError: xxx")
    assert len(body["Reason"]) == cfn_response.MAX_REASON_CHARS

"""``python -m smoke`` against a deployed stack: outputs from CloudFormation, tokens from Cognito's admin APIs or the
caller, turns over HTTPS (JWT) or ``InvokeAgentRuntime`` with ``runtimeUserId`` (IAM). AWS is stubbed at the
boundary with botocore's Stubber; the JWT runtime endpoint is a real local HTTP server that behaves like the agent."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from smoke import targets
from smoke.__main__ import main

ARN = "arn:aws:bedrock-agentcore:us-east-1:111122223333:runtime/HindsightMemory_dev_assistant-abc123"
REGION = "us-east-1"


class FakeSession:
    """A boto3 Session whose clients are stubbed (one per service, created up front)."""

    def __init__(self, *services: str) -> None:
        self.clients: dict[str, Any] = {
            s: boto3.session.Session().client(  # type: ignore[call-overload]
                s, region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y"
            )
            for s in services
        }
        self.stubs = {s: Stubber(c) for s, c in self.clients.items()}

    def client(self, service: str, region_name: str) -> Any:
        assert region_name == REGION
        return self.clients[service]

    def __enter__(self) -> FakeSession:
        for stub in self.stubs.values():
            stub.activate()
        return self

    def __exit__(self, *exc: object) -> None:
        for stub in self.stubs.values():
            stub.deactivate()


def _stack(stubs: Stubber, name: str, outputs: dict[str, str]) -> None:
    stubs.add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": name,
                    "CreationTime": "2026-12-01T00:00:00Z",
                    "StackStatus": "CREATE_COMPLETE",
                    "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in outputs.items()],
                }
            ]
        },
        {"StackName": name},
    )


def _agent_outputs(mode: str) -> dict[str, str]:
    return {"AgentRuntimeArn": ARN, "AgentEndpointName": "live", "AuthMode": mode, "AgentRuntimeId": "rt-abc123"}


class FakeRuntime:
    """What the deployed agent does with memory, keyed by the verified caller (here: the bearer token)."""

    def __init__(self) -> None:
        self.memories: dict[str, list[str]] = {}
        self.seen: list[dict[str, str]] = []

    def turn(self, user: str, prompt: str) -> dict[str, Any]:
        remembered = self.memories.setdefault(user, [])
        output = "I remember: " + " ".join(remembered) if "code word?" in prompt and remembered else "Noted."
        recalled = len(remembered) if "code word?" in prompt else 0
        if "code word is" in prompt:
            remembered.append(prompt)
        return {"output": output, "session_id": "s", "memory": {"recalled": recalled, "degraded": False}}

    def handle(self, request: Request) -> Response:
        raw = str(request.environ.get("RAW_URI") or request.environ.get("REQUEST_URI") or request.full_path)
        self.seen.append({"raw": raw, **dict(request.headers)})
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if not token.startswith("token-"):
            return Response(json.dumps({"error": "unauthorized"}), status=401)
        body = self.turn(token, json.loads(request.data)["prompt"])
        return Response(json.dumps(body), content_type="application/json")


@pytest.fixture
def runtime(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> FakeRuntime:
    fake = FakeRuntime()
    httpserver.expect_request(re.compile("/runtimes/.*/invocations")).respond_with_handler(fake.handle)
    real_url = targets.runtime_url

    def local_url(region: str, arn: str, qualifier: str) -> str:
        return httpserver.url_for(real_url(region, arn, qualifier).split(".amazonaws.com", 1)[1])

    monkeypatch.setattr(targets, "runtime_url", local_url)
    return fake


def test_cognito_mode_creates_two_temporary_users_and_passes(runtime: FakeRuntime) -> None:
    with FakeSession("cloudformation", "cognito-idp") as aws:
        _stack(aws.stubs["cloudformation"], "HindsightMemory-dev-Agent", _agent_outputs("cognito"))
        _stack(
            aws.stubs["cloudformation"],
            "HindsightMemory-dev-Identity",
            {"UserPoolId": "us-east-1_pool", "UserPoolClientId": "client-1"},
        )
        cognito = aws.stubs["cognito-idp"]
        for n in ("a", "b"):
            cognito.add_response(
                "admin_create_user",
                {},
                {"UserPoolId": "us-east-1_pool", "Username": ANY, "MessageAction": "SUPPRESS"},
            )
            cognito.add_response(
                "admin_set_user_password",
                {},
                {"UserPoolId": "us-east-1_pool", "Username": ANY, "Password": ANY, "Permanent": True},
            )
            cognito.add_response(
                "initiate_auth",
                {"AuthenticationResult": {"AccessToken": f"token-{n}"}},
                {"ClientId": "client-1", "AuthFlow": "USER_PASSWORD_AUTH", "AuthParameters": ANY},
            )
        for _ in range(2):
            cognito.add_response("admin_delete_user", {}, {"UserPoolId": "us-east-1_pool", "Username": ANY})
        out = io.StringIO()
        code = main([], out=out, session=aws)
        cognito.assert_no_pending_responses()  # the temporary users were deleted again
    assert code == 0, out.getvalue()
    assert "SMOKE PASSED" in out.getvalue()
    # The real invoke path: the runtime's invocation URL with the encoded ARN, the endpoint, the session header.
    first = runtime.seen[0]
    assert first["raw"] == "/runtimes/" + ARN.replace(":", "%3A").replace("/", "%2F") + "/invocations?qualifier=live"
    assert len(first["X-Amzn-Bedrock-Agentcore-Runtime-Session-Id"]) >= 33
    sessions = {s["X-Amzn-Bedrock-Agentcore-Runtime-Session-Id"] for s in runtime.seen}
    assert len(sessions) == 3


def test_jwt_mode_uses_the_callers_tokens(runtime: FakeRuntime) -> None:
    with FakeSession("cloudformation") as aws:
        _stack(aws.stubs["cloudformation"], "HindsightMemory-dev-Agent", _agent_outputs("jwt"))
        out = io.StringIO()
        assert main(["--token-a", "token-1", "--token-b", "token-2"], out=out, session=aws) == 0, out.getvalue()
    assert {s["Authorization"] for s in runtime.seen} == {"Bearer token-1", "Bearer token-2"}


def test_jwt_mode_without_tokens_says_how_to_get_them() -> None:
    with FakeSession("cloudformation") as aws:
        _stack(aws.stubs["cloudformation"], "HindsightMemory-dev-Agent", _agent_outputs("jwt"))
        out = io.StringIO()
        assert main([], out=out, session=aws) == 2
    assert "--token-a/--token-b" in out.getvalue()


def test_a_leak_between_users_fails_the_smoke(runtime: FakeRuntime) -> None:
    turn = runtime.turn

    def shared(user: str, prompt: str) -> dict[str, Any]:
        return turn("shared", prompt)  # one bank for everyone: what a broken isolation looks like

    runtime.turn = shared  # type: ignore[method-assign]
    with FakeSession("cloudformation") as aws:
        _stack(aws.stubs["cloudformation"], "HindsightMemory-dev-Agent", _agent_outputs("jwt"))
        out = io.StringIO()
        assert main(["--token-a", "token-1", "--token-b", "token-2"], out=out, session=aws) == 1
    assert "another user recalled user A's memory" in out.getvalue()
    assert "/aws/bedrock-agentcore/runtimes/rt-abc123-live" in out.getvalue()


def _streamed(body: dict[str, Any]) -> dict[str, Any]:
    raw = json.dumps(body).encode()
    return {
        "runtimeSessionId": "s" * 33,
        "contentType": "application/json",
        "statusCode": 200,
        "response": StreamingBody(io.BytesIO(raw), len(raw)),
    }


class FakeAgentCore:
    """``bedrock-agentcore``'s InvokeAgentRuntime: parameters checked against botocore's real model, answered by the
    fake runtime keyed by ``runtimeUserId`` (what AgentCore hands the agent on an IAM runtime)."""

    def __init__(self, runtime: FakeRuntime) -> None:
        self.runtime = runtime
        self.calls: list[dict[str, Any]] = []
        model = boto3.client("bedrock-agentcore", region_name=REGION).meta.service_model
        self.shape = model.operation_model("InvokeAgentRuntime").input_shape

    def invoke_agent_runtime(self, **params: Any) -> dict[str, Any]:
        from botocore.validate import validate_parameters

        validate_parameters(params, self.shape)
        self.calls.append(params)
        body = self.runtime.turn(params["runtimeUserId"], json.loads(params["payload"])["prompt"])
        return _streamed(body)


def test_iam_mode_invokes_with_runtime_user_id() -> None:
    agentcore = FakeAgentCore(FakeRuntime())
    with FakeSession("cloudformation") as aws:
        _stack(aws.stubs["cloudformation"], "HindsightMemory-dev-Agent", _agent_outputs("iam"))
        aws.clients["bedrock-agentcore"] = agentcore
        out = io.StringIO()
        code = main([], out=out, session=aws)
    assert code == 0, out.getvalue()
    calls = agentcore.calls
    users = [c["runtimeUserId"] for c in calls]
    assert users[0] == users[1] != users[-1]
    assert {c["agentRuntimeArn"] for c in calls} == {ARN}
    assert {c["qualifier"] for c in calls} == {"live"}
    assert all(len(c["runtimeSessionId"]) >= 33 for c in calls)
    assert len({c["runtimeSessionId"] for c in calls}) == 3


def test_a_missing_stack_is_a_setup_failure_with_what_to_do() -> None:
    with FakeSession("cloudformation") as aws:
        aws.stubs["cloudformation"].add_client_error(
            "describe_stacks", "ValidationError", "Stack with id HindsightMemory-dev-Agent does not exist"
        )
        out = io.StringIO()
        assert main([], out=out, session=aws) == 2
    assert "does not exist in us-east-1: deploy first" in out.getvalue()

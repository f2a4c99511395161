"""``python -m smoke`` against a deployed stack: outputs from CloudFormation, tokens from Cognito's admin APIs or the
caller, turns over HTTPS (JWT) or ``InvokeAgentRuntime`` with ``runtimeUserId`` (IAM), then the memory tools over MCP
on the ``-Gateway`` stack's endpoint. AWS is stubbed at the boundary with botocore's Stubber; the JWT runtime endpoint
is a real local HTTP server that behaves like the agent, the gateway a real MCP server (the ``mcp`` SDK's) that
behaves like the gateway."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from smoke import targets
from smoke.__main__ import main
from tests.unit.runtime_handler.serving import serve

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


def _no_stack(stubs: Stubber, name: str) -> None:
    stubs.add_client_error("describe_stacks", "ValidationError", f"Stack with id {name} does not exist")


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
        _no_stack(aws.stubs["cloudformation"], "HindsightMemory-dev-Gateway")
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
        _no_stack(aws.stubs["cloudformation"], "HindsightMemory-dev-Gateway")
        out = io.StringIO()
        assert main(["--token-a", "token-1", "--token-b", "token-2"], out=out, session=aws) == 0, out.getvalue()
    assert {s["Authorization"] for s in runtime.seen} == {"Bearer token-1", "Bearer token-2"}
    # No -Gateway stack: the MCP steps are skipped, and said so; the numbering counts only the steps that run.
    report = out.getvalue()
    assert "[3/3] user B, session 3: must not recall it ... ok" in report
    assert "\nMCP: no gateway deployed (gateway.enabled=false), skipped\n" in report
    assert "over MCP" not in report
    assert report.rstrip().splitlines()[-1].startswith("SMOKE PASSED: memory carries across sessions")


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
        _no_stack(aws.stubs["cloudformation"], "HindsightMemory-dev-Gateway")
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
    # IAM has no user tokens, so no gateway: not even looked up (the Stubber would refuse an unexpected call)
    assert "MCP: no gateway with auth.mode=iam (its tools need user tokens), skipped" in out.getvalue()


def test_a_missing_stack_is_a_setup_failure_with_what_to_do() -> None:
    with FakeSession("cloudformation") as aws:
        aws.stubs["cloudformation"].add_client_error(
            "describe_stacks", "ValidationError", "Stack with id HindsightMemory-dev-Agent does not exist"
        )
        out = io.StringIO()
        assert main([], out=out, session=aws) == 2
    assert "does not exist in us-east-1: deploy first" in out.getvalue()


GATEWAY_PREFIX = "memory___"


class FakeGateway:
    """The AgentCore Gateway as an MCP client sees it: streamable HTTP served by the ``mcp`` SDK, the tools named
    ``memory___<tool>``, a bearer token required (401 otherwise), each call answered from the fake runtime's memories
    of the token's user (the banks the agent uses)."""

    def __init__(self, runtime: FakeRuntime) -> None:
        self.runtime = runtime
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.shared = False  # True: one bank for everyone (broken isolation)
        self.refuse = False  # True: every token is refused (401), as the authorizer does with a wrong client
        self.failing = False  # True: the target answers an error (the gateway still says isError false)

    def app(self) -> Any:
        import mcp.types as types
        from mcp.server.lowlevel.server import Server
        from starlette.responses import JSONResponse

        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            names = ("recall", "reflect", "remember", "forget", "list_recent")
            schema = {"type": "object", "properties": {"query": {"type": "string"}}}
            return types.ListToolsResult(
                tools=[types.Tool(name=GATEWAY_PREFIX + n, description=n, input_schema=schema) for n in names]
            )

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            token = ctx.request.headers["authorization"].removeprefix("Bearer ")
            self.calls.append((token, params.name, dict(params.arguments or {})))
            if self.shared:
                texts = [t for memories in self.runtime.memories.values() for t in memories]
            else:
                texts = list(self.runtime.memories.get(token, []))
            memories = [{"id": str(i), "text": t} for i, t in enumerate(texts)]
            text = "\n".join(f"- {t}" for t in texts) or "No memories matched."
            answer: dict[str, Any] = {"memories": memories, "text": text}
            if self.failing:
                answer = {"error": "memory_unavailable", "message": "Hindsight is unavailable", "text": "unavailable"}
            # What the AgentCore Gateway gives for a Lambda target's answer: its JSON in one text block.
            return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(answer))])

        server: Server[Any] = Server("gateway", on_list_tools=list_tools, on_call_tool=call_tool)
        inner = server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True)

        async def app(scope: Any, receive: Any, send: Any) -> None:
            headers = dict(scope.get("headers") or [])
            token_ok = headers.get(b"authorization", b"").startswith(b"Bearer token-") and not self.refuse
            if scope["type"] == "http" and not token_ok:
                await JSONResponse({"error": "invalid_token"}, status_code=401)(scope, receive, send)
                return
            await inner(scope, receive, send)

        return app


@pytest.fixture
def gateway(runtime: FakeRuntime) -> Iterator[tuple[FakeGateway, str]]:
    fake = FakeGateway(runtime)
    with serve(fake.app()) as url:
        yield fake, url + "/mcp"


def _gateway_outputs(url: str) -> dict[str, str]:
    return {"GatewayUrl": url, "GatewayId": "gw-1", "GatewayToolPrefix": GATEWAY_PREFIX}


def _smoke_with_gateway(url: str) -> tuple[int, str]:
    """The smoke against a jwt-mode Agent stack and a Gateway stack serving MCP at ``url``: (exit code, report)."""
    with FakeSession("cloudformation") as aws:
        _stack(aws.stubs["cloudformation"], "HindsightMemory-dev-Agent", _agent_outputs("jwt"))
        _stack(aws.stubs["cloudformation"], "HindsightMemory-dev-Gateway", _gateway_outputs(url))
        out = io.StringIO()
        code = main(["--token-a", "token-1", "--token-b", "token-2"], out=out, session=aws)
    return code, out.getvalue()


def test_a_deployed_gateway_adds_the_mcp_steps_with_the_agent_steps_tokens(
    runtime: FakeRuntime, gateway: tuple[FakeGateway, str]
) -> None:
    fake, url = gateway
    code, report = _smoke_with_gateway(url)
    assert code == 0, report
    assert f"smoke: then over MCP, the gateway {url}" in report
    assert "[1/5] user A, session 1: tell a code word ... ok" in report
    assert "[4/5] user A over MCP (memory___recall): recall the code word ... ok in" in report
    assert "memory___recall found the code word after 1 attempt(s)" in report
    assert "[5/5] user B over MCP (memory___recall): must not recall it ... ok in" in report
    assert "memory___recall found nothing of user A" in report
    assert (
        report.rstrip()
        .splitlines()[-1]
        .startswith("SMOKE PASSED: memory carries across sessions and stays per user, through the agent and over MCP")
    )
    # The prefixed tool, called with the same users' tokens the agent turns carried
    assert [(token, name) for token, name, _ in fake.calls] == [
        ("token-1", "memory___recall"),
        ("token-2", "memory___recall"),
    ]


def test_a_leak_over_mcp_fails_the_smoke_and_points_at_the_gateway_logs(
    runtime: FakeRuntime, gateway: tuple[FakeGateway, str]
) -> None:
    fake, url = gateway
    fake.shared = True
    code, report = _smoke_with_gateway(url)
    assert code == 1, report
    assert "SMOKE FAILED: MCP, user B: memory___recall returned user A's memory" in report
    assert "ISOLATION FAILURE over MCP" in report
    assert "the HindsightMemory-dev-Gateway stack's InterceptorLogs log group (region us-east-1)" in report
    assert "the HindsightMemory-dev-Gateway stack's TargetLogs log group" in report


def test_a_token_the_gateway_refuses_fails_the_smoke_with_the_status(
    runtime: FakeRuntime, gateway: tuple[FakeGateway, str]
) -> None:
    fake, url = gateway
    fake.refuse = True  # e.g. the authorizer's allowed clients do not include the tokens' client
    code, report = _smoke_with_gateway(url)
    assert code == 1, report
    assert "[3/5] user B, session 3: must not recall it ... ok" in report
    assert "SMOKE FAILED: MCP memory___recall as smoke-a-" in report
    assert f"the MCP server at {url} refused the user's token (HTTP 401)" in report
    assert "InterceptorLogs log group" in report


def test_a_tool_error_the_gateway_answers_with_is_error_false_fails_the_smoke(
    runtime: FakeRuntime, gateway: tuple[FakeGateway, str]
) -> None:
    fake, url = gateway
    fake.failing = True  # user B's "nothing found" must not pass on an error answer
    code, report = _smoke_with_gateway(url)
    assert code == 1, report
    assert "SMOKE FAILED: MCP, user A: memory___recall answered an error: 'unavailable'" in report


def test_a_gateway_stack_without_its_outputs_is_a_setup_failure() -> None:
    with FakeSession("cloudformation") as aws:
        _stack(aws.stubs["cloudformation"], "HindsightMemory-dev-Agent", _agent_outputs("jwt"))
        _stack(aws.stubs["cloudformation"], "HindsightMemory-dev-Gateway", {"GatewayId": "gw-1"})
        out = io.StringIO()
        assert main(["--token-a", "token-1", "--token-b", "token-2"], out=out, session=aws) == 2
    assert "stack HindsightMemory-dev-Gateway lacks the outputs GatewayUrl, GatewayToolPrefix: redeploy" in (
        out.getvalue()
    )

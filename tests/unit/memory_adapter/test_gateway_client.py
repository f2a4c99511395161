"""The memory tools through the gateway (token passthrough), over real HTTP: against an emulated AgentCore Gateway
around the real interceptor and target, and against canned answers for the transport's edge cases. Every failure is
a result, never an exception; nothing is sent without the caller's own token."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from memory_adapter.identity.caller import Caller
from memory_adapter.identity.verifier import JwtVerifier
from memory_adapter.tools import GatewayTools, MemoryTools
from tests.unit.gateway_emulator import gateway_app
from tests.unit.issuers import CLIENT_ID, LoopbackIssuer
from tests.unit.runtime_handler.serving import serve

from .scripted_hindsight import EMAIL_ID, ScriptedHindsight


@pytest.fixture
def hindsight() -> ScriptedHindsight:
    return ScriptedHindsight()


@pytest.fixture
def gateway(loopback_issuer: LoopbackIssuer, hindsight: ScriptedHindsight) -> Iterator[tuple[str, list[Any]]]:
    verifier: JwtVerifier = loopback_issuer.verifier()
    app, invocations = gateway_app(
        verifier=verifier, tools=MemoryTools(hindsight, settle_s=0.0, sleep=lambda _: None), agent="support"
    )
    with serve(app) as url:
        yield url + "/mcp", invocations


def _caller(issuer: LoopbackIssuer, user: str = "user-alex", **extra: Any) -> Caller:
    return Caller.of(user=user, agent="support", credential=issuer.mint(user, **extra))


def test_a_tool_runs_through_the_gateway_for_the_callers_own_token(
    gateway: tuple[str, list[Any]], loopback_issuer: LoopbackIssuer, hindsight: ScriptedHindsight
) -> None:
    url, invocations = gateway
    alex = _caller(loopback_issuer)
    # WHEN the agent's model calls recall through the gateway
    result = GatewayTools(url, target="memory").call(alex, "recall", {"query": "email"})
    # THEN the answer is the target's (data and text apart), under the plain tool name
    assert (result.name, result.error) == ("recall", None)
    assert result.data["memories"][0]["text"] == "I prefer email over phone."
    assert result.text.startswith("3 memories:")
    # AND the target was invoked as memory___recall, with the caller's token in the allowlisted header only
    (custom,) = invocations
    assert custom["bedrockAgentCoreToolName"] == "memory___recall"
    assert list(custom["bedrockAgentCorePropagatedHeaders"].values()) == [alex.credential]
    # AND Hindsight saw alex's bank and alex's token, nothing else
    assert {(r.path.split("/")[4], r.bearer) for r in hindsight.requests} == {(alex.bank_id, alex.credential)}


def test_forget_through_the_gateway_says_what_was_forgotten(
    gateway: tuple[str, list[Any]], loopback_issuer: LoopbackIssuer
) -> None:
    url, _ = gateway
    result = GatewayTools(url, target="memory").call(_caller(loopback_issuer), "forget", {"memory_ids": [EMAIL_ID]})
    assert result.error is None
    assert [item["id"] for item in result.data["forgotten"]] == [EMAIL_ID]
    assert "I prefer email over phone." in result.text


def test_an_expired_or_machine_token_is_refused_by_the_gateway(
    gateway: tuple[str, list[Any]], loopback_issuer: LoopbackIssuer, hindsight: ScriptedHindsight
) -> None:
    url, invocations = gateway
    tools = GatewayTools(url, target="memory")
    expired = _caller(loopback_issuer, extra={"exp": time.time() - 600})
    machine = Caller.of(user="client", agent="support", credential=loopback_issuer.mint(CLIENT_ID))
    for caller in (expired, machine):
        result = tools.call(caller, "recall", {"query": "email"})
        assert result.error == "unauthorized", result
        assert "refused the caller's token" in result.text
    assert invocations == []
    assert hindsight.requests == []


def test_bad_arguments_and_a_missing_token_never_leave_the_agent(
    gateway: tuple[str, list[Any]], loopback_issuer: LoopbackIssuer
) -> None:
    url, invocations = gateway
    tools = GatewayTools(url, target="memory")
    smuggled = tools.call(_caller(loopback_issuer), "recall", {"query": "x", "user_id": "user-bob"})
    assert smuggled.error == "bad_arguments"
    assert "unknown argument(s) user_id" in smuggled.text
    assert tools.call(_caller(loopback_issuer), "shell", {}).error == "bad_arguments"
    anonymous = tools.call(Caller.of(user="user-alex", agent="support"), "recall", {"query": "x"})
    assert anonymous.error == "unauthorized"
    assert invocations == []


def test_a_wrong_target_name_is_an_unavailable_tool_not_a_crash(
    gateway: tuple[str, list[Any]], loopback_issuer: LoopbackIssuer
) -> None:
    url, _ = gateway
    result = GatewayTools(url, target="other").call(_caller(loopback_issuer), "recall", {"query": "x"})
    assert result.error == "bad_arguments"  # the gateway's "unknown tool" (invalid params)
    assert "Unknown tool: other___recall" in result.text


def _rpc(result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": result}


def test_the_json_text_block_and_event_streams_are_read(
    httpserver: HTTPServer, loopback_issuer: LoopbackIssuer
) -> None:
    caller = _caller(loopback_issuer)
    # GIVEN a server answering with the tool's JSON in one text block (every path's shape) as a server-sent event
    answer = {"memories": [], "text": "No memories matched."}
    structured = _rpc({"content": [{"type": "text", "text": json.dumps(answer)}], "isError": False})
    httpserver.expect_oneshot_request("/mcp", method="POST").respond_with_data(
        f"event: message\ndata: {json.dumps(structured)}\n\n", content_type="text/event-stream"
    )
    result = GatewayTools(httpserver.url_for("/mcp")).call(caller, "recall", {"query": "x"})
    assert (result.data, result.text, result.error) == ({"memories": []}, "No memories matched.", None)
    # ... and the request named the tool plainly (no target), with the caller's token and MCP's headers
    (request, _) = httpserver.log[-1]
    assert request.headers["Authorization"] == f"Bearer {caller.credential}"
    assert "text/event-stream" in request.headers["Accept"]
    assert json.loads(request.data)["params"] == {"name": "recall", "arguments": {"query": "x"}}


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (503, "", "memory_unavailable"),
        (401, "", "unauthorized"),
        (200, "not json", "memory_unavailable"),
        (200, json.dumps({"jsonrpc": "2.0", "id": 99, "result": {}}), "memory_unavailable"),
        (
            200,
            json.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "unauthorized"}}),
            "unauthorized",
        ),
        (200, json.dumps(_rpc({"content": [{"type": "text", "text": "boom"}], "isError": True})), "tool_error"),
    ],
)
def test_every_failure_is_a_result(
    httpserver: HTTPServer, loopback_issuer: LoopbackIssuer, status: int, body: str, code: str
) -> None:
    httpserver.expect_oneshot_request("/mcp", method="POST").respond_with_data(
        body, status=status, content_type="application/json"
    )
    result = GatewayTools(httpserver.url_for("/mcp"), target="memory").call(
        _caller(loopback_issuer), "recall", {"query": "x"}
    )
    assert result.error == code, result


def test_no_token_goes_to_an_unsafe_or_unknown_address(loopback_issuer: LoopbackIssuer) -> None:
    caller = _caller(loopback_issuer)
    plain = GatewayTools("http://gateway.example.com/mcp").call(caller, "recall", {"query": "x"})
    assert plain.error == "memory_unavailable"
    assert "https" in plain.text

    def broken() -> str:
        raise RuntimeError("parameter not found")

    unreadable = GatewayTools(broken).call(caller, "recall", {"query": "x"})
    assert unreadable.error == "memory_unavailable"
    assert "address could not be read" in unreadable.text
    refused = GatewayTools("http://127.0.0.1:9/mcp", timeout=2).call(caller, "recall", {"query": "x"})
    assert refused.error == "memory_unavailable"


def test_an_event_stream_carrying_a_line_separator_inside_its_json_is_read_whole(
    httpserver: HTTPServer, loopback_issuer: LoopbackIssuer
) -> None:
    # JSON may carry U+2028, U+0085 or U+001E raw inside a string (a tool's message quoting an argument, a memory);
    # server-sent events end lines only at CR and LF, but str.splitlines() also broke there, so the answer was cut
    # into fragments and the tool call failed as "not an MCP response"
    caller = _caller(loopback_issuer)
    answer = {"memories": [], "text": "nothing\u2028 here\x85 and\x1e there"}
    structured = _rpc({"content": [{"type": "text", "text": json.dumps(answer, ensure_ascii=False)}], "isError": False})
    httpserver.expect_oneshot_request("/mcp", method="POST").respond_with_data(
        f"event: message\ndata: {json.dumps(structured, ensure_ascii=False)}\n\n", content_type="text/event-stream"
    )
    result = GatewayTools(httpserver.url_for("/mcp")).call(caller, "recall", {"query": "x"})
    assert result.error is None
    assert result.text == answer["text"]

"""The AgentCore Gateway's interceptor and Lambda target on synthetic Gateway events: interceptor input and output,
``client_context.custom``, tool-name prefixes, missing and forged headers, machine-to-machine tokens. Fail closed."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace
from typing import Any

import pytest

from infra.functions.memory_gateway import interceptor, target
from memory_adapter.gateway import CALLER_TOKEN_HEADER, propagated_header, tool_name
from memory_adapter.identity.caller import Caller
from memory_adapter.identity.verifier import JwtVerifier
from memory_adapter.tools.memory_tools import MemoryTools
from tests.unit.issuers import CLIENT_ID, LoopbackIssuer, non_numeric_time_claims
from tests.unit.memory_adapter.scripted_hindsight import ScriptedHindsight

EXPIRED: dict[str, Any] = {"exp": time.time() - 600}


@pytest.fixture
def issuer(loopback_issuer: LoopbackIssuer) -> LoopbackIssuer:
    return loopback_issuer


@pytest.fixture
def verifier(issuer: LoopbackIssuer) -> JwtVerifier:
    return issuer.verifier()


def _event(headers: dict[str, Any] | None, method: str = "tools/call") -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"name": "memory___recall", "arguments": {}}}
    request: dict[str, Any] = {"path": "/mcp", "httpMethod": "POST", "body": body}
    if headers is not None:
        request["headers"] = headers
    return {
        "interceptorInputVersion": "1.0",
        "mcp": {"rawGatewayRequest": {"body": json.dumps(body)}, "gatewayRequest": request},
    }


def _denied(answer: dict[str, Any]) -> bool:
    response = answer["mcp"].get("transformedGatewayResponse")
    return response is not None and response["statusCode"] == 401 and response["body"]["id"] == 7


@pytest.mark.parametrize("method", ["initialize", "tools/list", "tools/call"])
def test_a_verified_user_token_is_forwarded_in_the_caller_header(
    issuer: LoopbackIssuer, verifier: JwtVerifier, method: str
) -> None:
    token = issuer.mint("user-alex")
    answer = interceptor.intercept(_event({"Authorization": f"Bearer {token}", "Accept": "x"}, method), verifier)
    forwarded = answer["mcp"]["transformedGatewayRequest"]
    assert answer["interceptorOutputVersion"] == "1.0"
    assert forwarded["headers"][CALLER_TOKEN_HEADER] == token
    assert forwarded["body"]["method"] == method


def test_a_client_sent_caller_header_is_always_overwritten(issuer: LoopbackIssuer, verifier: JwtVerifier) -> None:
    token = issuer.mint("user-mallory")
    headers = {"authorization": f"Bearer {token}", "x-memory-caller-token": issuer.mint("user-alex")}
    forwarded = interceptor.intercept(_event(headers), verifier)["mcp"]["transformedGatewayRequest"]["headers"]
    assert [k for k in forwarded if k.lower() == CALLER_TOKEN_HEADER.lower()] == [CALLER_TOKEN_HEADER]
    assert forwarded[CALLER_TOKEN_HEADER] == token


@pytest.mark.parametrize(
    "case",
    [
        "no headers",
        "no authorization",
        "not bearer",
        "expired",
        "forged",
        "wrong client",
        "machine",
        "two headers",
        *non_numeric_time_claims(),
    ],
)
def test_anything_but_a_verified_user_token_is_refused(
    issuer: LoopbackIssuer, verifier: JwtVerifier, case: str
) -> None:
    good = issuer.mint("user-alex")
    head, body, _ = good.split(".")
    headers: dict[str, Any] | None = {
        "no headers": None,
        "no authorization": {"Accept": "application/json"},
        "not bearer": {"Authorization": f"Basic {good}"},
        "expired": {"Authorization": f"Bearer {issuer.mint('user-alex', extra=EXPIRED)}"},
        "forged": {"Authorization": f"Bearer {head}.{body}.AAAA"},
        "wrong client": {"Authorization": f"Bearer {issuer.mint('user-alex', client_id='other')}"},
        "machine": {"Authorization": f"Bearer {issuer.mint(CLIENT_ID)}"},  # client credentials: sub = client
        "two headers": {"Authorization": f"Bearer {good}", "authorization": f"Bearer {good}"},
        **{
            name: {"Authorization": f"Bearer {issuer.mint('user-alex', extra=claims)}"}
            for name, claims in non_numeric_time_claims().items()
        },
    }[case]
    answer = interceptor.intercept(_event(headers), verifier)
    assert _denied(answer), case
    assert "transformedGatewayRequest" not in answer["mcp"]


def test_the_interceptor_fails_closed_on_a_broken_event_or_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interceptor, "_verifier", None)
    monkeypatch.delenv("JWT_DISCOVERY_URL", raising=False)  # no JWT settings: the verifier cannot be built
    answer = interceptor.handler(_event({"Authorization": "Bearer x"}), None)
    assert _denied(answer)
    assert interceptor.intercept("not an event", JwtVerifier.__new__(JwtVerifier))["mcp"]["transformedGatewayResponse"]


def test_tool_names_lose_their_target_prefix() -> None:
    assert tool_name({"bedrockAgentCoreToolName": "memory___forget"}) == "forget"
    assert tool_name({"bedrockAgentCoreToolName": "my___target___recall"}) == "target___recall"
    assert tool_name({"bedrockAgentCoreToolName": "recall"}) is None
    assert tool_name({}) is None


def test_propagated_headers_are_read_case_insensitively_and_exactly_once() -> None:
    key = "bedrockAgentCorePropagatedHeaders"
    assert propagated_header({key: {"x-memory-caller-token": "t"}}, CALLER_TOKEN_HEADER) == "t"
    assert propagated_header({key: json.dumps({CALLER_TOKEN_HEADER: "t"})}, CALLER_TOKEN_HEADER) == "t"
    assert (
        propagated_header({key: {"X-Memory-Caller-Token": "a", "x-memory-caller-token": "b"}}, CALLER_TOKEN_HEADER)
        is None
    )
    assert propagated_header({}, CALLER_TOKEN_HEADER) is None


def _custom(tool: str, token: str | None) -> dict[str, Any]:
    custom: dict[str, Any] = {"bedrockAgentCoreToolName": f"memory___{tool}", "bedrockAgentCoreGatewayId": "gw"}
    if token is not None:
        custom["bedrockAgentCorePropagatedHeaders"] = {CALLER_TOKEN_HEADER.lower(): token}
    return custom


def test_the_target_acts_for_the_verified_caller_only(issuer: LoopbackIssuer, verifier: JwtVerifier) -> None:
    hindsight = ScriptedHindsight()
    tools = MemoryTools(hindsight, settle_s=0.0)
    token = issuer.mint("user-alex")
    answer = target.run_tool({"query": "email"}, _custom("recall", token), verifier, tools, "support")
    assert answer["memories"][0]["text"] == "I prefer email over phone."
    bank = Caller.of(user="user-alex", agent="support").bank_id
    assert {(r.path.split("/")[4], r.bearer) for r in hindsight.requests} == {(bank, token)}


@pytest.mark.parametrize("case", ["missing", "forged", "expired", "machine", *non_numeric_time_claims()])
def test_the_target_refuses_without_a_verified_user_token(
    issuer: LoopbackIssuer, verifier: JwtVerifier, case: str
) -> None:
    hindsight = ScriptedHindsight()
    good = issuer.mint("user-alex")
    token = {
        "missing": None,
        "forged": good[:-4] + "AAAA",
        "expired": issuer.mint("user-alex", extra=EXPIRED),
        "machine": issuer.mint(CLIENT_ID),
        **{name: issuer.mint("user-alex", extra=claims) for name, claims in non_numeric_time_claims().items()},
    }[case]
    answer = target.run_tool({"query": "email"}, _custom("recall", token), verifier, MemoryTools(hindsight), "support")
    assert answer["error"] == "unauthorized"
    assert hindsight.requests == []


def test_the_target_refuses_identity_arguments_and_unknown_tools(issuer: LoopbackIssuer, verifier: JwtVerifier) -> None:
    tools, token = MemoryTools(ScriptedHindsight()), issuer.mint("user-alex")
    smuggled = target.run_tool({"query": "x", "user_id": "bob"}, _custom("recall", token), verifier, tools, "support")
    assert smuggled["error"] == "bad_arguments"
    assert target.run_tool({}, _custom("shell", token), verifier, tools, "support")["error"] == "bad_arguments"
    assert target.run_tool({}, {}, verifier, tools, "support")["error"] == "bad_request"


def test_the_target_handler_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(target, "_deps", None)
    monkeypatch.delenv("HINDSIGHT_API_URL", raising=False)
    context = SimpleNamespace(client_context=SimpleNamespace(custom=_custom("recall", "t")))
    assert target.handler({"query": "x"}, context)["error"] == "internal"


def test_the_target_recalls_with_the_agents_candidate_tokens(issuer: LoopbackIssuer, verifier: JwtVerifier) -> None:
    # GIVEN the target's environment as the stack writes it, with the agent's recall_candidate_tokens (not the default)
    env = target.TargetSettings(
        agent_name="support",
        hindsight_api_url="https://memory.internal.example.com",
        recall_max_tokens=700,
        recall_candidate_tokens=6000,
        jwt=issuer.settings(),
    ).to_env()
    hindsight = ScriptedHindsight()
    tools = target.tools_for(target.TargetSettings.from_env(env), hindsight)
    # WHEN a user's recall runs through the target
    answer = target.run_tool(
        {"query": "email"}, _custom("recall", issuer.mint("user-alex")), verifier, tools, "support"
    )
    # THEN Hindsight was asked for the agent's candidates, which the tool re-ranked and cut to the block's size
    assert answer["memories"]
    (call,) = hindsight.calls("/memories/recall")
    assert call.body["max_tokens"] == 6000


@pytest.mark.parametrize(
    "event",
    [{"mcp": "x"}, {"mcp": {"gatewayRequest": "x"}}, {"mcp": None}, {"mcp": {"gatewayRequest": [1]}}, [], None],
)
def test_the_interceptor_refuses_an_event_of_any_shape_without_raising(
    event: Any, verifier: JwtVerifier, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(interceptor, "_verifier", verifier)
    assert interceptor.intercept(event, verifier)["mcp"]["transformedGatewayResponse"]["statusCode"] == 401
    assert interceptor.handler(event, None)["mcp"]["transformedGatewayResponse"]["statusCode"] == 401

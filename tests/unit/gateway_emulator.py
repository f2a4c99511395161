"""A stand-in for the AgentCore Gateway (which cannot run here) around the real interceptor and target code.

It does with one MCP POST what the gateway documents (``/work/shared/docs/gateway.md``): the inbound authorizer
(reduced to "a bearer token is present": the interceptor is the real check), the REQUEST interceptor with the
request's headers, answering at once when it returns ``transformedGatewayResponse``; ``initialize`` with one of the
gateway's protocol versions (2025-03-26, 2025-06-18) and notifications with 202, so the real ``mcp`` client can
connect; ``tools/list`` as
``<target>___<tool>``; ``tools/call`` invoking the Lambda target with only the tool's arguments as the event and, in
``client_context.custom``, the prefixed tool name and the allowlisted headers only; the target's answer as JSON in a
text block. Served over real HTTP with :func:`tests.unit.runtime_handler.serving.serve`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from infra.functions.memory_gateway import interceptor, target
from memory_adapter.gateway import CALLER_TOKEN_HEADER, prefixed_tool_name
from memory_adapter.identity.verifier import JwtVerifier
from memory_adapter.tools.memory_tools import ToolRunner
from memory_adapter.tools.specs import TOOL_SPECS

ALLOWED_REQUEST_HEADERS = (CALLER_TOKEN_HEADER,)  # the target's metadataConfiguration (infra: MemoryGateway)
#: The MCP protocol versions the gateway speaks (newest last): it answers a newer request with the newest.
PROTOCOL_VERSIONS = ("2025-03-26", "2025-06-18")


def gateway_app(
    *, verifier: JwtVerifier, tools: ToolRunner, agent: str, target_name: str = "memory"
) -> tuple[Starlette, list[dict[str, Any]]]:
    """The emulated gateway at ``/mcp`` and the list of ``client_context.custom`` the target was invoked with."""
    invocations: list[dict[str, Any]] = []

    async def mcp(request: Request) -> Response:
        raw = await request.body()
        if not request.headers.get("authorization", "").startswith("Bearer "):
            return Response(status_code=401, headers={"WWW-Authenticate": "Bearer"})
        body = json.loads(raw)
        headers = dict(request.headers.items())
        event = {
            "interceptorInputVersion": "1.0",
            "mcp": {
                "rawGatewayRequest": {"body": raw.decode()},
                "gatewayRequest": {"path": "/mcp", "httpMethod": "POST", "headers": headers, "body": body},
            },
        }
        answer = interceptor.intercept(event, verifier)["mcp"]
        if "transformedGatewayResponse" in answer:
            response = answer["transformedGatewayResponse"]
            return JSONResponse(response["body"], status_code=response["statusCode"])
        forwarded = answer["transformedGatewayRequest"]
        if "id" not in forwarded["body"]:  # a notification (notifications/initialized): accepted, no answer
            return Response(status_code=202)
        return JSONResponse(_dispatch(forwarded["headers"], forwarded["body"]))

    def _dispatch(headers: Mapping[str, str], body: Mapping[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": body.get("id")}
        method, params = body.get("method"), body.get("params") or {}
        if method == "tools/list":
            tools_list = [
                {"name": prefixed_tool_name(target_name, s.name), "inputSchema": dict(s.input_schema)}
                for s in TOOL_SPECS
            ]
            return reply | {"result": {"tools": tools_list}}
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
            info = {"name": "emulated-gateway", "version": "1.0"}
            return reply | {"result": {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}}
        if method != "tools/call":
            return reply | {"result": {}}
        name = params.get("name")
        if not isinstance(name, str) or not name.startswith(prefixed_tool_name(target_name, "")):
            return reply | {"error": {"code": -32602, "message": f"Unknown tool: {name}"}}
        custom = {
            "bedrockAgentCoreToolName": name,
            "bedrockAgentCoreGatewayId": "gw-emulated",
            "bedrockAgentCorePropagatedHeaders": {
                key: value
                for key, value in headers.items()
                if key.lower() in {h.lower() for h in ALLOWED_REQUEST_HEADERS}
            },
        }
        invocations.append(custom)
        answer = target.run_tool(params.get("arguments") or {}, custom, verifier, tools, agent)
        return reply | {"result": {"content": [{"type": "text", "text": json.dumps(answer)}], "isError": False}}

    return Starlette(routes=[Route("/mcp", mcp, methods=["POST"])]), invocations

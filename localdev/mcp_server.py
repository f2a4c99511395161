"""The memory tools as an MCP server over streamable HTTP, for any MCP client or agent, on the local stack.

The same tools the agent's model calls (``memory_adapter.tools``: recall, reflect, remember, forget, list_recent),
served with the official ``mcp`` SDK. Every HTTP request must carry ``Authorization: Bearer <user token>``, verified
with the identity contract (:class:`~memory_adapter.identity.JwtVerifier`, the agent's checks); machine-to-machine
tokens are refused (they name a client, not a user). A verified caller's body over :data:`MAX_BODY_BYTES` is answered
413, never read past the cap. A tool call acts for the token's user only, with that token as
the credential Hindsight checks, on the same banks the agent uses (agent ``support``), so an MCP client shares the
user's memory with the agent and can never read, change or learn of another user's. A call's result is what the
AgentCore Gateway gives for the same call: one text block holding the tool's JSON (``ToolResult.answer``). Stateless
(every request is verified on its own; no session state to hijack) with JSON responses::

    python -m localdev.mcp_server start [--port 8891] [--hindsight-url URL] [--issuer-url URL]
    python -m localdev.mcp_server status | stop

In AWS the AgentCore Gateway serves these tools instead (``infra/functions/memory_gateway``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localdev.hindsight.config import LOCAL_AGENT_NAME
from localdev.local_server import LocalServer, service_command
from localdev.supervisor import (
    REPO_ROOT,
    child_env,
    env_number,
    require_free_port,
    spawn,
)
from localdev.token_issuer import LOCAL_CLIENT_ID, running_issuer_url
from memory_adapter.identity.settings import discovery_url_for, issuer_of

__all__ = ["DEFAULT_PORT", "MAX_BODY_BYTES", "LocalMcpServer", "create_app"]

DEFAULT_PORT = 8891
ENV_PORT = "LOCAL_MCP_PORT"
DEFAULT_DATA_DIR = REPO_ROOT / ".local" / "mcp"
MCP_PATH = "/mcp"
#: Largest request body read from a caller. The largest tool call (``remember``: 4,000 characters of text, at most
#: 12 bytes each when JSON escapes them, plus tags) is under 64 KiB; 1 MiB leaves room for any client's framing.
MAX_BODY_BYTES = 2**20


def create_app(*, hindsight_url: str, discovery_url: str, public_url: str, agent: str = LOCAL_AGENT_NAME) -> Any:
    """The Starlette app serving the memory tools at ``/mcp`` for verified users."""
    import mcp.types as types
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.lowlevel.server import Server
    from pydantic import ConfigDict

    from memory_adapter.gateway import UNAUTHORIZED_ANSWER
    from memory_adapter.identity.caller import Caller
    from memory_adapter.identity.errors import IdentityError
    from memory_adapter.identity.settings import JwtSettings
    from memory_adapter.identity.verifier import JwtVerifier
    from memory_adapter.tools.memory_tools import MemoryTools
    from memory_adapter.tools.specs import TOOL_SPECS
    from memory_adapter.transport import HttpTransport

    verifier = JwtVerifier(JwtSettings(discovery_url=discovery_url, allowed_clients=(LOCAL_CLIENT_ID,)))
    tools = MemoryTools(HttpTransport(hindsight_url))

    class CallerToken(AccessToken):
        """The SDK's access token, carrying the verified caller (never serialised)."""

        model_config = ConfigDict(arbitrary_types_allowed=True)
        caller: Caller

    class UserTokens:
        """The SDK's token verifier: the identity contract's checks, user tokens only."""

        async def verify_token(self, token: str) -> AccessToken | None:
            try:
                identity = await asyncio.to_thread(verifier.verify, token)  # machine tokens are refused there
                caller = Caller.of(user=identity.user, agent=agent, tenant=identity.tenant, credential=token)
            except IdentityError:
                return None
            return CallerToken(
                token=token,
                client_id=identity.client_id or "unknown",
                scopes=[],
                expires_at=int(identity.expires_at),
                subject=identity.user,
                claims={"iss": identity.claims.get("iss")},
                caller=caller,
            )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=spec.name, description=spec.description, input_schema=dict(spec.input_schema))
                for spec in TOOL_SPECS
            ]
        )

    def gateway_shaped(answer: Mapping[str, Any]) -> types.CallToolResult:
        """The answer as the AgentCore Gateway gives a Lambda target's: one text block holding its JSON, no
        ``structuredContent``, ``isError`` false (a tool's refusal is an ``error`` key in the JSON), so a client
        parses the same result locally and in AWS."""
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(answer))], is_error=False)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        user = getattr(ctx.request, "scope", {}).get("user") if ctx.request is not None else None
        token = user.access_token if isinstance(user, AuthenticatedUser) else None
        if not isinstance(token, CallerToken):  # cannot happen behind the bearer middleware: fail closed anyway
            return gateway_shaped(UNAUTHORIZED_ANSWER)
        result = await asyncio.to_thread(tools.call, token.caller, params.name, params.arguments or {})
        return gateway_shaped(result.answer())

    server: Server[Any] = Server(
        "memory",
        instructions="The user's long-term memory: recall, reflect, remember, forget, list_recent. "
        "Every tool acts for the user whose token you present, and only for them.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    auth = AuthSettings.model_validate(
        {
            "issuer_url": issuer_of(discovery_url),
            "resource_server_url": public_url.rstrip("/") + MCP_PATH,
            "validate_token_resource": False,  # the identity contract checks the client and audience itself
        }
    )
    return _without_standalone_stream(
        _saying_what_is_too_large(
            server.streamable_http_app(
                streamable_http_path=MCP_PATH,
                stateless_http=True,
                json_response=True,
                auth=auth,
                token_verifier=UserTokens(),
                max_request_body_size=MAX_BODY_BYTES,
            )
        )
    )


def _saying_what_is_too_large(app: Any) -> Any:
    """``app`` whose 413 says what the cap is, as a JSON-RPC error the ``mcp`` client raises with its message.

    The SDK's transport caps the body itself after authentication (``max_request_body_size``: 413 at once for a
    declared ``Content-Length`` over it, as soon as a chunked body passes it, nothing buffered past it), but answers
    a bare ``Request body too large`` in plain text, which the client reports as "Server returned an error
    response".
    """
    refusal = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": f"the request body is larger than {MAX_BODY_BYTES} bytes ({MAX_BODY_BYTES / 2**20:g} MiB), "
                "the most this server reads; send less",
            },
        }
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(refusal)).encode())]

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        replaced = False

        async def sending(message: Any) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message.get("status") == 413:
                replaced = True
                await send({"type": "http.response.start", "status": 413, "headers": headers})
                await send({"type": "http.response.body", "body": refusal, "more_body": False})
                return
            if replaced and message["type"] == "http.response.body":
                return
            await send(message)

        await app(scope, receive, sending)

    return guarded


def _without_standalone_stream(app: Any) -> Any:
    """``app`` answering ``GET /mcp`` with 405, the spec's other answer: the SDK opens a standalone event stream there,
    which a stateless server never writes to, so the request hung for ever holding a connection."""
    refusal = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "Method Not Allowed: POST JSON-RPC requests"},
        }
    ).encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"].rstrip("/") == MCP_PATH:
            headers = [(b"content-type", b"application/json"), (b"allow", b"POST")]
            await send({"type": "http.response.start", "status": 405, "headers": headers})
            await send({"type": "http.response.body", "body": refusal})
            return
        await app(scope, receive, send)

    return guarded


@dataclass
class LocalMcpServer(LocalServer):
    """The MCP server as a local background process (state, log), like :class:`localdev.agent.LocalAgent`."""

    data_dir: Path = DEFAULT_DATA_DIR
    state_name = "mcp.json"
    log_name = "mcp.log"

    def answers(self, url: str) -> bool:
        request = urllib.request.Request(url, method="POST", data=b"{}")  # noqa: S310 - loopback http
        try:
            urllib.request.urlopen(request, timeout=2).close()  # noqa: S310 - loopback http
        except urllib.error.HTTPError as err:
            return err.code == 401  # up, and refusing a request without a token
        except OSError:
            return False
        return False

    def start(self, *, hindsight_url: str, issuer_url: str, port: int = DEFAULT_PORT) -> str:
        """Start the server in the background; return its MCP endpoint URL. One already running with these settings
        (recorded in the state file: port, Hindsight, issuer) is kept; one with others is restarted, saying so."""
        args = ["--port", str(port), "--hindsight-url", hindsight_url, "--issuer-url", issuer_url]
        if self.healthy():
            assert self.url is not None
            running = self._state.read().get("args")
            if running == args:
                return self.url
            print(
                f"the MCP server at {self.url} runs {running or 'unrecorded settings'}; restarting it", file=sys.stderr
            )
            self.stop()
        require_free_port(port, name="the MCP server", setting=ENV_PORT)
        pid = spawn(
            [sys.executable, "-m", "localdev.mcp_server", "serve", *args],
            log_file=self.log_file,
            env=child_env({}, adapter=True),
            cwd=REPO_ROOT,
        )
        url = f"http://127.0.0.1:{port}{MCP_PATH}"
        self._state.write({"pid": pid, "url": url, "args": args})
        self.await_start(pid, name="the MCP server")
        return url


def default_server() -> LocalMcpServer:
    return LocalMcpServer(Path(os.environ.get("LOCAL_MCP_DATA_DIR") or DEFAULT_DATA_DIR))


def default_port() -> int:
    """``LOCAL_MCP_PORT``, else 8891."""
    return env_number(os.environ, ENV_PORT, DEFAULT_PORT, int)


def _serve(port: int, hindsight_url: str, issuer_url: str) -> int:
    import uvicorn

    discovery = discovery_url_for(issuer_url)
    app = create_app(hindsight_url=hindsight_url, discovery_url=discovery, public_url=f"http://127.0.0.1:{port}")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localdev.mcp_server", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("start", "serve"):
        command = sub.add_parser(name, help="start in the background" if name == "start" else "serve in the foreground")
        command.add_argument("--port", type=int, default=default_port())
        command.add_argument("--hindsight-url", default="http://127.0.0.1:8888")
        command.add_argument("--issuer-url", default=running_issuer_url())
    sub.add_parser("status", help="is the MCP server running?")
    sub.add_parser("stop", help="stop the MCP server")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args.port, args.hindsight_url, args.issuer_url)
    server = default_server()
    return service_command(
        args.command,
        server,
        name="MCP server",
        start=lambda: server.start(hindsight_url=args.hindsight_url, issuer_url=args.issuer_url, port=args.port),
    )


if __name__ == "__main__":
    raise SystemExit(main())

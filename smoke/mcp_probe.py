"""The smoke test's MCP leg: the memory tools as external agents and MCP clients reach them, over streamable HTTP with
the official ``mcp`` client SDK and the user's own bearer token.

Deployed, that is the AgentCore Gateway (tools named ``<GatewayToolPrefix><tool>``, ``memory___recall``); locally, the
MCP server ``make local`` runs (tools named plainly). The agent's turns alone do not prove this path: the gateway has
its own authorizer, interceptor and Lambda target, each of which can refuse or misroute a user.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from smoke.scenario import SmokeError, ToolReply

#: Seconds for one MCP session (connect, list the tools, one call); above the gateway target's own timeout.
SESSION_TIMEOUT_S = 60.0


@dataclass
class McpProbe:
    """Calls the memory tools at ``url`` as a user, with that user's bearer token (the one the agent turns used): the
    :class:`~smoke.scenario.McpTools` of the scenario.

    Args:
        url: The MCP endpoint (streamable HTTP).
        tokens: Bearer token by user.
        tool_prefix: What the server puts in front of every tool name (``memory___`` on the gateway, ``""`` locally).
        description: What the report calls this endpoint.
        hints: Where to look when a call fails.
    """

    url: str
    tokens: Mapping[str, str]
    tool_prefix: str
    description: str
    hints: Sequence[str] = ()
    timeout_s: float = SESSION_TIMEOUT_S

    def tool_name(self, tool: str) -> str:
        """The name this server gives ``tool`` (what a client lists and calls)."""
        return f"{self.tool_prefix}{tool}"

    def call(self, user: str, tool: str, arguments: dict[str, Any]) -> ToolReply:
        """Open an MCP session as ``user``, check ``tool`` is offered, call it; raise :class:`SmokeError` when the
        server cannot be reached, refuses the token or does not offer the tool (a tool's own error is a reply)."""
        import anyio

        name = self.tool_name(tool)
        statuses: list[int] = []  # the SDK turns an HTTP error into a generic JSON-RPC error: keep the status
        try:
            offered, result = anyio.run(self._call, self.tokens[user], name, dict(arguments), statuses)
        except Exception as err:  # the SDK raises from a task group: find the cause that says what happened
            failed = [status for status in statuses if status >= 400]
            raise SmokeError(
                f"MCP {name} as {user}: {_explain(err, self.url, failed[-1] if failed else None)}", self.hints
            ) from err
        if result is None:
            raise SmokeError(
                f"the MCP server at {self.url} does not offer {name} (it offers: {', '.join(offered) or 'nothing'})",
                self.hints,
            )
        return tool_reply(result)

    async def _call(
        self, token: str, name: str, arguments: dict[str, Any], statuses: list[int]
    ) -> tuple[list[str], Any]:
        """One MCP session: (the tools offered, the call's result or ``None`` when ``name`` is not one); every HTTP
        status it saw goes into ``statuses``."""
        import anyio
        import httpx2
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async def record(response: httpx2.Response) -> None:
            statuses.append(response.status_code)

        with anyio.fail_after(self.timeout_s):
            async with (
                httpx2.AsyncClient(
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=self.timeout_s,
                    event_hooks={"response": [record]},
                ) as http,
                streamable_http_client(self.url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                offered = [tool.name for tool in (await session.list_tools()).tools]
                if name not in offered:
                    return offered, None
                return offered, await session.call_tool(name, arguments)


def _causes(err: BaseException) -> list[BaseException]:
    """``err`` and everything it wraps (exception groups, ``__cause__``), innermost last."""
    found: list[BaseException] = []
    pending = [err]
    while pending:
        current = pending.pop(0)
        found.append(current)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        if current.__cause__ is not None:
            pending.append(current.__cause__)
    return found


def _explain(err: BaseException, url: str, status: int | None) -> str:
    """A plain sentence for what went wrong talking to ``url`` (``status``: the last HTTP error status seen)."""
    import httpx2

    if status in (401, 403):
        return f"the MCP server at {url} refused the user's token (HTTP {status})"
    if status is not None:
        return f"the MCP server at {url} answered HTTP {status}"
    causes = _causes(err)
    for cause in causes:
        if isinstance(cause, httpx2.ConnectError | httpx2.ConnectTimeout | ConnectionError):
            return f"cannot reach the MCP server at {url}: {cause}"
        if isinstance(cause, TimeoutError | httpx2.TimeoutException):
            return f"the MCP server at {url} did not answer within {SESSION_TIMEOUT_S:.0f} s"
    inner = causes[-1]
    return f"the MCP session with {url} failed: {type(inner).__name__}: {inner}"


def gateway_hints(region: str, prefix: str) -> list[str]:
    """Where a failing MCP call through the deployed gateway shows up."""
    return [
        f"Gateway interceptor logs: the {prefix}-Gateway stack's InterceptorLogs log group (region {region}): "
        "refused tokens and their reason",
        f"Gateway target logs: the {prefix}-Gateway stack's TargetLogs log group: the tool calls and Hindsight errors",
        f"Alarms: the {prefix}-Gateway stack's Interceptor/Target failing alarms on the alerts topic",
        "The gateway's authorizer accepts user access tokens of the configured client only (auth.mode cognito/jwt)",
    ]


def local_hints(log_file: str) -> list[str]:
    """Where a failing MCP call to the local MCP server shows up."""
    return [
        f"MCP server log: {log_file}",
        "Started? make local (or python -m localdev.mcp_server start); status: python -m localdev.mcp_server status",
        "Hindsight: .venv/bin/python -m localdev.hindsight status (and .local/hindsight/hindsight-api.log)",
    ]


def tool_reply(result: Any) -> ToolReply:
    """An ``mcp`` ``CallToolResult`` as a :class:`ToolReply`: the tool's JSON from its one text block."""
    text = "\n".join(str(getattr(part, "text", "")) for part in result.content if getattr(part, "text", None))
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return ToolReply(is_error=True, text=text, answer=None)  # not a tool's answer: the server failed
    is_error = bool(result.is_error) or "error" in answer
    return ToolReply(is_error=is_error, text=str(answer.get("text") or answer.get("message") or text), answer=answer)

"""The ``gateway`` section: the AgentCore Gateway serving the memory tools over MCP (user-token modes only)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from infra.config.agent import AgentConfig
from infra.config.auth import AuthMode
from infra.config.checks import require
from memory_adapter.gateway import MAX_TOOL_NAME_CHARS, prefixed_tool_name
from memory_adapter.tools.specs import TOOL_NAMES


@dataclass(frozen=True)
class GatewayConfig:
    """The AgentCore Gateway serving the memory tools over MCP to any agent or client (user-token modes only).

    ``enabled``: ``None`` (the default) creates it whenever callers present user tokens (``auth.mode`` cognito or
    jwt) and not with ``iam``; ``True`` requires it (refused with ``iam``); ``False`` never.
    """

    enabled: bool | None
    name: str | None
    target_name: str


#: AgentCore's names of gateways (at most 48) and gateway targets: letters and digits, a hyphen only after one. A
#: gateway's in lower case only: AgentCore forms its id and ARN in lower case, and the role's trust condition is built
#: from the name (``infra/constructs/memory_gateway.py``).
_GATEWAY_NAME = re.compile(r"^([0-9a-z]-?){1,48}$")
_TARGET_NAME = re.compile(r"^([0-9a-zA-Z]-?){1,100}$")


def gateway_problems(g: GatewayConfig, auth_mode: AuthMode | None) -> list[str]:
    """The AgentCore Gateway: names AgentCore accepts, tool names models accept, a user-token issuer."""
    errors: list[str] = []
    if g.name is not None:
        require(
            errors,
            len(g.name) <= 48 and bool(_GATEWAY_NAME.match(g.name)),
            "gateway.name must be at most 48 lower-case letters, digits and single hyphens (no leading hyphen; its ARN "
            "is lower case), or null",
        )
    require(
        errors,
        bool(_TARGET_NAME.match(g.target_name)),
        "gateway.target_name must be letters, digits and single hyphens (no leading hyphen), like memory",
    )
    longest = max(TOOL_NAMES, key=len)
    require(
        errors,
        len(prefixed_tool_name(g.target_name, longest)) <= MAX_TOOL_NAME_CHARS,
        f"gateway.target_name is too long: clients see '{prefixed_tool_name(g.target_name, longest)}', and model "
        f"providers refuse tool names over {MAX_TOOL_NAME_CHARS} characters",
    )
    if g.enabled and auth_mode is AuthMode.IAM:
        errors.append(
            "gateway.enabled=true: the gateway's tools act for the user a verified token names, and auth.mode=iam "
            "has no user tokens; leave gateway.enabled null (no gateway with iam) or use auth.mode=cognito or jwt"
        )
    return errors


def agent_gateway_problems(a: AgentConfig, g: GatewayConfig, auth_mode: AuthMode | None) -> list[str]:
    """The agent's tools can go through the gateway only if there is one."""
    errors: list[str] = []
    if a.tools_via_gateway and (g.enabled is False or auth_mode is AuthMode.IAM):
        errors.append(
            "agent.tools_via_gateway needs the memory gateway, which this configuration does not have "
            "(gateway.enabled=false, or auth.mode=iam); set agent.tools_via_gateway=false"
        )
    if a.tools_via_gateway and a.project is not None:
        errors.append(
            "agent.tools_via_gateway applies to the reference agent, whose tools read the gateway's URL; an agent "
            "project (agent.project) connects to the gateway itself: set agent.tools_via_gateway=false"
        )
    return errors

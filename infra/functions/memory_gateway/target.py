"""The AgentCore Gateway's Lambda target: recall, reflect, remember, forget and list_recent for the verified caller.

Runs in the VPC on the memory adapter layer (it reaches Hindsight's internal load balancer). The gateway hands it
only the tool's arguments (``event``) and, in ``context.client_context.custom``, the tool name
(``<target>___<tool>``) and the headers the target allowlists. The caller's identity comes only from
:data:`memory_adapter.gateway.CALLER_TOKEN_HEADER`, which the interceptor sets; it is verified again here with the
identity contract (a missing, forged, expired or machine token is refused) and then presented to Hindsight as the
credential, so Hindsight's isolation serves that user's bank and nothing else. Settings
(:class:`TargetSettings`): ``AGENT_NAME`` (whose banks: the runtime agent's, so both share the user's memory),
Hindsight's URL, CA and recall settings (the agent's), and the ``JWT_*`` variables of the identity contract.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from memory_adapter.exceptions import ConfigurationError
from memory_adapter.gateway import CALLER_TOKEN_HEADER, UNAUTHORIZED_ANSWER, propagated_header, tool_name
from memory_adapter.identity.caller import Caller
from memory_adapter.identity.errors import IdentityError
from memory_adapter.identity.settings import ENV_NAMING, JwtSettings
from memory_adapter.identity.verifier import JwtVerifier
from memory_adapter.settings_fields import RecallClientSettings, env_names, env_of, read_declared, setting
from memory_adapter.settings_reader import SettingsReader
from memory_adapter.tools.memory_tools import MemoryTools, ToolRunner
from memory_adapter.transport import HttpTransport, Transport

__all__ = ["TOOL_TIMEOUT_S", "TargetSettings", "handler", "run_tool", "tools_for"]

#: Seconds per Hindsight request; the function's own timeout (set by the stack) leaves room above it.
TOOL_TIMEOUT_S: Final = 20.0

logger = logging.getLogger("memory_gateway.target")
logger.setLevel(logging.INFO)

_deps: tuple[JwtVerifier, MemoryTools, str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetSettings(RecallClientSettings):
    """The target's settings: whose banks (``AGENT_NAME``), Hindsight's URL, CA and recall budget, and the token
    checks (``JWT_*``)."""

    agent_name: str = setting("AGENT_NAME", required="the runtime agent whose banks the tools serve")
    jwt: JwtSettings

    def to_env(self) -> dict[str, str]:
        """The environment :meth:`from_env` reads back as these settings (what the stack gives the function)."""
        return {**env_of(self), **self.jwt.to_env(ENV_NAMING)}

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """Every variable :meth:`from_env` reads: the declared fields' and the token checks'."""
        return (*env_names(cls), *env_names(JwtSettings, ENV_NAMING))

    @classmethod
    def from_env(cls, env: Mapping[str, object]) -> TargetSettings:
        """Read and check every variable; raise :class:`ConfigurationError` listing every problem."""
        get = SettingsReader(env, ENV_NAMING)
        values = read_declared(cls, get)
        jwt = JwtSettings.read(get)
        if get.problems:
            raise ConfigurationError(get.problems, subject="memory gateway target")
        return cls(**values, jwt=jwt)


def tools_for(settings: TargetSettings, transport: Transport) -> MemoryTools:
    """The tools over ``transport``, recalling as the agent does (its budget, block size and candidates)."""
    return MemoryTools(
        transport,
        timeout=TOOL_TIMEOUT_S,
        recall_budget=settings.recall_budget,
        recall_max_tokens=settings.recall_max_tokens,
        recall_candidate_tokens=settings.recall_candidate_tokens,
    )


def _default_deps() -> tuple[JwtVerifier, MemoryTools, str]:
    global _deps
    if _deps is None:
        settings = TargetSettings.from_env(os.environ)
        tools = tools_for(settings, HttpTransport(settings.hindsight_api_url))
        _deps = (JwtVerifier(settings.jwt), tools, settings.agent_name)
    return _deps


def run_tool(
    event: Any, custom: Mapping[str, Any] | None, verifier: JwtVerifier, tools: ToolRunner, agent: str
) -> dict[str, Any]:
    """The tool's answer (a JSON object) for one invocation; never raises."""
    name = tool_name(custom)
    if name is None:
        return {"error": "bad_request", "message": "no tool name in the invocation"}
    token = propagated_header(custom, CALLER_TOKEN_HEADER)
    if token is None:
        logger.warning("target refused: no caller token", extra={"tool": name[:64]})
        return dict(UNAUTHORIZED_ANSWER)
    try:
        identity = verifier.verify(token)  # machine tokens are refused there
        caller = Caller.of(user=identity.user, agent=agent, tenant=identity.tenant, credential=token)
    except IdentityError as exc:
        logger.warning("target refused the caller token", extra={"tool": name[:64], "reason": type(exc).__name__})
        return dict(UNAUTHORIZED_ANSWER)
    result = tools.call(caller, name, event if isinstance(event, Mapping) else None)
    return result.answer()


def handler(event: Any, context: Any) -> dict[str, Any]:
    """Lambda entry point."""
    custom = getattr(getattr(context, "client_context", None), "custom", None)
    try:
        verifier, tools, agent = _default_deps()
        return run_tool(event, custom if isinstance(custom, Mapping) else None, verifier, tools, agent)
    except Exception:  # misconfiguration or a bug: an error answer, never a stack trace to the caller
        logger.exception("memory tool target failed")
        return {"error": "internal", "message": "the memory tool failed; try again later"}

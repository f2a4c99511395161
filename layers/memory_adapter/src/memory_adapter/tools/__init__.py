"""Memory as tools: recall, reflect, remember, forget and list_recent, acting for a verified caller only.

One implementation for every way a model or a client reaches memory: the agent's Bedrock tool use, the local MCP
server, and the AgentCore Gateway's Lambda target. ``specs`` (names, descriptions, JSON schemas, argument checks) and
``matching`` are standard library only; ``memory_tools`` adds the Hindsight calls over the adapter's transport.

==================  ========================================================================================
Module              Job
==================  ========================================================================================
``specs``           :data:`TOOL_SPECS`: each tool's name, description and input schema; :func:`parse_arguments`
``memory_tools``    :class:`MemoryTools`: the tools themselves; :class:`ToolResult`, :class:`ToolRunner`
``gateway_client``  :class:`GatewayTools`: the same tools through the AgentCore Gateway, with the caller's token
``matching``        which memories a ``forget`` description selects
``forgetting``      what a forget selects and removes (the tool's and the operator's ``forget-memory``)
``errors``          :class:`ToolError` and its subclasses
==================  ========================================================================================

Example:
    >>> tools = MemoryTools(HttpTransport(settings.hindsight_api_url))
    >>> tools.call(caller, "remember", {"text": "Prefers email over phone", "kind": "preference"}).text
    'Remembered (preference): "Prefers email over phone".'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_adapter._lazy import lazy_getattr

_EXPORTS: dict[str, str] = {
    "TOOL_NAMES": "memory_adapter.tools.specs",
    "TOOL_SPECS": "memory_adapter.tools.specs",
    "ToolSpec": "memory_adapter.tools.specs",
    "parse_arguments": "memory_adapter.tools.specs",
    "MemoryTools": "memory_adapter.tools.memory_tools",
    "ToolResult": "memory_adapter.tools.memory_tools",
    "ToolRunner": "memory_adapter.tools.memory_tools",
    "GatewayTools": "memory_adapter.tools.gateway_client",
    "Forgotten": "memory_adapter.tools.memory_tools",
    "ToolError": "memory_adapter.tools.errors",
    "ToolInputError": "memory_adapter.tools.errors",
    "ToolRefusedError": "memory_adapter.tools.errors",
    "ToolUnavailableError": "memory_adapter.tools.errors",
    "matches": "memory_adapter.tools.matching",
}

__all__ = [
    "TOOL_NAMES",
    "TOOL_SPECS",
    "Forgotten",
    "GatewayTools",
    "MemoryTools",
    "ToolError",
    "ToolInputError",
    "ToolRefusedError",
    "ToolResult",
    "ToolRunner",
    "ToolSpec",
    "ToolUnavailableError",
    "matches",
    "parse_arguments",
]

if TYPE_CHECKING:
    from memory_adapter.tools.errors import ToolError, ToolInputError, ToolRefusedError, ToolUnavailableError
    from memory_adapter.tools.gateway_client import GatewayTools
    from memory_adapter.tools.matching import matches
    from memory_adapter.tools.memory_tools import Forgotten, MemoryTools, ToolResult, ToolRunner
    from memory_adapter.tools.specs import TOOL_NAMES, TOOL_SPECS, ToolSpec, parse_arguments

__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return __all__

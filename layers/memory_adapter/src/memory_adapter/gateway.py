"""What the AgentCore Gateway's interceptor and its Lambda target agree on, defined once (standard library only).

The gateway's JWT authorizer checks the caller's token, then the REQUEST interceptor verifies it again with the
identity contract and hands it to the target in :data:`CALLER_TOKEN_HEADER`, always overwriting whatever a client
sent under that name. The target allowlists exactly that header (``metadataConfiguration.allowedRequestHeaders``;
``Authorization`` itself cannot be allowlisted), reads it from ``client_context.custom``, verifies it once more and
acts for that user with that token, so Hindsight's own isolation applies. The infrastructure imports the same names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "CALLER_TOKEN_HEADER",
    "MAX_TOOL_NAME_CHARS",
    "TOOL_NAME_DELIMITER",
    "UNAUTHORIZED_ANSWER",
    "prefixed_tool_name",
    "propagated_header",
    "tool_name",
]

#: The header carrying the verified caller's token from the interceptor to the target.
CALLER_TOKEN_HEADER: Final = "X-Memory-Caller-Token"  # noqa: S105 - a header name, not a secret
#: The gateway names a Lambda target's tools ``<target>___<tool>``.
TOOL_NAME_DELIMITER: Final = "___"
#: The longest tool name a client sees (``<target>___<tool>``): model providers cap tool names at 64 characters.
MAX_TOOL_NAME_CHARS: Final = 64
#: A tool call's answer (JSON in a text block) when the caller is not a verified user.
UNAUTHORIZED_ANSWER: Final[Mapping[str, str]] = {
    "error": "unauthorized",
    "message": "unauthorized: this tool needs a verified user",
}
_TOOL_NAME_KEY: Final = "bedrockAgentCoreToolName"
_HEADERS_KEY: Final = "bedrockAgentCorePropagatedHeaders"


def prefixed_tool_name(target: str, tool: str) -> str:
    """The name the gateway gives tool ``tool`` of target ``target`` (what an MCP client lists and calls)."""
    return f"{target}{TOOL_NAME_DELIMITER}{tool}"


def tool_name(custom: Mapping[str, Any] | None) -> str | None:
    """The tool the gateway invoked, without its ``<target>___`` prefix (``None`` when it is not there)."""
    raw = (custom or {}).get(_TOOL_NAME_KEY)
    if not isinstance(raw, str) or not raw:
        return None
    _, delimiter, name = raw.partition(TOOL_NAME_DELIMITER)
    return name if delimiter and name else None


def propagated_header(custom: Mapping[str, Any] | None, name: str) -> str | None:
    """The value of header ``name`` (case-insensitive) the gateway propagated to the target, if exactly one."""
    raw = (custom or {}).get(_HEADERS_KEY)
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if not isinstance(raw, Mapping):
        return None
    values = [value for key, value in raw.items() if isinstance(key, str) and key.lower() == name.lower()]
    if len(values) != 1 or not isinstance(values[0], str) or not values[0].strip():
        return None
    return values[0].strip()

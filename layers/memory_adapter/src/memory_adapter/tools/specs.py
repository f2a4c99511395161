"""The memory tools' names, descriptions and input schemas, and the validation of their arguments. Defined once.

The agent hands these to Bedrock (Converse ``toolConfig``), the local MCP server lists them, and the AgentCore Gateway
target's inline tool schema is built from them. No schema has a user, tenant, agent or bank parameter: who a tool
acts for is the verified caller, never an argument (``additionalProperties`` is false, so none can be smuggled in).
Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from memory_adapter.kinds import MemoryKind
from memory_adapter.tools.errors import ToolInputError

__all__ = [
    "FORGET",
    "LIST_RECENT",
    "RECALL",
    "REFLECT",
    "REMEMBER",
    "REMEMBER_KINDS",
    "TOOL_NAMES",
    "TOOL_SPECS",
    "ToolSpec",
    "parse_arguments",
]

RECALL: Final = "recall"
REFLECT: Final = "reflect"
REMEMBER: Final = "remember"
FORGET: Final = "forget"
LIST_RECENT: Final = "list_recent"

#: Kinds the model may give ``remember`` (``turn`` is what automatic retains are).
REMEMBER_KINDS: Final = tuple(kind.value for kind in MemoryKind if kind is not MemoryKind.TURN)
MAX_QUERY_CHARS: Final = 1_000
MAX_TEXT_CHARS: Final = 4_000
MAX_IDS: Final = 20
_MEMORY_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as a model or an MCP client sees it: a name, what it does, and a JSON schema of its arguments."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    def converse(self) -> dict[str, Any]:
        """The tool as a Bedrock Converse ``toolSpec``."""
        return {
            "toolSpec": {
                "name": self.name,
                "description": self.description,
                "inputSchema": {"json": dict(self.input_schema)},
            }
        }


def _text(description: str, max_length: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_length, "description": description}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_KIND = {"type": "string", "enum": list(REMEMBER_KINDS)}

TOOL_SPECS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        RECALL,
        "Search the user's long-term memory (earlier conversations and remembered facts) for what is relevant to a "
        "query. Returns the memories found, each with its id. Use it when you need something you were not given.",
        _schema(
            {
                "query": _text("What to look for, in natural language.", MAX_QUERY_CHARS),
                "max_results": {"type": "integer", "minimum": 1, "maximum": 20, "description": "At most (default 5)."},
            },
            ["query"],
        ),
    ),
    ToolSpec(
        REFLECT,
        "Answer a question from the user's long-term memory: the memory server reasons over everything it holds "
        "about the user and returns an answer (slower than recall).",
        _schema({"query": _text("The question to answer from memory.", MAX_QUERY_CHARS)}, ["query"]),
    ),
    ToolSpec(
        REMEMBER,
        "Store a fact in the user's long-term memory because the user asked you to keep it. Give the fact as a "
        "short statement, and its kind (preference, decision, fact, plan, problem or solution; default fact): plans "
        "are kept 30 days, problems 90 days, the others until forgotten.",
        _schema(
            {
                "text": _text("The fact to keep, as a statement about the user.", MAX_TEXT_CHARS),
                "kind": {**_KIND, "description": "What the fact is (decides how long it is kept)."},
            },
            ["text"],
        ),
    ),
    ToolSpec(
        FORGET,
        "Forget memories of this user because the user asked you to: either the memories matching a description "
        "(every significant word of it must appear in the memory), or the memories with the given ids (from recall "
        "or list_recent). Returns what was forgotten. Only this user's memories can be forgotten.",
        _schema(
            {
                "query": _text("What to forget, e.g. 'that I prefer email'.", MAX_QUERY_CHARS),
                "memory_ids": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": 64},
                    "minItems": 1,
                    "maxItems": MAX_IDS,
                    "description": "Ids of memories to forget (give this or query).",
                },
            },
            [],
        ),
    ),
    ToolSpec(
        LIST_RECENT,
        "List the user's most recent memories, newest first, optionally of one kind.",
        _schema(
            {
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many (default 10)."},
                "kind": {**_KIND, "description": "Only memories of this kind."},
            },
            [],
        ),
    ),
)
TOOL_NAMES: Final = frozenset(spec.name for spec in TOOL_SPECS)
_BY_NAME: Final = {spec.name: spec for spec in TOOL_SPECS}


def parse_arguments(name: str, arguments: object) -> dict[str, Any]:
    """``arguments`` checked against tool ``name``'s schema, with defaults filled in; raise :class:`ToolInputError`
    saying what is wrong (an unknown tool, an unknown or missing argument, a wrong type or size)."""
    spec = _BY_NAME.get(name)
    if spec is None:
        raise ToolInputError(f"unknown tool {str(name)[:64]!r}; the tools are {', '.join(sorted(TOOL_NAMES))}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ToolInputError(f"{name}: the arguments must be a JSON object")
    properties: Mapping[str, Any] = spec.input_schema["properties"]
    unknown = sorted(str(key)[:40] for key in arguments if key not in properties)
    if unknown:
        raise ToolInputError(f"{name}: unknown argument(s) {', '.join(unknown[:5])}; allowed: {', '.join(properties)}")
    missing = [key for key in spec.input_schema["required"] if key not in arguments]
    if missing:
        raise ToolInputError(f"{name}: missing argument(s) {', '.join(missing)}")
    values = {key: _value(name, key, properties[key], value) for key, value in arguments.items()}
    if name == FORGET and not values:
        raise ToolInputError("forget: give 'query' (what to forget) or 'memory_ids' (from recall or list_recent)")
    return values


def _value(tool: str, key: str, schema: Mapping[str, Any], value: object) -> Any:
    where = f"{tool}: '{key}'"
    kind = schema["type"]
    if kind == "string":
        return _string(where, schema, value)
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolInputError(f"{where} must be a whole number")
        if not schema["minimum"] <= value <= schema["maximum"]:
            raise ToolInputError(f"{where} must be from {schema['minimum']} to {schema['maximum']}")
        return value
    assert kind == "array"
    if not isinstance(value, list) or not schema["minItems"] <= len(value) <= schema["maxItems"]:
        raise ToolInputError(f"{where} must be a list of {schema['minItems']} to {schema['maxItems']} ids")
    ids = [_string(where, schema["items"], item) for item in value]
    bad = [memory_id for memory_id in ids if not _MEMORY_ID.fullmatch(memory_id)]
    if bad:
        raise ToolInputError(f"{where}: {bad[0][:64]!r} is not a memory id (ids come from recall or list_recent)")
    return list(dict.fromkeys(memory_id.lower() for memory_id in ids))


def _string(where: str, schema: Mapping[str, Any], value: object) -> str:
    if not isinstance(value, str):
        raise ToolInputError(f"{where} must be a string")
    text = value.strip()
    if not text:
        raise ToolInputError(f"{where} must not be blank")
    limit = schema.get("maxLength", 64)
    if len(text) > limit:
        raise ToolInputError(f"{where} is longer than {limit} characters")
    if "\x00" in text or any(0xD800 <= ord(char) <= 0xDFFF for char in text):
        raise ToolInputError(f"{where} must be text without NUL characters or lone surrogates")
    enum = schema.get("enum")
    if enum is not None and text not in enum:
        raise ToolInputError(f"{where} must be one of {', '.join(enum)}")
    return text

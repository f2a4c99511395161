"""The deterministic stand-in model behind the integrations' ``EchoModel``s (local runs and tests, no network).

Like the reference agent's echo model it answers ``You said: <prompt>`` and shows what it was given: the memories
recalled into its system prompt (the bullets inside the ``<recalled_memories>`` block) and how many earlier messages
of the conversation it saw. It calls a memory tool when the prompt asks for it (``remember ...``, ``forget ...``,
``recall ...`` or ``what do you remember about ...``) and that tool is offered, then reports the tool's answer.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from memory_adapter.formatting import MEMORY_BLOCK_CLOSE, MEMORY_BLOCK_OPEN

__all__ = ["ToolCall", "answer", "tool_call_for", "tool_reply"]

_TOOL_RULES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"^\s*remember(?:\s+that)?[:,]?\s+(?P<arg>.+)$", re.IGNORECASE | re.DOTALL), "remember", "text"),
    (re.compile(r"^\s*forget(?:\s+that)?[:,]?\s+(?P<arg>.+)$", re.IGNORECASE | re.DOTALL), "forget", "query"),
    (
        re.compile(r"^\s*(?:recall|what do you remember about)[:,]?\s+(?P<arg>.+?)\??$", re.IGNORECASE | re.DOTALL),
        "recall_memory",
        "query",
    ),
)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool the stand-in decided to call, with its arguments."""

    name: str
    arguments: dict[str, str]


def tool_call_for(prompt: str, offered: Collection[str]) -> ToolCall | None:
    """The memory tool ``prompt`` asks for, if it is among the ``offered`` tool names."""
    for pattern, name, argument in _TOOL_RULES:
        match = pattern.match(prompt)
        if match and name in offered:
            return ToolCall(name, {argument: match.group("arg").strip()})
    return None


def recalled_bullets(system_prompt: str | None) -> list[str]:
    """The memory bullets of the ``<recalled_memories>`` block in ``system_prompt`` (none without a block)."""
    if not system_prompt or MEMORY_BLOCK_OPEN not in system_prompt:
        return []
    block = system_prompt.split(MEMORY_BLOCK_OPEN, 1)[1].split(MEMORY_BLOCK_CLOSE, 1)[0]
    return [line for line in block.splitlines() if line.startswith("- ")]


def answer(prompt: str, system_prompt: str | None, *, earlier_messages: int = 0) -> str:
    """The stand-in's answer to ``prompt``, showing the recalled memories and the conversation it was given."""
    lines = [f"You said: {prompt.strip()}"]
    if earlier_messages:
        lines.append(f"(conversation so far: {earlier_messages} earlier messages)")
    bullets = recalled_bullets(system_prompt)
    if bullets:
        lines += ["From earlier conversations I remember:", *bullets]
    else:
        lines.append("(I have no memories of you yet.)")
    return "\n".join(lines)


def tool_reply(name: str, result: str) -> str:
    """The stand-in's answer after a tool ran: what the tool said."""
    return f"[{name}] {result.strip()}"

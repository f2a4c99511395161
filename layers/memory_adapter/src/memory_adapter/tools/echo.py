"""The deterministic stand-in model's behaviour, shared by every echo model (the reference agent's and the framework
integrations'): which memory tool a prompt calls, and how the answer shows what the model was given.

Local runs and tests use it instead of a real model, so what reached the model (the session's conversation, the
recalled memories, a tool's result) is visible in the answer. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

__all__ = ["NOTHING_RECALLED", "echo_answer", "echo_tool_answer", "echo_tool_call"]

#: What the stand-in says when recall brought nothing for this message. Only that: the user may well have memories
#: (recall returns what is relevant to the message, and a user who has memories can get none for an unrelated one).
NOTHING_RECALLED: Final = "(Nothing relevant to this message was recalled from earlier conversations.)"

#: The stand-in's deterministic tool use: a prompt starting with one of these calls the tool (case-insensitive).
_ECHO_COMMANDS: Final = (
    (re.compile(r"^\s*forget\b[\s:,]*(?P<rest>.*)$", re.IGNORECASE | re.DOTALL), "forget"),
    (
        re.compile(
            r"^\s*remember\b(?:\s+(?:as\s+)?(?:an?\s+)?(?P<kind>preference|decision|fact|plan|problem|solution)\b)?"
            r"[\s:,]*(?:that\s+)?(?P<rest>.*)$",
            re.IGNORECASE | re.DOTALL,
        ),
        "remember",
    ),
    (
        re.compile(r"^\s*(?:recall|what do you remember about)\b[\s:,]*(?P<rest>.*)$", re.IGNORECASE | re.DOTALL),
        "recall",
    ),
    (re.compile(r"^\s*reflect\b[\s:,]*(?:on\s+)?(?P<rest>.*)$", re.IGNORECASE | re.DOTALL), "reflect"),
    (
        re.compile(r"^\s*(?:list (?:my |recent )?memories|list recent)\b(?P<rest>.*)$", re.IGNORECASE | re.DOTALL),
        "list_recent",
    ),
)


def echo_tool_call(prompt: str) -> tuple[str, dict[str, Any]] | None:
    """The tool call the echo stand-in makes for ``prompt``, if any.

    ``forget <what>`` -> ``forget(query=<what>)``; ``remember [as <kind>] [that] <text>`` ->
    ``remember(text=<text>, kind=<kind or fact>)``; ``recall <query>`` or ``what do you remember about <query>`` ->
    ``recall``; ``reflect [on] <question>`` -> ``reflect``; ``list my memories`` / ``list recent`` ->
    ``list_recent``. A command with nothing after it is passed on as it is (the tool says what is missing).
    """
    for pattern, name in _ECHO_COMMANDS:
        match = pattern.match(prompt)
        if match is None:
            continue
        rest = match.group("rest").strip()
        if name == "list_recent":
            return name, {}
        if name == "remember":
            kind = match.group("kind")
            return name, {"text": rest, **({"kind": kind.lower()} if kind else {})}
        return name, {"query" if name != "remember" else "text": rest}
    return None


def echo_answer(prompt: str, *, memories: str, earlier: Sequence[str] = ()) -> str:
    """The stand-in's answer: ``You said: <prompt>``, what the user said earlier in this session, and the recalled
    ``memories`` (already formatted), or that recall brought none (:data:`NOTHING_RECALLED`)."""
    lines = [f"You said: {prompt.strip()}"]
    if earlier:
        lines.append("Earlier in this session you said:")
        lines.extend(f"- {' '.join(said.split())}" for said in earlier)
    if memories.strip():
        lines.append("From earlier conversations I remember:")
        lines.append(memories.strip())
    elif not earlier:
        lines.append(NOTHING_RECALLED)
    return "\n".join(lines)


def echo_tool_answer(prompt: str, result: str) -> str:
    """The stand-in's answer after the tool :func:`echo_tool_call` chose ran: the prompt and the tool's result."""
    return f"You said: {prompt.strip()}\n{result}"

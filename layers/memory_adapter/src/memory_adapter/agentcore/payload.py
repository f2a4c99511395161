"""The turn payload every agent on this wiring accepts: ``{"prompt": "...", "stream": false}``, and nothing else.

One rule for the reference agent and an agent you bring (:meth:`~memory_adapter.agentcore.AgentCoreMemory.read_turn`),
so both answer bad input with the same 400: an unknown field, a missing, blank, oversized or non-text prompt, a
``stream`` that is not a boolean. The body limit (:func:`max_body_bytes`) follows from the prompt limit, so the two
cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_adapter.agentcore.errors import PayloadError

__all__ = ["DEFAULT_MAX_PROMPT_CHARS", "MAX_MAX_PROMPT_CHARS", "TurnRequest", "max_body_bytes", "parse_turn"]

DEFAULT_MAX_PROMPT_CHARS = 16_000
MAX_MAX_PROMPT_CHARS = 200_000
_ALLOWED_KEYS = frozenset({"prompt", "stream"})


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """A validated payload: a non-blank prompt of bounded size, and whether to stream the answer."""

    prompt: str
    stream: bool = False


def max_body_bytes(max_prompt_chars: int) -> int:
    """Largest request body read: room for a maximal prompt written entirely as JSON ``\\uXXXX`` escapes."""
    return 12 * max_prompt_chars + 4096


def parse_turn(payload: object, *, max_prompt_chars: int) -> TurnRequest:
    """Validate the invocation payload; raise :class:`PayloadError` with a message safe to show the caller."""
    if not isinstance(payload, dict):
        raise PayloadError("the request body must be a JSON object")
    unknown = sorted(str(key)[:40] for key in payload if key not in _ALLOWED_KEYS)
    if unknown:
        raise PayloadError(f"unknown field(s): {', '.join(unknown[:5])}; allowed: prompt, stream")
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        raise PayloadError("'prompt' is required and must be a string")
    if not prompt.strip():
        raise PayloadError("'prompt' must not be blank")
    if len(prompt) > max_prompt_chars:
        raise PayloadError(f"'prompt' is longer than {max_prompt_chars} characters", code="payload_too_large")
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:
        raise PayloadError("'prompt' is not valid Unicode text (lone surrogate)") from None
    if "\x00" in prompt:
        raise PayloadError("'prompt' must not contain NUL characters")
    stream = payload.get("stream", False)
    if not isinstance(stream, bool):
        raise PayloadError("'stream' must be true or false")
    return TurnRequest(prompt=prompt, stream=stream)

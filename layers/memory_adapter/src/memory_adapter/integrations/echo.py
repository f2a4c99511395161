"""The integrations' side of the deterministic stand-in (:mod:`memory_adapter.tools.echo`, the reference agent's
rules): the recalled memories it finds in its system prompt."""

from __future__ import annotations

from memory_adapter.formatting import MEMORY_BLOCK_CLOSE, MEMORY_BLOCK_OPEN

__all__ = ["recalled_memories"]


def recalled_memories(system_prompt: str | None) -> str:
    """The memory bullets inside the ``<recalled_memories>`` block of ``system_prompt`` (``""`` without a block),
    laid out as the reference agent's echo model shows them."""
    if not system_prompt or MEMORY_BLOCK_OPEN not in system_prompt:
        return ""
    block = system_prompt.split(MEMORY_BLOCK_OPEN, 1)[1].split(MEMORY_BLOCK_CLOSE, 1)[0]
    return "\n\n".join(line for line in block.splitlines() if line.startswith("- "))

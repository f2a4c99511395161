"""What a memory tool call can get wrong, one class per failure (each maps to one answer: ``ToolResult.error``).

::

    HindsightAgentCoreError            (memory_adapter.exceptions)
    └── ToolError                      .code names the failure for callers and logs
        ├── ToolInputError             the arguments are wrong: the message says what to change (a 4xx)
        ├── ToolRefusedError           no usable credential, or Hindsight refused it (a 401/403)
        └── ToolUnavailableError       Hindsight could not be reached or failed: try again later (a 503)
"""

from __future__ import annotations

from typing import ClassVar

from memory_adapter.exceptions import HindsightAgentCoreError

__all__ = ["ToolError", "ToolInputError", "ToolRefusedError", "ToolUnavailableError"]


class ToolError(HindsightAgentCoreError):
    """A tool call that could not be carried out; ``str(error)`` is safe to show the caller and the model."""

    code: ClassVar[str] = "tool_error"


class ToolInputError(ToolError):
    """The arguments do not fit the tool's schema (or name nothing usable)."""

    code: ClassVar[str] = "bad_arguments"


class ToolRefusedError(ToolError):
    """The call has no usable credential, or Hindsight refused the caller's (never says whose bank it was)."""

    code: ClassVar[str] = "unauthorized"


class ToolUnavailableError(ToolError):
    """Hindsight could not be reached, timed out or failed: nothing was changed that the answer does not report."""

    code: ClassVar[str] = "memory_unavailable"

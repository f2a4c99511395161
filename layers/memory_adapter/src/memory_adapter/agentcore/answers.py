"""The reference agent's answers, in one place, so an agent you bring answers its clients in the same words.

A turn answers ``{"output", "session_id", "memory": {"recalled", "degraded", ...}}`` (:func:`answer`), or streamed,
``{"type": "delta", "text"}`` events then ``{"type": "done", ...the answer}``. A failure answers ``{"error", "code"}``
with its status (:class:`Failure`: :meth:`~Failure.response`), or streamed, ``{"type": "error", "error", "code"}``
(:meth:`~Failure.event`). The 400 and 401 answers are the wiring's own (:mod:`memory_adapter.agentcore.app`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.responses import JSONResponse

__all__ = ["BUSY", "INTERNAL", "MODEL_UNAVAILABLE", "Failure", "answer"]


@dataclass(frozen=True, slots=True)
class Failure:
    """A turn that could not be answered: its HTTP status, a message safe to show, and a stable code."""

    status: int
    error: str
    code: str

    def response(self) -> JSONResponse:
        """The JSON answer ``{"error", "code"}`` with :attr:`status`."""
        from memory_adapter.agentcore.app import error_response  # Starlette: the [agentcore] extra

        return error_response(self.status, self.error, self.code)

    def event(self) -> dict[str, Any]:
        """The streamed form: the last event of a stream that failed."""
        return {"type": "error", "error": self.error, "code": self.code}


#: The caller's previous request in this session is still being answered (one conversation answers one at a time).
BUSY = Failure(409, "your previous request is still being answered; retry when it is done", "busy")
#: The model failed (the reason is logged, never sent).
MODEL_UNAVAILABLE = Failure(502, "the model is unavailable", "model_unavailable")
#: Anything else that failed (the exception is logged, never sent).
INTERNAL = Failure(500, "internal error", "internal")


def answer(output: str, session_id: str, memory: Mapping[str, Any]) -> dict[str, Any]:
    """A turn's answer: the model's ``output``, the runtime ``session_id`` and what ``memory`` did for the turn."""
    return {"output": output, "session_id": session_id, "memory": dict(memory)}

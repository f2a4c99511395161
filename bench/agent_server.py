"""Serve the real agent (``runtime_handler``, JWT mode) for :mod:`bench.invocations` and :mod:`bench.scale.concurrency`.

``python -m bench.agent_server on|off [echo|brief]``: configuration from the environment exactly as AgentCore passes
it; ``off`` injects a memory that does nothing, so two servers differ only in memory. The model is the echo model
(default; it repeats every recalled memory in its answer) or ``brief``, which answers in two short sentences like a
chat model does: with the echo model every retained turn carries all the memories recalled before it, so the write
load grows with every turn, which a real model's answers do not do.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator

from memory_adapter.adapter import Recollection
from memory_adapter.identity import Caller
from memory_adapter.retains import RetainHandle, RetainOutcome
from runtime_handler.model import ModelTurn

#: The brief model's answer (also what :mod:`bench.scale.write_path` retains as a turn's answer).
BRIEF_ANSWER = "Thanks, I will keep that in mind. Is there anything else I can help with?"


class NoMemory:
    """The turn without long-term memory: nothing recalled, nothing retained, no network."""

    async def recall_for_turn(self, context: Caller, query: str) -> Recollection:
        return Recollection(text="", count=0, degraded=False)

    def retain_for_turn(
        self, context: Caller, *, result: str, query: str | None = None, session_id: str, request_id: str | None = None
    ) -> RetainHandle:
        return RetainHandle.resolved(RetainOutcome.SKIPPED)

    async def aclose(self, timeout: float | None = None) -> None:  # noqa: ASYNC109 (the turn's Memory protocol)
        return None


class BriefModel:
    """Answers every prompt in two short sentences, whatever was recalled (no network, deterministic)."""

    async def reply(self, turn: ModelTurn) -> str:
        return BRIEF_ANSWER

    async def stream(self, turn: ModelTurn) -> AsyncIterator[str]:
        yield BRIEF_ANSWER


def main(argv: list[str]) -> int:
    import uvicorn

    from runtime_handler.main import create_app
    from runtime_handler.settings import Settings

    settings = Settings.from_env(os.environ)
    model = BriefModel() if argv[1:2] == ["brief"] else None
    app = create_app(settings, memory=NoMemory() if argv[:1] == ["off"] else None, model=model)
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

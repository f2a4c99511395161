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

from runtime_handler.memory import NOTHING_RECALLED, MemoryScope, Recollection, RetainReceipt

#: The brief model's answer (also what :mod:`bench.scale.write_path` retains as a turn's answer).
BRIEF_ANSWER = "Thanks, I will keep that in mind. Is there anything else I can help with?"


class NoMemory:
    """The turn without long-term memory: nothing recalled, nothing retained, no network."""

    async def recall(self, scope: MemoryScope, query: str) -> Recollection:
        return NOTHING_RECALLED

    async def retain(self, scope: MemoryScope, query: str, output: str) -> RetainReceipt | None:
        return None

    async def aclose(self) -> None:
        return None


class BriefModel:
    """Answers every prompt in two short sentences, whatever was recalled (no network, deterministic)."""

    async def reply(self, prompt: str, memories: str) -> str:
        return BRIEF_ANSWER

    async def stream(self, prompt: str, memories: str) -> AsyncIterator[str]:
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

"""Serve the real agent (``runtime_handler``, echo model, JWT mode) for :mod:`bench.invocations`.

``python -m bench.agent_server on|off``: configuration from the environment exactly as AgentCore passes it; ``off``
injects a memory that does nothing, so the two servers differ only in memory.
"""

from __future__ import annotations

import os
import sys

from memory_adapter.adapter import Recollection
from memory_adapter.delivery import RetainHandle, RetainOutcome
from memory_adapter.identity import Caller


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


def main(argv: list[str]) -> int:
    import uvicorn

    from runtime_handler.main import create_app
    from runtime_handler.settings import Settings

    settings = Settings.from_env(os.environ)
    app = create_app(settings, memory=NoMemory() if argv[:1] == ["off"] else None)
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

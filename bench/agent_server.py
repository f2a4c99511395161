"""Serve the real agent (``runtime_handler``, echo model, JWT mode) for :mod:`bench.invocations`.

``python -m bench.agent_server on|off``: configuration from the environment exactly as AgentCore passes it; ``off``
injects a memory that does nothing, so the two servers differ only in memory.
"""

from __future__ import annotations

import os
import sys

from runtime_handler.memory import NOTHING_RECALLED, MemoryScope, Recollection, RetainReceipt


class NoMemory:
    """The turn without long-term memory: nothing recalled, nothing retained, no network."""

    async def recall(self, scope: MemoryScope, query: str) -> Recollection:
        return NOTHING_RECALLED

    async def retain(self, scope: MemoryScope, query: str, output: str) -> RetainReceipt | None:
        return None

    async def aclose(self) -> None:
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

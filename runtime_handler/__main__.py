"""``python -m runtime_handler``: serve the agent on ``127.0.0.1:${PORT:-8080}``.

Also the entry point of AgentCore direct code deployment (``entrypoint=["runtime_handler/__main__.py"]``): there the
SDK detects the container and binds ``0.0.0.0:8080`` as the Runtime contract requires. ``HOST`` overrides the address.
A configuration error prints every problem and exits with status 2 before anything is served.
"""

from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a file (AgentCore entrypoint): make the bundle root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from memory_adapter.agentcore.settings import SettingsError


def main() -> int:
    from memory_adapter.agentcore.app import serve
    from runtime_handler.main import app_from_env

    try:
        app = app_from_env()
    except SettingsError as exc:
        print(exc, file=sys.stderr)
        return 2
    serve(app)
    return 0


if __name__ == "__main__":
    sys.exit(main())

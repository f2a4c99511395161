"""``localdev.mcp_server.LocalMcpServer.start``: a server left running with other settings is restarted, not reused."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from localdev.mcp_server import MCP_PATH, LocalMcpServer

_REFUSING_SERVER = """
import os
from http.server import BaseHTTPRequestHandler, HTTPServer

class Refuse(BaseHTTPRequestHandler):
    def do_POST(self):
        self.send_response(401)
        self.send_header("Content-Length", "0")
        self.end_headers()

HTTPServer(("127.0.0.1", int(os.environ["PORT"])), Refuse).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_start_restarts_a_server_running_other_settings(tmp_path: Path) -> None:
    # GIVEN a server left by an earlier run (recorded without its settings) answering on the port
    port = _free_port()
    server = LocalMcpServer(tmp_path / "mcp")
    script = tmp_path / "old.py"
    script.write_text(_REFUSING_SERVER)
    old = subprocess.Popen([sys.executable, str(script)], env={**os.environ, "PORT": str(port)}, start_new_session=True)
    server.data_dir.mkdir(parents=True)
    (server.data_dir / "mcp.json").write_text(json.dumps({"pid": old.pid, "url": f"http://127.0.0.1:{port}{MCP_PATH}"}))
    deadline = time.monotonic() + 20
    while not server.healthy() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.healthy()
    try:
        # WHEN the MCP server is started on that port
        server.start(hindsight_url="http://127.0.0.1:1", issuer_url="http://127.0.0.1:2", port=port)
        # THEN the earlier one was stopped, and the new one records what it runs with
        old.wait(timeout=20)
        assert _state(server)["args"][-3:] == ["http://127.0.0.1:1", "--issuer-url", "http://127.0.0.1:2"]
        pid = _state(server)["pid"]
        # WHEN started again with the same settings, THEN it is kept
        server.start(hindsight_url="http://127.0.0.1:1", issuer_url="http://127.0.0.1:2", port=port)
        assert _state(server)["pid"] == pid
    finally:
        server.stop()
        if old.poll() is None:
            old.kill()


def _state(server: LocalMcpServer) -> dict[str, Any]:
    return dict(json.loads((server.data_dir / "mcp.json").read_text()))


def test_a_port_taken_by_something_else_names_the_setting(tmp_path: Path) -> None:
    import pytest

    from localdev.supervisor import StartError

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(StartError, match=f"port {port} is in use.*LOCAL_MCP_PORT=<port>"):
            LocalMcpServer(tmp_path / "mcp").start(
                hindsight_url="http://127.0.0.1:1", issuer_url="http://127.0.0.1:2", port=port
            )

"""The admin CLI's bad-input paths: every error is one line on stderr saying what to do, exit code 2, no traceback;
the connection options are accepted after the action too. No server needed (a closed port stands in for a down one).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from memory_adapter.admin.cli import main


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    return code, err


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default --out (.local/admin, where --local writes its audit lines) lands in a temporary folder."""
    monkeypatch.chdir(tmp_path)


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err  # the error alone: no audit line before it
    assert "Traceback" not in err
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "operator-key"
    path.write_text("k")
    return path


@pytest.mark.parametrize("retention", ['{"turn": 0}', '{"turn": ', "[1]"])
def test_a_bad_retention_is_one_line_naming_the_option(capsys: pytest.CaptureFixture[str], retention: str) -> None:
    code, err = _run(capsys, "--local", "expire", "--dry-run", "--retention", retention)
    assert code == 2
    assert _one_line(err).startswith("error: --retention: ")


def test_local_is_accepted_after_the_action(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # GIVEN --local and --operator-key-file after the action: the run reaches the key check (so both were read)
    missing = tmp_path / "no-key"
    code, err = _run(capsys, "banks", "--user", "u", "--local", "--operator-key-file", str(missing))
    assert code == 2
    assert str(missing) in _one_line(err)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["bogus"],
        ["--local", "forget-memory", "--user", "u"],
        ["forget-memory", "--local", "--user", "u", "--query", "x", "--limit", "abc"],
        ["--local", "forget-memory", "--function-url", "https://x", "--user", "u", "--query", "dog"],
        ["banks", "--user", "u"],
    ],
)
def test_usage_errors_are_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.delenv("MEMORY_ADMIN_URL", raising=False)
    code, err = _run(capsys, *argv)
    assert code == 2
    _one_line(err)


def test_a_down_hindsight_and_a_bad_limit_are_one_line(capsys: pytest.CaptureFixture[str], key_file: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    base = ["forget-memory", "--local", "--url", url, "--operator-key-file", str(key_file), "--user", "u"]
    code, err = _run(capsys, *base, "--query", "my dog")
    assert code == 2
    assert "make hindsight-start" in _one_line(err)
    code, err = _run(capsys, *base, "--query", "my dog", "--limit", "0")
    assert code == 2
    assert "limit" in _one_line(err)


def test_forget_user_without_confirm_names_the_option_and_audits_the_refusal_to_a_file(
    capsys: pytest.CaptureFixture[str], key_file: Path, tmp_path: Path
) -> None:
    # GIVEN no --confirm (the refusal comes before Hindsight is asked anything)
    out = tmp_path / "admin"
    argv = ["--local", "--url", f"http://127.0.0.1:{_closed_port()}", "--operator-key-file", str(key_file)]
    code, err = _run(capsys, *argv, "--out", str(out), "forget-user", "--user", "user-alex")
    # THEN one line says how to confirm, and the audit line is in the audit file, not on the terminal
    assert code == 2
    assert _one_line(err) == (
        "error: forgetting deletes every memory of user 'user-alex' for good: repeat the user id to confirm "
        "(--confirm user-alex) to proceed (nothing was deleted)"
    )
    (line,) = (out / "audit.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert (record["action"], record["outcome"], record["error"]) == ("forget-user", "refused", "ConfirmationError")
    assert record["principal"].startswith("local:")


def test_run_from_another_folder_says_where_it_looked_and_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN the default key file (relative) and a folder that is not the project's (the autouse fixture's tmp_path)
    code, err = _run(capsys, "--local", "banks", "--user", "u")
    # THEN the error names the folder it looked in and both ways out (before: only "start the local Hindsight")
    line = _one_line(err)
    assert code == 2
    assert f"(under {Path.cwd()})" in line
    assert "run this from the project folder" in line
    assert "--operator-key-file" in line


@pytest.fixture
def refusing_url() -> Iterator[str]:
    """A real HTTP server that answers every request 401, as Hindsight does to a key that is not its own."""

    class Refuse(BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            body = b'{"detail": "Authentication failed: unauthorized"}'
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = _refuse

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("action", [["banks", "--user", "u"], ["import", "history.jsonl"]])
def test_a_refused_operator_key_names_the_key_file_and_the_server(
    capsys: pytest.CaptureFixture[str], key_file: Path, refusing_url: str, action: list[str]
) -> None:
    # GIVEN a key another server made (a stale .local, a deployed Hindsight's URL with the local key)
    turn = {"user": "u", "agent": "a", "time": "2024-05-08T13:56:00+00:00", "user_text": "I prefer email."}
    Path("history.jsonl").write_text(json.dumps(turn) + "\n")
    code, err = _run(capsys, "--local", "--url", refusing_url, "--operator-key-file", str(key_file), *action)
    # THEN one line says the key was refused, which key file and which server (before: "HTTP 401: ..." alone)
    assert "Traceback" not in err
    line = err.splitlines()[-1]  # (import prints the file's count first)
    assert code == 2
    assert f"Hindsight at {refusing_url} refused the operator key from {key_file} (HTTP 401)" in line

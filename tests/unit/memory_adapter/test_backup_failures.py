"""A backup goes bank by bank: a bank whose export fails is tried again only for a transient failure, then skipped
and reported, and the other banks are still backed up (``memory_adapter.admin.backup``).

Hindsight is scripted with :class:`~memory_adapter.testing.MockTransport`: the export routes answer for every bank,
and each bank's download answers what the test lists (an HTTP status, ``DOWN`` for no answer, then the archive).
The integration test (tests/integration/admin/test_admin_function.py) meets the real server's failure.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory_adapter.admin import AdminDeps, DirectoryStore, OperatorClient, cli, run_action
from memory_adapter.admin import client as client_module
from memory_adapter.admin.backup import ATTEMPTS, FIRST_DELAY_S, backup_banks, retryable
from memory_adapter.admin.errors import BatchFailedError, ExportTimeoutError
from memory_adapter.exceptions import HindsightRequestError, HindsightUnavailableError
from memory_adapter.kinds import RetentionRules
from memory_adapter.observability import short_hash
from memory_adapter.testing import MockTransport
from memory_adapter.transport import HttpRequest, HttpResponse

DOWN = 0
"""A download that gets no answer (connection refused)."""
NOW = datetime(2026, 12, 8, 3, 0, tzinfo=UTC)
_DOWNLOAD = "/v1/default/files/download/banks/"


class ScriptedExports(MockTransport):
    """Every bank exports; ``downloads[bank]`` lists what its successive downloads answer (then the archive)."""

    def __init__(self, downloads: Mapping[str, Sequence[int]]) -> None:
        super().__init__(self._answer)
        self.downloads = {bank: list(answers) for bank, answers in downloads.items()}

    def _answer(self, request: HttpRequest) -> HttpResponse:
        path = urllib.parse.unquote(request.path.split("?")[0])
        if path == "/v1/default/banks":
            return HttpResponse(200, {"banks": [{"bank_id": b} for b in self.downloads], "total": len(self.downloads)})
        if path.startswith(_DOWNLOAD):
            bank = path.removeprefix(_DOWNLOAD).split("/")[0]
            answers = self.downloads[bank]
            answer = answers.pop(0) if answers else 200
            if answer == DOWN:
                raise HindsightUnavailableError("cannot reach Hindsight: ConnectionRefusedError")
            if answer != 200:
                return HttpResponse(answer, {"detail": "Internal Server Error" if answer == 500 else "no"})
            return HttpResponse(200, None, content=f"zip of {bank}".encode())
        bank, _, rest = path.removeprefix("/v1/default/banks/").partition("/")
        if rest == "transfer/export":
            return HttpResponse(200, {"operation_id": f"op-{bank}"})
        if rest.startswith("operations/") and request.method == "GET":
            return HttpResponse(200, {"status": "completed", "result_metadata": {"storage_key": f"banks/{bank}/x.zip"}})
        if rest.startswith("operations/") or rest == "stats":
            return HttpResponse(200, {})
        return HttpResponse(200, {"items": [], "total": 0})  # mental models, entities

    def deleted_operations(self) -> list[str]:
        return [r.path for r in self.requests if r.method == "DELETE" and "/operations/" in r.path]


def _backup(
    transport: ScriptedExports, tmp_path: Path, sleeps: list[float] | None = None
) -> tuple[dict[str, Any], DirectoryStore]:
    store = DirectoryStore(tmp_path)
    sleep: Callable[[float], None] = (sleeps if sleeps is not None else []).append
    manifest = backup_banks(
        OperatorClient("http://h", "op", transport=transport), store, now=NOW, principal="t", sleep=sleep
    )
    return manifest, store


def test_a_bank_hindsight_fails_to_serve_is_skipped_and_reported_the_others_backed_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a bank whose download Hindsight answers with 500 every time (its id is not Latin-1), between two others
    odd = "bäckup-✓"
    transport = ScriptedExports({"alpha": [], odd: [500] * 5, "omega": []})
    # WHEN every bank is backed up
    with caplog.at_level(logging.WARNING, logger="memory_adapter.admin"):
        manifest, store = _backup(transport, tmp_path)
    # THEN the others are in the backup, the odd one is reported (tried once: a 500 is not retried), and the run
    # says it is partial
    assert [b["bank_id"] for b in manifest["banks"]] == ["alpha", "omega"]
    assert store.get(manifest["banks"][0]["key"]) == b"zip of alpha"
    (failed,) = manifest["failed"]
    assert (failed["bank_id"], failed["status"], failed["attempts"]) == (odd, 500, 1)
    assert "HindsightUnavailableError" in failed["error"]
    assert manifest["outcome"] == "partial"
    assert json.loads(store.get("backups/20261208T030000Z/manifest.json"))["failed"] == manifest["failed"]
    # AND the archive Hindsight kept for the failed download is dropped (not one left per nightly run)
    dropped = [urllib.parse.unquote(p) for p in transport.deleted_operations()]
    assert f"/v1/default/banks/{odd}/operations/op-{odd}/delete" in dropped
    # AND one structured log line names the bank by its short hash, never by its id
    (line,) = [json.loads(r.getMessage()) for r in caplog.records if "backup.bank_failed" in r.getMessage()]
    assert line == {
        "event": "backup.bank_failed",
        "bank": short_hash(odd),
        "error": "HindsightUnavailableError",
        "status": 500,
        "attempts": 1,
    }
    assert odd not in caplog.text


@pytest.mark.parametrize("answers", [[503, 502], [DOWN, 504], [429, DOWN]])
def test_a_transient_failure_is_tried_again_with_a_growing_wait(tmp_path: Path, answers: list[int]) -> None:
    transport = ScriptedExports({"alpha": answers})
    sleeps: list[float] = []
    manifest, _ = _backup(transport, tmp_path, sleeps)
    assert [b["bank_id"] for b in manifest["banks"]] == ["alpha"]
    assert (manifest["failed"], manifest["outcome"]) == ([], "complete")
    assert sleeps == [FIRST_DELAY_S, FIRST_DELAY_S * 2]


def test_a_bank_still_unreachable_after_its_tries_is_skipped(tmp_path: Path) -> None:
    transport = ScriptedExports({"alpha": [], "beta": [DOWN] * ATTEMPTS})
    sleeps: list[float] = []
    manifest, _ = _backup(transport, tmp_path, sleeps)
    assert [(f["bank_id"], f["status"], f["attempts"]) for f in manifest["failed"]] == [("beta", None, ATTEMPTS)]
    assert len(sleeps) == ATTEMPTS - 1
    assert len(transport.calls("/transfer/export")) == 1 + ATTEMPTS


@pytest.mark.parametrize("status", [400, 403, 404, 500])
def test_a_definitive_answer_is_not_tried_again(tmp_path: Path, status: int) -> None:
    transport = ScriptedExports({"alpha": [], "beta": [status]})
    sleeps: list[float] = []
    manifest, _ = _backup(transport, tmp_path, sleeps)
    assert [(f["bank_id"], f["status"], f["attempts"]) for f in manifest["failed"]] == [("beta", status, 1)]
    assert sleeps == []


def test_a_run_that_backs_up_no_bank_fails_with_its_manifest_written(tmp_path: Path) -> None:
    transport = ScriptedExports({"alpha": [500], "beta": [403]})
    with pytest.raises(
        BatchFailedError, match=r"no bank could be backed up \(2 failed, the first with .*HTTP 500"
    ) as failure:
        _backup(transport, tmp_path)
    manifest = failure.value.result
    assert (manifest["outcome"], manifest["banks"], len(manifest["failed"])) == ("failed", [], 2)
    assert json.loads(Path(manifest["location"]).read_text())["outcome"] == "failed"


def test_an_empty_server_is_a_complete_backup(tmp_path: Path) -> None:
    manifest, _ = _backup(ScriptedExports({}), tmp_path)
    assert (manifest["outcome"], manifest["banks"], manifest["failed"]) == ("complete", [], [])


def test_the_audit_line_of_a_partial_backup_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    client = OperatorClient("http://h", "op", transport=ScriptedExports({"alpha": [], "beta": [500]}))
    deps = AdminDeps(client, DirectoryStore(tmp_path), RetentionRules(), clock=lambda: NOW)
    with caplog.at_level(logging.INFO, logger="memory_adapter.admin"):
        result = run_action({"action": "backup"}, deps=deps, principal="schedule:backup")
    assert result["outcome"] == "partial"
    (audit,) = [json.loads(r.getMessage()) for r in caplog.records if '"audit"' in r.getMessage()]
    assert (audit["outcome"], audit["banks"], audit["failed"]) == ("partial", 1, 1)


@pytest.mark.parametrize(
    ("error", "retried"),
    [
        (HindsightUnavailableError("no answer"), True),
        (HindsightUnavailableError("x", status=502), True),
        (HindsightUnavailableError("x", status=503), True),
        (HindsightUnavailableError("x", status=504), True),
        (HindsightUnavailableError("x", status=429), True),
        (HindsightUnavailableError("x", status=500), False),
        (HindsightRequestError(404, "x"), False),
        (HindsightRequestError(400, "x"), False),
        (ExportTimeoutError("export did not finish within 300 s"), False),
        (OSError("disk full"), False),
    ],
)
def test_what_is_tried_again(error: Exception, retried: bool) -> None:
    assert retryable(error) is retried


def test_the_cli_prints_a_partial_backup_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    transport = ScriptedExports({"alpha": [], "beta": [500]})
    monkeypatch.setattr(client_module, "HttpTransport", lambda url: transport)
    (tmp_path / "key").write_text("op")
    code = cli.main(["--local", "backup", "--operator-key-file", str(tmp_path / "key"), "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1
    assert [f["bank_id"] for f in json.loads(out)["failed"]] == ["beta"]
    assert err.splitlines() == [
        "[1/2] alpha: 12 bytes",
        "[2/2] beta: failed (HindsightUnavailableError: Hindsight answered HTTP 500: Internal Server Error), skipped",
        'error: 1 bank(s) failed, the others done: see "failed"',
    ]

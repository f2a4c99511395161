"""Forgetting a user goes bank by bank: a bank Hindsight fails to delete is tried again only for a transient failure,
then reported, the user's other banks are still deleted, and the erasure receipt is written anyway (``outcome:
partial``) while the erasure raises (``memory_adapter.admin.forget``). A re-run finishes it and its receipt names
the partial one it continues.

Hindsight is scripted with :class:`~memory_adapter.testing.MockTransport`: each bank holds one document and one fact
until deleted, and each bank's DELETEs answer what the test lists (an HTTP status, ``DOWN`` for no answer, then
success). tests/integration/admin/test_admin_actions.py meets the real server.
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

from memory_adapter.admin import AdminDeps, DirectoryStore, OperatorClient, Subject, cli, run_action
from memory_adapter.admin import client as client_module
from memory_adapter.admin.backup import ATTEMPTS, FIRST_DELAY_S
from memory_adapter.admin.errors import ErasureIncompleteError, VerificationError
from memory_adapter.admin.forget import forget_user
from memory_adapter.exceptions import HindsightUnavailableError
from memory_adapter.identity.bank_ids import format_bank_id
from memory_adapter.kinds import RetentionRules
from memory_adapter.observability import short_hash
from memory_adapter.testing import MockTransport
from memory_adapter.transport import HttpRequest, HttpResponse

DOWN = 0
"""A DELETE that gets no answer (the request timed out)."""
USER = "user-9"
SUPPORT, TRAVEL, NOTES = (format_bank_id(user=USER, agent=a) for a in ("support", "travel", "notes"))
OTHER = format_bank_id(user="user-10", agent="support")
_BANKS = "/v1/default/banks"


class ScriptedBanks(MockTransport):
    """Each bank holds one document and one fact until deleted; ``deletes[bank]`` lists what its successive DELETEs
    answer (then success); ``stats_after_delete`` is what a deleted bank's stats answer (404: no such bank)."""

    def __init__(self, deletes: Mapping[str, Sequence[int]], *, stats_after_delete: int = 404) -> None:
        super().__init__(self._answer)
        self.banks = {b: f"the {b} note" for b in (SUPPORT, TRAVEL, NOTES, OTHER)}
        self.deletes = {bank: list(answers) for bank, answers in deletes.items()}
        self.stats_after_delete = stats_after_delete
        self.deleted: list[str] = []

    def _answer(self, request: HttpRequest) -> HttpResponse:
        path = urllib.parse.unquote(request.path.split("?")[0])
        if path == _BANKS:
            return HttpResponse(200, {"banks": [{"bank_id": b} for b in self.banks], "total": len(self.banks)})
        bank, _, rest = path.removeprefix(_BANKS + "/").partition("/")
        if request.method == "DELETE" and not rest:
            answers = self.deletes.get(bank, [])
            answer = answers.pop(0) if answers else 200
            if answer == DOWN:
                raise HindsightUnavailableError("cannot reach Hindsight: TimeoutError")
            if answer != 200:
                return HttpResponse(answer, {"detail": "Internal Server Error"})
            if self.banks.pop(bank, None) is not None:
                self.deleted.append(bank)
            return HttpResponse(200, {"success": True})
        if bank not in self.banks:
            return HttpResponse(self.stats_after_delete if rest == "stats" else 404, {"detail": "no such bank"})
        text = self.banks[bank]
        if rest == "stats":
            return HttpResponse(200, {"total_documents": 1, "nodes_by_fact_type": {"world": 1}})
        if rest == "documents":
            return HttpResponse(200, {"items": [{"id": "doc-1"}], "total": 1})
        if rest == "documents/doc-1":
            return HttpResponse(200, {"id": "doc-1", "original_text": text})
        if rest == "memories/list":
            return HttpResponse(200, {"items": [{"id": "m-1", "text": text, "type": "world"}], "total": 1})
        if rest == "memories/recall":
            return HttpResponse(200, {"results": [{"id": "m-1", "text": text, "type": "world"}]})
        return HttpResponse(200, {"items": [], "total": 0})  # mental models, entities

    def delete_requests(self, bank: str) -> int:
        return sum(1 for r in self.requests if r.method == "DELETE" and urllib.parse.unquote(r.path).endswith(bank))


def _forget(
    transport: ScriptedBanks, store: DirectoryStore, sleeps: list[float] | None = None, *, second: int = 0
) -> dict[str, Any]:
    sleep: Callable[[float], None] = (sleeps if sleeps is not None else []).append
    return forget_user(
        OperatorClient("http://h", "op", transport=transport),
        Subject(tenant=None, user=USER),
        store,
        confirm=USER,
        principal="ops",
        now=datetime(2026, 12, 8, 1, 0, second, tzinfo=UTC),
        sleep=sleep,
    )


def test_a_bank_that_fails_to_delete_is_reported_the_others_deleted_and_the_receipt_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a user with three banks, and Hindsight answering 500 to every DELETE of the second
    transport = ScriptedBanks({NOTES: [500] * 5})
    store = DirectoryStore(tmp_path)
    # WHEN the user is forgotten
    with (
        caplog.at_level(logging.WARNING, logger="memory_adapter.admin"),
        pytest.raises(
            ErasureIncompleteError, match=r"incomplete: 1 bank\(s\) could not be deleted.* 2 bank\(s\) deleted"
        ) as failure,
    ):
        _forget(transport, store)
    # THEN the other two banks are deleted (the other user's is not), the failed one was tried once (a 500 is not
    # tried again; the second pass skips it)
    assert sorted(transport.deleted) == sorted([SUPPORT, TRAVEL])
    assert transport.delete_requests(NOTES) == 1
    assert OTHER in transport.banks
    # AND the receipt, written, says partial: which banks went (with their counts) and which failed (with theirs)
    receipt = failure.value.result
    assert receipt["outcome"] == "partial"
    assert sorted(b["bank_id"] for b in receipt["banks"]) == sorted([SUPPORT, TRAVEL])
    assert receipt["totals"]["documents"] == 2
    (failed,) = receipt["failed"]
    assert (failed["bank_id"], failed["status"], failed["attempts"]) == (NOTES, 500, 1)
    assert failed["counts"]["documents"] == 1
    assert receipt["verification"]["verified"] is False
    assert {(r["bank_id"], r["what"]) for r in receipt["verification"]["remaining"]} >= {(NOTES, "bank listed")}
    assert receipt["verification"]["banks_listed_after"] == 1
    assert json.loads(store.get(receipt["key"]))["failed"] == receipt["failed"]
    assert receipt["key"] in str(failure.value)
    # AND the log line names the bank by its short hash only
    (line,) = [json.loads(r.getMessage()) for r in caplog.records if "forget.bank_failed" in r.getMessage()]
    assert (line["bank"], line["status"]) == (short_hash(NOTES), 500)
    assert NOTES not in caplog.text


def test_a_timed_out_delete_is_tried_again_and_the_erasure_completes(tmp_path: Path) -> None:
    transport = ScriptedBanks({TRAVEL: [DOWN, 503]})
    sleeps: list[float] = []
    receipt = _forget(transport, DirectoryStore(tmp_path), sleeps)
    assert (receipt["outcome"], receipt["failed"], receipt["verification"]["verified"]) == ("complete", [], True)
    assert sorted(b["bank_id"] for b in receipt["banks"]) == sorted([SUPPORT, TRAVEL, NOTES])
    assert sleeps == [FIRST_DELAY_S, FIRST_DELAY_S * 2]


def test_a_bank_still_unanswered_after_its_tries_is_reported(tmp_path: Path) -> None:
    transport = ScriptedBanks({SUPPORT: [DOWN] * ATTEMPTS})
    with pytest.raises(ErasureIncompleteError) as failure:
        _forget(transport, DirectoryStore(tmp_path))
    assert [(f["bank_id"], f["status"], f["attempts"]) for f in failure.value.result["failed"]] == [
        (SUPPORT, None, ATTEMPTS)
    ]
    assert sorted(transport.deleted) == sorted([TRAVEL, NOTES])


def test_a_re_run_completes_the_erasure_and_names_the_partial_receipt_it_continues(tmp_path: Path) -> None:
    # GIVEN a partial erasure (the notes bank's DELETE answered 500)
    transport = ScriptedBanks({NOTES: [500]})
    store = DirectoryStore(tmp_path)
    with pytest.raises(ErasureIncompleteError) as failure:
        _forget(transport, store)
    first = failure.value.result
    # WHEN it is run again (Hindsight answers now)
    again = _forget(transport, store, second=30)
    # THEN it completes, counts the bank it deleted now, and names the partial receipt it continues
    assert (again["outcome"], again["verification"]["verified"]) == ("complete", True)
    assert [b["bank_id"] for b in again["banks"]] == [NOTES]
    assert again["totals"]["documents"] == 1
    assert again["continues"] == first["key"]
    assert first["totals"]["documents"] + again["totals"]["documents"] == 3
    assert transport.banks == {OTHER: "the " + OTHER + " note"}
    # AND a third run (nothing left) continues nothing: the last erasure was complete
    assert _forget(transport, store, second=59)["continues"] is None


def test_a_deleted_bank_whose_check_fails_is_not_reported_as_erased(tmp_path: Path) -> None:
    # GIVEN every delete succeeds but a deleted bank's stats answer 503 (the check cannot tell it is gone)
    transport = ScriptedBanks({}, stats_after_delete=503)
    # WHEN the user is forgotten, THEN the erasure is not reported complete
    with pytest.raises(VerificationError) as failure:
        _forget(transport, DirectoryStore(tmp_path))
    receipt = getattr(failure.value, "result", {})
    assert receipt["outcome"] == "partial"
    assert receipt["failed"] == []
    assert {r["what"] for r in receipt["verification"]["remaining"]} == {"check failed (HindsightUnavailableError)"}


def test_the_audit_line_and_the_cli_of_a_partial_erasure(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = OperatorClient("http://h", "op", transport=ScriptedBanks({NOTES: [500]}))
    deps = AdminDeps(client, DirectoryStore(tmp_path / "a"), RetentionRules())
    request = {"action": "forget-user", "user": USER, "confirm": USER}
    with caplog.at_level(logging.INFO, logger="memory_adapter.admin"), pytest.raises(ErasureIncompleteError):
        run_action(request, deps=deps, principal="ops")
    (audit,) = [json.loads(r.getMessage()) for r in caplog.records if '"audit"' in r.getMessage()]
    assert (audit["outcome"], audit["banks"], audit["failed"]) == ("partial", 2, 1)
    assert audit["key"].startswith("erasure-receipts/")
    # AND the CLI says so in one line naming the receipt, and exits non-zero
    transport = ScriptedBanks({NOTES: [500]})
    monkeypatch.setattr(client_module, "HttpTransport", lambda url: transport)
    (tmp_path / "key").write_text("op")
    argv = ["--local", "--operator-key-file", str(tmp_path / "key"), "--out", str(tmp_path / "b")]
    code = cli.main([*argv, "forget-user", "--user", USER, "--confirm", USER])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith("error: forgetting the user is incomplete: 1 bank(s) could not be deleted")
    assert "erasure-receipts/_/user-9/" in err

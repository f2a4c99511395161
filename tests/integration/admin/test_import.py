"""``python -m memory_adapter.admin import``: history lands in each user's own bank with its dates, once, on the real
local Hindsight; a file with a bad line imports nothing and says which line."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from memory_adapter.admin import OperatorClient
from memory_adapter.admin.cli import main
from memory_adapter.identity import format_bank_id

pytestmark = pytest.mark.integration


def _run(local_hindsight: Any, tmp_path: Path, *argv: str) -> int:
    key_file = tmp_path / "operator-key"
    key_file.write_text(local_hindsight.operator_key)
    return main(["import", *argv, "--local", "--url", local_hindsight.url, "--operator-key-file", str(key_file)])


def _wait_for_memories(client: OperatorClient, bank: str, needle: str, timeout: float = 90.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        found = [m for m in client.memories(bank) if needle in str(m.get("text", ""))]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def test_history_is_imported_into_each_users_bank_with_its_dates_and_only_once(
    local_hindsight: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = uuid.uuid4().hex[:8]
    ana, ben = f"ana-{run}", f"ben-{run}"
    history = tmp_path / "history.jsonl"
    rows = [
        {"user": ana, "agent": "support", "time": "2023-05-08T13:56:00+00:00", "user_text": "My cat is called Miso."},
        {"user": ben, "agent": "support", "time": "2023-06-01T09:00:00+00:00", "user_text": "I drive a blue van.",
         "agent_text": "Noted.", "session": "crm-7"},
    ]  # fmt: skip
    history.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    client = OperatorClient(local_hindsight.url, local_hindsight.operator_key)
    ana_bank, ben_bank = (format_bank_id(user=u, agent="support") for u in (ana, ben))
    # WHEN the file is imported
    assert _run(local_hindsight, tmp_path, str(history)) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert (summary["imported"], summary["skipped"], summary["failed"], summary["banks"]) == (2, 0, 0, 2)
    assert "[1/2]" in captured.err
    assert "[2/2]" in captured.err
    # THEN each user's fact is in their own bank only, dated by the turn
    (miso,) = _wait_for_memories(client, ana_bank, "Miso")
    assert str(miso.get("mentioned_at") or miso.get("occurred_start")).startswith("2023-05-08")
    assert _wait_for_memories(client, ben_bank, "van")
    assert not [m for m in client.memories(ben_bank) if "Miso" in str(m.get("text"))]
    docs_before = {b: sorted(d["id"] for d in client.documents(b)) for b in (ana_bank, ben_bank)}
    # WHEN the same file is imported again
    assert _run(local_hindsight, tmp_path, str(history)) == 0
    again = json.loads(capsys.readouterr().out)
    # THEN nothing is imported twice
    assert (again["imported"], again["skipped"]) == (0, 2)
    assert {b: sorted(d["id"] for d in client.documents(b)) for b in (ana_bank, ben_bank)} == docs_before


def test_a_file_with_a_bad_line_imports_nothing_and_names_the_line(
    local_hindsight: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user = f"cy-{uuid.uuid4().hex[:8]}"
    good = {"user": user, "agent": "support", "time": "2023-05-08T13:56:00+00:00", "user_text": "I like tea."}
    history = tmp_path / "history.jsonl"
    history.write_text(json.dumps(good) + "\n" + json.dumps({**good, "time": "last week"}) + "\n")
    assert _run(local_hindsight, tmp_path, str(history)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: 1 bad line(s), nothing was imported: line 2: time 'last week' is not ISO 8601")
    assert len(err.strip().splitlines()) == 1
    client = OperatorClient(local_hindsight.url, local_hindsight.operator_key)
    assert list(client.documents(format_bank_id(user=user, agent="support"))) == []


def test_import_refuses_the_function_url_path_with_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    history = tmp_path / "h.jsonl"
    history.write_text("")
    assert main(["import", str(history), "--function-url", "https://x.lambda-url.us-east-1.on.aws/"]) == 2
    assert "pass --local" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("crafted", "named"),
    [
        ({"user_text": "I like \ud800 tea."}, "line 2: user_text is not valid Unicode text"),
        ({"session": "crm\u0000-7"}, "line 2: session must not contain NUL characters"),
        ({"time": "0001-01-01T00:00:00+05:00"}, "line 2: time 0001-01-01T00:00:00+05:00 is out of range"),
    ],
)
def test_a_crafted_line_for_a_later_bank_imports_nothing_in_any_bank(
    local_hindsight: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], crafted: dict[str, str], named: str
) -> None:
    # before: the file passed the check and the crafted turn crashed the import (a traceback) once the banks sorted
    # before its own were already imported
    run = uuid.uuid4().hex[:8]
    first, later = f"aa-{run}", f"zz-{run}"
    good = {"agent": "support", "time": "2023-05-08T13:56:00+00:00", "user_text": "I like tea."}
    history = tmp_path / "history.jsonl"
    history.write_text(json.dumps({**good, "user": first}) + "\n" + json.dumps({**good, "user": later, **crafted}))
    assert _run(local_hindsight, tmp_path, str(history)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: 1 bad line(s), nothing was imported: " + named)
    client = OperatorClient(local_hindsight.url, local_hindsight.operator_key)
    for user in (first, later):
        assert list(client.documents(format_bank_id(user=user, agent="support"))) == []

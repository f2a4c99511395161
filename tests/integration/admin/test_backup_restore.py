"""Back up, wipe, restore: the restore brings back what was exported, and runs no LLM extraction.

The restore is ``memory_adapter.admin.maintenance restore``, run as the operator's task runs it: in Hindsight's
virtualenv, with the server's environment, straight into the database (the document import API stays off).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localdev.hindsight import LocalHindsight
from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.admin import AdminDeps, run_action
from memory_adapter.transport import HttpTransport
from tests.integration.admin.conftest import Users, extraction_requests, run_maintenance

pytestmark = pytest.mark.integration


def _contents(deps: AdminDeps, users: Users, user: str) -> dict[str, Any]:
    """What an export of ``user`` holds, minus what a restore legitimately renews (fact ids, times)."""
    result = run_action({"action": "export", "user": users.name(user)}, deps=deps, principal="test")
    records = [json.loads(line) for line in deps.store.get(result["key"]).decode().splitlines()]
    return {
        "documents": sorted((r["bank_id"], r["id"], r["text"], r["kind"]) for r in records if r["type"] == "document"),
        "facts": sorted((r["bank_id"], r["document_id"], r["text"]) for r in records if r["type"] == "fact"),
    }


def test_backup_wipe_restore(users: Users, deps: AdminDeps, local_hindsight: Any, tmp_path: Path) -> None:
    if not isinstance(local_hindsight, LocalHindsight):
        pytest.skip("the restore runs with the server's environment: only for the session's own server")
    # GIVEN kim's memories in two banks, backed up
    users.retain("kim", "Kim's favourite city is Kyoto.")
    users.retain("kim", "Kim drives an electric car.", agent="travel", kind="fact")
    banks = [users.bank("kim"), users.bank("kim", "travel")]
    exported = _contents(deps, users, "kim")
    manifest = run_action({"action": "backup", "banks": banks}, deps=deps, principal="test")
    assert [b["bank_id"] for b in manifest["banks"]] == sorted(banks)
    # WHEN the banks are wiped
    for bank in banks:
        deps.client.delete_bank(bank)
    assert users.recall("kim", "favourite city") == []
    extractions = len(extraction_requests(local_hindsight.llm_base_url))
    # AND restored from the manifest
    restored = run_maintenance(local_hindsight, "restore", manifest["location"])
    assert restored.returncode == 0, restored.stderr[-3000:]
    result = json.loads(restored.stdout.splitlines()[-1])
    assert sorted(r["bank_id"] for r in result["restored"]) == sorted(banks)
    # THEN recall finds the same memories, the export is the same, and no LLM extraction ran
    assert any("Kyoto" in text for text in users.recall("kim", "favourite city"))
    assert _contents(deps, users, "kim") == exported
    assert len(extraction_requests(local_hindsight.llm_base_url)) == extractions
    # AND a second run restores nothing twice
    again = run_maintenance(local_hindsight, "restore", manifest["location"])
    assert again.returncode == 0, again.stderr[-3000:]
    assert sorted(json.loads(again.stdout.splitlines()[-1])["skipped"]) == sorted(banks)


def test_a_tampered_archive_is_not_restored(users: Users, deps: AdminDeps, local_hindsight: Any) -> None:
    if not isinstance(local_hindsight, LocalHindsight):
        pytest.skip("the restore runs with the server's environment: only for the session's own server")
    users.retain("lou", "Lou collects stamps.")
    manifest = run_action({"action": "backup", "banks": [users.bank("lou")]}, deps=deps, principal="test")
    (entry,) = manifest["banks"]
    archive = Path(manifest["location"]).parent.parent.parent / entry["key"]
    archive.write_bytes(archive.read_bytes() + b"x")
    deps.client.delete_bank(users.bank("lou"))
    restored = run_maintenance(local_hindsight, "restore", manifest["location"])
    assert restored.returncode == 2
    assert "SHA-256 differs" in restored.stderr
    assert deps.client.bank_stats(users.bank("lou")) is None


def test_a_partial_backup_restores_what_it_holds_and_names_what_it_lacks(
    users: Users, deps: AdminDeps, local_hindsight: Any
) -> None:
    if not isinstance(local_hindsight, LocalHindsight):
        pytest.skip("the restore runs with the server's environment: only for the session's own server")
    # GIVEN a backup of a user's bank and of a bank Hindsight 1.1.0 cannot hand out (its id is not Latin-1)
    odd = f"rëstore-✓-{users.run}"
    HindsightApi(HttpTransport(local_hindsight.url), timeout=30, bearer=local_hindsight.operator_key).create_bank(
        odd, {}
    )
    try:
        users.retain("mo", "Mo's sailing boat is called Petrel.")
        manifest = run_action({"action": "backup", "banks": [users.bank("mo"), odd]}, deps=deps, principal="test")
    finally:
        deps.client.delete_bank(odd)  # other tests back up every bank of the shared server
    assert manifest["outcome"] == "partial"
    assert [f["bank_id"] for f in manifest["failed"]] == [odd]
    # WHEN the user's bank is wiped and the backup restored
    deps.client.delete_bank(users.bank("mo"))
    restored = run_maintenance(local_hindsight, "restore", manifest["location"])
    # THEN the bank it holds is back, and the one it lacks is named
    assert restored.returncode == 0, restored.stderr[-3000:]
    result = json.loads(restored.stdout.splitlines()[-1])
    assert [r["bank_id"] for r in result["restored"]] == [users.bank("mo")]
    assert result["not_backed_up"] == [odd]
    assert f"{odd}: not in this backup" in restored.stderr
    assert any("Petrel" in text for text in users.recall("mo", "sailing boat name"))
    # AND asking for the missing bank by name says why it is missing
    named = run_maintenance(local_hindsight, "restore", manifest["location"], "--bank", odd)
    assert named.returncode == 2
    assert "its backup failed" in named.stderr


def test_a_bank_renamed_to_an_ascii_id_is_backed_up(users: Users, deps: AdminDeps, local_hindsight: Any) -> None:
    if not isinstance(local_hindsight, LocalHindsight):
        pytest.skip("the rename runs with the server's environment: only for the session's own server")
    # GIVEN a bank whose export Hindsight 1.1.0 cannot download (its id is not Latin-1)
    odd, plain = f"rënamed-✓-{users.run}", f"renamed-{users.run}"
    HindsightApi(HttpTransport(local_hindsight.url), timeout=30, bearer=local_hindsight.operator_key).create_bank(
        odd, {}
    )
    try:
        # WHEN the operator gives it an ASCII id, as docs/operating.md says
        renamed = run_maintenance(local_hindsight, "rename-bank", "--from", odd, "--to", plain)
        assert renamed.returncode == 0, renamed.stderr[-3000:]
        assert json.loads(renamed.stdout.splitlines()[-1])["to"] == plain
        # THEN the bank is there under its new id only, and backs up
        assert plain in deps.client.bank_ids()
        assert odd not in deps.client.bank_ids()
        manifest = run_action({"action": "backup", "banks": [plain]}, deps=deps, principal="test")
        assert (manifest["outcome"], [b["bank_id"] for b in manifest["banks"]]) == ("complete", [plain])
    finally:
        for bank in (odd, plain):  # other tests back up every bank of the shared server
            deps.client.delete_bank(bank)


def test_the_cli_backup_says_each_bank_as_it_goes(
    users: Users, local_hindsight: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memory_adapter.admin.cli import main

    # GIVEN two banks of one user, and the operator key in a file as make local keeps it
    users.retain("lee", "Lee's favourite tea is sencha.")
    users.retain("lee", "Lee flies to Oslo in May.", agent="travel", kind="plan")
    banks = sorted([users.bank("lee"), users.bank("lee", "travel")])
    key = tmp_path / "operator-key"
    key.write_text(local_hindsight.operator_key)
    # WHEN the operator backs them up from the command line
    argv = ["--local", "--url", local_hindsight.url, "--operator-key-file", str(key), "--out", str(tmp_path / "out")]
    code = main([*argv, "backup", *(arg for bank in banks for arg in ("--bank", bank))])
    # THEN each bank is a progress line on stderr as it is archived (before: silence until the manifest)
    out, err = capsys.readouterr()
    assert code == 0
    lines = err.splitlines()
    assert len(lines) == len(banks)
    for index, (line, bank) in enumerate(zip(lines, banks, strict=True), start=1):
        assert line.startswith(f"[{index}/2] {bank}: ")
        assert line.endswith(" bytes")
    assert [b["bank_id"] for b in json.loads(out)["banks"]] == banks

"""The concurrency check and the agents' spools: a retain left in a spool is durable, so it is replayed and counted
once delivered, or counted apart while it still waits; only a document in neither place is lost."""

from __future__ import annotations

from pathlib import Path

from bench.scale.spooled import deliver_spooled, document_tally, spooled_documents
from memory_adapter.spool import DirectorySpool, RetainRecord
from memory_adapter.testing import FakeHindsight

BANK = "user:alice:agent:bench"


def _spool(path: Path, *documents: str) -> Path:
    spool = DirectorySpool(path)
    for document in documents:
        spool.put(
            RetainRecord(
                operation_id=f"op-{document}",
                bank_id=BANK,
                item={"content": f"turn {document}", "document_id": document},
                credential="alice-token",
            )
        )
    return path


def test_a_spooled_retain_is_counted_apart_not_missing() -> None:
    expected = {"alice": {"t0", "t1", "t2"}, "bob": {"t3"}}
    found = {"alice": ["t0"], "bob": ["t3", "t3"]}
    tally = document_tally(expected, found, spooled={"t1"})
    # t1 waits in a spool (durable), t2 is nowhere (lost), bob's t3 is there twice
    assert tally == {"documents_missing": 1, "documents_spooled": 1, "documents_unexpected": 1}
    assert document_tally(expected, {"alice": ["t0", "t1", "t2"], "bob": ["t3"]}, spooled={"t1"}) == {
        "documents_missing": 0,
        "documents_spooled": 0,  # delivered since: counted once, as a document
        "documents_unexpected": 0,
    }


def test_spooled_retains_are_replayed_with_their_own_credentials(tmp_path: Path) -> None:
    fake = FakeHindsight()
    full = _spool(tmp_path / "spool-a", "t1", "t2")
    empty = tmp_path / "spool-b"  # an agent that spooled nothing: no directory at all
    assert spooled_documents([full, empty]) == {"t1", "t2"}

    result = deliver_spooled("http://fake", [full, empty], transport=fake)

    assert result == {"delivered": 2, "rejected": 0, "remaining": 0}
    assert set(fake.documents(BANK)) == {"t1", "t2"}
    assert {r.bearer for r in fake.calls("/memories")} == {"alice-token"}
    assert spooled_documents([full, empty]) == set()

"""The bulk seeder against the real schema of the session's local Hindsight: what it writes, recall reads.

A Hindsight upgrade that changes the tables recall reads breaks this test, not a 40-minute benchmark run.
"""

from __future__ import annotations

import urllib.parse
import uuid
from pathlib import Path

import pytest

from bench.scale.client import HindsightClient
from bench.scale.corpus import fact
from bench.scale.database import Database
from localdev.hindsight import LocalHindsight
from localdev.hindsight.venv import HindsightVenv

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def database(local_hindsight: object) -> Database:
    if not isinstance(local_hindsight, LocalHindsight):
        pytest.skip("needs the session's own local Hindsight (its database), not LOCAL_HINDSIGHT_TEST_URL")
    venv = HindsightVenv(local_hindsight.config.venv)
    port = urllib.parse.urlsplit(local_hindsight.database_url).port
    assert port is not None
    return Database(
        psql=venv.pg_bin("psql"), port=port, log_file=local_hindsight.pg_log, python=venv.path / "bin" / "python"
    )


def test_a_bulk_seeded_bank_answers_recall_like_a_retained_one(
    local_hindsight: LocalHindsight, database: Database, tmp_path: Path
) -> None:
    # GIVEN a bank seeded in bulk with the corpus's first 40 facts
    client = HindsightClient(local_hindsight.url, local_hindsight.operator_key)
    bank = f"bench-scale:test-{uuid.uuid4().hex[:8]}"
    client.create_bank(bank)
    before = database.sizes()
    seeded = database.bulk_seed(bank, 40, cache_dir=tmp_path)
    assert seeded["documents_per_bank"] == 4
    assert database.sizes()["memory_units"] == before["memory_units"] + 40
    # WHEN recall asks about one of them
    target = fact(7).text
    found = [r.text for r in client.recall(bank, target)]
    # THEN that fact is recalled, and only corpus facts come back
    corpus = {fact(i).text for i in range(40)}
    assert target in found
    assert set(found) <= corpus
    # AND a real retain into the same bank is recalled next to the bulk-seeded memories
    word = f"Zorb{uuid.uuid4().hex[:6]}"
    client.retain(bank, [{"content": f"My parrot {word} speaks fluent Klingon.", "document_id": "spot"}])
    client.wait_settled([bank], timeout=120)
    assert any(word in r.text for r in client.recall(bank, f"What language does {word} speak?"))
    # AND the statements of one recall can be captured from the server log and explained
    statements = database.capture(lambda: client.recall(bank, target))
    arms = [s for s in statements if s.name == "semantic+bm25"]
    assert arms, [s.name for s in statements]
    plan = database.explain(arms[0])
    assert plan["execution_ms"] is not None
    assert plan["scans"]
    client.close()


def test_a_clone_copies_every_row_under_new_ids(
    local_hindsight: LocalHindsight, database: Database, tmp_path: Path
) -> None:
    # GIVEN a seeded bank and an empty one
    client = HindsightClient(local_hindsight.url, local_hindsight.operator_key)
    source, copy = (f"bench-scale:clone-{uuid.uuid4().hex[:8]}-{n}" for n in range(2))
    for bank in (source, copy):
        client.create_bank(bank)
    database.bulk_seed(source, 20, cache_dir=tmp_path)
    # WHEN the one is cloned into the other
    cloned = database.bulk_seed(copy, 0, cache_dir=tmp_path, clone_from=source)
    # THEN the copy has as many memories and links, and recall finds the same fact in it
    assert cloned["facts"] == 20
    counts = database.sql(
        f"SELECT bank_id, count(*) FROM memory_links WHERE bank_id IN ('{source}', '{copy}') GROUP BY 1"  # noqa: S608
    )
    assert len({line.split("|")[1] for line in counts.splitlines()}) == 1
    assert fact(3).text in [r.text for r in client.recall(copy, fact(3).text)]
    client.close()

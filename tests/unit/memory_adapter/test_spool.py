"""The directory spool: atomic private files, oldest first, one copy per operation, dead letters, corrupt files."""

from __future__ import annotations

import os
import stat

import pytest

from memory_adapter.exceptions import SpoolError
from memory_adapter.spool import DirectorySpool, RetainRecord


def record(op: str, at: float, **kw) -> RetainRecord:
    return RetainRecord(operation_id=op, bank_id="user:u:agent:a", item={"content": op}, created_at=at, **kw)


def test_put_items_remove_in_turn_order(tmp_path):
    spool = DirectorySpool(tmp_path / "s")
    spool.put(record("b", 2.0))
    spool.put(record("a", 1.0, credential="jwt"))
    items = spool.items()
    assert [r.operation_id for r in items] == ["a", "b"]
    assert items[0].credential == "jwt"
    assert spool.count() == 2
    spool.remove(items[0])
    spool.remove(items[0])  # already gone: ignored
    assert [r.operation_id for r in spool.items()] == ["b"]
    assert [r.operation_id for r in spool.items(limit=0)] == []


def test_same_operation_is_stored_once(tmp_path):
    spool = DirectorySpool(tmp_path)
    spool.put(record("a", 1.0))
    spool.put(record("a", 1.0))
    assert spool.count() == 1


def test_files_are_private(tmp_path):
    spool = DirectorySpool(tmp_path / "s")
    spool.put(record("a", 1.0, credential="jwt"))
    (item,) = spool.items()
    assert item.receipt is not None
    assert stat.S_IMODE(os.stat(item.receipt).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "s").st_mode) == 0o700


def test_dead_letters_leave_the_pending_queue(tmp_path):
    spool = DirectorySpool(tmp_path)
    spool.put(record("a", 1.0))
    (item,) = spool.items()
    spool.dead_letter(item, "HTTP 403")
    assert spool.count() == 0
    (dead,) = spool.items(dead=True)
    assert (dead.operation_id, dead.last_error) == ("a", "HTTP 403")


def test_corrupt_files_are_moved_aside(tmp_path):
    spool = DirectorySpool(tmp_path)
    spool.put(record("a", 2.0))
    (tmp_path / "pending" / "000000000000001-x.json").write_text("{not json")
    assert [r.operation_id for r in spool.items()] == ["a"]
    assert spool.count(dead=True) == 1


def test_record_round_trip_and_bad_input():
    original = record("a", 1.5, credential="c", attempts=2, last_error="e")
    assert RetainRecord.from_json(original.to_json()) == original
    with pytest.raises(SpoolError):
        RetainRecord.from_json('{"v": 99}')


def test_unwritable_location_raises_spool_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SpoolError):
        DirectorySpool(blocker / "spool").put(record("a", 1.0))


async def test_spool_write_failure_drops_with_an_error(make_adapter, fake, tmp_path, caplog):
    from memory_adapter import RetainOutcome, TurnContext
    from memory_adapter.testing import Fault

    blocker = tmp_path / "file"
    blocker.write_text("x")
    fake.fault = Fault.DOWN
    adapter = make_adapter(spool_dir=str(blocker / "spool"), max_retries=0)
    ctx = TurnContext(runtime_session_id="s", user_id="u", agent_name="a")
    assert await adapter.retain_for_turn(ctx, result="x") is RetainOutcome.DROPPED
    assert "spool write failed" in caplog.text


class ListSpool:
    """A custom backend (the Spool protocol), as an SQS implementation would be."""

    def __init__(self) -> None:
        self.records: list[RetainRecord] = []

    def put(self, record: RetainRecord) -> None:
        self.records.append(record)

    def items(self, limit=None, *, dead=False):
        return [] if dead else list(self.records[:limit])

    def remove(self, record: RetainRecord) -> None:
        self.records.remove(record)

    def dead_letter(self, record: RetainRecord, reason: str) -> None:
        pass

    def count(self, *, dead=False) -> int:
        return 0 if dead else len(self.records)


async def test_custom_spool_backend(make_adapter, fake):
    from memory_adapter import TurnContext
    from memory_adapter.testing import Fault

    backend = ListSpool()
    fake.fault = Fault.DOWN
    adapter = make_adapter(spool=backend, max_retries=0)
    await adapter.retain_for_turn(TurnContext(runtime_session_id="s", user_id="u", agent_name="a"), result="x")
    assert len(backend.records) == 1
    fake.fault = Fault.NONE
    assert (await adapter.replay()).delivered == 1
    assert backend.records == []


def test_a_spool_directory_owned_by_someone_else_is_refused(tmp_path, monkeypatch):
    spool = DirectorySpool(tmp_path / "s")
    monkeypatch.setattr(os, "getuid", lambda: os.stat(tmp_path).st_uid + 1)
    with pytest.raises(SpoolError, match="another user"):
        spool.put(record("a", 1.0))


def test_group_or_world_access_is_removed(tmp_path):
    (tmp_path / "s").mkdir()
    os.chmod(tmp_path / "s", 0o777)  # noqa: S103 (the insecure state under test)
    DirectorySpool(tmp_path / "s").put(record("a", 1.0))
    assert stat.S_IMODE(os.stat(tmp_path / "s").st_mode) == 0o700


async def test_a_retain_spooled_just_as_hindsight_recovers_is_replayed_without_further_traffic(make_adapter, fake):
    """The spool write lands after recovery: nothing else happens afterwards, yet the record is delivered."""
    import asyncio

    from memory_adapter import RetainOutcome, TurnContext
    from memory_adapter.testing import Fault

    class RecoveringSpool(ListSpool):
        def put(self, record: RetainRecord) -> None:
            fake.fault = Fault.NONE  # Hindsight comes back while the record is being written
            super().put(record)

    backend = RecoveringSpool()
    fake.fault = Fault.DOWN
    adapter = make_adapter(spool=backend, max_retries=0, breaker_failure_threshold=100, auto_replay=True)
    ctx = TurnContext(runtime_session_id="s", user_id="u", agent_name="a")
    assert await adapter.retain_for_turn(ctx, result="x") is RetainOutcome.SPOOLED
    for _ in range(500):
        if not backend.records:
            break
        await asyncio.sleep(0.01)
    assert backend.records == []
    assert len(fake.documents("user:u:agent:a")) == 1

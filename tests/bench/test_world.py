"""bench.world.World: a failed start cleans up as an exit does (the parts started so far stop, the scratch
directory goes), and ``keep`` leaves the directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.world import World


class _Recording(World):
    def __init__(self, *, fail: bool, keep: bool = False, base_dir: Path | None = None) -> None:
        super().__init__(prefix="world-test-", base_dir=base_dir, keep=keep)
        self.fail = fail
        self.events: list[str] = []

    def _start(self) -> None:
        (self.workdir / "data").write_text("x")
        self._stack.callback(self.events.append, "first stopped")
        self._stack.callback(self.events.append, "second stopped")
        if self.fail:
            raise RuntimeError("start failed")


def test_exit_stops_the_parts_last_first_and_deletes_the_scratch_directory(tmp_path: Path) -> None:
    with _Recording(fail=False, base_dir=tmp_path) as world:
        assert (world.workdir / "data").exists()
        assert world.events == []
    assert world.events == ["second stopped", "first stopped"]
    assert not world.workdir.exists()


def test_a_failed_start_stops_what_started_and_deletes_the_scratch_directory(tmp_path: Path) -> None:
    world = _Recording(fail=True, base_dir=tmp_path)
    with pytest.raises(RuntimeError, match="start failed"), world:
        pytest.fail("the body must not run")
    assert world.events == ["second stopped", "first stopped"]
    assert not world.workdir.exists()


def test_keep_leaves_the_scratch_directory(tmp_path: Path) -> None:
    with _Recording(fail=False, keep=True, base_dir=tmp_path) as world:
        pass
    assert world.events == ["second stopped", "first stopped"]
    assert (world.workdir / "data").read_text() == "x"

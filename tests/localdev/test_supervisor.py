"""``localdev.supervisor``: children start detached with a log, failures carry the log tail, stops escalate to SIGKILL,
and the watchdog runs a tool's stop command once its owner is gone."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from localdev.supervisor import (
    StartError,
    StateFile,
    child_env,
    pid_alive,
    spawn,
    stop_when_gone,
    terminate,
    wait_until_ready,
)


def _python(tmp_path: Path, code: str, log_name: str = "child.log") -> tuple[int, Path]:
    log_file = tmp_path / log_name
    return spawn([sys.executable, "-c", code], log_file=log_file, env=child_env(), cwd=tmp_path), log_file


def _wait_for(condition, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_child_that_exits_during_start_up_fails_at_once_with_its_log_tail(tmp_path: Path) -> None:
    # GIVEN a child that prints a reason and exits
    pid, log_file = _python(tmp_path, "import sys; print('bad config: no_such_thing'); sys.exit(2)")
    started = time.monotonic()

    # WHEN its readiness is awaited (it never becomes ready)
    with pytest.raises(StartError) as caught:
        wait_until_ready(lambda: False, name="the child", pid=pid, log_file=log_file, timeout_s=60, hint="try again")

    # THEN the wait ends with the child, long before the deadline, and says why, with its log and the hint
    assert time.monotonic() - started < 30
    message = str(caught.value)
    assert message.startswith("the child failed to start: it exited during start-up.")
    assert f"--- last lines of {log_file} ---" in message
    assert "bad config: no_such_thing" in message
    assert message.endswith("Hint: try again")


def test_a_child_that_never_gets_ready_fails_at_the_deadline_and_progress_is_reported(tmp_path: Path) -> None:
    pid, log_file = _python(tmp_path, "import time; time.sleep(60)")
    progress: list[str] = []
    try:
        with pytest.raises(StartError, match=r"the child failed to start: not ready after 4 s"):
            wait_until_ready(
                lambda: False, name="the child", pid=pid, log_file=log_file, timeout_s=4, progress=progress.append
            )
        assert progress == ["  waiting for the child ... 3 s"]
    finally:
        terminate(pid, grace_s=1.0)


def test_ready_child_returns_and_its_output_is_appended_to_its_log(tmp_path: Path) -> None:
    marker = tmp_path / "ready"
    pid, log_file = _python(
        tmp_path, f"import pathlib, time; print('hello'); pathlib.Path({str(marker)!r}).touch(); time.sleep(60)"
    )
    try:
        wait_until_ready(marker.exists, name="the child", pid=pid, log_file=log_file, timeout_s=30)
        assert _wait_for(lambda: "hello" in log_file.read_text())
        assert log_file.read_text().startswith("\n=== ")  # a dated header per start, so restarts are told apart
    finally:
        assert terminate(pid, grace_s=5.0)
    assert not pid_alive(pid)


def test_terminate_kills_a_child_that_ignores_sigterm_and_its_own_children(tmp_path: Path) -> None:
    # GIVEN a child that ignores SIGTERM and has a child of its own (same process group)
    code = (
        "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); print(p.pid, flush=True); "
        "time.sleep(60)"
    )
    pid, log_file = _python(tmp_path, code)
    assert _wait_for(lambda: log_file.read_text().strip().splitlines()[-1].isdigit())
    grandchild = int(log_file.read_text().strip().splitlines()[-1])

    # WHEN it is terminated with a short grace period
    started = time.monotonic()
    assert terminate(pid, grace_s=0.5)

    # THEN SIGKILL followed the grace period, and the whole group is gone
    assert time.monotonic() - started < 10
    assert not pid_alive(pid)
    assert _wait_for(lambda: not pid_alive(grandchild), timeout_s=10)
    # AND stopping what is not running says so
    assert not terminate(pid, grace_s=0.5)
    assert not terminate(None, grace_s=0.5)


def test_state_file_round_trips_and_reads_garbage_as_empty(tmp_path: Path) -> None:
    state = StateFile(tmp_path / "nested" / "state.json")
    assert state.read() == {}
    assert state.live_pid() is None
    state.write({"pid": 999_999_999, "port": 1})
    assert state.read() == {"pid": 999_999_999, "port": 1}
    assert state.live_pid() is None  # recorded, but not running
    state.path.write_text("[not an object")
    assert state.read() == {}
    state.clear()
    state.clear()  # clearing twice is harmless
    assert not state.exists()


def test_watchdog_runs_the_stop_command_once_the_owner_dies(tmp_path: Path) -> None:
    # GIVEN a state file, a directory to remove, and a watchdog for a short-lived owner
    state = StateFile(tmp_path / "state.json")
    state.write({"pid": 1})
    doomed = tmp_path / "data"
    doomed.mkdir()
    stopped = tmp_path / "stopped"
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stop_command = [sys.executable, "-c", f"import pathlib; pathlib.Path({str(stopped)!r}).touch()"]
    stop_when_gone(
        stop_command, while_exists=state.path, log_file=tmp_path / "watchdog.log", owner_pid=owner.pid, remove=doomed
    )
    time.sleep(1.5)
    assert not stopped.exists()  # the owner still runs: nothing happens

    # WHEN the owner dies without cleaning up
    owner.kill()
    owner.wait()

    # THEN the watchdog runs the stop command, then removes the directory
    assert _wait_for(lambda: stopped.exists() and not doomed.exists()), (tmp_path / "watchdog.log").read_text()


def test_watchdog_gives_up_once_the_state_file_is_gone(tmp_path: Path) -> None:
    # GIVEN a watchdog for this (living) process
    state = StateFile(tmp_path / "state.json")
    state.write({"pid": 1})
    stopped = tmp_path / "stopped"
    stop_command = [sys.executable, "-c", f"import pathlib; pathlib.Path({str(stopped)!r}).touch()"]
    watchdog = stop_when_gone(stop_command, while_exists=state.path, log_file=tmp_path / "watchdog.log")
    assert pid_alive(watchdog)

    # WHEN the children are stopped normally (the state file goes)
    state.clear()

    # THEN the watchdog exits without running the stop command
    assert _wait_for(lambda: not pid_alive(watchdog), timeout_s=10)
    assert not stopped.exists()

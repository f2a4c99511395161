"""The concurrency benchmark's admission-control comparison: the figures per level, the table, and one tiny real
run of both layouts (``make bench-scale --only concurrency`` runs the real levels; nothing here times anything)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.scale import report
from bench.scale.admission_figures import admission_figures, recall_figures


def _records() -> list[dict[str, Any]]:
    return [
        {"ms": 100.0, "degraded": False, "recalled": 2},
        {"ms": 120.0, "degraded": False, "recalled": 0},
        {"ms": 9.0, "degraded": True, "reason": "shed"},
        {"ms": 11.0, "degraded": True, "reason": "shed"},
        {"ms": 2010.0, "degraded": True, "reason": "timeout"},
        {"ms": 5.0, "error": "HTTP 500"},
    ]


def test_served_and_shed_turns_are_counted_apart() -> None:
    figures = admission_figures(_records())
    assert figures["served_latency"]["n"] == 2
    assert figures["served_latency"]["max_ms"] == 120.0
    assert (figures["shed"], figures["shed_latency"]["max_ms"]) == (2, 11.0)
    assert figures["without_memory"] == 3
    assert figures["without_memory_reasons"] == {"shed": 2, "timeout": 1}


def _events() -> list[dict[str, Any]]:
    """The adapter's recall events as the agents log them."""
    return [
        {"memory_event": "recall.ok", "latency_ms": 40.0},
        {"memory_event": "recall.degraded", "reason": "shed", "latency_ms": 8.0, "on_thread_ms": 3.0},
        {"memory_event": "recall.degraded", "reason": "shed", "latency_ms": 0.0, "local": True},
        {"memory_event": "recall.degraded", "reason": "timeout", "latency_ms": 2001.0},
        {"reason": "unparsed"},
    ]


def test_memorys_own_cost_is_counted_per_kind_of_recall() -> None:
    figures = recall_figures(_events())
    assert figures["recall_served_ms"]["max_ms"] == 40.0
    assert (figures["recall_shed_ms"]["n"], figures["shed_local"]) == (2, 1)
    assert figures["recall_shed_round_trip_ms"]["max_ms"] == 8.0  # the local skip is not a round trip
    assert figures["recall_shed_on_thread_ms"]["max_ms"] == 3.0  # of which the recall thread saw 3 ms
    assert figures["recall_without_memory_ms"]["n"] == 3
    assert figures["degraded_reasons"] == {"shed": 2, "timeout": 1, "unparsed": 1}


def _level(sessions: int, records: list[dict[str, Any]], events: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "sessions": sessions,
        "turns_per_session": 1,
        "model": "brief",
        "turns": len(records),
        "latency": {"p50_ms": 100.0, "p99_ms": 200.0},
        "degraded": 0,
        "degraded_reasons": {},
        "errors": 0,
        "turns_per_s": 1.0,
        "wall_s": 2.0,
        "check": {"ok": True},
        **admission_figures(records),
        **recall_figures(events),
    }


def test_the_report_puts_admission_on_and_off_side_by_side() -> None:
    on = {"levels": [_level(8, _records(), _events())]}
    timeout = {"memory_event": "recall.degraded", "reason": "timeout", "latency_ms": 2001.0}
    off = {"levels": [_level(8, [{"ms": 2010.0, "degraded": True, "reason": "timeout"}], [timeout])]}
    text = "\n".join(report._admission({"deployed": on, "deployed_admission_off": off}))
    rows = [line for line in text.splitlines() if line.startswith("| 8 x 1")]
    assert len(rows) == 2
    assert rows[0] == (
        "| 8 x 1 | on | 110.0 / 119.8 | 40.0 / 40.0 | 8 / 1,961 | 1 / 1 | 3/6 (shed 2, timeout 1) | 1.0 | 1.0 | yes |"
    )
    assert rows[1].startswith("| 8 x 1 | off | n/a / n/a | n/a / n/a | 2,001 / 2,001 | 0 / 0 | 1/1 (timeout 1)")
    assert report._admission({"deployed": on}) == []  # a run without the comparison has no table


def test_the_open_loop_is_paired_by_rate() -> None:
    on = {"levels": [{**_level(20, _records(), _events()), "rate": 8.0}]}
    off = {"levels": [{**_level(20, _records(), _events()), "rate": 8.0}, {**_level(40, [], []), "rate": 16.0}]}
    closed = {"levels": [_level(8, _records(), _events())]}
    conc = {
        "deployed": closed,
        "deployed_admission_off": closed,
        "deployed_open": on,
        "deployed_admission_off_open": off,
    }
    text = "\n".join(report._admission(conc, open_loop=True))
    assert "open loop" in text
    assert [line.split(" | ")[1] for line in text.splitlines() if line.startswith("| 8/s: 20 x 1 |")] == ["on", "off"]
    assert "| 16/s" not in text  # a rate run only without admission has nothing to stand beside
    assert "| 8 x 1 |" not in text  # the closed loop has its own table


def test_the_command_line_shortens_the_concurrency_part() -> None:
    from bench.scale.__main__ import _concurrency_plan, _parser, _plan

    args = _parser().parse_args(
        ["--layouts", "deployed", "--levels", "1,8", "--turns", "3", "--rates", "", "--no-issue"]
    )
    plan = _concurrency_plan(_plan(False), args)
    assert plan["layouts"] == ["deployed"]
    assert plan["concurrency"]["levels"] == (1, 8)
    assert plan["concurrency"]["turns"](8) == 3
    assert plan["open"]["rates"] == ()
    assert plan["issue"] is None
    default = _concurrency_plan(_plan(False), _parser().parse_args([]))
    assert default["open"]["rates"] == (8.0, 16.0, 32.0, 64.0)
    assert default["issue"] == {"sessions": 16, "turns": 10}


@pytest.mark.integration
def test_a_tiny_run_of_both_layouts_records_the_comparison() -> None:
    from bench.scale.__main__ import ADMISSION_OFF, _shapes
    from bench.scale.concurrency import run_level
    from bench.scale.server import ScaleServer

    shapes = _shapes()
    results: dict[str, Any] = {}
    with ScaleServer(log=lambda _: None) as server:
        db = server.database()
        for name in ("deployed", ADMISSION_OFF):
            server.apply(shapes[name])
            results[name] = {"levels": [run_level(server, db, sessions=2, turns=1, log=lambda _: None)]}
    for name, run in results.items():
        (level,) = run["levels"]
        assert level["check"]["ok"], name
        assert level["errors"] == 0, name
        assert level["served_latency"]["n"] + level["without_memory"] == 2, name
    text = "\n".join(report._admission({"concurrency": None, **results}))
    assert "| 2 x 1 | on |" in text
    assert "| 2 x 1 | off |" in text

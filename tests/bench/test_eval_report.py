"""The eval's report explains itself (issue 33 item 9): a legend under the tables (r@k, h@k, the arms off by default
and why), a line saying why the generated set favours raw-turn search, and the chart's legend beside the bars."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench.eval.report import ARMS_LEGEND, SYNTHETIC_NOTE, SYSTEMS_LEGEND, markdown

ROOT = Path(__file__).resolve().parents[2]
BENCH_PYTHON = ROOT / ".venv-bench" / "bin" / "python"


def results(name: str) -> dict[str, Any]:
    """A run's aggregates, as ``bench.eval.run.evaluate`` returns them (numbers made up)."""
    row = {"n": 4, "recall@5": 0.5, "recall@10": 0.75, "hit@10": 1.0, "recall@25": 1.0}
    groups = {"all": row, "single-hop": row, "multi-hop": row, "temporal": row, "open-domain": row}
    return {
        "data": {
            "name": name,
            "conversations": 1,
            "turns": 20,
            "questions": 4,
            "corrected_questions": 0,
            "dropped_evidence_ids": 0,
            "questions_without_evidence": 0,
        },
        "adapter_settings": {"recall_budget": "mid", "recall_max_tokens": 1500},
        "scores": {name: groups for name in ("ours", "fused", "arm:semantic", "arm:bm25", "rag", "bm25")},
    }


def test_the_tables_are_followed_by_what_their_columns_mean_and_which_arms_are_off() -> None:
    text = markdown(results("locomo-dev.json"))
    table_end = text.index("| BM25 (raw turns) |")
    assert text.index(SYSTEMS_LEGEND) > table_end
    assert text.index(ARMS_LEGEND) > table_end
    assert "r@k (evidence recall at k)" in SYSTEMS_LEGEND
    assert "h@k (hit at k)" in SYSTEMS_LEGEND
    assert "graph arm is off by default" in ARMS_LEGEND
    assert SYNTHETIC_NOTE not in text  # LoCoMo: nothing to excuse
    assert "It did not run here, so it has no row." in text
    graph_on = results("locomo-dev.json")
    graph_on["scores"]["arm:graph"] = graph_on["scores"]["ours"]
    assert "In this run the server had it on" in markdown(graph_on)


def test_the_generated_set_says_why_raw_turn_search_does_well_on_it() -> None:
    text = markdown(results("synthetic"))
    assert SYNTHETIC_NOTE in text
    assert "favours raw-turn search" in SYNTHETIC_NOTE


@pytest.mark.skipif(not BENCH_PYTHON.exists(), reason="the chart needs matplotlib, in .venv-bench (make bench-venv)")
def test_the_charts_legend_sits_beside_the_bars_not_over_them() -> None:
    script = (
        "import json, sys\n"
        "import matplotlib; matplotlib.use('Agg')\n"
        "from bench.eval.report import draw\n"
        "fig, ax, legend = draw(json.loads(sys.argv[1]))\n"
        "renderer = fig.canvas.get_renderer()\n"
        "print(legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1)\n"
    )
    import json

    done = subprocess.run(
        [str(BENCH_PYTHON), "-c", script, json.dumps(results("synthetic"))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PYTHONPATH": f"{ROOT}:{ROOT / 'layers' / 'memory_adapter' / 'src'}", "MPLBACKEND": "Agg"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"

"""The scale harness's own logic (``make bench-scale`` runs the benchmarks; nothing here times anything)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.scale import report
from bench.scale.corpus import FACTS_PER_DOCUMENT, documents, entities_of, fact, queries
from bench.scale.database import Statement, _statements, summarize_plan
from localdev.stub_extraction import extract_facts

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "bench_scale_quick.json"


def test_corpus_is_deterministic_and_mostly_distinct() -> None:
    # GIVEN the corpus, WHEN the same facts are built twice THEN they are identical, and nearly all distinct
    first = [fact(i).text for i in range(2000)]
    assert first == [fact(i).text for i in range(2000)]
    assert len(set(first)) > 0.95 * len(first)
    assert all(text.endswith((".", "?")) for text in first)


def test_documents_group_facts_in_order() -> None:
    # WHEN the documents of facts [20, 50) are listed THEN three documents of ten consecutive facts come back
    docs = list(documents(20, 50))
    assert [doc for doc, _ in docs] == [2, 3, 4]
    assert [f.index for _, facts in docs for f in facts] == list(range(20, 50))
    with pytest.raises(ValueError, match="multiples"):
        list(documents(5, 20))
    assert len(docs[0][1]) == FACTS_PER_DOCUMENT


def test_bulk_entities_are_the_ones_the_llm_stand_in_extracts() -> None:
    # GIVEN facts of the corpus, WHEN the LLM stand-in extracts them THEN the bulk seeder's entities are the same
    for i in range(200):
        text = fact(i).text
        (extracted,) = extract_facts(text)
        assert extracted["entities"] == entities_of(text)


def test_queries_are_questions() -> None:
    asked = queries(50)
    assert asked == queries(50)
    assert all(q.endswith("?") for q in asked)


#: A PostgreSQL log excerpt (log_min_duration_statement = 0) of a recall, shortened.
LOG = ROOT / "tests" / "fixtures" / "hindsight_recall_pg.log"


def test_log_parsing_keeps_recall_reads_with_their_parameters_and_session_settings() -> None:
    # GIVEN a server log with a set_config, a recall query and an insert
    (statement,) = _statements(LOG.read_text())
    # THEN only the read of memory_units is kept, with its parameters and the settings of its connection
    assert statement.name == "semantic+bm25"
    assert statement.duration_ms == 1.25
    assert statement.settings == {"hnsw.ef_search": "200", "hnsw.iterative_scan": "strict_order"}
    # AND inlining writes literals in, $12 before $1, quotes kept escaped
    inlined = statement.inlined()
    assert "bank_id = 'user:a''b:agent:x'" in inlined
    assert "text <> 'z'" in inlined
    assert "'[0.1,0.2]'::vector" in inlined


def test_inlining_never_confuses_parameter_prefixes() -> None:
    statement = Statement(
        sql="SELECT $1, $10, $11", params={1: "'a'", 10: "'b'", 11: "'c'"}, settings={}, duration_ms=0
    )
    assert statement.inlined() == "SELECT 'a', 'b', 'c'"


def test_plan_summary_lists_every_scan() -> None:
    plan = {
        "Planning Time": 0.5,
        "Execution Time": 3.0,
        "Plan": {
            "Node Type": "Append",
            "Shared Hit Blocks": 10,
            "Plans": [
                {
                    "Node Type": "Index Scan",
                    "Relation Name": "memory_units",
                    "Index Name": "idx_mu_emb_worl_1",
                    "Actual Rows": 300,
                    "Actual Loops": 1,
                    "Actual Total Time": 2.0,
                },
                {"Node Type": "Limit", "Plans": [{"Node Type": "Bitmap Heap Scan", "Relation Name": "memory_units"}]},
            ],
        },
    }
    summary = summarize_plan(plan)
    assert summary["planning_ms"] == 0.5
    assert summary["execution_ms"] == 3.0
    assert [s["node"] for s in summary["scans"]] == ["Index Scan", "Bitmap Heap Scan"]
    assert summary["scans"][0]["index"] == "idx_mu_emb_worl_1"


def test_report_renders_a_recorded_quick_run() -> None:
    # GIVEN the results of a real quick run WHEN rendered THEN every part has its table
    results = json.loads(FIXTURE.read_text())
    text = report.markdown(results)
    for heading in ("## 1. Recall latency", "## 2. Write path", "## 3. Concurrent sessions"):
        assert heading in text
    assert "Query plans of one recall per bank" in text
    assert report.recall_target(results["recall"]), "the quick run measures two sizes"


def test_chart_draws_a_recorded_quick_run(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from bench.scale import chart

    chart.draw(json.loads(FIXTURE.read_text()), tmp_path / "scale.png")
    assert (tmp_path / "scale.png").stat().st_size > 10_000


def test_every_measurement_module_imports() -> None:
    # The measurements import the agent's and the adapter's modules: a refactoring there must not rot them unseen.
    import importlib

    for name in ("concurrency", "recall_size", "write_path", "server", "slow_llm", "client", "database"):
        importlib.import_module(f"bench.scale.{name}")


def test_cli_help_lists_every_measurement() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.scale", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for name in ("write", "concurrency", "recall", "--quick"):
        assert name in done.stdout


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning needs two CPUs")
def test_pinning_reaches_the_processes_the_harness_starts_afterwards() -> None:
    # In a child interpreter (pinning moves the whole process): the harness pins itself, then starts a process the
    # way it starts PostgreSQL and the agents; the kernel's Cpus_allowed_list of both says the harness CPUs.
    script = (
        "import json, os, subprocess, sys\n"
        "from bench.scale.__main__ import pin_harness, placement\n"
        "from bench.scale.server import cpus_allowed, pin\n"
        "layout = placement(None)\n"
        "pin_harness(layout)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "moved = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "pin(moved.pid, tuple(layout['service']))\n"
        "print(json.dumps([layout, cpus_allowed(os.getpid()), cpus_allowed(child.pid), cpus_allowed(moved.pid)]))\n"
        "child.kill(); moved.kill()\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    layout, harness, child, moved = json.loads(out.stdout)
    cpus = sorted(os.sched_getaffinity(0))
    assert layout == {"service": cpus[:1], "harness": cpus[1:], "harness_pinned": True}
    expected = str(cpus[1]) if len(cpus) == 2 else f"{cpus[1]}-{cpus[-1]}"
    assert harness == child == expected
    assert moved == str(cpus[0])


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning needs two CPUs")
def test_no_pin_is_the_earlier_layout() -> None:
    # Only the API and the worker pinned, PostgreSQL and the harness anywhere: figures comparable with earlier runs.
    from bench.scale.__main__ import _shapes, placement

    cpus = sorted(os.sched_getaffinity(0))
    layout = placement(False)
    assert layout == {"service": cpus[:1], "harness": cpus[1:], "harness_pinned": False}
    shapes = _shapes(layout)
    assert (shapes["deployed"].api_cpus, shapes["deployed"].worker_cpus) == (tuple(cpus[:1]), tuple(cpus[1:]))
    assert shapes["deployed"].database_cpus is None
    assert shapes["standalone"].api_cpus is None
    pinned = _shapes(placement(None))
    assert pinned["deployed"].database_cpus == tuple(cpus[:1])
    assert pinned["standalone"].api_cpus == tuple(cpus)

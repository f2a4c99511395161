"""Two runs of the eval as one result: each figure the runs' mean, its spread (max - min) where the runs differed,
and every run's own figures kept; per-conversation figures say which conversation carries a result."""

from __future__ import annotations

from typing import Any

from bench.eval.data import Conversation, Question
from bench.eval.report import markdown
from bench.eval.scoring import Scored, combine_runs, per_conversation


def _pass(recall: float, ingest_s: float) -> dict[str, Any]:
    every = {"n": 10, "recall@10": recall, "hit@10": 0.8, "latency_p50_ms": 100.0}
    return {
        "scores": {"ours": {"all": every}, "bm25": {"all": {"n": 10, "recall@10": 0.5, "hit@10": 0.6}}},
        "per_conversation": {"conv-a": {"ours": {"all": {"n": 10, "recall@10": recall}}}},
        "rag_at_our_tokens": {},
        "rag_at_variant_tokens": {},
        "ingest": [
            {
                "conversation": "conv-a",
                "turns": 20,
                "wall_s": ingest_s,
                "ms_per_turn": 50 * ingest_s,
                "server_cpu_ms_per_turn": None,
                "turn_time_sent": True,
            }
        ],
        "temporal_arm_share": 0.1,
    }


def test_two_runs_give_their_mean_the_spread_of_what_differed_and_each_runs_own_figures() -> None:
    combined = combine_runs([_pass(0.6, 100.0), _pass(0.7, 120.0)])
    assert combined["runs"] == 2
    assert combined["scores"]["ours"]["all"]["recall@10"] == 0.65
    assert combined["scores"]["ours"]["all"]["n"] == 10
    assert combined["spread"]["scores"]["ours"]["all"] == {"recall@10": 0.1}
    assert "bm25" not in combined["spread"]["scores"]  # identical in both runs: no spread to report
    assert combined["spread"]["per_conversation"]["conv-a"]["ours"]["all"] == {"recall@10": 0.1}
    assert [p["scores"]["ours"]["all"]["recall@10"] for p in combined["per_run"]] == [0.6, 0.7]
    assert [(r["run"], r["wall_s"]) for r in combined["ingest"]] == [(1, 100.0), (2, 120.0)]


def test_the_report_states_the_runs_and_their_spread() -> None:
    results = {
        "data": {
            "name": "locomo-dev",
            "conversations": 1,
            "turns": 20,
            "questions": 10,
            "corrected_questions": 0,
            "dropped_evidence_ids": 0,
            "questions_without_evidence": 0,
        },
        "adapter_settings": {"recall_budget": "mid", "recall_max_tokens": 1500},
        **combine_runs([_pass(0.6, 100.0), _pass(0.7, 120.0)]),
    }
    text = markdown(results)
    assert "Figures are the mean of 2 runs on fresh banks" in text
    assert "ours: injected block (`recall_for_turn`) 0.10 / 0.00" in text


def test_per_conversation_scores_each_conversation_on_its_own_questions() -> None:
    convs = [Conversation("conv-a", ("A", "B"), (), ()), Conversation("conv-b", ("A", "B"), (), ())]
    questions = [
        Question("q1", "a", ("D1:1",), 4),
        Question("q2", "a", ("D1:2",), 1),
        Question("q3", "a", ("D1:1",), 4),
    ]
    scored = [Scored("ours", 4, ["D1:1"]), Scored("ours", 1, ["D9:9"]), Scored("ours", 4, ["D9:9"])]
    rows = per_conversation(scored, questions, [0, 0, 1], convs)
    assert rows["conv-a"]["ours"]["all"] == {"n": 2, "recall@10": 0.5, "hit@10": 0.5}
    assert rows["conv-a"]["ours"]["single-hop"]["hit@10"] == 1.0
    assert rows["conv-b"]["ours"]["all"] == {"n": 1, "recall@10": 0.0, "hit@10": 0.0}

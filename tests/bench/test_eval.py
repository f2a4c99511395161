"""``make eval``'s harness: lenient LoCoMo loading, the baselines, and a whole run on the generated set against the
real local Hindsight (MiniLM and o200k from .venv-hindsight, the judge path through the LLM stand-in)."""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path

import pytest

from bench.eval.baselines import BM25
from bench.eval.data import load_locomo, parse_evidence, synthetic


def test_evidence_ids_are_parsed_leniently_and_what_cannot_be_read_is_counted():
    dropped: Counter[str] = Counter()
    ids = parse_evidence(["D8:6; D9:17", "D30:05", "D:11:26", "D", "D1:2"], dropped)
    assert ids == ("D8:6", "D9:17", "D30:5", "D11:26", "D1:2")
    assert dropped == Counter({"D": 1})


def _locomo_file(tmp_path: Path) -> tuple[Path, Path]:
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I got a puppy."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a photo of a dog"},
            ],
        },
        "qa": [
            {"question": "What did Ana get?", "answer": "a puppy", "evidence": ["D1:2"], "category": 4},
            {"question": "Unanswerable?", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
            {"question": "Bad ids?", "answer": "y", "evidence": ["D9:9", "D"], "category": 1},
        ],
    }
    data, audit = tmp_path / "locomo.json", tmp_path / "audit.json"
    data.write_text(json.dumps([sample]))
    audit.write_text(json.dumps([{"sample_id": "conv-x", "qa_index": 0, "correct_evidence": ["D1:1"]}]))
    return data, audit


def test_a_locomo_file_loads_with_the_audits_corrections(tmp_path: Path):
    data = load_locomo(*_locomo_file(tmp_path))
    (conv,) = data.conversations
    assert [t.line for t in conv.turns] == ["Ana: I got a puppy.", "Ben: Nice! [shares a photo: a photo of a dog]"]
    assert conv.turns[0].at.isoformat() == "2023-05-08T13:56:00+00:00"
    (question,) = conv.questions  # category 5 and the one without usable evidence are left out
    assert question.evidence == ("D1:1",)  # corrected by the audit
    assert (data.corrected_questions, data.questions_without_evidence) == (1, 1)
    assert sum(data.dropped_evidence_ids.values()) == 2  # "D" unreadable, "D9:9" no such turn


def test_an_unreadable_file_says_what_to_pass(tmp_path: Path):
    with pytest.raises(SystemExit, match="pass --data"):
        load_locomo(tmp_path / "missing.json")


def test_bm25_ranks_the_document_sharing_the_rare_word_first():
    index = BM25(["the cat sat on the mat", "my sister moved to Lisbon", "the dog sat on the log"])
    assert index.rank("where did the sister move", 2) == [1]


def test_the_generated_set_plants_each_questions_evidence():
    data = synthetic(conversations=2)
    for conv in data.conversations:
        by_id = {t.dia_id: t for t in conv.turns}
        assert {q.category for q in conv.questions} == {1, 2, 3, 4}
        for q in conv.questions:
            assert all(e in by_id and by_id[e].speaker in conv.speakers for e in q.evidence)


async def test_a_whole_run_on_the_generated_set_scores_every_system(local_hindsight, tmp_path: Path):
    from bench.eval.helper import VenvHelper
    from bench.eval.judge import Judge, OpenAICompatibleLLM
    from bench.eval.report import markdown
    from bench.eval.run import Evaluation, Target, Variant, evaluate
    from localdev.hindsight import LocalHindsightConfig
    from localdev.hindsight.venv import HindsightVenv
    from localdev.llm_stub import LLMStub

    # GIVEN one generated conversation, the real local Hindsight and the stand-in LLM as the judge
    data = synthetic(conversations=1, small_talk=1).limited(None, 4)
    venv = HindsightVenv(LocalHindsightConfig.from_env().venv)
    pids = getattr(local_hindsight, "pids", None)
    target = Target(local_hindsight.url, local_hindsight.operator_key, pids, {"recall_max_tokens": 300})
    with VenvHelper(venv.path, venv.embedding_model_dir()) as helper, LLMStub() as stub:
        # WHEN the harness runs end to end
        results = await evaluate(
            data,
            functools.partial(
                Evaluation,
                target,
                helper,
                systems=["ours", "raw", "rag", "bm25"],
                log=lambda _: None,
                variants=[
                    Variant("low", adapter={"recall_budget": "low"}),
                    Variant("iso", adapter={"layout": "iso-times"}),
                ],
                judge=Judge(OpenAICompatibleLLM(stub.base_url)),
            ),
        )
    scores = results["scores"]
    # THEN every system and arm is scored on every question, memories map back to their source turns,
    assert {"ours", "raw", "fused", "arm:semantic", "arm:bm25", "rag", "bm25", "ours@low"} <= set(scores)
    assert all(rows["all"]["n"] == 4 for rows in scores.values())
    assert scores["ours"]["all"]["block_hit"] > 0
    assert scores["arm:semantic"]["all"]["recall@25"] > 0
    assert scores["rag"]["all"]["recall@25"] > 0
    # the block the model receives stays within recall_max_tokens by Hindsight's own tokenizer,
    assert 0 < scores["ours"]["all"]["tokens_max"] <= 300
    # a variant may name a block layout, and each variant is compared with naive RAG at its own tokens,
    assert scores["ours@iso"]["all"]["tokens_max"] <= 300
    assert {name: rows["all"]["n"] for name, rows in results["rag_at_variant_tokens"].items()} == {"low": 4, "iso": 4}
    # every answer was judged (the stand-in answers "ok", which its judge reply cannot label CORRECT),
    assert scores["ours"]["all"]["judge_accuracy"] == 0.0
    # and ingest is measured, with the server's CPU when the server is local
    (ingest,) = results["ingest"]
    assert ingest["turns"] == len(data.conversations[0].turns)
    assert pids is None or ingest["server_cpu_ms_per_turn"] > 0
    assert "naive vector RAG" in markdown(results)

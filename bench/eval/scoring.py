"""Scoring an eval run: evidence recall@k and hit@k per system and category, per conversation, naive RAG at our
tokens, and several runs combined into their mean and spread (what differs between two runs of the same code)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.eval.baselines import rag_line
from bench.eval.data import CATEGORIES, Conversation, Question
from bench.eval.helper import VenvHelper

__all__ = ["KS", "Scored", "combine_runs", "equal_token_rag", "per_conversation", "score"]

KS = (5, 10, 25)


@dataclass
class Scored:
    """One system's answer to one question."""

    system: str
    category: int
    turns: list[str]  # distinct source turn ids, best first
    block: str = ""
    latency_ms: float | None = None
    memories: int = 0
    correct: bool | None = None  # the judge's label, when answers are judged
    follow_up_ms: list[float] = field(default_factory=list)  # currency's follow-up recalls (ours), each one's time


def _recall(turns: Sequence[str], evidence: Sequence[str], k: int | None) -> tuple[float, float]:
    top = set(turns if k is None else turns[:k])
    found = sum(1 for e in evidence if e in top)
    return found / len(evidence), float(found > 0)


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 3) if values else None


def _p50_p99(values: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return round(ordered[len(ordered) // 2], 1), round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1)


def score(scored: Sequence[Scored], questions: Sequence[Question], helper: VenvHelper) -> dict[str, Any]:
    """Aggregate per system and category: recall@k, hit@k, block recall and tokens, equal-token RAG, latency."""
    systems = list(dict.fromkeys(s.system for s in scored))
    per_system = {name: [s for s in scored if s.system == name] for name in systems}
    blocks = [s.block for s in scored if s.block]
    counts = iter(helper.count(blocks)) if blocks else iter(())
    tokens = {id(s): next(counts) for s in scored if s.block}
    out: dict[str, Any] = {}
    for name, answers in per_system.items():
        assert len(answers) == len(questions), (name, len(answers), len(questions))
        rows: dict[str, Any] = {}
        for category in [0, *CATEGORIES]:
            pairs = [(a, q) for a, q in zip(answers, questions, strict=True) if category in (0, q.category)]
            if not pairs:
                continue
            row: dict[str, Any] = {"n": len(pairs)}
            for k in KS:
                rec = [_recall(a.turns, q.evidence, k) for a, q in pairs]
                row[f"recall@{k}"] = _mean([r for r, _ in rec])
                row[f"hit@{k}"] = _mean([h for _, h in rec])
            if name in ("ours", "ours+wm", "raw", "prior") or name.startswith("ours@"):
                block = [_recall(a.turns, q.evidence, None) for a, q in pairs]
                row["block_recall"] = _mean([r for r, _ in block])
                row["block_hit"] = _mean([h for _, h in block])
                row["memories"] = _mean([a.memories for a, _ in pairs])
            with_tokens = [tokens[id(a)] for a, _ in pairs if id(a) in tokens]
            if with_tokens:
                row["tokens_mean"] = _mean([float(t) for t in with_tokens])
                row["tokens_max"] = max(with_tokens)
            judged = [float(a.correct) for a, _ in pairs if a.correct is not None]
            if judged:
                row["judge_accuracy"] = _mean(judged)
            latencies = [a.latency_ms for a, _ in pairs if a.latency_ms is not None]
            if latencies:
                row["latency_p50_ms"], row["latency_p99_ms"] = _p50_p99(latencies)
            followed = [a for a, _ in pairs if a.follow_up_ms]
            if name == "ours" and followed:  # the latency cost of currency's follow-up searches
                row["follow_up_share"] = round(len(followed) / len(pairs), 3)
                row["follow_up_recalls_mean"] = _mean([float(len(a.follow_up_ms)) for a in followed])
                row["follow_up_ms_p50"], row["follow_up_ms_p99"] = _p50_p99([sum(a.follow_up_ms) for a in followed])
                row["latency_with_follow_ups_p50_ms"], _ = _p50_p99([a.latency_ms or 0.0 for a in followed])
            rows["all" if category == 0 else CATEGORIES[category]] = row
        out[name] = rows
    return out


def equal_token_rag(
    scored: Sequence[Scored],
    questions: Sequence[Question],
    helper: VenvHelper,
    conversations: Sequence[Conversation],
    question_conv: Sequence[int],
    system: str = "ours",
) -> dict[str, Any]:
    """Naive RAG given as many tokens as ``system``'s block had for the same question: its recall, per category."""
    ours = [s for s in scored if s.system == system]
    rag = [s for s in scored if s.system == "rag"]
    if not ours or not rag:
        return {}
    our_tokens = helper.count([s.block for s in ours])
    lines_tokens: dict[str, int] = {}
    results: list[tuple[int, float, float]] = []
    for o_tokens, r, q, conv_index in zip(our_tokens, rag, questions, question_conv, strict=True):
        conv = conversations[conv_index]
        by_id = {t.dia_id: t for t in conv.turns}
        missing = [i for i in r.turns[:60] if f"{conv.sample_id}|{i}" not in lines_tokens]
        if missing:
            for i, n in zip(missing, helper.count([rag_line(by_id[i]) for i in missing]), strict=True):
                lines_tokens[f"{conv.sample_id}|{i}"] = n + 1
        taken: list[str] = []
        used = 0
        for i in r.turns[:60]:
            cost = lines_tokens[f"{conv.sample_id}|{i}"]
            if used + cost > o_tokens:
                break
            taken.append(i)
            used += cost
        rec, hit = _recall(taken, q.evidence, None)
        results.append((q.category, rec, hit))
    out: dict[str, Any] = {}
    for category in [0, *CATEGORIES]:
        rows = [(rec, hit) for c, rec, hit in results if category in (0, c)]
        if rows:
            out["all" if category == 0 else CATEGORIES[category]] = {
                "n": len(rows),
                "recall": _mean([r for r, _ in rows]),
                "hit": _mean([h for _, h in rows]),
            }
    return out


def per_conversation(
    scored: Sequence[Scored],
    questions: Sequence[Question],
    question_conv: Sequence[int],
    conversations: Sequence[Conversation],
) -> dict[str, Any]:
    """recall@10 / hit@10 of every system per conversation and category: whether one conversation carries a figure."""
    out: dict[str, Any] = {}
    for name in dict.fromkeys(s.system for s in scored):
        answers = [s for s in scored if s.system == name]
        for index, conv in enumerate(conversations):
            rows: dict[str, Any] = {}
            for category in [0, *CATEGORIES]:
                pairs = [
                    _recall(a.turns, q.evidence, 10)
                    for a, q, c in zip(answers, questions, question_conv, strict=True)
                    if c == index and category in (0, q.category)
                ]
                if pairs:
                    rows["all" if category == 0 else CATEGORIES[category]] = {
                        "n": len(pairs),
                        "recall@10": _mean([r for r, _ in pairs]),
                        "hit@10": _mean([h for _, h in pairs]),
                    }
            out.setdefault(conv.sample_id, {})[name] = rows
    return out


def _combine(values: Sequence[Any]) -> tuple[Any, Any]:
    """The mean of the runs' values and their spread (max - min), recursively through dicts; ``n`` stays."""
    first = values[0]
    if isinstance(first, dict):
        keys = [k for k in first if all(isinstance(v, dict) and k in v for v in values)]
        pairs = {k: _combine([v[k] for v in values]) for k in keys}
        spread = {k: s for k, (_, s) in pairs.items() if s not in (None, {})}
        return {k: m for k, (m, _) in pairs.items()}, spread
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        if all(v == first for v in values):
            return first, None
        return round(statistics.fmean(values), 3), round(max(values) - min(values), 3)
    return first, None


def combine_runs(passes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several runs of the same eval as one result: every figure the runs' mean (``runs`` of them), ``spread`` the
    max - min of each figure that differed, ``per_run`` each run's own scores and ingest."""
    combined: dict[str, Any] = {"runs": len(passes)}
    spread: dict[str, Any] = {}
    for key in ("scores", "per_conversation", "rag_at_our_tokens", "rag_at_variant_tokens", "temporal_arm_share"):
        combined[key], spread[key] = _combine([p[key] for p in passes])
    combined["spread"] = {k: v for k, v in spread.items() if v not in (None, {})}
    combined["ingest"] = [row | {"run": n} for n, p in enumerate(passes, start=1) for row in p["ingest"]]
    if len(passes) > 1:
        combined["per_run"] = [{"scores": p["scores"]} for p in passes]
    return combined

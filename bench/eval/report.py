"""The eval's tables (markdown) and chart (matplotlib, when installed: it lives in ``.venv-bench``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.eval.data import CATEGORIES

__all__ = ["ARMS_LEGEND", "SYNTHETIC_NOTE", "SYSTEMS_LEGEND", "chart", "draw", "markdown"]

_LABELS = {
    "ours": "ours: injected block (`recall_for_turn`)",
    "ours+wm": "ours, query with working memory",
    "raw": "raw client recall",
    "fused": "Hindsight fused list (RRF)",
    "arm:semantic": "arm: semantic",
    "arm:bm25": "arm: keyword (BM25)",
    "arm:graph": "arm: graph",
    "arm:temporal": "arm: temporal",
    "rag": "naive vector RAG (MiniLM, raw turns)",
    "bm25": "BM25 (raw turns)",
    "prior": "prior art 0.1.3 `before_turn`",
}
_GROUPS = ["all", *CATEGORIES.values()]


def _f(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}" if value < 10 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _pair(row: dict[str, Any], first: str, second: str) -> str:
    return f"{_f(row.get(first))} / {_f(row.get(second))}" if row else ""


def _summary(results: dict[str, Any]) -> str:
    data = results["data"]
    return (
        f"Data: {data['name']}, {data['conversations']} conversations, {data['turns']} turns, {data['questions']} "
        f"questions (categories 1-4); evidence corrected for {data['corrected_questions']} questions, "
        f"{data['dropped_evidence_ids']} evidence ids dropped, {data['questions_without_evidence']} questions "
        f"without usable evidence left out. Adapter: {results['adapter_settings']}; variants: "
        f"{results.get('variants') or 'none'}. Run: {results.get('wall_s')} s, load average at the end "
        f"{results.get('load_average_end')}."
    )


def _systems_table(scores: dict[str, Any]) -> list[str]:
    first = next(iter(scores.values()))
    groups = [f"{g} (n={first.get(g, {}).get('n', 0)}) r@10 / h@10" for g in _GROUPS]
    lines = [
        "| System | " + " | ".join(groups) + " | r@5 | r@25 | tokens mean / max | p50 / p99 ms |",
        "|---" * (len(_GROUPS) + 5) + "|",
    ]
    for name in [*(n for n in _LABELS if n in scores), *sorted(n for n in scores if n not in _LABELS)]:
        rows = scores[name]
        every = rows["all"]
        cells = [_pair(rows.get(g, {}), "recall@10", "hit@10") for g in _GROUPS]
        cells += [_f(every.get("recall@5")), _f(every.get("recall@25"))]
        cells += [_pair(every, "tokens_mean", "tokens_max") if "tokens_mean" in every else ""]
        cells += [_pair(every, "latency_p50_ms", "latency_p99_ms") if "latency_p50_ms" in every else ""]
        lines.append(f"| {_LABELS.get(name, name)} | " + " | ".join(cells) + " |")
    return lines


#: What the systems table's columns mean (printed under it).
SYSTEMS_LEGEND = (
    "r@k (evidence recall at k): the share of a question's evidence turns among the first k distinct source turns a "
    "system returns, averaged over the questions; h@k (hit at k): the share of questions with at least one evidence "
    "turn among them; n: the questions of a category. Tokens: the block the model receives (o200k); ms: one recall."
)
#: Which retrieval arms may be off, and why (printed under the systems table).
ARMS_LEGEND = (
    "`arm:*` rows are Hindsight's retrieval arms before fusion (the raw client's trace). The graph arm is off by "
    "default (`HINDSIGHT_API_ENABLE_GRAPH_RETRIEVAL=false`, `memory_adapter.constants.RECALL_SERVER_SETTINGS`): with "
    "it on, fusion ranked its neighbours above the best semantic hits (LoCoMo recall@10 0.42 with it, 0.58 without; "
    "BENCHMARKS.md). The temporal arm runs only for a question from which a date window is read."
)
#: Why the generated set's results may favour raw-turn search (printed with its results).
SYNTHETIC_NOTE = (
    "Expected on this set: it favours raw-turn search. Each answer sits in one distinctive turn among generic small "
    "talk and shares the question's key words (kitten, sister, Kiel), which naive RAG and BM25 over raw turns find "
    "directly; extraction and fusion pay off on LoCoMo's longer, paraphrased, multi-session conversations "
    "(BENCHMARKS.md)."
)


def _legend(results: dict[str, Any]) -> list[str]:
    graph = (
        "In this run the server had it on (its own setting), so it has a row."
        if "arm:graph" in results["scores"]
        else "It did not run here, so it has no row."
    )
    lines = ["", SYSTEMS_LEGEND, "", f"{ARMS_LEGEND} {graph}"]
    if results["data"]["name"] == "synthetic":
        lines += ["", SYNTHETIC_NOTE]
    return lines


def _equal_tokens(results: dict[str, Any]) -> list[str]:
    ours = results["scores"].get("ours", {})
    equal = results.get("rag_at_our_tokens") or {}
    if not ours or not equal:
        return []
    budget = results["adapter_settings"]["recall_max_tokens"]
    every = ours["all"]
    return [
        "",
        "The whole injected block against naive RAG given the same tokens per question (evidence recall / hit):",
        "",
        "| | " + " | ".join(_GROUPS) + " |",
        "|---" * (len(_GROUPS) + 1) + "|",
        "| ours, whole block | "
        + " | ".join(_pair(ours.get(g, {}), "block_recall", "block_hit") for g in _GROUPS)
        + " |",
        "| naive RAG, same tokens | " + " | ".join(_pair(equal.get(g, {}), "recall", "hit") for g in _GROUPS) + " |",
        "",
        f"Our block: {_f(every.get('memories'))} memories and {_f(every.get('tokens_mean'))} tokens on average "
        f"(o200k), at most {_f(every.get('tokens_max'))}, for `recall_max_tokens` {budget}. Each cell: the share of "
        "a question's evidence turns anywhere in the block (or in naive RAG's turns up to the same tokens) / the "
        "share of questions with at least one there.",
    ]


def _ingest(results: dict[str, Any]) -> list[str]:
    rows = results.get("ingest") or []
    if not rows:
        return []
    lines = [
        "",
        "| Ingest | run | turns | wall s | ms per turn | server CPU ms per turn | turn's own time sent |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        cells = [row["conversation"], row.get("run", 1), row["turns"], row["wall_s"], row["ms_per_turn"]]
        cells += [row["server_cpu_ms_per_turn"], row["turn_time_sent"]]
        lines.append("| " + " | ".join(_f(c) for c in cells) + " |")
    return lines


def _runs(results: dict[str, Any]) -> list[str]:
    """How far apart the runs were: the spread (max - min) of r@10 / h@10 over all questions, per system."""
    runs, spread = results.get("runs", 1), (results.get("spread") or {}).get("scores", {})
    if runs < 2:
        return []
    every = {name: spread.get(name, {}).get("all", {}) for name in results["scores"]}
    cells = [
        f"{_LABELS.get(name, name)} {_f(row.get('recall@10', 0.0))} / {_f(row.get('hit@10', 0.0))}"
        for name, row in every.items()
    ]
    return [
        "",
        f"Figures are the mean of {runs} runs on fresh banks; spread (max - min) of r@10 / h@10: "
        + "; ".join(cells)
        + ".",
    ]


def _per_conversation(results: dict[str, Any]) -> list[str]:
    """r@10 / h@10 of the main systems per conversation, over all its questions."""
    convs = results.get("per_conversation") or {}
    names = [n for n in ("ours", "arm:semantic", "fused", "bm25", "rag") if n in results["scores"]]
    if len(convs) < 2 or not names:
        return []
    lines = [
        "",
        "| Conversation (n) | " + " | ".join(_LABELS[n] for n in names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for conv, systems in convs.items():
        n = systems[names[0]].get("all", {}).get("n", 0)
        cells = [_pair(systems.get(name, {}).get("all", {}), "recall@10", "hit@10") for name in names]
        lines.append(f"| {conv} ({n}) | " + " | ".join(cells) + " |")
    return lines


def _follow_ups(results: dict[str, Any]) -> list[str]:
    every = results["scores"].get("ours", {}).get("all", {})
    if "follow_up_share" not in every:
        return []
    return [
        "",
        f"Follow-up searches (`memory_adapter.currency`): {every['follow_up_share']:.0%} of our recalls made "
        f"{_f(every['follow_up_recalls_mean'])} more on average, costing {_f(every['follow_up_ms_p50'])} ms at p50 "
        f"and {_f(every['follow_up_ms_p99'])} ms at p99 (those recalls' p50: "
        f"{_f(every['latency_with_follow_ups_p50_ms'])} ms, all recalls' {_f(every.get('latency_p50_ms'))} ms).",
    ]


def markdown(results: dict[str, Any]) -> str:
    """The tables of one run (aggregates only)."""
    lines = [_summary(results), "", *_systems_table(results["scores"]), *_runs(results), *_legend(results)]
    lines += [*_equal_tokens(results), *_per_conversation(results), *_follow_ups(results)]
    share = results.get("temporal_arm_share")
    if share is not None:
        lines.append(f"The temporal arm ran (a date window was read from the question) for {share:.0%} of questions.")
    lines += _ingest(results)
    ours = results["scores"].get("ours", {})
    if results.get("judge") and "judge_accuracy" in ours.get("all", {}):
        accuracy = ", ".join(f"{g} {_f(ours[g].get('judge_accuracy'))}" for g in _GROUPS if g in ours)
        lines += [
            "",
            f"Answers from our block, judged by {results['judge']} (LoCoMo's LLM-judge protocol): {accuracy}.",
        ]
    return "\n".join(lines) + "\n"


def chart(results: dict[str, Any], path: Path) -> bool:
    """Recall@10 per category for each system, one bar group per category; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        return False
    fig, _, _ = draw(results)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


def draw(results: dict[str, Any]) -> tuple[Any, Any, Any]:
    """The chart's (figure, axes, legend); matplotlib must be importable."""
    import matplotlib.pyplot as plt

    scores = results["scores"]
    shown = ("ours", "fused", "arm:semantic", "arm:bm25", "arm:graph", "rag", "bm25", "prior")
    names = [n for n in shown if n in scores] + sorted(n for n in scores if n.startswith("ours@"))
    fig, ax = plt.subplots(figsize=(12, 4.2))
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        values = [scores[name].get(g, {}).get("recall@10") or 0.0 for g in _GROUPS]
        color = plt.get_cmap("tab20")(i % 20)  # 20 distinct colours: the default cycle repeats after 10
        ax.bar([x + i * width for x in range(len(_GROUPS))], values, width, label=_LABELS.get(name, name), color=color)
    ax.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(_GROUPS))], _GROUPS)
    ax.set_ylabel("evidence recall@10")
    ax.set_ylim(0, 1)
    ax.grid(axis="y", alpha=0.3)
    # beside the axes, never over the bars it explains
    legend = ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)
    ax.set_title(f"{results['data']['name']}: {results['data']['questions']} questions", fontsize=9)
    fig.tight_layout()
    return fig, ax, legend

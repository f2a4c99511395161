"""The scale chart: recall latency against bank size (per phase), turn latency against concurrent sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["draw"]

_PHASE_COLOURS = {
    "alone": "#4d4d4d",
    "grown": "#1b7837",
    "neighbours": "#2166ac",
    "many_banks": "#b2182b",
    "index_threshold": "#e08214",
    "bm25_two_terms": "#762a83",
    "no_text_search": "#35978f",
}


def _recall(ax: Any, recall: dict[str, Any]) -> None:
    sizes = recall.get("sizes") or []
    for name, phase in recall.get("phases", {}).items():
        points = [(s, phase["banks"][str(s)]) for s in sizes if str(s) in phase["banks"]]
        if len(points) < 1:
            continue
        xs = [s for s, _ in points]
        colour = _PHASE_COLOURS.get(name, "#6a8caf")
        ax.plot(xs, [b["p50_ms"] for _, b in points], "o-", color=colour, label=f"{name} p50")
        ax.plot(xs, [b["p99_ms"] for _, b in points], "s--", color=colour, alpha=0.7, label=f"{name} p99")
    ax.set_xscale("log")
    ax.set_xlabel("memories in the bank (log)", fontsize=8)
    ax.set_ylabel("recall latency, ms", fontsize=8)
    ax.set_title("Recall latency against bank size", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)


def _sessions(ax: Any, concurrency: dict[str, Any]) -> None:
    for name, colour in (("standalone", "#b2182b"), ("deployed", "#1b7837"), ("deployed_pool", "#2166ac")):
        levels = (concurrency.get(name) or {}).get("levels") or []
        if not levels:
            continue
        xs = [level["sessions"] for level in levels]
        ax.plot(xs, [level["latency"].get("p50_ms") for level in levels], "o-", color=colour, label=f"{name} p50")
        ax.plot(xs, [level["latency"].get("p99_ms") for level in levels], "s--", color=colour, label=f"{name} p99")
        for level in levels:
            if level["degraded"]:
                ax.annotate(
                    f"{level['degraded']}/{level['turns']} degraded",
                    (level["sessions"], level["latency"].get("p99_ms")),
                    fontsize=6,
                    color=colour,
                )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrent sessions (log)", fontsize=8)
    ax.set_ylabel("turn latency through the agent, ms", fontsize=8)
    ax.set_title("Turn latency against concurrent sessions", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)


def draw(results: dict[str, Any], path: Path) -> None:
    """Two panels side by side (a panel without data is left empty)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    _recall(axes[0], results.get("recall") or {})
    _sessions(axes[1], results.get("concurrency") or {})
    machine = results.get("machine", {})
    fig.suptitle(
        f"Scale: local Hindsight 1.1.0, {machine.get('cores')} x {machine.get('cpu_model')}, load average at start "
        f"{machine.get('load_average_1_5_15')}",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)

"""The PNG chart of latency distributions (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["draw"]

_COLOURS = {"ours": "#1b7837", "prior": "#b2182b", "raw": "#4d4d4d"}


def _panel(ax: Any, title: str, series: dict[str, list[float]], log: bool = True) -> None:
    names = [name for name, values in series.items() if values]
    if not names:
        ax.set_visible(False)
        return
    parts = ax.boxplot([series[n] for n in names], showfliers=True, whis=(1, 99), patch_artist=True, widths=0.55)
    for patch, name in zip(parts["boxes"], names, strict=True):
        patch.set_facecolor(_COLOURS.get(name.split(" ")[0], "#6a8caf"))
        patch.set_alpha(0.55)
    ax.set_xticks(range(1, len(names) + 1), names, fontsize=8)
    if log:
        ax.set_yscale("log")
    ax.set_ylabel("ms" + (" (log)" if log else ""), fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.grid(axis="y", alpha=0.3)


def draw(results: dict[str, Any], path: Path) -> None:
    """Six panels: recall, after_turn, hung, refused, first turn, /invocations (whiskers: p1-p99)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(14, 8))
    recall = results.get("recall", {}).get("samples_ms", {})
    _panel(axes[0][0], "1. before_turn (recall)", {k: recall.get(k, []) for k in ("ours", "prior", "raw")})
    retain = results.get("after_turn", {}).get("samples_ms", {})
    _panel(axes[0][1], "2. after_turn (turn path)", {k: retain.get(k, []) for k in ("ours", "prior")})
    degraded = results.get("degraded", {})
    for ax, fault in ((axes[0][2], "hung"), (axes[1][0], "refused")):
        samples = degraded.get(fault, {}).get("samples_ms", {})
        _panel(ax, f"3. per-turn cost, Hindsight {fault}", {k: samples.get(k, []) for k in ("ours", "prior")})
    first = results.get("first_turn", {}).get("runs", {})
    _panel(
        axes[1][1],
        "4. first turn, fresh process (import + first recall)",
        {k: [r["total_ms"] for r in first.get(k, [])] for k in ("ours", "prior")},
    )
    invocations = results.get("invocations", {}).get("samples_ms", {})
    _panel(
        axes[1][2],
        "6. /invocations (echo model)",
        {"with memory": invocations.get("with_memory", []), "without memory": invocations.get("without_memory", [])},
    )
    machine = results.get("machine", {})
    fig.suptitle(
        f"memory_adapter (ours) vs hindsight-agentcore 0.1.3 (prior) vs raw hindsight_client: "
        f"{machine.get('cores')} x {machine.get('cpu_model')}, Python {machine.get('python')}",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)

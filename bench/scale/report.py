"""The scale results as markdown tables (what BENCHMARKS.md quotes), and the issue's target on recall latency."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["markdown", "recall_target"]

_PHASES = {
    "alone": "the smallest bank alone (seeded twice: real retains and bulk)",
    "grown": "one bank of each size",
    "neighbours": "plus several more banks of each size",
    "many_banks": "plus a thousand small banks (3 HNSW indexes each)",
    "index_threshold": "same data, `VECTOR_INDEX_MIN_ROWS=10000`, indexes converged",
    "bm25_two_terms": "... and `BM25_MAX_QUERY_TERMS=2`",
    "no_text_search": "... and `ENABLE_TEXT_SEARCH=false` instead",
}


def _ms(value: Any) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3g}" if value < 10 else f"{value:,.0f}" if value >= 1000 else f"{value:.1f}"


def _size(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def recall_target(recall: dict[str, Any]) -> list[dict[str, Any]]:
    """Per phase: p99 at the largest size over p99 at the smallest (the issue asks for at most 2x)."""
    sizes = recall.get("sizes") or []
    out: list[dict[str, Any]] = []
    if len(sizes) < 2:
        return out
    for name, phase in recall.get("phases", {}).items():
        banks = phase.get("banks", {})
        small, large = banks.get(str(min(sizes))), banks.get(str(max(sizes)))
        if not small or not large:
            continue
        ratio = round(large["p99_ms"] / small["p99_ms"], 2)
        out.append({"phase": name, "p99_large_over_small": ratio, "met": ratio <= 2.0})
    return out


def _plan_cell(plans: list[dict[str, Any]], statement: str) -> str:
    for plan in plans:
        if plan.get("statement") != statement:
            continue
        if "error" in plan:
            return "error"
        kinds = []
        for scan in plan.get("scans", []):
            index = scan.get("index") or ""
            label = (
                "hnsw(bank)"
                if index.startswith("idx_mu_emb_")
                else index.replace("idx_memory_units_", "mu_").replace("idx_", "")
                if index
                else f"{scan['node'].replace(' Scan', '')} {scan.get('relation') or ''}".strip()
            )
            if label not in kinds:
                kinds.append(label)
        return (
            f"{_ms(plan.get('execution_ms'))} ms exec, {_ms(plan.get('planning_ms'))} ms plan; {', '.join(kinds[:4])}"
        )
    return "n/a"


def _recall(r: dict[str, Any]) -> list[str]:
    rec = r.get("recall")
    if not rec:
        return []
    sizes = rec["sizes"]
    lines = [
        "",
        f"## 1. Recall latency against bank size ({rec['calls']} sequential recalls per bank, our adapter's request)",
        "",
        "In brackets: questions naming a rare number of one fact that found that fact in the top 10.",
        "",
        "| Database holds | " + " | ".join(f"{_size(s)}: p50 / p99 ms" for s in sizes) + " | memories in DB | "
        "HNSW indexes | DB MiB |",
        "|---" * (len(sizes) + 4) + "|",
    ]
    for name, phase in rec["phases"].items():
        banks = phase["banks"]
        cells = [
            f"{_ms(banks[str(s)]['p50_ms'])} / {_ms(banks[str(s)]['p99_ms'])}"
            + (f" ({banks[str(s)]['needles_found_top10']})" if "needles_found_top10" in banks[str(s)] else "")
            if str(s) in banks
            else ""
            for s in sizes
        ]
        db = phase["database"]
        lines.append(
            f"| {_PHASES.get(name, name)} | {' | '.join(cells)} | {db['memory_units']:,} | {db['hnsw_indexes']:,} | "
            f"{db['database_mib']:,.0f} |"
        )
    target = recall_target(rec)
    if target:
        lines += [
            "",
            "p99 at the largest bank over p99 at the smallest (target <= 2x): "
            + ", ".join(
                f"{t['phase']} {t['p99_large_over_small']}x ({'met' if t['met'] else 'missed'})" for t in target
            )
            + ".",
        ]
    real = rec["phases"].get("alone", {}).get("banks", {}).get(f"{sizes[0]} (real retains)")
    check = rec.get("bulk_vs_real")
    if real and check:
        lines += [
            "",
            f"Bulk seeding against the real retain path ({_size(sizes[0])} facts, the same sentences): recall p50 "
            f"{_ms(real['p50_ms'])} ms (real) vs {_ms(rec['phases']['alone']['banks'][str(sizes[0])]['p50_ms'])} ms "
            f"(bulk), p50 ratio {check['p50_ratio']}, p99 ratio {check['p99_ratio']}; the memories recalled for the "
            f"same questions overlap {check['recall_overlap_jaccard']} (mean Jaccard of the top 10).",
            "",
            "| Bank | memory units | semantic links / unit | temporal links / unit | entities | entities / unit |",
            "|---|---|---|---|---|---|",
        ]
        for bank, s in check["links_and_entities"].items():
            lines.append(
                f"| `{bank}` | {s['memory_units']:,} | {s['semantic_links_per_unit']} | {s['temporal_links_per_unit']} "
                f"| {s['entities']} | {s['entities_per_unit']} |"
            )
    seeding = rec.get("seeding", {})
    real_path = seeding.get("real_path")
    if real_path:
        lines += [
            "",
            f"Real retain path: {real_path['facts']:,} facts in {real_path['documents']:,} documents took "
            f"{real_path['wall_s']} s ({real_path['facts_per_s']} facts/s; CPU s {real_path['cpu_s']}).",
        ]
    bulk = [(k, v) for k, v in seeding.items() if k.startswith("bulk_")]
    if bulk:
        lines.append(
            "Bulk seeding: "
            + "; ".join(
                f"{_size(v['facts_per_bank'])}: embeddings {v['embeddings_s']} s (0 when cached), links "
                f"{v['links_s']} s, insert {v['insert_s']} s, HNSW build {v['index_build_s']} s"
                for _, v in bulk
            )
            + "."
        )
    for key, label in (
        ("spot_check_largest", "largest bank"),
        ("spot_check_smallest", "smallest bank"),
        ("retain_latency_many_banks", "smallest bank, with the many small banks"),
        ("retain_latency_tuned", "smallest bank, tuned"),
    ):
        spot = rec.get(key)
        if spot:
            after = ", ".join(str(run["recallable_after_s"]) for run in spot["runs"])
            lines.append(f"Real retains into the {label}: recallable after {after} s, all found: {spot['all_found']}.")
    repair = rec.get("repair")
    if repair:
        lines.append(
            f"`hindsight-admin repair-bank --all` with the threshold: exit {repair['exit']}, {repair['wall_s']} s, "
            f"HNSW indexes {repair['hnsw_indexes_before']:,} -> {repair['hnsw_indexes_after']:,}."
        )
    lines += [
        "",
        "Where a recall's time goes on the server (mean ms per phase, from Hindsight's own `[phases]` log lines):",
        "",
        "| Database holds | bank | phases |",
        "|---|---|---|",
    ]
    for name, phase in rec["phases"].items():
        for label, bank in phase["banks"].items():
            spent = sorted((bank.get("server_phases_ms") or {}).items(), key=lambda kv: -kv[1])
            lines.append(f"| {name} | {label} | {', '.join(f'{k} {_ms(v)}' for k, v in spent[:5]) or 'n/a'} |")
    lines += [
        "",
        "Query plans of one recall per bank (`EXPLAIN (ANALYZE, BUFFERS)` replayed with Hindsight's session settings):",
        "",
        "| Database holds | bank | semantic + BM25 arms | graph arm |",
        "|---|---|---|---|",
    ]
    for name, phase in rec["phases"].items():
        for label, bank in phase["banks"].items():
            plans = bank.get("plans", [])
            lines.append(
                f"| {name} | {label} | {_plan_cell(plans, 'semantic+bm25')} | "
                f"{_plan_cell(plans, 'graph (link expansion)')} |"
            )
    return lines


def _write(r: dict[str, Any]) -> list[str]:
    write = r.get("write")
    if not write:
        return []
    lines = [
        "",
        "## 2. Write path (retained turns: `User: ...` + a two-sentence answer, async retains over several banks)",
        "",
        "| Layout | burst turns/s | CPU ms per turn: API / worker / PostgreSQL | recallable when idle p50 ms | "
        "steady load: offered turns/s -> recallable p50 / max ms |",
        "|---|---|---|---|---|",
    ]
    for name, run in write.items():
        if not isinstance(run, dict) or "burst" not in run:
            continue
        burst = run["burst"]
        cpu = burst["cpu_ms_per_turn"]
        steady = "; ".join(
            f"{s['offered_turns_per_s']} -> {_ms(s['recallable_ms'].get('p50_ms'))} / "
            f"{_ms(s['recallable_ms'].get('max_ms'))}"
            for s in run.get("steady", [])
        )
        worker_ms = cpu.get("workers") or 0.0
        lines.append(
            f"| {name} | {burst['turns_per_s']} | {_ms(cpu['api'])} / {_ms(worker_ms) if worker_ms else 'in API'} / "
            f"{_ms(cpu['postgres'])} | {_ms(run['idle_recallable_s'].get('p50_ms'))} | {steady} |"
        )
    return lines


def _concurrency(r: dict[str, Any]) -> list[str]:
    conc = r.get("concurrency")
    if not conc:
        return []
    lines = [
        "",
        "## 3. Concurrent sessions through the agent (closed loop, no think time, loopback)",
        "",
        "Degraded turns: the recall missed the adapter's 2 s deadline, or was skipped (the breaker had opened after "
        "three misses; skips are not logged by reason). Retains: seconds after the load until every turn's document "
        "was in Hindsight (the agents deliver in the background).",
        "",
        "| Layout | model | sessions x turns | turn p50 ms | turn p99 ms | degraded: recall timed out / skipped | "
        "errors | turns/s | PG connections max | retains all in Hindsight after s | every turn once, own bank |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, run in conc.items():
        if not isinstance(run, dict):
            continue
        levels = run.get("levels") or ([run] if "sessions" in run else [])
        for level in levels:
            reasons = level.get("degraded_reasons", {})
            timed_out = reasons.get("timeout", 0)
            other = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()) if k != "timeout")
            check = level["check"]
            spooled = check.get("documents_spooled", 0)  # durable in an agent's spool after the replay: not lost
            verdict = (
                ("yes" if not spooled else f"yes ({spooled} still in the agents' spools)")
                if check["ok"]
                else f"NO: {check['documents_missing']} missing ({level.get('retains_spooled_at_exit')} left in "
                f"the agents' spools at exit), {check['markers_in_another_bank']} in another bank"
            )
            lines.append(
                f"| {name} | {level['model']} | {_level_label(level)} | "
                f"{_ms(level['latency'].get('p50_ms'))} | {_ms(level['latency'].get('p99_ms'))} | "
                f"{level['degraded']}/{level['turns']}: {timed_out} / {level['degraded'] - timed_out}"
                f"{f' ({other})' if other else ''} | {level['errors']} | {level['turns_per_s']} | "
                f"{level.get('postgres_connections_max')} | {level.get('documents_arrived_after_s', 'n/a')} | "
                f"{verdict} |"
            )
    return lines + _placements(conc) + _admission(conc) + _admission(conc, open_loop=True)


def _placements(conc: dict[str, Any]) -> list[str]:
    """Where the processes ran (each level's ``Cpus_allowed_list``s, as the kernel applied them), once per layout."""
    lines = []
    for name, run in conc.items():
        if not isinstance(run, dict):
            continue
        levels = run.get("levels") or [run]
        seen = {json.dumps(level["placement"], sort_keys=True) for level in levels if level.get("placement")}
        if seen:
            lines.append(f"- {name}: CPUs " + "; ".join(_placement(json.loads(p)) for p in sorted(seen)))
    if not lines:
        return []
    return ["", "Placement (each process's `Cpus_allowed_list` during the load):", "", *lines]


def _placement(p: dict[str, Any]) -> str:
    return ", ".join(
        f"{role} {'/'.join(v) if isinstance(v, list) else v}" for role, v in p.items() if v not in (None, [])
    )


def _level_label(level: dict[str, Any]) -> str:
    """``sessions x turns`` (closed loop) or ``rate/s: users x turns`` (open loop)."""
    shape = f"{level['sessions']} x {level['turns_per_session']}"
    return f"{level['rate']:g}/s: {shape}" if level.get("rate") else shape


#: The layouts compared by :func:`_admission` (admission control of recalls on, the default, and off).
ADMISSION_PAIR = ("deployed", "deployed_admission_off")


def _admission(conc: dict[str, Any], *, open_loop: bool = False) -> list[str]:
    """Admission control on and off, side by side per level (runs recorded before it existed have no figures); with
    ``open_loop``, the open loop's rates."""
    on, off = (conc.get(f"{name}_open" if open_loop else name) for name in ADMISSION_PAIR)
    if not (isinstance(on, dict) and isinstance(off, dict)):
        return []
    key = "rate" if open_loop else "sessions"
    by_key = {level[key]: level for level in off.get("levels", [])}
    lines = [
        "",
        f"### Admission control of recalls on and off (deployed layout, {'open' if open_loop else 'closed'} loop)",
        "",
        *(
            [
                "Open loop: turns arrive at the rate whatever the answers (users in turn, each user's turns 2.5 s "
                "apart); rate/s: users x turns.",
                "",
            ]
            if open_loop
            else []
        ),
        "Served: turns that got their memories (whole turn, and the recall inside it). Without memory: every degraded "
        "turn; memory's cost to it is the adapter's recall latency as the turn saw it (the rest of such a turn is "
        "the agent's own work). Shed: answered at once by Hindsight (a round trip) or skipped by the adapter inside "
        "a shed's Retry-After window (no round trip). Served/s: recalls that returned memories per second.",
        "",
        f"| {'rate/s: users x turns' if open_loop else 'sessions x turns'} | admission | "
        "served turns p50 / p99 ms | their recall p50 / p99 ms | without memory: "
        "memory's cost p50 / p99 ms | shed: round trips / skipped | turns without memory (reasons) | turns/s | "
        "served/s | every turn once, own bank |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for level_on in on.get("levels", []):
        level_off = by_key.get(level_on[key])
        for label, level in (("on", level_on), ("off", level_off)):
            if level is None or "served_latency" not in level:
                continue
            served, recall = level["served_latency"], level.get("recall_served_ms", {})
            cost = level.get("recall_without_memory_ms", {})
            local = level.get("shed_local", 0)
            reasons = ", ".join(f"{k} {v}" for k, v in sorted(level["without_memory_reasons"].items()))
            wall = level.get("wall_s") or 0
            rate = f"{served.get('n', 0) / wall:.1f}" if wall else "n/a"
            lines.append(
                f"| {_level_label(level)} | {label} | "
                f"{_ms(served.get('p50_ms'))} / {_ms(served.get('p99_ms'))} | "
                f"{_ms(recall.get('p50_ms'))} / {_ms(recall.get('p99_ms'))} | "
                f"{_ms(cost.get('p50_ms'))} / {_ms(cost.get('p99_ms'))} | {level['shed'] - local} / {local} | "
                f"{level['without_memory']}/{level['turns']}{f' ({reasons})' if reasons else ''} | "
                f"{level['turns_per_s']} | {rate} | {'yes' if level['check']['ok'] else 'NO'} |"
            )
    return lines


def markdown(r: dict[str, Any]) -> str:
    """Every table of a scale run."""
    m = r.get("machine", {})
    loads = [
        f"{name} {r[name]['load_average_before_after']}"
        for name in ("write", "concurrency", "recall")
        if isinstance(r.get(name), dict) and "load_average_before_after" in r[name]
    ]
    lines = [
        f"# Scale benchmark results ({r.get('finished_at', '')}){' (quick: not figures)' if r.get('quick') else ''}",
        "",
        f"Machine: {m.get('cores')} cores, {m.get('cpu_model')}, {m.get('memory_gib')} GiB RAM, Python "
        f"{m.get('python')} ({m.get('os')}); load average (1/5/15 min) at start {m.get('load_average_1_5_15')}, "
        f"at end {r.get('load_average_end')}; per part (before, after): {'; '.join(loads)}. "
        f"Total run time {r.get('wall_s')} s.",
        *[
            f"Re-run since (figures replaced): {', '.join(run.get('selected', []))} at {run.get('started_at')} "
            f"({run.get('wall_s')} s, load average at start {run.get('machine', {}).get('load_average_1_5_15')}, "
            f"at end {run.get('load_average_end')})."
            for run in r.get("merged_runs", [])
        ],
    ]
    for name, part in (("write", _write), ("concurrency", _concurrency), ("recall", _recall)):
        if isinstance(r.get(name), dict):
            lines += part(r)
            lines.append(f"\n({name}: {r[name].get('wall_s')} s)")
    return "\n".join(lines) + "\n"

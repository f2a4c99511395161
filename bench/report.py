"""Targets (met or not) and the markdown table written next to the JSON."""

from __future__ import annotations

from typing import Any

__all__ = ["markdown", "targets"]


def _get(data: dict[str, Any], *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _target(name: str, value: Any, limit: str, met: bool | None, detail: str) -> dict[str, Any]:
    return {"target": name, "measured": value, "limit": limit, "met": met, "detail": detail}


def targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    """Each issue-5 target with its measured value and whether it is met (``None``: not measured in this run)."""
    out = []
    overhead = _get(r, "recall", "overhead_vs_raw_p50", "ours")
    paired = _get(r, "recall", "overhead_vs_raw_paired_median", "ours")
    out.append(
        _target(
            "recall overhead over the raw client at p50",
            overhead,
            "<= 0.05",
            None if overhead is None else overhead <= 0.05,
            f"(p50 ours - p50 raw) / p50 raw; median of paired differences / p50 raw = {paired}",
        )
    )
    p99 = _get(r, "after_turn", "summary", "ours", "p99_ms")
    out.append(
        _target("after_turn at p99 (ms)", p99, "< 1.0", None if p99 is None else p99 < 1.0, "time until it returns")
    )
    hung_p99 = _get(r, "degraded", "hung", "summary_after_breaker_open", "ours", "p99_ms")
    hung_max = _get(r, "degraded", "hung", "summary_after_breaker_open", "ours", "max_ms")
    out.append(
        _target(
            "per-turn cost while Hindsight is hung, breaker open (ms)",
            hung_max,
            "<= 5.0",
            None if hung_max is None else hung_max <= 5.0,
            f"worst turn after the breaker opened (p99 {hung_p99})",
        )
    )
    worst = None
    for fault in ("hung", "refused"):
        for side in ("directory", "sqs", "sqs_slow"):
            p99_spool = _get(r, "spools", fault, "summary_after_breaker_open", side, "p99_ms")
            if p99_spool is not None and (worst is None or p99_spool > worst[0]):
                worst = (p99_spool, fault, side)
    out.append(
        _target(
            "turn path while Hindsight is down, per spool, breaker open: p99 (ms)",
            None if worst is None else worst[0],
            "<= 5.0",
            None if worst is None else worst[0] <= 5.0,
            "worst p99 over the directory spool, the SQS queue and a slow SQS queue, hung and refused"
            + ("" if worst is None else f" ({worst[2]}, {worst[1]})"),
        )
    )
    first = _get(r, "first_turn", "ours_over_prior_total")
    out.append(
        _target(
            "first-turn memory cost, ours / prior art",
            first,
            "<= 0.25",
            None if first is None else first <= 0.25,
            "median over fresh processes of import + construction + first recall",
        )
    )
    added = _get(r, "working_memory", "added_p99_ms")
    out.append(
        _target(
            "working memory added per turn at p99 (ms)",
            added,
            "< 1.0",
            None if added is None else added < 1.0,
            "read the conversation, build the model's messages, record the exchange (full window, 1,000 sessions)",
        )
    )
    ours = _get(r, "outage", "counts", "ours")
    if ours is None:
        out.append(_target("retains lost after a 30 s outage", None, "0", None, "not measured"))
    else:
        lost = ours["turns_missing"]
        dupes = ours["turns_present_more_than_once"] + ours["unexpected_documents"]
        out.append(
            _target(
                "retains lost after a 30 s outage (100 turns)",
                lost,
                "0 lost, 0 duplicated",
                lost == 0 and dupes == 0,
                f"{ours['turns_present']}/{ours['turns']} turns in the bank, {dupes} duplicated",
            )
        )
    return out


def _ms(value: Any) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3g}" if value < 10 else f"{value:,.0f}" if value >= 1000 else f"{value:.1f}"


def _x(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3g}x"


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{value * 100:+.1f}%"


def markdown(r: dict[str, Any]) -> str:
    """The results as markdown tables (the figures BENCHMARKS.md quotes)."""
    m = r.get("machine", {})
    lines = [
        f"# Benchmark results ({r.get('finished_at', '')})",
        "",
        f"Machine: {m.get('cores')} cores, {m.get('cpu_model')}, {m.get('memory_gib')} GiB RAM, "
        f"Python {m.get('python')} ({m.get('os')}); load average at start {m.get('load_average_1_5_15')}, "
        f"at end {r.get('load_average_end')}. Total run time {r.get('wall_s')} s.",
        *[
            f"Re-run since (figures replaced): {', '.join(m.get('selected', []))} at {m.get('started_at')} "
            f"({m.get('wall_s')} s, load average at end {m.get('load_average_end')})."
            for m in r.get("merged_runs", [])
        ],
        "",
        "## Targets",
        "",
        "| Target | Measured | Limit | Met |",
        "|---|---|---|---|",
    ]
    for t in r.get("targets", []):
        met = "n/a" if t["met"] is None else ("**yes**" if t["met"] else "**NO**")
        lines.append(f"| {t['target']} | {t['measured']} | {t['limit']} | {met} |")
    rec = r.get("recall")
    if rec:
        s = rec["summary"]
        lines += [
            "",
            f"## 1. Recall path (`before_turn`), {rec['calls_per_side']} interleaved calls per side, same bank",
            "",
            "| Side | p50 ms | p90 ms | p99 ms | mean ms | over raw at p50 |",
            "|---|---|---|---|---|---|",
        ]
        for side, label in (
            ("raw", "raw `hindsight_client.arecall`"),
            ("ours", "ours"),
            ("prior", "prior art 0.1.3"),
            ("ours_user_token", "ours, caller's JWT as credential"),
        ):
            over = rec["overhead_vs_raw_p50"].get(side) if side in ("ours", "prior") else None
            lines.append(
                f"| {label} | {_ms(s[side]['p50_ms'])} | {_ms(s[side]['p90_ms'])} | {_ms(s[side]['p99_ms'])} | "
                f"{_ms(s[side]['mean_ms'])} | {_pct(over) if side in ('ours', 'prior') else ''} |"
            )
        lines.append("")
        lines.append(
            f"Paired-median overhead over raw: ours {_pct(rec['overhead_vs_raw_paired_median']['ours'])}, prior art "
            f"{_pct(rec['overhead_vs_raw_paired_median']['prior'])}. Ours / prior art at p50: "
            f"{_x(rec['ours_over_prior_p50'])}. Calls that returned memories: {rec['calls_with_memories']}."
        )
    at = r.get("after_turn")
    if at:
        s, t = at["summary"], at["summary_call_plus_tick"]
        c = at.get("summary_thread_cpu", {})
        lines += [
            "",
            f"## 2. `after_turn` on the turn path, {at['calls_per_side']} calls per side",
            "",
            "| Side | p50 ms | p99 ms | max ms | p50 / p99 ms incl. next loop tick | thread CPU p50 / p99 / max ms |",
            "|---|---|---|---|---|---|",
        ]
        for side in ("ours", "prior"):
            lines.append(
                f"| {side} | {_ms(s[side]['p50_ms'])} | {_ms(s[side]['p99_ms'])} | {_ms(s[side]['max_ms'])} | "
                f"{_ms(t[side]['p50_ms'])} / {_ms(t[side]['p99_ms'])} | "
                f"{_ms(_get(c, side, 'p50_ms'))} / {_ms(_get(c, side, 'p99_ms'))} / {_ms(_get(c, side, 'max_ms'))} |"
            )
        lines.append("")
        lines.append(
            f"Ours / prior art: {_x(at['ours_over_prior_p50'])} at p50, {_x(at['ours_over_prior_p99'])} at p99. "
            f"All our retains delivered within 120 s: {at['ours_all_delivered_within_120s']}; prior-art retain tasks "
            f"still unfinished after 120 s: {at['prior_tasks_unfinished_after_120s']}."
        )
        slow = at.get("slow_calls")
        if slow:
            lines.append("")
            lines.append(
                "Calls over 1 ms, and why the calling thread was off the CPU during them (voluntary context switch: "
                "it waited, for the GIL or a lock; involuntary: the OS ran another process): "
                + "; ".join(
                    f"{side} {slow[side]['over_1ms']} (waited {slow[side]['waited']}, preempted "
                    f"{slow[side]['preempted']}, neither {slow[side]['neither']})"
                    for side in ("ours", "prior")
                )
                + "."
            )
    dg = r.get("degraded")
    if dg:
        lines += [
            "",
            "## 3. Hindsight hung / refusing connections: memory cost per turn (`before_turn` + `after_turn`)",
            "",
            "| Fault | Side | turns | total s | mean ms/turn | p50 ms | p99 ms "
            "| after breaker open: p50 / p99 / max ms |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for fault in ("hung", "refused"):
            f = dg.get(fault)
            if not f:
                continue
            for side in ("ours", "prior"):
                s, a = f["summary"][side], f["summary_after_breaker_open"][side]
                label = side if side == "ours" else f"prior (timeout {f['prior_timeout_s']} s)"
                lines.append(
                    f"| {fault} | {label} | {s['n']} | {f['total_ms'][side] / 1000:.2f} | "
                    f"{_ms(f['mean_per_turn_ms'][side])} | {_ms(s['p50_ms'])} | {_ms(s['p99_ms'])} | "
                    f"{_ms(a['p50_ms'])} / {_ms(a['p99_ms'])} / {_ms(a['max_ms'])} |"
                )
        hung = dg.get("hung", {})
        default = hung.get("prior_default_timeout_turns")
        hung_cpu = _get(hung, "summary_thread_cpu_after_breaker_open", "ours") or {}
        lines.append("")
        lines.append(
            f"Our breaker opened after {hung.get('ours_breaker_open_after_turns')} turns (hung) and "
            f"{dg.get('refused', {}).get('ours_breaker_open_after_turns')} turns (refused). Our turn thread's own CPU "
            f"time per hung turn after the breaker opened: p50 {_ms(hung_cpu.get('p50_ms'))} / p99 "
            f"{_ms(hung_cpu.get('p99_ms'))} / max {_ms(hung_cpu.get('max_ms'))} ms."
            + (
                f" The prior art at its default 15 s timeout: {_ms(default['p50_ms'])} ms per hung turn "
                f"({default['n']} turns)."
                if default
                else ""
            )
        )
    ft = r.get("first_turn")
    if ft:
        md = ft["median"]
        lines += [
            "",
            f"## 4. First turn in a fresh process (median of {ft['processes_per_side']} processes per side)",
            "",
            "| Side | import ms | first recall ms | import + build + first recall ms | warm second recall ms | "
            "process wall ms | modules loaded |",
            "|---|---|---|---|---|---|---|",
        ]
        for side in ("ours", "prior"):
            lines.append(
                f"| {side} | {_ms(md[side]['import_ms'])} | {_ms(md[side]['first_recall_ms'])} | "
                f"{_ms(md[side]['total_ms'])} | {_ms(md[side]['second_recall_ms'])} | "
                f"{_ms(md[side]['process_wall_ms'])} | {ft['modules_loaded'][side]} |"
            )
        lines.append("")
        lines.append(f"Ours / prior art (first-turn memory cost): {_x(ft['ours_over_prior_total'])}.")
    og = r.get("outage")
    if og:
        lines += [
            "",
            f"## 5. Retains after a {og['outage_s']} s outage during {og['turns_per_side']} turns "
            f"({og['turns_during_outage']} turns during the outage)",
            "",
            "| Side | turns | in the bank | missing | more than once | unexpected documents |",
            "|---|---|---|---|---|---|",
        ]
        for side in ("ours", "prior"):
            c = og["counts"][side]
            lines.append(
                f"| {side} | {c['turns']} | {c['turns_present']} | {c['turns_missing']} | "
                f"{c['turns_present_more_than_once']} | {c['unexpected_documents']} |"
            )
        rec_ = og["ours_recovery"]
        lines.append("")
        lines.append(
            f"Ours: spooled after flush {rec_['spooled_after_flush']}, still spooled after 10 s of automatic replay "
            f"{rec_['spooled_before_explicit_replay']}, explicit `replay()`: {rec_['explicit_replay']}. "
            f"Per-turn cost during the outage (p50/p99 ms): ours "
            f"{_ms(og['turn_latency']['ours']['down'].get('p50_ms'))}"
            f"/{_ms(og['turn_latency']['ours']['down'].get('p99_ms'))}, prior art "
            f"{_ms(og['turn_latency']['prior']['down'].get('p50_ms'))}/"
            f"{_ms(og['turn_latency']['prior']['down'].get('p99_ms'))}."
        )
    iv = r.get("invocations")
    if iv:
        s = iv["summary"]
        jwt = iv["jwt_verification"]
        lines += [
            "",
            f"## 6. `/invocations` over HTTP (echo model, JWT mode), {iv['calls_per_side']} calls per side",
            "",
            "| Agent | p50 ms | p90 ms | p99 ms | first invocation ms | start to ready ms |",
            "|---|---|---|---|---|---|",
        ]
        for side in ("with_memory", "without_memory"):
            lines.append(
                f"| {side.replace('_', ' ')} | {_ms(s[side]['p50_ms'])} | {_ms(s[side]['p90_ms'])} | "
                f"{_ms(s[side]['p99_ms'])} | {_ms(iv['first_invocation_ms'][side])} | "
                f"{_ms(iv['process_start_to_ready_ms'][side])} |"
            )
        lines.append("")
        raw = iv.get("raw_recall_same_query") or {}
        lines.append(
            f"Memory adds {_ms(iv['memory_cost_p50_ms'])} ms at p50 ({_x(iv['with_over_without_p50'])}); the same "
            f"recall sent straight to Hindsight: p50 {_ms(raw.get('p50_ms'))} ms, p99 {_ms(raw.get('p99_ms'))} ms "
            f"(the agent with memory over that raw recall at p50: "
            f"{_ms(iv.get('agent_overhead_over_raw_recall_p50_ms'))} ms). "
            f"JWT verification, warm key cache: p50 {_ms(jwt['warm']['p50_ms'])} ms, "
            f"p99 {_ms(jwt['warm']['p99_ms'])} ms "
            f"over {jwt['warm']['n']} calls (first call with discovery + JWKS fetch: "
            f"{_ms(jwt['first_call_with_jwks_fetch_ms'])} ms)."
        )
    wm = r.get("working_memory")
    if wm:
        s = wm["summary"]
        lines += [
            "",
            f"## Working memory, {wm['turns']} in-process turns ({wm['history_turns']} exchanges, "
            f"{wm['history_chars']} characters in the conversation, {wm['sessions_held']} conversations held)",
            "",
            "| Per turn | p50 ms | p99 ms | max ms |",
            "|---|---|---|---|",
            *(
                f"| {name.replace('_', ' ')} | {_ms(v['p50_ms'])} | {_ms(v['p99_ms'])} | {_ms(v['max_ms'])} |"
                for name, v in s.items()
            ),
            "",
            f"Added by working memory: {_ms(wm['added_p50_ms'])} ms at p50, {_ms(wm['added_p99_ms'])} ms at p99.",
        ]
    bs = r.get("build")
    if bs:
        lines += ["", "## 7. Synthesis and bundles", ""]
        synth = bs.get("make_synth", {})
        lines.append(
            f"`make synth`: {synth.get('wall_s')} s (exit {synth.get('returncode')}, "
            f"{len(synth.get('templates', []))} templates); `make build` beforehand (untimed target, it only "
            f"rebuilds what changed): {bs.get('make_build', {}).get('wall_s')} s."
        )
        lines += ["", "| Artifact | files | unpacked MiB | zipped MiB |", "|---|---|---|---|"]
        for name, size in bs.get("sizes", {}).items():
            if size.get("present"):
                lines.append(
                    f"| {name} | {size['files']} | {size['bytes'] / 2**20:.2f} | {size['zip_bytes'] / 2**20:.2f} |"
                )
            else:
                lines.append(f"| {name} | missing | | |")
    sp = r.get("spools")
    if sp:
        lines += [
            "",
            "## 8. Hindsight down, per spool: the turn path and when each retain is safe (after the breaker opened)",
            "",
            "| Fault | Spool | turns | turn p50 / p99 / max ms | turn thread CPU p50 / p99 ms "
            "| safe (spooled) after p50 / p99 ms |",
            "|---|---|---|---|---|---|",
        ]
        labels = {
            "directory": "directory (`DirectorySpool`)",
            "sqs": "SQS (`SqsSpool`, moto server)",
            "sqs_slow": f"SQS, each send +{sp.get('slow_send_s', 0) * 1000:.0f} ms",
        }
        for fault in ("hung", "refused"):
            f = sp.get(fault)
            if not f:
                continue
            for side, label in labels.items():
                s, c, u = (
                    f["summary_after_breaker_open"][side],
                    f["summary_thread_cpu_after_breaker_open"][side],
                    f["summary_until_safe_after_breaker_open"][side],
                )
                lines.append(
                    f"| {fault} | {label} | {s.get('n')} | {_ms(s.get('p50_ms'))} / {_ms(s.get('p99_ms'))} / "
                    f"{_ms(s.get('max_ms'))} | {_ms(c.get('p50_ms'))} / {_ms(c.get('p99_ms'))} | "
                    f"{_ms(u.get('p50_ms'))} / {_ms(u.get('p99_ms'))} |"
                )
        lines.append("")
        lines.append(
            f"Breaker open after (turns, hung): {sp.get('hung', {}).get('breaker_open_after_turns')}. Spooled at the "
            f"end (hung): {sp.get('hung', {}).get('spooled')}. Load average at the end: {sp.get('load_average_end')}."
        )
    lines.append("")
    return "\n".join(lines)

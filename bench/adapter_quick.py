"""Quick numbers for the memory adapter: recall latency vs the raw client, cost of a turn while Hindsight is hung,
first turn in a fresh process vs the prior art's import. Not a test: prints a JSON report.

    .venv/bin/python -m bench.adapter_quick [--url http://127.0.0.1:8888 --key OPERATOR_KEY] [--calls 300]

Without ``--url`` it starts a throwaway local Hindsight (``localdev.hindsight``, ~20 s) and stops it afterwards.
Both sides send the same operator credential, so the server does the same work for each; calls alternate between
the adapter and the raw ``hindsight_client`` so drift on this shared machine hits both equally.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from localdev.faults import HungServer
from memory_adapter import HindsightRuntimeAdapter, TurnContext
from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.config import HindsightAgentCoreConfig
from memory_adapter.constants import DEFAULT_RECALL_BUDGET, DEFAULT_RECALL_MAX_TOKENS
from memory_adapter.identity.bank_ids import format_bank_id
from memory_adapter.transport import HttpTransport

AGENT = "bench"
USER = "bench-user"
FACTS = [
    "I prefer email over phone.",
    "My favourite programming language is Python.",
    "I live in Lisbon and work remotely.",
    "Our team deploys on Fridays only in emergencies.",
    "I am allergic to peanuts.",
    "My manager is called Dana.",
    "I drive an electric car.",
    "The staging database is PostgreSQL 16.",
    "I run every Tuesday and Thursday morning.",
    "My daughter plays the violin.",
]
QUERIES = ["How should we contact the user?", "What does the user drive?", "Where does the user live?"]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(values_ms: list[float]) -> dict[str, float]:
    return {
        "n": len(values_ms),
        "p50_ms": round(_pct(values_ms, 0.5), 2),
        "p90_ms": round(_pct(values_ms, 0.9), 2),
        "p99_ms": round(_pct(values_ms, 0.99), 2),
        "mean_ms": round(statistics.fmean(values_ms), 2),
    }


@contextlib.contextmanager
def _server(url: str | None, key: str | None) -> Iterator[tuple[str, str | None]]:
    if url:
        yield url, key
        return
    from localdev.hindsight import LocalHindsight, LocalHindsightConfig
    from localdev.token_issuer import TokenIssuer

    with TokenIssuer() as issuer:
        hindsight = LocalHindsight(LocalHindsightConfig.ephemeral(issuer_discovery_url=issuer.discovery_url))
        hindsight.start()
        try:
            yield hindsight.url, hindsight.operator_key
        finally:
            hindsight.stop()


def _adapter(url: str, key: str | None, **kwargs: Any) -> HindsightRuntimeAdapter:
    return HindsightRuntimeAdapter(
        AGENT, hindsight_api_url=url, api_key=key, spool_dir=tempfile.mkdtemp(), auto_replay=False, **kwargs
    )


async def _seed(url: str, key: str | None) -> str:
    adapter = _adapter(url, key)
    ctx = TurnContext(runtime_session_id="seed", user_id=USER, agent_name=AGENT)
    for n, fact in enumerate(FACTS):
        adapter.retain_for_turn(TurnContext("seed", USER, AGENT, request_id=f"seed-{n}"), result="Noted.", query=fact)
    await adapter.flush(60)
    bank_id = format_bank_id(user=USER, agent=AGENT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the server extracts facts asynchronously: poll until recall finds them
        if (await adapter.recall_for_turn(ctx, "Where does the user live?")).count >= 3:
            break
        await asyncio.sleep(0.5)
    docs = list(HindsightApi(HttpTransport(url), timeout=10, bearer=key).documents(bank_id))
    print(f"seeded {len(docs)} documents into {bank_id}", file=sys.stderr)
    await adapter.aclose()
    return bank_id


async def _recall_latency(url: str, key: str | None, bank_id: str, calls: int) -> dict[str, Any]:
    from hindsight_client import Hindsight

    adapter = _adapter(url, key)
    raw = Hindsight(base_url=url, api_key=key, timeout=15.0)
    ctx = TurnContext(runtime_session_id="bench", user_id=USER, agent_name=AGENT)
    ours: list[float] = []
    theirs: list[float] = []
    hits: list[int] = []
    for n in range(calls + 10):
        query = QUERIES[n % len(QUERIES)]
        started = time.perf_counter()
        recollection = await adapter.recall_for_turn(ctx, query)
        ours_ms = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        response = await raw.arecall(
            bank_id=bank_id, query=query, budget=DEFAULT_RECALL_BUDGET, max_tokens=DEFAULT_RECALL_MAX_TOKENS
        )
        raw_ms = (time.perf_counter() - started) * 1000
        if n >= 10:  # warm-up excluded
            ours.append(ours_ms)
            theirs.append(raw_ms)
            hits.append(recollection.count)
            assert not recollection.degraded, recollection.reason
            assert len(response.results) == recollection.count
    await raw.aclose()  # type: ignore[no-untyped-call]
    await adapter.aclose()
    return {"adapter": _summary(ours), "raw_client": _summary(theirs), "hits_per_recall": statistics.fmean(hits)}


async def _hung_overhead(turns: int) -> dict[str, Any]:
    with HungServer() as hung:
        # A hung server's turns are deadline misses: two of them open the breaker here, for good.
        settings = HindsightAgentCoreConfig(
            hindsight_api_url=hung.url,
            recall_timeout=0.5,
            timeout=0.5,
            breaker_failure_threshold=2,
            breaker_reset_timeout=3600,
            breaker_slow_threshold=2,
            breaker_slow_reset_timeout=3600,
            spool_dir=tempfile.mkdtemp(),
            auto_replay=False,
        )
        adapter = HindsightRuntimeAdapter(AGENT, settings=settings)
        ctx = TurnContext(runtime_session_id="hung", user_id=USER, agent_name=AGENT)
        before_open: list[float] = []
        for _ in range(2):  # these pay the deadline and open the breaker
            started = time.perf_counter()
            await adapter.recall_for_turn(ctx, "hello")
            before_open.append((time.perf_counter() - started) * 1000)
        recall_us: list[float] = []
        turn_us: list[float] = []
        for n in range(turns):
            started = time.perf_counter()
            recollection = await adapter.recall_for_turn(ctx, "hello")
            recalled = time.perf_counter()
            adapter.retain_for_turn(ctx, result=f"answer {n}", query="hello")
            done = time.perf_counter()
            assert recollection.reason == "breaker_open"
            recall_us.append((recalled - started) * 1e6)
            turn_us.append((done - started) * 1e6)
        await adapter.flush(60)
        spooled = adapter.spooled_retains
        await adapter.aclose()
    return {
        "first_turns_ms (deadline, opens the breaker)": [round(v, 1) for v in before_open],
        "breaker_open_recall_us": {"p50": round(_pct(recall_us, 0.5), 1), "p99": round(_pct(recall_us, 0.99), 1)},
        "breaker_open_turn_us (recall + queue retain)": {
            "p50": round(_pct(turn_us, 0.5), 1),
            "p99": round(_pct(turn_us, 0.99), 1),
        },
        "turns": turns,
        "spooled": spooled,
        "prior_art_per_turn_s": "15 (its HTTP timeout, by construction: no deadline, no breaker)",
    }


_OURS = """
import time; t0 = time.perf_counter()
import asyncio, tempfile
from memory_adapter import HindsightRuntimeAdapter, TurnContext
t1 = time.perf_counter()
a = HindsightRuntimeAdapter("bench", hindsight_api_url={url!r}, api_key={key!r}, spool_dir=tempfile.mkdtemp())
r = asyncio.run(a.recall_for_turn(TurnContext("s", {user!r}, "bench"), "Where does the user live?"))
t2 = time.perf_counter()
assert not r.degraded, r.reason
print((t1 - t0) * 1000, (t2 - t1) * 1000)
"""

_PRIOR_ART = """
import time; t0 = time.perf_counter()
import asyncio
from hindsight_client import Hindsight  # what hindsight-agentcore 0.1.3 imports on its first turn
t1 = time.perf_counter()
c = Hindsight(base_url={url!r}, api_key={key!r}, timeout=15.0)
r = asyncio.run(c.arecall(bank_id={bank!r}, query="Where does the user live?", budget="mid", max_tokens=1500))
t2 = time.perf_counter()
print((t1 - t0) * 1000, (t2 - t1) * 1000)
"""


def _fresh_process(url: str, key: str | None, bank_id: str, runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, template in (("adapter", _OURS), ("prior_art_path (hindsight_client)", _PRIOR_ART)):
        code = template.format(url=url, key=key, user=USER, bank=bank_id)
        imports, firsts, walls = [], [], []
        for _ in range(runs):
            started = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
            walls.append((time.perf_counter() - started) * 1000)
            import_ms, first_ms = (float(v) for v in out.split())
            imports.append(import_ms)
            firsts.append(first_ms)
        results[name] = {
            "import_ms_median": round(statistics.median(imports), 1),
            "first_recall_ms_median": round(statistics.median(firsts), 1),
            "import_plus_first_recall_ms_median": round(
                statistics.median(i + f for i, f in zip(imports, firsts, strict=True)), 1
            ),
            "process_wall_ms_median": round(statistics.median(walls), 1),
            "runs": runs,
        }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an already running Hindsight (default: start a throwaway one)")
    parser.add_argument("--key", help="credential for --url (operator key when isolation is on)")
    parser.add_argument("--calls", type=int, default=300, help="recalls per side (default 300)")
    parser.add_argument("--turns", type=int, default=2000, help="turns measured while hung (default 2000)")
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per side (default 7)")
    args = parser.parse_args()
    report: dict[str, Any] = {}
    with _server(args.url, args.key) as (url, key):
        bank_id = asyncio.run(_seed(url, key))
        report["recall_latency"] = asyncio.run(_recall_latency(url, key, bank_id, args.calls))
        report["hung_hindsight"] = asyncio.run(_hung_overhead(args.turns))
        report["first_turn_fresh_process"] = _fresh_process(url, key, bank_id, args.runs)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

"""6. ``/invocations`` p50/p99 with and without memory (echo model), and one JWT verification with a warm key cache.

Two agent processes (:mod:`bench.agent_server`) serve the real ``runtime_handler`` app over HTTP on loopback in JWT
mode, trusting the local issuer: one with memory (our adapter against the local Hindsight, the caller's token as the
per-turn credential), one with a memory that does nothing. Requests alternate between them, same token, same prompts.
The first invocation of the memory process (fresh process: imports, JWKS fetch, first recall) is reported separately.
Each round also sends the memory agent's recall straight to Hindsight (same token, query and parameters), so the
server's share of the "with memory" figure is visible. Before every round the bench waits (untimed) until Hindsight
has processed the retain the memory agent queued: on this 2-core machine Hindsight's in-process worker (fact
extraction, embeddings, consolidation: about a second of CPU per retain) competes with recall for the same cores, and
a client sending a turn every few milliseconds measures a saturated server (unpaced, a third of the turns hit the 2 s
recall deadline; with a backlog of 15 retains, recall p50 went from 70 to 400 ms). Deployed, workers run as separate
tasks and turns are seconds apart. The user's bank is seeded with the same 12 facts as the recall benchmark, and
before every round the documents the timed turns added are deleted (untimed): the echo model repeats every recalled
memory in its answer, which is retained and extracted again, so without pruning the bank snowballs (140+ memories per
recall after 20 turns) and the figure measures Hindsight assembling ever larger recalls instead of the agent. The JWT
figure times ``memory_adapter.identity.JwtVerifier.verify`` in this process after one warming call.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from bench.agent_process import bench_agent_env, wait_for_ping
from bench.bank import BankAdmin
from bench.env import AGENT
from bench.stats import Timer, percentile, ratio, summarize
from localdev.supervisor import free_port
from memory_adapter import hindsight_routes as routes
from memory_adapter.constants import DEFAULT_RECALL_BUDGET, DEFAULT_RECALL_MAX_TOKENS
from memory_adapter.hindsight_routes import bank_path

__all__ = ["measure"]

SIDES = ("with_memory", "without_memory")


def _start(mode: str, env: Any, workdir: Any) -> tuple[subprocess.Popen[bytes], str, float]:
    port = free_port()
    spool = workdir / f"spool-agent-{mode}"
    child_env = {
        **os.environ,
        **bench_agent_env(agent=AGENT, hindsight_url=env.url, discovery_url=env.issuer.discovery_url, spool_dir=spool),
        "PORT": str(port),
        "POWERTOOLS_METRICS_NAMESPACE": "Bench",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
    for name in ("HINDSIGHT_API_KEY", "HINDSIGHT_API_KEY_SECRET_ARN"):
        child_env.pop(name, None)
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.agent_server", mode],
        env=child_env,
        stdout=subprocess.DEVNULL,
        stderr=open(workdir / f"agent-{mode}.log", "wb"),  # noqa: SIM115 - lives as long as the process
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_ping(url, process, poll_s=0.05, timeout_s=60)
    except RuntimeError as exc:
        raise RuntimeError(f"the agent ({mode}) did not start ({exc}); see {workdir / f'agent-{mode}.log'}") from None
    return process, url, (time.perf_counter() - started) * 1000


def _prompt(n: int) -> str:
    return f"Please remember that my lucky number is {n}. What do you know about me?"


def _jwt_verify(env: Any, token: str, calls: int) -> dict[str, Any]:
    from localdev.token_issuer import LOCAL_CLIENT_ID
    from memory_adapter.identity import JwtSettings, JwtVerifier

    verifier = JwtVerifier(JwtSettings(discovery_url=env.issuer.discovery_url, allowed_clients=(LOCAL_CLIENT_ID,)))
    with Timer() as cold:
        verifier.verify(token)
    samples = []
    for _ in range(calls):
        with Timer() as timer:
            verifier.verify(token)
        samples.append(timer.ms)
    return {"first_call_with_jwks_fetch_ms": round(cold.ms, 3), "warm": summarize(samples)}


async def measure(
    env: Any,
    *,
    calls: int = 100,
    warmup: int = 5,
    settle_every: int = 1,
    jwt_calls: int = 1000,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Alternate requests between the two agents; report both distributions and the JWT cost."""
    from memory_adapter.identity import format_bank_id

    user = f"bench-invoke-{uuid.uuid4().hex[:8]}"
    token = env.mint(user)
    processes: dict[str, subprocess.Popen[bytes]] = {}
    urls: dict[str, str] = {}
    ready_ms: dict[str, float] = {}
    samples: dict[str, list[float]] = {side: [] for side in SIDES}
    recalled: dict[str, int] = dict.fromkeys(SIDES, 0)
    first: dict[str, float] = {}
    raw_recall: list[float] = []
    admin = BankAdmin(env.url, env.operator_key)
    bank = format_bank_id(user=user, agent=AGENT)
    settle_s = 0.0
    pruned = 0
    admin.seed(bank)
    try:
        for side in SIDES:
            processes[side], urls[side], ready_ms[side] = _start(
                "on" if side == "with_memory" else "off", env, env.workdir
            )
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(timeout=30) as client:

            def invoke(side: str, n: int) -> tuple[float, dict[str, Any]]:
                body = {"prompt": _prompt(n)}
                hdrs = {**headers, "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": f"bench-session-{user}-{'0' * 20}"}
                with Timer() as timer:
                    response = client.post(f"{urls[side]}/invocations", json=body, headers=hdrs)
                if response.status_code != 200:
                    raise RuntimeError(f"/invocations ({side}) answered {response.status_code}: {response.text[:300]}")
                return timer.ms, response.json()

            for side in SIDES:
                first[side], _ = invoke(side, -1)
            for n in range(warmup):
                for side in SIDES:
                    invoke(side, n)

            def recall_directly(n: int) -> float:
                query = {"query": _prompt(n), "budget": DEFAULT_RECALL_BUDGET, "max_tokens": DEFAULT_RECALL_MAX_TOKENS}
                with Timer() as timer:
                    client.post(recall_url, json=query, headers=headers).raise_for_status()
                return timer.ms

            recall_url = env.url + bank_path(bank, routes.RECALL)
            for n in range(calls):
                if n % settle_every == 0:
                    settle_s += admin.wait_settled([bank], timeout=60)
                pruned += admin.prune(bank)
                for k in range(len(SIDES) + 1):
                    if (n + k) % (len(SIDES) + 1) == len(SIDES):
                        # The same recall the memory agent sends, straight to Hindsight: the server's share.
                        raw_recall.append(recall_directly(n))
                        continue
                    side = SIDES[(n + k) % (len(SIDES) + 1)]
                    ms, answer = invoke(side, n)
                    samples[side].append(ms)
                    recalled[side] += int(answer.get("memory", {}).get("recalled", 0) > 0)
    finally:
        for process in processes.values():
            process.terminate()
        for process in processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
    summary = {side: summarize(samples[side]) for side in SIDES}
    log("  JWT verification (warm key cache) ...")
    return {
        "calls_per_side": calls,
        "settled_every_rounds": settle_every,
        "settle_wait_s": round(settle_s, 1),
        "turn_documents_pruned": pruned,
        "summary": summary,
        "raw_recall_same_query": summarize(raw_recall),
        "memory_cost_p50_ms": round(summary["with_memory"]["p50_ms"] - summary["without_memory"]["p50_ms"], 3),
        "agent_overhead_over_raw_recall_p50_ms": round(
            summary["with_memory"]["p50_ms"] - percentile(raw_recall, 50), 3
        ),
        "with_over_without_p50": ratio(summary["with_memory"]["p50_ms"], summary["without_memory"]["p50_ms"]),
        "turns_that_recalled_memories": recalled,
        "process_start_to_ready_ms": {side: round(v, 1) for side, v in ready_ms.items()},
        "first_invocation_ms": {side: round(v, 2) for side, v in first.items()},
        "jwt_verification": _jwt_verify(env, token, jwt_calls),
        "samples_ms": samples,
    }

"""Quick numbers for the agent (issue 3): /invocations p50 with and without memory (echo model), the first
invocation in a fresh process, and one JWT verification with a warm key cache. Not a test: prints a JSON report.

    .venv/bin/python -m bench.agent_quick [--hindsight-url http://127.0.0.1:8888] [--calls 200]

It needs a running local Hindsight with isolation trusting the background token issuer (``make local`` leaves both
running). The agent runs as a real ``python -m runtime_handler`` process on a free loopback port, in JWT mode with
``ALLOW_ANONYMOUS=true``: a request with the user's token runs a full turn (verify, recall, echo model, retain
scheduled), one without any credential runs the same turn without memory. Calls alternate between the two, so drift
on this shared machine hits both equally.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.agent_process import wait_for_ping
from localdev.agent import agent_env
from localdev.hindsight.config import LOCAL_AGENT_NAME
from localdev.supervisor import REPO_ROOT, free_port
from localdev.token_issuer import LOCAL_CLIENT_ID, default_data_dir, ensure_running, load_or_create_key, mint_token
from memory_adapter import hindsight_routes as routes
from memory_adapter.constants import DEFAULT_RECALL_BUDGET, DEFAULT_RECALL_MAX_TOKENS
from memory_adapter.hindsight_routes import bank_path
from memory_adapter.identity import JwtSettings, JwtVerifier, format_bank_id
from memory_adapter.identity.settings import discovery_url_for


def _start_agent(hindsight_url: str, issuer_url: str, spool: Path) -> tuple[subprocess.Popen[bytes], str, float]:
    port = free_port()
    env = dict(os.environ)
    env.update(agent_env(hindsight_url=hindsight_url, issuer_url=issuer_url, port=port, spool_dir=spool))
    env.update({"ALLOW_ANONYMOUS": "true", "POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING"})
    sources = [str(REPO_ROOT), str(REPO_ROOT / "layers" / "memory_adapter" / "src")]
    env["PYTHONPATH"] = os.pathsep.join(sources)
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "runtime_handler"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    wait_for_ping(url, process, poll_s=0.01)
    return process, url, time.perf_counter() - started


def _turn(client: httpx.Client, url: str, token: str | None, prompt: str) -> tuple[float, dict[str, Any]]:
    headers = {"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": f"bench-{uuid.uuid4().hex}"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    started = time.perf_counter()
    response = client.post(f"{url}/invocations", json={"prompt": prompt}, headers=headers)
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed, response.json()


def _ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p90_ms": round(ordered[int(len(ordered) * 0.9) - 1] * 1000, 2),
        "n": len(ordered),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agent_quick", description=__doc__.split("\n\n")[0])
    parser.add_argument("--hindsight-url", default="http://127.0.0.1:8888")
    parser.add_argument(
        "--throwaway", action="store_true", help="start an idle throwaway local Hindsight instead (~20-40 s)"
    )
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument(
        "--pause", type=float, default=0.2, help="seconds between call pairs, so the server digests the retains"
    )
    args = parser.parse_args(argv)

    issuer_url = ensure_running()
    if args.throwaway:
        from localdev.hindsight import LocalHindsight, LocalHindsightConfig

        hindsight = LocalHindsight(LocalHindsightConfig.ephemeral(issuer_discovery_url=discovery_url_for(issuer_url)))
        hindsight.start()
        try:
            return _run(args, issuer_url, hindsight.url)
        finally:
            hindsight.stop()
    return _run(args, issuer_url, args.hindsight_url)


def _run(args: argparse.Namespace, issuer_url: str, hindsight_url: str) -> int:
    key = load_or_create_key(default_data_dir())
    user = f"bench-{uuid.uuid4().hex[:8]}"
    token = mint_token(key, issuer=issuer_url, user=user, ttl=3600)
    report: dict[str, Any] = {"hindsight_url": hindsight_url, "load_average": os.getloadavg()}

    # One JWT verification with a warm key cache (in process, same code as the agent and the server extension).
    verifier = JwtVerifier(JwtSettings(discovery_url=discovery_url_for(issuer_url), allowed_clients=(LOCAL_CLIENT_ID,)))
    verifier.verify(token)
    rounds = 2000
    started = time.perf_counter()
    for _ in range(rounds):
        verifier.verify(token)
    report["jwt_verify_warm_us"] = round((time.perf_counter() - started) / rounds * 1e6, 1)

    with tempfile.TemporaryDirectory() as tmp, httpx.Client(timeout=30) as client:
        # First invocation in a fresh process: start-up to /ping, then the first turn with memory (discovery, JWKS
        # fetch, the adapter's threads and first connection are all paid here).
        process, url, startup_s = _start_agent(hindsight_url, issuer_url, Path(tmp) / "spool1")
        try:
            first_s, first = _turn(client, url, token, "I prefer email over phone.")
            report["fresh_process"] = {
                "start_to_ping_ms": round(startup_s * 1000, 1),
                "first_invocation_with_memory_ms": round(first_s * 1000, 1),
                "first_memory": first["memory"],
            }
        finally:
            process.terminate()
            process.wait(10)

        process, url, _ = _start_agent(hindsight_url, issuer_url, Path(tmp) / "spool2")
        try:
            first_anon_s, _ = _turn(client, url, None, "hello")
            report["fresh_process"]["first_invocation_without_memory_ms"] = round(first_anon_s * 1000, 1)
            for _ in range(10):  # warm both paths
                _turn(client, url, token, "warm up")
                _turn(client, url, None, "warm up")
            with_memory: list[float] = []
            without_memory: list[float] = []
            raw_recall: list[float] = []
            bank = format_bank_id(user=user, agent=LOCAL_AGENT_NAME)
            degraded = 0
            for i in range(args.calls):
                elapsed, body = _turn(client, url, token, f"How should you contact me? ({i})")
                with_memory.append(elapsed)
                degraded += bool(body["memory"]["degraded"])
                elapsed, _ = _turn(client, url, None, f"How should you contact me? ({i})")
                without_memory.append(elapsed)
                started = time.perf_counter()  # the same recall straight to Hindsight: the server's share
                client.post(
                    hindsight_url + bank_path(bank, routes.RECALL),
                    json={
                        "query": f"How should you contact me? ({i})",
                        "max_tokens": DEFAULT_RECALL_MAX_TOKENS,
                        "budget": DEFAULT_RECALL_BUDGET,
                    },
                    headers={"Authorization": f"Bearer {token}"},
                ).raise_for_status()
                raw_recall.append(time.perf_counter() - started)
                time.sleep(args.pause)
            report["invocations_with_memory"] = _ms(with_memory) | {"degraded": degraded}
            report["invocations_without_memory"] = _ms(without_memory)
            report["raw_hindsight_recall"] = _ms(raw_recall)
        finally:
            process.terminate()
            process.wait(10)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

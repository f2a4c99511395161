"""What per-user isolation costs per request: a microbenchmark of the checks, and the end-to-end delta.

    .venv/bin/python -m bench.isolation_overhead            # both parts (starts two local Hindsight servers)
    .venv/bin/python -m bench.isolation_overhead --micro    # only the in-process checks

Micro (run in the Hindsight virtualenv, where the extension classes live): the tenant extension's authentication of
a cached token and of a new one (RS256 signature check), and the validator hook a recall passes through.
End to end: two local servers, identical but for the extension, the same bank and facts; requests alternate between
them so machine load hits both alike; reports p50/p90 per request type and the difference.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FACTS = [f"Fact number {i}: the user's item {i} is stored on shelf {i % 7}." for i in range(20)]


def _timeit(fn: Callable[[], object], *, repeat: int) -> float:
    """Median seconds per call over ``repeat`` calls (after a warm-up)."""
    for _ in range(min(50, repeat)):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def micro() -> dict[str, float]:
    """In-process costs in microseconds (needs hindsight_api: run with the Hindsight venv's python)."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    from hindsight_api.extensions.operation_validator import RecallContext
    from hindsight_api.models import RequestContext
    from jwt.algorithms import RSAAlgorithm

    from hindsight_isolation.authn import Authenticator
    from hindsight_isolation.policy import Action, authorize
    from hindsight_isolation.principal import Kind, Principal
    from hindsight_isolation.settings import IsolationSettings
    from hindsight_isolation.validator import IsolationOperationValidator
    from memory_adapter.identity import format_bank_id

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update(kid="k1", use="sig", alg="RS256")
    config = {
        "jwt_issuer": "https://issuer.test",
        "jwt_static_jwks": json.dumps({"keys": [jwk]}),
        "jwt_allowed_clients": "app",
    }
    uncached = Authenticator(IsolationSettings.from_config({**config, "token_cache_size": "0"}))
    cached = Authenticator(IsolationSettings.from_config(config))
    now = int(time.time())
    claims = {
        "iss": "https://issuer.test",
        "sub": "alice",
        "client_id": "app",
        "token_use": "access",
        "exp": now + 3600,
    }
    token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})
    cached.authenticate(token)
    principal = Principal(Kind.USER, user="alice")
    bank = format_bank_id(user="alice", agent="support")
    validator = IsolationOperationValidator({})
    context = RequestContext(api_key=token, tenant_id=principal.encode())
    recall = RecallContext(bank_id=bank, query="q", request_context=context)

    def hook() -> object:
        # The hook never awaits: drive the coroutine by hand so no event-loop overhead is counted.
        coroutine = validator.validate_recall(recall)
        try:
            coroutine.send(None)
        except StopIteration as done:
            return done.value
        raise AssertionError("the hook awaited")

    results = {
        "authenticate, new token (RS256 verify + claims)": _timeit(lambda: uncached.authenticate(token), repeat=2000),
        "authenticate, cached token": _timeit(lambda: cached.authenticate(token), repeat=20000),
        "authorize (parse bank id, compare owner)": _timeit(
            lambda: authorize(principal, bank, Action.READ), repeat=20000
        ),
        "validator hook (decode principal + authorize + result)": _timeit(hook, repeat=20000),
    }
    return {name: seconds * 1e6 for name, seconds in results.items()}


def _run_micro_in_hindsight_venv() -> dict[str, float]:
    python = Path(os.environ.get("HINDSIGHT_VENV", REPO / ".venv-hindsight")) / "bin" / "python"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "layers/memory_adapter/src")])}
    out = subprocess.run(
        [str(python), "-m", "bench.isolation_overhead", "--micro-json"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=REPO,
    )
    parsed: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return parsed


def end_to_end(rounds: int) -> dict[str, dict[str, float]]:
    """p50/p90 milliseconds per request type, without and with the extension."""
    import httpx

    from localdev.hindsight import LocalHindsight, LocalHindsightConfig
    from localdev.token_issuer import TokenIssuer
    from memory_adapter import hindsight_routes as routes
    from memory_adapter.hindsight_routes import bank_path, item_path
    from memory_adapter.identity import format_bank_id

    with TokenIssuer() as issuer:
        plain = LocalHindsight(LocalHindsightConfig.ephemeral(isolation=False))
        isolated = LocalHindsight(LocalHindsightConfig.ephemeral(issuer_discovery_url=issuer.discovery_url))
        try:
            plain.start()
            isolated.start()
            token = issuer.mint("alice", ttl=3600)
            bank = format_bank_id(user="alice", agent="support")
            clients = {
                "without": httpx.Client(base_url=plain.url, timeout=60),
                "with": httpx.Client(base_url=isolated.url, headers={"Authorization": f"Bearer {token}"}, timeout=60),
            }
            for client in clients.values():
                for i, fact in enumerate(FACTS):
                    body = {"items": [{"content": fact, "document_id": f"d{i}"}]}
                    client.post(bank_path(bank, routes.MEMORIES), json=body).raise_for_status()
            requests: dict[str, Callable[[httpx.Client], httpx.Response]] = {
                "recall": lambda c: c.post(bank_path(bank, routes.RECALL), json={"query": "shelf 3"}),
                "list banks": lambda c: c.get(routes.BANKS),
                "get document": lambda c: c.get(item_path(bank, routes.DOCUMENTS, "d1")),
                "retain": lambda c: c.post(
                    bank_path(bank, routes.MEMORIES), json={"items": [{"content": "The user likes tea."}]}
                ),
            }
            samples: dict[str, dict[str, list[float]]] = {r: {"without": [], "with": []} for r in requests}
            hooks_before = _validator_seconds(clients["with"])
            for round_no in range(rounds):
                for name, request in requests.items():
                    if name == "retain" and round_no % 5:
                        continue  # retains are slow (LLM stand-in): sample one round in five
                    order = ("without", "with") if round_no % 2 else ("with", "without")
                    for side in order:
                        start = time.perf_counter()
                        request(clients[side]).raise_for_status()
                        samples[name][side].append((time.perf_counter() - start) * 1000)
            hooks_after = _validator_seconds(clients["with"])
        finally:
            plain.destroy()
            isolated.destroy()

    report: dict[str, dict[str, float]] = {}
    for name, sides in samples.items():
        row: dict[str, float] = {"n": float(len(sides["with"]))}
        for side, values in sides.items():
            ordered = sorted(values)
            row[f"{side} p50"] = statistics.median(ordered)
            row[f"{side} p90"] = ordered[int(0.9 * (len(ordered) - 1))]
        row["delta p50"] = row["with p50"] - row["without p50"]
        report[name] = row
    calls = hooks_after[1] - hooks_before[1]
    requests_made = sum(len(sides["with"]) for sides in samples.values())
    report["validator hooks, measured in the server"] = {
        "n": float(requests_made),
        "hook calls per request": calls / requests_made,
        "mean us per hook call": (hooks_after[0] - hooks_before[0]) / max(calls, 1) * 1e6,
        "us per request": (hooks_after[0] - hooks_before[0]) / requests_made * 1e6,
    }
    return report


def _validator_seconds(client: Any) -> tuple[float, float]:
    """Total seconds and calls of the operation-validator hooks, from the server's own histogram (/metrics)."""
    text = client.get("/metrics").text
    total = calls = 0.0
    for line in text.splitlines():
        if line.startswith("hindsight_validator_phase_duration_seconds_sum"):
            total += float(line.rsplit(" ", 1)[1])
        elif line.startswith("hindsight_validator_phase_duration_seconds_count"):
            calls += float(line.rsplit(" ", 1)[1])
    return total, calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--micro", action="store_true", help="only the in-process microbenchmark")
    parser.add_argument("--micro-json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=200, help="end-to-end rounds (default 200)")
    args = parser.parse_args(argv)
    if args.micro_json:
        print(json.dumps(micro()))
        return 0
    print("Microbenchmark (median per call):")
    for name, micros in _run_micro_in_hindsight_venv().items():
        print(f"  {name:<58} {micros:8.1f} us")
    if args.micro:
        return 0
    print(f"\nEnd to end ({args.rounds} alternating rounds; milliseconds):")
    for name, row in end_to_end(args.rounds).items():
        if "us per request" in row:
            print(
                f"  {name}: {row['hook calls per request']:.1f} hook calls per request, "
                f"{row['mean us per hook call']:.1f} us each, {row['us per request']:.1f} us per request"
            )
            continue
        print(
            f"  {name:<14} n={row['n']:.0f}  without p50 {row['without p50']:7.2f} p90 {row['without p90']:7.2f}  "
            f"with p50 {row['with p50']:7.2f} p90 {row['with p90']:7.2f}  delta p50 {row['delta p50']:+6.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

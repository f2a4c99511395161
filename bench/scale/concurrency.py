"""The real agent under 1, 8, 32 and 64 concurrent sessions, loopback only; then every turn checked in its bank.

Each session is a distinct user (their own JWT from the local issuer, their own bank) sending its turns back to
back, no think time: a closed loop, so the figures show where the server saturates. AgentCore runs every session
in its own microVM; here sessions share agent processes (``python -m bench.agent_server on brief``: the real
``runtime_handler`` app in JWT mode, our adapter with its defaults), at most :data:`SESSIONS_PER_AGENT` per process,
the adapter's recall threads, so no recall ever queues inside the agent. The model answers in two sentences
(``BriefModel``; the echo model's answers repeat every recalled memory, so its write load grows with each turn: the
issue's reproduction runs with it).

Every prompt carries a marker unique to its (user, turn). Afterwards, once the agents have stopped, their spools
have been replayed (:mod:`bench.scale.spooled`) and Hindsight's queue is empty: each user's bank holds exactly one
document per turn (the turn's request id: nothing lost, nothing duplicated; one still in a spool is durable and counted
apart), and each marker is in that user's bank and in no other (nothing crossed users).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import math
import os
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.agent_process import bench_agent_env
from bench.scale.admission_figures import admission_figures, gate_shed_ms, recall_figures
from bench.scale.client import HindsightClient
from bench.scale.corpus import fact
from bench.scale.database import Database
from bench.scale.server import ScaleServer, cpus_allowed
from bench.scale.spooled import deliver_spooled, document_tally, spooled_documents
from bench.stats import summarize
from localdev.supervisor import child_env, free_port, http_status, spawn, terminate, wait_until_ready
from memory_adapter.agentcore.request import REQUEST_ID_HEADER, SESSION_HEADER

__all__ = ["SESSIONS_PER_AGENT", "measure", "one_turn", "run_level"]

#: Sessions served by one agent process (the adapter's recall threads: ``memory_adapter._runtime.RECALL_THREADS``).
SESSIONS_PER_AGENT = 8
AGENT = "bench"
_CONNECTIONS = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"


class AgentPool:
    """``count`` agent processes serving the real app against ``server``; stopped on exit."""

    def __init__(self, server: ScaleServer, count: int, *, model: str, workdir: Path) -> None:
        self._server = server
        self._count = count
        self._model = model
        self._workdir = workdir
        self.urls: list[str] = []
        self.logs: list[Path] = []
        self._pids: list[int] = []
        self._spools: list[Path] = []

    def __enter__(self) -> AgentPool:

        assert self._server.issuer is not None

        for n in range(self._count):
            port = free_port()
            spool = self._workdir / f"spool-{uuid.uuid4().hex[:6]}"
            self._spools.append(spool)
            env = child_env(
                {
                    # verbose: every recall's latency in the log (recall_figures)
                    **bench_agent_env(
                        agent=AGENT,
                        hindsight_url=self._server.url,
                        discovery_url=self._server.issuer.discovery_url,
                        spool_dir=spool,
                        verbose=True,
                    ),
                    "PORT": str(port),
                    "POWERTOOLS_METRICS_NAMESPACE": "BenchScale",
                    "POWERTOOLS_LOG_LEVEL": "INFO",
                },
                adapter=True,
            )
            for name in ("HINDSIGHT_API_KEY", "HINDSIGHT_API_KEY_SECRET_ARN"):
                env.pop(name, None)
            log = self._workdir / f"agent-{n}-{port}.log"
            pid = spawn(
                [sys.executable, "-m", "bench.agent_server", "on", self._model], log_file=log, env=env, cwd=_ROOT
            )
            self._pids.append(pid)
            self.logs.append(log)
            self.urls.append(f"http://127.0.0.1:{port}")
        for url, pid, log in zip(self.urls, self._pids, self.logs, strict=True):  # all start at once, then wait
            wait_until_ready(
                functools.partial(_answers, f"{url}/ping"),
                name="the agent",
                pid=pid,
                log_file=log,
                timeout_s=180,
            )
        return self

    def __exit__(self, *exc: object) -> None:
        for pid in self._pids:
            terminate(pid, grace_s=15.0)

    def wait_idle(self, *, timeout: float = 600.0) -> float:
        """Wait until every agent's ``/ping`` says ``Healthy`` (not ``HealthyBusy``: retains still being delivered,
        which is what keeps an AgentCore session alive); return the seconds waited."""
        began = time.monotonic()
        pending = list(self.urls)
        while pending and time.monotonic() - began < timeout:
            pending = [url for url in pending if _ping_status(url) != "Healthy"]
            if pending:
                time.sleep(0.25)
        return time.monotonic() - began

    @property
    def pids(self) -> list[int]:
        """The agent processes."""
        return list(self._pids)

    def cpu_s(self) -> float:
        """CPU seconds the agent processes have used so far (the bench's own load, beside the server's)."""
        from bench.scale.server import process_cpu_s

        return sum(process_cpu_s(pid) for pid in self._pids)

    @property
    def spools(self) -> list[Path]:
        """The agents' spool directories (retains not delivered in time wait there, durable, for a replay)."""
        return list(self._spools)

    def spooled(self) -> int:
        """Retains left in the agents' spools (undelivered, kept on disk for a later replay)."""
        return sum(len(list(d.glob("pending/*.json"))) for d in self._spools)

    def recall_events(self) -> list[dict[str, Any]]:
        """Every recall as the adapter logged it (``recall.ok``, ``recall.degraded``: reason, ``latency_ms`` as the
        turn saw it, ``local`` for a shed window's skip), from the agents' logs; an unparsable line is
        ``{"reason": "unparsed"}``."""
        events: list[dict[str, Any]] = []
        for log in self.logs:
            for line in log.read_text(errors="replace").splitlines():
                if "recall.degraded" not in line and "recall.ok" not in line:
                    continue
                try:
                    event = json.loads(line[line.index("{") :])
                except (ValueError, json.JSONDecodeError):
                    event = {"reason": "unparsed"}
                if isinstance(event, dict):
                    events.append(event)
        return events


_ROOT = Path(__file__).resolve().parents[2]


def _answers(url: str) -> bool:
    return http_status(url, timeout=1.0) == 200


def _ping_status(url: str) -> str | None:
    try:
        with urllib.request.urlopen(f"{url}/ping", timeout=5) as response:  # noqa: S310 - loopback http
            return str(json.load(response).get("status"))
    except (OSError, ValueError):
        return None


async def one_turn(
    client: httpx.AsyncClient, url: str, user: str, token: str, turn: int, tag: str, first: int
) -> dict[str, Any]:
    """One turn of ``user`` (its ``turn``-th), timed as the user sees it."""
    session = f"bench-scale-{tag}-{user}-{'0' * 12}"
    marker = f"ref {tag}x{user}x{turn}".lower()
    text = fact(2_000_000 + first + turn).text
    prompt = f"{text[:-1]} ({marker}). What do you remember about me?"
    request_id = f"{tag}-{user}-{turn}"
    headers = {"Authorization": f"Bearer {token}", SESSION_HEADER: session, REQUEST_ID_HEADER: request_id}
    began = time.perf_counter()
    record: dict[str, Any] = {"user": user, "request_id": request_id, "marker": marker}
    try:
        response = await client.post(f"{url}/invocations", json={"prompt": prompt}, headers=headers)
        record["ms"] = (time.perf_counter() - began) * 1000
        if response.status_code != 200:
            record["error"] = f"HTTP {response.status_code}"
        else:
            memory = response.json().get("memory", {})
            record["degraded"] = bool(memory.get("degraded"))
            record["recalled"] = int(memory.get("recalled", 0))
            if memory.get("reason"):
                record["reason"] = str(memory["reason"])
    except httpx.HTTPError as exc:
        record["ms"] = (time.perf_counter() - began) * 1000
        record["error"] = type(exc).__name__
    return record


async def _session(
    client: httpx.AsyncClient, url: str, user: str, token: str, turns: int, tag: str, first: int
) -> list[dict[str, Any]]:
    """A closed loop: ``turns`` turns back to back."""
    return [await one_turn(client, url, user, token, turn, tag, first) for turn in range(turns)]


def _wait_documents(db: Database, tag: str, expected: int, *, quiet_s: float = 30.0, timeout: float = 600.0) -> float:
    """Wait until Hindsight holds ``expected`` documents of this level (or their count stops growing for ``quiet_s``):
    an adapter retrying under load delivers late, which is not a loss."""
    began = time.monotonic()
    last, changed = -1, began
    while time.monotonic() - began < timeout:
        count = int(db.sql(f"SELECT count(*) FROM documents WHERE id LIKE '{tag}-%'"))  # noqa: S608 - our own tag
        if count >= expected:
            break
        if count != last:
            last, changed = count, time.monotonic()
        elif time.monotonic() - changed > quiet_s:
            break
        time.sleep(0.5)
    return time.monotonic() - began


def _verify(
    server: ScaleServer, db: Database, tag: str, sent: Sequence[dict[str, Any]], spooled: set[str]
) -> dict[str, Any]:
    """Every turn's document in its user's bank exactly once (or, ``spooled``, durable in an agent's spool: counted
    apart, not lost); every marker in that bank and in no other."""
    from memory_adapter.identity import format_bank_id

    client = HindsightClient(server.url, server.operator_key)
    by_user: dict[str, set[str]] = {}
    for record in sent:
        by_user.setdefault(record["user"], set()).add(record["request_id"])
    found = {
        user: [str(d.get("id")) for d in client.documents(format_bank_id(user=user, agent=AGENT))] for user in by_user
    }
    documents = document_tally(by_user, found, spooled)
    client.close()
    rows = db.sql(  # tag: hex digits of our own making
        f"SELECT bank_id, substring(text from 'ref {tag}x[a-z0-9-]+x[0-9]+') FROM memory_units "  # noqa: S608
        f"WHERE text LIKE '%ref {tag}x%'"
    )
    places: dict[str, list[str]] = {}
    for line in rows.splitlines():
        bank, _, marker = line.partition("|")
        places.setdefault(marker, []).append(bank)
    in_own = missing_markers = spooled_markers = crossed = units = 0
    for record in sent:
        banks = places.get(record["marker"], [])
        own = format_bank_id(user=record["user"], agent=AGENT)
        units += len(banks)
        if own not in banks and record["request_id"] in spooled:
            spooled_markers += 1  # its retain waits in a spool: not lost, not yet in Hindsight
        elif own not in banks:
            missing_markers += 1
        else:
            in_own += 1
        if any(bank != own for bank in banks):
            crossed += 1
    return {
        "turns": len(sent),
        **documents,
        "markers_in_own_bank": in_own,
        "markers_missing": missing_markers,
        "markers_spooled": spooled_markers,
        "markers_in_another_bank": crossed,
        # One with a brief answer; the echo model repeats the prompt and every recalled memory, so more.
        "memories_per_marker": round(units / max(len(sent), 1), 2),
        # Nothing lost or mixed (a retain still spooled is durable on its agent's disk: counted apart, not lost).
        "ok": documents["documents_missing"] == documents["documents_unexpected"] == missing_markers == crossed == 0,
    }


def run_level(
    server: ScaleServer,
    db: Database,
    *,
    sessions: int,
    turns: int,
    model: str = "brief",
    log: Callable[[str], None] = print,
    rate: float | None = None,
) -> dict[str, Any]:
    """One level: ``sessions`` concurrent users x ``turns`` turns (back to back; with ``rate``, arriving at ``rate``
    turns/s in an open loop); latency, degraded turns, errors, then the check."""
    tag = uuid.uuid4().hex[:6]
    users = [f"u{tag}-{n}" for n in range(sessions)]
    tokens = {u: server.mint(u) for u in users}
    agents = math.ceil(sessions / SESSIONS_PER_AGENT)
    with AgentPool(server, agents, model=model, workdir=server.workdir) as pool:

        async def drive() -> list[dict[str, Any]]:
            limits = httpx.Limits(max_connections=sessions + 4, max_keepalive_connections=sessions + 4)
            async with httpx.AsyncClient(timeout=120, limits=limits) as client:
                if rate is not None:
                    from bench.scale.open_loop import paced

                    return await paced(client, pool.urls, users, tokens, turns, tag, rate)
                runs = [
                    _session(client, pool.urls[n // SESSIONS_PER_AGENT], u, tokens[u], turns, tag, n * turns)
                    for n, u in enumerate(users)
                ]
                return [r for batch in await asyncio.gather(*runs) for r in batch]

        connections: list[int] = []
        done = threading.Event()

        def sample() -> None:  # client connections PostgreSQL holds while the load runs
            while not done.wait(0.5):
                with contextlib.suppress(RuntimeError, ValueError):
                    connections.append(int(db.sql(_CONNECTIONS)))

        placement = {  # as the kernel applies it (Cpus_allowed_list), not as asked
            **server.placement(),
            "agents": sorted({str(cpus_allowed(pid)) for pid in pool.pids}),
            "load_generator": cpus_allowed(os.getpid()),
        }
        sampler = threading.Thread(target=sample, daemon=True)
        cpu_before = {**server.cpu_seconds(), "agents": pool.cpu_s(), "load_generator": time.process_time()}
        log_from = server.api_log.stat().st_size if server.api_log.exists() else 0
        began = time.monotonic()
        sampler.start()
        records = asyncio.run(drive())
        wall = time.monotonic() - began
        done.set()
        sampler.join()
        backlog = db.queue_depth()
        cpu_after = {**server.cpu_seconds(), "agents": pool.cpu_s(), "load_generator": time.process_time()}
        cpu = {k: round(v - cpu_before.get(k, 0.0), 1) for k, v in cpu_after.items()}
        delivered = pool.wait_idle()  # every retain handed to Hindsight (or spooled) before the agents stop
        arrived = _wait_documents(db, tag, len(records))
        drain = db.wait_drained()
        recalls = recall_figures(pool.recall_events())
    spooled = pool.spooled()  # the agents have stopped: what they could not deliver is on their disks
    replayed = deliver_spooled(server.url, pool.spools) if spooled else {}
    if replayed.get("delivered"):
        _wait_documents(db, tag, len(records), quiet_s=10.0)
        db.wait_drained()
    ok = [r["ms"] for r in records if "error" not in r]
    latency = summarize(ok)
    check = _verify(server, db, tag, records, spooled_documents(pool.spools))
    result: dict[str, Any] = {
        "sessions": sessions,
        "turns_per_session": turns,
        "rate": rate,
        "model": model,
        "agent_processes": agents,
        "turns": len(records),
        "wall_s": round(wall, 1),
        "turns_per_s": round(len(records) / wall, 2),
        "latency": latency,
        "degraded": sum(1 for r in records if r.get("degraded")),
        **recalls,
        "errors": sum(1 for r in records if "error" in r),
        "error_kinds": dict(Counter(r["error"] for r in records if "error" in r)),
        "recalled_something": sum(1 for r in records if r.get("recalled", 0) > 0),
        "queue_after_load": backlog,
        "agents_delivered_after_s": round(delivered, 1),
        "documents_arrived_after_s": round(arrived, 1),
        "retains_spooled_at_exit": spooled,
        "spool_replay_after_exit": replayed,  # delivered, rejected, remaining: the check counts what is left apart
        "drain_after_load_s": round(drain, 1),
        "placement": placement,
        "cpu_s_during_load": cpu,  # api, workers, postgres; the bench's own: agents, load_generator
        "gate_answered_shed_ms": gate_shed_ms(server.api_log, log_from),
        "postgres_connections_max": max(connections, default=None),
        "samples_ms": [round(r["ms"], 1) for r in records],
        **admission_figures(records),
        "check": check,
    }
    log(
        f"    {sessions} sessions x {turns}{f' at {rate}/s' if rate else ''}: p50 {latency.get('p50_ms')} ms, "
        f"p99 {latency.get('p99_ms')} ms, degraded "
        f"{result['degraded']}/{len(records)} (shed {result['shed']}), errors {result['errors']}, "
        f"{result['turns_per_s']} turns/s, check ok: {check['ok']}"
    )
    return result


def measure(
    server: ScaleServer,
    db: Database,
    *,
    levels: Sequence[int] = (1, 8, 32, 64),
    turns: Callable[[int], int] = lambda sessions: max(5, 40 // sessions),
    model: str = "brief",
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every level on the current layout of ``server``."""
    out: dict[str, Any] = {"shape": server.shape.describe(), "levels": []}
    for sessions in levels:
        out["levels"].append(run_level(server, db, sessions=sessions, turns=turns(sessions), model=model, log=log))
    return out

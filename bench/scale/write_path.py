"""The write path: retained turns per second one Hindsight worker absorbs per core, and how long a turn takes to
become recallable, idle and under load.

Turns are what our agent retains (``User: <prompt>\\nAssistant: <answer>``, one request per turn, ``async: true``),
spread over several users' banks. Three parts, on the shape the caller laid out (the deployed one: the API and one
``hindsight-worker``, each pinned to its own core):

1. ``idle``: one marker turn at a time into an idle server; the time from the retain request until a recall for
   the marker's made-up word returns it (recall polled every 0.2 s);
2. ``burst``: ``turns`` turns sent as fast as they are accepted; the queue drains at the worker's capacity. Turns per
   second of wall time, and CPU seconds per turn for the API (accepting), the worker (extracting) and PostgreSQL;
3. ``steady``: turns arriving at a fixed rate (a fraction of the burst capacity) for a while, with a marker every
   couple of seconds: time to recallable at that utilisation.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from bench.agent_server import BRIEF_ANSWER
from bench.scale.client import HindsightClient
from bench.scale.corpus import fact
from bench.scale.database import Database
from bench.scale.server import ScaleServer
from bench.stats import summarize

__all__ = ["measure", "turn_content"]


def turn_content(prompt: str, answer: str = BRIEF_ANSWER) -> str:
    """The memory our adapter retains for a turn (``memory_adapter`` with the user message included)."""
    return f"User: {prompt}\nAssistant: {answer}"


def _item(text: str, doc: str) -> dict[str, Any]:
    return {"content": text, "document_id": doc, "context": "agentcore-session", "metadata": {"bench": "write"}}


def _marker_turn(client: HindsightClient, bank: str) -> float:
    """Retain a marker turn and poll recall until it is found; the seconds that took (None-like 999 on timeout)."""
    word = f"Zorb{uuid.uuid4().hex[:8]}"
    began = time.monotonic()
    client.retain(bank, [_item(turn_content(f"My parrot {word} speaks fluent Klingon."), f"marker-{word}")])
    while time.monotonic() - began < 300:
        if any(word in r.text for r in client.recall(bank, f"What language does {word} speak?")):
            return time.monotonic() - began
        time.sleep(0.2)
    return float("inf")


def _send(client: HindsightClient, banks: Sequence[str], start: int, count: int, tag: str) -> None:
    for n in range(start, start + count):
        text = turn_content(f"{fact(500_000 + n).text} What do you remember about me?")
        client.retain(banks[n % len(banks)], [_item(text, f"{tag}-{n}")])


def measure(
    server: ScaleServer,
    db: Database,
    *,
    turns: int = 300,
    banks: int = 8,
    idle_markers: int = 3,
    steady_fractions: Sequence[float] = (0.5, 0.8),
    steady_s: float = 20.0,
    marker_every_s: float = 3.0,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the three parts on the current layout of ``server``."""
    tag = uuid.uuid4().hex[:6]
    names = [f"bench-scale:write-{tag}-{n}" for n in range(banks)]
    client = HindsightClient(server.url, server.operator_key)
    for bank in names:
        client.create_bank(bank)
    _send(client, names, 0, banks, f"{tag}-warm")  # first-write costs (entities, indexes) off the figures
    db.wait_drained()
    result: dict[str, Any] = {"shape": server.shape.describe(), "turns": turns, "banks": banks}

    idle = [_marker_turn(client, names[0]) for _ in range(idle_markers)]
    result["idle_recallable_s"] = summarize([s * 1000 for s in idle])
    log(f"    idle: recallable after {[round(s, 2) for s in idle]} s")

    cpu_before = server.cpu_seconds()
    began = time.monotonic()
    _send(client, names, 0, turns, f"{tag}-burst")
    accepted = time.monotonic() - began
    db.wait_drained(poll=0.1)
    wall = time.monotonic() - began
    cpu = {k: v - cpu_before.get(k, 0.0) for k, v in server.cpu_seconds().items()}
    capacity = turns / wall
    result["burst"] = {
        "accept_s": round(accepted, 2),
        "accepted_turns_per_s": round(turns / accepted, 1),
        "drain_wall_s": round(wall, 1),
        "turns_per_s": round(capacity, 2),
        "cpu_s": {k: round(v, 1) for k, v in cpu.items()},
        "cpu_ms_per_turn": {k: round(v * 1000 / turns, 1) for k, v in cpu.items()},
    }
    log(f"    burst: {result['burst']}")

    result["steady"] = []
    for fraction in steady_fractions:
        rate = capacity * fraction
        stop = threading.Event()
        sent = [0]

        def feed(
            rate: float = rate, stop: threading.Event = stop, sent: list[int] = sent, label: str = f"{tag}-s{fraction}"
        ) -> None:
            feeder = HindsightClient(server.url, server.operator_key)
            t0 = time.monotonic()
            while not stop.is_set():
                due = int((time.monotonic() - t0) * rate)
                if sent[0] < due:
                    _send(feeder, names, sent[0], 1, label)
                    sent[0] += 1
                else:
                    time.sleep(0.01)
            feeder.close()

        cpu_before = server.cpu_seconds()
        thread = threading.Thread(target=feed, daemon=True)
        thread.start()
        markers: list[float] = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < steady_s:
            markers.append(_marker_turn(client, names[1]))
            time.sleep(max(0.0, marker_every_s - markers[-1]))
        stop.set()
        thread.join()
        elapsed = time.monotonic() - t0
        db.wait_drained()
        cpu = {k: v - cpu_before.get(k, 0.0) for k, v in server.cpu_seconds().items()}
        recallable = summarize([m * 1000 for m in markers])
        entry = {
            "fraction_of_capacity": fraction,
            "offered_turns_per_s": round(rate, 2),
            "sent_turns": sent[0],
            "seconds": round(elapsed, 1),
            "recallable_ms": recallable,
            "cpu_utilisation": {k: round(v / elapsed, 2) for k, v in cpu.items()},
        }
        result["steady"].append(entry)
        log(f"    steady at {fraction:.0%} of capacity: recallable p50 {recallable.get('p50_ms')} ms")
    client.close()
    return result

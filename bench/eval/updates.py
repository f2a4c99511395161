"""``python -m bench.eval.updates`` (``make eval EVAL_ARGS="--data updates"``): knowledge updates, as LongMemEval's
category of that name: does recall put what is current first?

The set is generated in code from a seed (no licensed data). Each user states facts over four dated sessions a week
apart, among small talk and unrelated facts; in the last session some of them change, in the ways people say so:
a move ("I moved from Berlin to Lisbon"), a new job or employer, a changed favourite, a correction ("Actually, my
phone number is ..."), a stop ("I don't work at Acme anymore"), and a changed preference said with "prefer" (a form
:mod:`memory_adapter.currency` does not read: it shows what the rule misses). Every turn is retained through the
adapter with its own time, as the agent does; then, for each changed fact, a question about it is recalled:

* ``ours``: the injected block (``recall_for_turn``), which applies :func:`memory_adapter.currency.current_first`;
* ``hindsight``: the same recall's results in Hindsight's own order (what the block would be without that pass).

Per question: is the current statement in the block, does it come before the stale one (or is the stale one left
out), and is the stale one marked superseded. Writes ``<out>/eval-updates.json`` and ``eval-updates.md``. The
extraction is the local stand-in (``localdev.llm_stub``): one memory per statement, verbatim.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.env import BenchEnv
from memory_adapter import HindsightRuntimeAdapter, RetainOutcome, TurnContext
from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.config import resolve_settings
from memory_adapter.identity import format_bank_id
from memory_adapter.transport import HttpTransport

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
AGENT = "support"

#: How a fact changes: (kind, first statement, later statement, question). Slots are filled per user.
CHANGES: tuple[tuple[str, str, str, str], ...] = (
    ("moved", "I live in {city}.", "I moved from {city} to {city2}.", "Where do I live?"),
    ("new job", "I work as a {job}.", "I started a new job as a {job2}.", "What do I do for a living?"),
    ("new employer", "I work at {company}.", "I joined {company2} this month.", "Which company do I work for?"),
    ("favourite", "My favourite {thing} is {colour}.", "My favourite {thing} is {colour2} now.",
     "What is my favourite {thing}?"),
    ("correction", "My phone number is {phone}.", "Actually, my phone number is {phone2}.", "What is my phone number?"),
    ("stopped", "I volunteer at the {club}.", "I no longer volunteer at the {club}.", "Do I volunteer somewhere?"),
    ("preference", "I prefer {drink} in the morning.", "These days I prefer {drink2} in the morning.",
     "What do I drink in the morning?"),
)  # fmt: skip
SLOTS: dict[str, list[str]] = {
    "city": ["Berlin", "Lisbon", "Porto", "Oslo", "Leeds", "Lyon", "Austin", "Kyoto"],
    "job": ["nurse", "data engineer", "teacher", "carpenter", "pharmacist", "translator"],
    "company": ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay"],
    "thing": ["colour", "season", "board game"],
    "colour": ["teal", "orange", "violet", "green", "amber"],
    "phone": ["0151 2044 7781", "0160 5512 0093", "0172 8830 4410", "0176 2291 6605"],
    "club": ["animal shelter", "food bank", "library", "youth club"],
    "drink": ["green tea", "black coffee", "oat milk", "orange juice"],
}
#: Unrelated statements and chatter between the first statements and the changes.
FILLER = (
    "I have two kids who love football.",
    "My sister is visiting next week.",
    "I am learning to play the cello.",
    "We painted the kitchen last weekend.",
    "The weather has been lovely lately.",
    "Thanks for the help with the spreadsheet.",
    "I read a great book about whales.",
    "My bike needs a new chain.",
)
REPLIES = ("Noted.", "Got it, thanks.", "Good to know.")


@dataclass
class Change:
    kind: str
    before: str
    after: str
    question: str


@dataclass
class User:
    user: str
    sessions: list[list[str]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)


def _two(rng: random.Random, values: list[str]) -> tuple[str, str]:
    first, second = rng.sample(values, 2)
    return first, second


def scenario(*, users: int = 6, seed: int = 31) -> list[User]:
    """The generated users (deterministic for a seed): every change of :data:`CHANGES` per user."""
    rng = random.Random(seed)
    out = []
    for n in range(users):
        slots: dict[str, str] = {}
        for key, values in SLOTS.items():
            slots[key], slots[key + "2"] = _two(rng, values)
        slots["thing2"] = slots["thing"]
        changes = [Change(k, b.format(**slots), a.format(**slots), q.format(**slots)) for k, b, a, q in CHANGES]
        filler = list(FILLER)
        rng.shuffle(filler)
        first = [c.before for c in changes]
        rng.shuffle(first)
        later = [c.after for c in changes]
        rng.shuffle(later)
        half = len(first) // 2
        user = User(f"updates-{n}", changes=changes)
        user.sessions = [first[:half], first[half:] + filler[:2], filler[2:], later]
        out.append(user)
    return out


def _wait_processed(url: str, key: str, expected: dict[str, int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    api = HindsightApi(HttpTransport(url), timeout=30, bearer=key)
    for bank_id, count in expected.items():
        while time.monotonic() < deadline:
            if len(list(api.documents(bank_id))) >= count:
                break
            time.sleep(0.5)


def judge(texts: list[str], change: Change, block: str = "") -> dict[str, bool]:
    """What one ordered list of recalled texts does with ``change``."""
    current = next((i for i, t in enumerate(texts) if t.startswith(change.after.rstrip("."))), None)
    stale = next((i for i, t in enumerate(texts) if t.startswith(change.before.rstrip("."))), None)
    return {
        "current_found": current is not None,
        "current_first": current is not None and (stale is None or current < stale),
        "stale_found": stale is not None,
        "stale_marked": any(
            line.startswith(f"- {change.before} [") and "(superseded on" in line for line in block.splitlines()
        ),
    }


async def run(env: BenchEnv, users: list[User], log: Any = print) -> dict[str, Any]:
    settings = resolve_settings({"hindsight_api_url": env.url, "spool_dir": str(env.workdir / "spool")}, config=None)
    adapter = HindsightRuntimeAdapter(settings=settings)
    api = HindsightApi(HttpTransport(env.url), timeout=30)
    tokens = {u.user: env.mint(u.user) for u in users}
    expected: dict[str, int] = {}
    started = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    log(f"retaining {sum(len(s) for u in users for s in u.sessions)} turns of {len(users)} users ...")
    for u in users:
        bank_id = format_bank_id(user=u.user, agent=AGENT)
        for s, session in enumerate(u.sessions):
            for t, message in enumerate(session):
                ctx = TurnContext(f"{u.user}-s{s}", u.user, AGENT, credential=tokens[u.user], request_id=f"{s}-{t}")
                when = started + timedelta(days=7 * s, minutes=t)
                handle = adapter.retain_for_turn(ctx, result=REPLIES[t % len(REPLIES)], query=message, occurred_at=when)
                assert await handle is RetainOutcome.DELIVERED
                expected[bank_id] = expected.get(bank_id, 0) + 1
    log("waiting for extraction ...")
    _wait_processed(env.url, env.operator_key, expected, timeout=600)
    rows: dict[str, dict[str, dict[str, int]]] = {"ours": {}, "hindsight": {}}
    for u in users:
        bank_id = format_bank_id(user=u.user, agent=AGENT)
        for change in u.changes:
            ctx = TurnContext(f"{u.user}-q", u.user, AGENT, credential=tokens[u.user])
            recollection = await adapter.recall_for_turn(ctx, change.question)
            ours = judge([m.text for m in recollection.memories], change, recollection.text)
            raw = api.recall(
                bank_id,
                change.question,
                budget=settings.recall_budget,
                max_tokens=settings.recall_max_tokens,
                bearer=tokens[u.user],
            )
            theirs = judge([r.text for r in raw[: max(recollection.count, 1)]], change)
            for system, verdict in (("ours", ours), ("hindsight", theirs)):
                cell = rows[system].setdefault(change.kind, {"questions": 0} | dict.fromkeys(verdict, 0))
                cell["questions"] += 1
                for key, value in verdict.items():
                    cell[key] += int(value)
    await adapter.aclose()
    report: dict[str, Any] = {"users": len(users), "changes": [c[0] for c in CHANGES], "systems": {}}
    for system, by_kind in rows.items():
        total = {key: sum(cell[key] for cell in by_kind.values()) for key in next(iter(by_kind.values()))}
        report["systems"][system] = {"all": total, "by_change": by_kind}
    return report


def _share(cell: dict[str, int], key: str) -> str:
    return f"{cell[key] / cell['questions']:.2f}" if cell["questions"] else "-"


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Knowledge updates generated in code ({report['users']} users, one question per changed fact; local "
        "Hindsight 1.1.0, extraction stand-in). `ours` = the injected block; `hindsight` = the same recall in "
        "Hindsight's own order, cut to as many memories.",
        "",
        "| system | change | questions | current found | current first | stale found | stale marked |",
        "|---|---|---|---|---|---|---|",
    ]
    for system, data in report["systems"].items():
        for name, cell in [("all", data["all"]), *data["by_change"].items()]:
            lines.append(
                f"| {system} | {name} | {cell['questions']} | {_share(cell, 'current_found')} | "
                f"{_share(cell, 'current_first')} | {_share(cell, 'stale_found')} | {_share(cell, 'stale_marked')} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.eval.updates", description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=6, help="generated users (default 6)")
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS / "eval" / "updates",
        help="output folder (the published results are in bench/results)",
    )
    args = parser.parse_args(argv)
    users = scenario(users=args.users, seed=args.seed)
    with BenchEnv() as env:
        report = asyncio.run(run(env, users))
    report["seed"] = args.seed
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "eval-updates.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    text = markdown(report)
    (args.out / "eval-updates.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

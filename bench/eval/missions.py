"""``python -m bench.eval.missions``: what an extraction mission changes, on a support-style scenario made here.

The scenario is generated in code from a seed (no licensed data): customers talk to a support agent over a few dated
sessions; among greetings, thanks, weather, weekend and commute chatter they state preferences, make decisions and
report problems (some in the same message as the chatter). Every turn is retained through the adapter exactly as the
agent does (``retain_for_turn`` with the customer's token), once into banks of an agent **with** the mission
``cdk.json`` ships (``missions.assistant``, which Hindsight applies itself, as deployed: a user's token may set no bank
setting) and once into banks of an agent **without** one. Then, per condition:

* memories stored, and how many of them are small talk (a stored text that is one of the generated chatter
  sentences);
* for each preference, decision and problem, whether it is stored and whether the agent's pre-turn recall
  (``recall_for_turn``, k = what it injects) brings it back for a question about it;
* the characters of the injected block (what the model reads).

Writes ``<out>/eval-missions.json`` and ``eval-missions.md``. The extraction is the local stand-in
(``localdev.llm_stub``), which honours a mission the simple way :mod:`localdev.stub_missions` describes: the figures
measure the wiring (mission applied before the first retain, read by the extractor) and that stand-in, not a real
LLM's judgement.
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
from hindsight_isolation.settings import tenant_env
from memory_adapter import HindsightRuntimeAdapter, RetainOutcome, TurnContext
from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.config import resolve_settings
from memory_adapter.identity import format_bank_id
from memory_adapter.missions import Missions
from memory_adapter.transport import HttpTransport

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
WITH, WITHOUT = "support", "support-plain"

#: Chatter, by topic (``traffic`` and ``coffee`` are topics the stand-in's mission reading does not know: they show
#: what a simple reading misses).
SMALL_TALK = {
    "greeting": ["Good morning, hope you are doing well.", "Hello again, hope your week is going fine."],
    "thanks": ["Thanks so much for the quick answer.", "I really appreciate the help today."],
    "weather": ["It has been raining all week here in {city}.", "The weather in {city} is finally sunny."],
    "weekend": ["I spent the weekend hiking near {city}.", "We have a long weekend coming up in {city}."],
    "traffic": ["Traffic in {city} was terrible on the way in."],
    "coffee": ["I just got back from a coffee with the team."],
}
#: Facts by kind: (statement, question, the words that identify it in a memory).
FACTS: dict[str, list[tuple[str, str, str]]] = {
    "preference": [
        ("I prefer {a} over {b} for support updates.", "How does the customer want support updates?", "{a} over {b}"),
        ("I would rather get invoices as {doc} files.", "In what format does the customer want invoices?", "{doc}"),
        ("I like replies in {lang} when possible.", "Which language does the customer like replies in?", "in {lang}"),
    ],
    "decision": [
        ("We decided to move the team to the {plan} plan.", "Which plan did the customer choose?", "{plan} plan"),
        ("We chose {region} as the data region.", "Which data region did the customer pick?", "{region} as the"),
    ],
    "problem": [
        ("The {feature} export fails with error {code} every morning.",
         "Is the customer having problems with an export?", "error {code}"),
    ],
}  # fmt: skip
SLOTS = {
    "a": ["email", "chat", "text messages"],
    "b": ["phone calls", "voicemail", "letters"],
    "doc": ["PDF", "CSV", "XML"],
    "lang": ["German", "French", "Spanish", "Dutch"],
    "plan": ["annual", "enterprise", "team", "starter"],
    "region": ["Frankfurt", "Dublin", "Oregon", "Tokyo"],
    "feature": ["billing", "usage", "audit", "contacts"],
    "code": ["502", "429", "E17", "403"],
    "city": ["Leeds", "Oslo", "Porto", "Austin", "Lyon"],
}
REPLIES = ["Noted, thank you.", "Got it, I have updated your account.", "Thanks, I will pass that on."]


@dataclass
class Fact:
    kind: str
    text: str
    question: str
    needle: str


@dataclass
class Customer:
    user: str
    sessions: list[list[str]] = field(default_factory=list)  # user messages per session
    facts: list[Fact] = field(default_factory=list)
    chatter: list[str] = field(default_factory=list)


def scenario(*, customers: int = 6, seed: int = 23) -> list[Customer]:
    """The generated support conversations (deterministic for a seed)."""
    rng = random.Random(seed)
    out = []
    for n in range(customers):
        slots = {k: rng.choice(v) for k, v in SLOTS.items()}
        customer = Customer(user=f"customer-{n}")
        statements = [
            Fact(kind, s.format(**slots), q, needle.format(**slots))
            for kind, templates in FACTS.items()
            for s, q, needle in templates
        ]
        customer.facts = statements
        chatter = [s.format(**slots) for topic in SMALL_TALK.values() for s in topic]
        rng.shuffle(chatter)
        customer.chatter = chatter
        messages: list[str] = []
        facts, talk = list(statements), list(chatter)
        rng.shuffle(facts)
        while facts or talk:
            parts = []
            if talk and (not facts or rng.random() < 0.6):
                parts.append(talk.pop())
            if facts and rng.random() < 0.7:
                parts.append(facts.pop().text)
            if parts:
                messages.append(" ".join(parts))
        per_session = -(-len(messages) // 3)
        customer.sessions = [messages[i : i + per_session] for i in range(0, len(messages), per_session)]
        out.append(customer)
    return out


def _mission_json() -> str:
    defaults = json.loads((REPO / "cdk.json").read_text())["context"]["defaults"]
    return Missions.from_mapping({WITH: defaults["missions"]["assistant"]}).to_json()


def _stored(url: str, key: str, bank_id: str) -> list[str]:
    return [item["text"] for item in HindsightApi(HttpTransport(url), timeout=30, bearer=key).memories(bank_id)]


def _wait_processed(url: str, key: str, bank_ids: list[str], expected: dict[str, int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    api = HindsightApi(HttpTransport(url), timeout=30, bearer=key)
    for bank_id in bank_ids:
        while time.monotonic() < deadline:
            if len(list(api.documents(bank_id))) >= expected[bank_id]:
                break
            time.sleep(0.5)


async def run(env: BenchEnv, customers: list[Customer], log: Any = print) -> dict[str, Any]:
    settings = resolve_settings(
        {"hindsight_api_url": env.url, "spool_dir": str(env.workdir / "spool")},
        config=None,
    )
    adapter = HindsightRuntimeAdapter(settings=settings)
    tokens = {c.user: env.mint(c.user) for c in customers}
    expected: dict[str, int] = {}
    started = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    log(f"retaining {sum(len(s) for c in customers for s in c.sessions)} turns per condition ...")
    for agent in (WITH, WITHOUT):
        for c in customers:
            bank_id = format_bank_id(user=c.user, agent=agent)
            for s, session in enumerate(c.sessions):
                for t, message in enumerate(session):
                    ctx = TurnContext(
                        f"{c.user}-s{s}", c.user, agent, credential=tokens[c.user], request_id=f"{agent}-{s}-{t}"
                    )
                    when = started + timedelta(days=7 * s, minutes=t)
                    handle = adapter.retain_for_turn(
                        ctx, result=REPLIES[t % len(REPLIES)], query=message, occurred_at=when
                    )
                    assert await handle is RetainOutcome.DELIVERED
                    expected[bank_id] = expected.get(bank_id, 0) + 1
    banks = list(expected)
    log("waiting for extraction ...")
    _wait_processed(env.url, env.operator_key, banks, expected, timeout=600)
    report: dict[str, Any] = {}
    for agent in (WITH, WITHOUT):
        row: dict[str, Any] = {"memories": 0, "small_talk_stored": 0, "small_talk_total": 0, "block_chars": []}
        recalled_counts: list[int] = []
        by_kind: dict[str, dict[str, int]] = {k: {"total": 0, "stored": 0, "recalled": 0} for k in FACTS}
        for c in customers:
            bank_id = format_bank_id(user=c.user, agent=agent)
            stored = _stored(env.url, env.operator_key, bank_id)
            row["memories"] += len(stored)
            row["small_talk_total"] += len(c.chatter)
            row["small_talk_stored"] += sum(1 for s in c.chatter if any(s.rstrip(".!") in m for m in stored))
            for fact in c.facts:
                cell = by_kind[fact.kind]
                cell["total"] += 1
                cell["stored"] += any(fact.needle in m for m in stored)
                ctx = TurnContext(f"{c.user}-q", c.user, agent, credential=tokens[c.user])
                recollection = await adapter.recall_for_turn(ctx, fact.question)
                cell["recalled"] += any(fact.needle in m.text for m in recollection.memories)
                row["block_chars"].append(len(recollection.text))
                recalled_counts.append(recollection.count)
        row["kinds"] = by_kind
        chars = row.pop("block_chars")
        row["block_chars_mean"] = round(sum(chars) / len(chars)) if chars else 0
        row["recalled_per_question_mean"] = round(sum(recalled_counts) / max(1, len(recalled_counts)), 2)
        report["with_mission" if agent == WITH else "without_mission"] = row
    await adapter.aclose()
    return report


def markdown(report: dict[str, Any], customers: int, turns: int) -> str:
    lines = [
        f"Support-style scenario generated in code ({customers} customers, {turns} user turns each way; "
        "local Hindsight 1.1.0, extraction stand-in); `with` = `cdk.json`'s `missions.assistant`.",
        "",
        "| | memories stored | small talk stored | preferences stored / recalled | decisions stored / recalled "
        "| problems stored / recalled | memories injected per question (mean) | injected block (chars, mean) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in ("without_mission", "with_mission"):
        r = report[name]
        cells = [
            f"{r['kinds'][k]['stored']}/{r['kinds'][k]['total']} / {r['kinds'][k]['recalled']}/{r['kinds'][k]['total']}"
            for k in ("preference", "decision", "problem")
        ]
        lines.append(
            f"| {name.replace('_', ' ')} | {r['memories']} | {r['small_talk_stored']}/{r['small_talk_total']} | "
            + " | ".join(cells)
            + f" | {r['recalled_per_question_mean']} | {r['block_chars_mean']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.eval.missions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--customers", type=int, default=6, help="generated customers (default 6)")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    customers = scenario(customers=args.customers, seed=args.seed)
    turns = sum(len(s) for c in customers for s in c.sessions)
    # The server applies the mission (as every deployed Hindsight task does), the agent sends its users' tokens.
    with BenchEnv(server_env={tenant_env("missions"): _mission_json()}) as env:
        report = asyncio.run(run(env, customers))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "eval-missions.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    text = markdown(report, len(customers), turns)
    (args.out / "eval-missions.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

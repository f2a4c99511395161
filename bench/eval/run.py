"""One evaluation run: ingest each conversation, ask each question of every system, score what came back.

Systems (``SYSTEMS``):

- ``ours``: :meth:`memory_adapter.HindsightRuntimeAdapter.recall_for_turn`, exactly as the agent calls it; what is
  scored is the injected block (``Recollection.text``, its memories in order).
- ``ours+wm``: the same with the query the agent builds from the session's working memory
  (:func:`memory_adapter.recall_query.recall_query` with the question's ``lead``: on LoCoMo the previous, unrelated
  question, which measures the harm; on the generated set a real lead-in, which measures the gain on follow-ups).
- ``raw``: ``hindsight_client.Hindsight.arecall`` with the adapter's request plus ``trace=True``; the trace gives each
  retrieval arm before fusion (semantic, bm25, graph, temporal) and the fused (RRF) list, scored as systems too
  (``arm:<name>``, ``fused``).
- ``rag``: naive vector RAG over raw turns (MiniLM, the model the local Hindsight embeds with).
- ``bm25``: BM25 over raw turns.
- ``prior``: the prior-art adapter's ``before_turn`` (``hindsight-agentcore``; only where it is installed).

Every turn is retained through :meth:`~memory_adapter.HindsightRuntimeAdapter.retain_for_turn` as the turn's user
message (``speaker: text``), one document per turn whose id carries the turn id, so any memory maps back to the
turn it came from (``document_id``). Metrics per category: evidence recall@k and hit@k (k = distinct source turns,
best first), tokens of the block as the model receives it (o200k, Hindsight's own tokenizer), recall latency; and
per conversation: ingest time and the local server's CPU per turn.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import statistics
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.bank import BankAdmin
from bench.eval.baselines import BM25, rag_block, rag_line
from bench.eval.data import CATEGORIES, Conversation, DataSet, Question, Turn
from bench.eval.helper import VenvHelper
from bench.eval.judge import Judge
from memory_adapter.recall_query import recall_query

__all__ = ["EVAL_AGENT", "KS", "SYSTEMS", "Target", "Variant", "evaluate"]

EVAL_AGENT = "eval"
KS = (5, 10, 25)
SYSTEMS = ("ours", "ours+wm", "raw", "rag", "bm25", "prior")
_DOC_SEPARATOR = "|"
_ACK = "Noted."
#: Hindsight caches a bank's resolved config per process for 30 s: a changed setting applies after that.
_BANK_CONFIG_CACHE_S = 31.0


def _iso_time_block(memories: Sequence[Any]) -> str:
    """The block as it was before times were shortened (full ISO stamps), for ``"layout": "iso-times"``."""
    from memory_adapter.formatting import (
        MEMORY_BLOCK_CLOSE,
        MEMORY_BLOCK_NOTICE,
        MEMORY_BLOCK_OPEN,
        format_memories_as_bullets,
    )

    bullets = format_memories_as_bullets(memories)
    return f"{MEMORY_BLOCK_OPEN}\n{MEMORY_BLOCK_NOTICE}\n{bullets}\n{MEMORY_BLOCK_CLOSE}" if bullets else ""


#: Block layouts a variant can name (``{"adapter": {"layout": "iso-times"}}``) to compare against the default.
LAYOUTS: dict[str, Callable[[Sequence[Any]], str]] = {"iso-times": _iso_time_block}


@dataclass
class Target:
    """Where the memories live: a Hindsight URL and the credential that may write and read the eval's banks."""

    url: str
    credential: str | None
    pids: Callable[[], dict[str, int]] | None = None  # local server processes, for CPU per turn
    recall_settings: dict[str, Any] = field(default_factory=dict)  # extra adapter settings (budget, max tokens)


@dataclass(frozen=True)
class Variant:
    """Our recall once more with other settings, on the same ingested banks (no re-ingest): ``bank`` is a Hindsight
    bank-config update (e.g. ``{"enable_graph_retrieval": false}``), ``adapter`` adapter settings (e.g.
    ``{"recall_budget": "high"}``). Scored as ``ours@<name>``."""

    name: str
    bank: dict[str, Any] = field(default_factory=dict)
    adapter: dict[str, Any] = field(default_factory=dict)


@dataclass
class Scored:
    """One system's answer to one question."""

    system: str
    category: int
    turns: list[str]  # distinct source turn ids, best first
    block: str = ""
    latency_ms: float | None = None
    memories: int = 0
    correct: bool | None = None  # the judge's label, when answers are judged


def _document_id(conv: Conversation, turn: Turn) -> str:
    return f"eval{_DOC_SEPARATOR}{conv.sample_id}{_DOC_SEPARATOR}{turn.dia_id}"


def _turn_of(document_id: str | None) -> str | None:
    if not document_id or _DOC_SEPARATOR not in document_id:
        return None
    return document_id.rsplit(_DOC_SEPARATOR, 1)[1]


def _distinct(ids: Sequence[str | None]) -> list[str]:
    return list(dict.fromkeys(i for i in ids if i))


def _cpu_seconds(pids: dict[str, int]) -> float:
    """User + system CPU of these processes and their live descendants (Linux ``/proc``)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = defaultdict(list)
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry.name)] = fields
        children[int(fields[1])].append(int(entry.name))
    total, todo, seen = 0.0, list(pids.values()), set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in stats:
            continue
        seen.add(pid)
        fields = stats[pid]
        total += (int(fields[11]) + int(fields[12])) / tick
        todo.extend(children.get(pid, ()))
    return total


class Evaluation:
    """The state of one run: the target, the adapter, the helper, and every scored answer."""

    def __init__(
        self,
        target: Target,
        helper: VenvHelper,
        *,
        systems: Sequence[str],
        log: Callable[[str], None],
        variants: Sequence[Variant] = (),
        judge: Judge | None = None,
    ):
        self.target = target
        self.judge = judge
        self.variants = list(variants)
        self.helper = helper
        self.systems = [s for s in systems if s != "prior" or _prior_art() is not None]
        self.log = log
        self.admin = BankAdmin(target.url, target.credential)
        self.workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"eval-{uuid.uuid4().hex[:8]}"  # noqa: S108
        self.recall_request: dict[str, Any] = {}
        self.adapter = self._adapter(target.recall_settings)
        self.default_request = dict(self.recall_request)
        self.scored: list[Scored] = []
        self.ingest: list[dict[str, Any]] = []
        self.temporal_windows = 0
        self.traced_questions = 0

    def _adapter(self, settings: dict[str, Any]) -> Any:
        """Our adapter as an agent builds it; ``recall_budget`` / ``recall_max_tokens`` go into its recall policy."""
        from memory_adapter import HindsightRuntimeAdapter
        from memory_adapter.policies import RecallPolicy

        rest = {k: v for k, v in settings.items() if k not in ("recall_budget", "recall_max_tokens", "layout")}
        if "layout" in settings:
            rest["formatter"] = LAYOUTS[settings["layout"]]
        policy = RecallPolicy(budget=settings.get("recall_budget"), max_tokens=settings.get("recall_max_tokens"))
        adapter = HindsightRuntimeAdapter(
            agent_name=EVAL_AGENT,
            hindsight_api_url=self.target.url,
            api_key=self.target.credential,
            spool_dir=str(self.workdir / "spool"),
            recall_timeout=30.0,
            auto_replay=False,
            recall_policy=policy,
            **rest,
        )
        self.recall_request = {
            "budget": policy.budget or adapter.settings.recall_budget,
            "max_tokens": policy.max_tokens or adapter.settings.recall_max_tokens,
        }
        return adapter

    # ------------------------------------------------------------------ ingest

    async def ingest_conversation(self, conv: Conversation, bank_user: str) -> Any:
        """Retain every turn of ``conv`` into a fresh bank, wait until Hindsight has processed it; the bank's caller."""
        from memory_adapter.identity import Caller

        caller = Caller.of(user=bank_user, agent=EVAL_AGENT, credential=self.target.credential)
        dated = "occurred_at" in inspect.signature(self.adapter.retain_for_turn).parameters
        cpu_before = _cpu_seconds(self.target.pids()) if self.target.pids else None
        started = time.perf_counter()
        for n, turn in enumerate(conv.turns, start=1):
            kwargs: dict[str, Any] = {"occurred_at": turn.at} if dated else {}
            self.adapter.retain_for_turn(
                caller,
                query=turn.line,
                result=_ACK,
                session_id=f"{conv.sample_id}-session-{turn.session}",
                request_id=_document_id(conv, turn),
                **kwargs,
            )
            if n % 100 == 0 or n == len(conv.turns):
                await self.adapter.flush()
                self.log(f"    {conv.sample_id}: {n}/{len(conv.turns)} turns sent")
        await self.adapter.flush()
        settled_after = self.admin.wait_settled([caller.bank_id], timeout=3600.0)
        wall = time.perf_counter() - started
        cpu = (_cpu_seconds(self.target.pids()) - cpu_before) if self.target.pids and cpu_before is not None else None
        self.ingest.append(
            {
                "conversation": conv.sample_id,
                "turns": len(conv.turns),
                "wall_s": round(wall, 1),
                "ms_per_turn": round(1000 * wall / max(len(conv.turns), 1), 1),
                "server_cpu_ms_per_turn": round(1000 * cpu / len(conv.turns), 1) if cpu is not None else None,
                "settle_wait_s": round(settled_after, 1),
                "turn_time_sent": dated,
            }
        )
        self.log(f"    {conv.sample_id}: ingested {len(conv.turns)} turns in {wall:.0f} s")
        return caller

    def ingest_in_bulk(self, conversations: Sequence[Conversation], suffix: str) -> list[Any]:
        """Every conversation ingested at once, in bulk (:func:`bench.eval.ingest.bulk_ingest`); their callers."""
        from bench.eval.ingest import bulk_ingest
        from memory_adapter._hindsight_api import HindsightApi
        from memory_adapter.identity import Caller
        from memory_adapter.transport import HttpTransport

        pairs = [
            (c, Caller.of(user=f"eval-{c.sample_id}-{suffix}", agent=EVAL_AGENT, credential=self.target.credential))
            for c in conversations
        ]
        api = HindsightApi(HttpTransport(self.target.url), timeout=120)
        self.ingest += bulk_ingest(
            self.adapter, api, self.admin, pairs, document_id=_document_id, ack=_ACK, log=self.log
        )
        return [caller for _, caller in pairs]

    def memory_turns(self, bank_id: str) -> dict[str, str]:
        """Every memory of the bank: id -> source turn, and text -> source turn (for the prior art's text block)."""
        mapping: dict[str, str] = {}
        for item in self.admin.memories(bank_id):
            turn = _turn_of(item.get("document_id"))
            if turn:
                mapping[str(item.get("id"))] = turn
                mapping["text:" + str(item.get("text", "")).strip()] = turn
        return mapping

    # ------------------------------------------------------------------ questions

    async def ask(self, conv: Conversation, caller: Any, questions: Sequence[Question]) -> None:
        """Every question of ``conv`` to every system; answers go to ``self.scored`` in question order."""
        bank_id = caller.bank_id
        lines = [t.line for t in conv.turns]
        memory_turns = self.memory_turns(bank_id) if {"raw", "prior"} & set(self.systems) else {}
        bm25 = BM25(lines)
        rag_ranks: list[list[int]] = []
        if "rag" in self.systems:
            self.helper.index(lines)
            rag_ranks = self.helper.search([q.question for q in questions], k=200)
        raw = self._raw_client() if "raw" in self.systems else None
        prior = self._prior(caller) if "prior" in self.systems else None
        for index, q in enumerate(questions):
            if "ours" in self.systems:
                got = await self.adapter.recall_for_turn(caller, q.question)
                turns = _distinct([_turn_of(m.document_id) for m in got.memories])
                answer = Scored("ours", q.category, turns, got.text, got.latency_ms, got.count)
                if self.judge is not None:
                    reply = await asyncio.to_thread(self.judge.answer, q.question, got.text)
                    answer.correct = await asyncio.to_thread(self.judge.correct, q.question, q.answer, reply)
                self.scored.append(answer)
            if "ours+wm" in self.systems:
                query = recall_query(q.question, [q.lead] if q.lead else [])
                got = await self.adapter.recall_for_turn(caller, query)
                turns = _distinct([_turn_of(m.document_id) for m in got.memories])
                self.scored.append(Scored("ours+wm", q.category, turns, got.text, got.latency_ms, got.count))
            if raw is not None:
                await self._ask_raw(raw, bank_id, q, memory_turns)
            if rag_ranks:
                ranked = [conv.turns[i] for i in rag_ranks[index]]
                self.scored.append(Scored("rag", q.category, [t.dia_id for t in ranked], rag_block(ranked[:10])))
            if "bm25" in self.systems:
                ranked = [conv.turns[i] for i in bm25.rank(q.question, 200)]
                self.scored.append(Scored("bm25", q.category, [t.dia_id for t in ranked], rag_block(ranked[:10])))
            if prior is not None:
                started = time.perf_counter()
                text = await prior[0].before_turn(prior[1], query=q.question)
                latency = 1000 * (time.perf_counter() - started)
                turns = _distinct([memory_turns.get("text:" + _prior_text(b)) for b in text.split("\n\n") if b])
                self.scored.append(Scored("prior", q.category, turns, text, latency, text.count("\n\n") + bool(text)))

    async def ask_variants(self, caller: Any, questions: Sequence[Question]) -> None:
        """Our recall under each variant's settings (bank config patched, then reset), scored as ``ours@name``."""
        for variant in self.variants:
            adapter = self._adapter({**self.target.recall_settings, **variant.adapter})
            if variant.bank:
                self.admin.configure(caller.bank_id, variant.bank)
                await asyncio.sleep(_BANK_CONFIG_CACHE_S)
            try:
                for q in questions:
                    got = await adapter.recall_for_turn(caller, q.question)
                    turns = _distinct([_turn_of(m.document_id) for m in got.memories])
                    self.scored.append(
                        Scored(f"ours@{variant.name}", q.category, turns, got.text, got.latency_ms, got.count)
                    )
            finally:
                await adapter.aclose()
                if variant.bank:
                    self.admin.reset_config(caller.bank_id)
                    await asyncio.sleep(_BANK_CONFIG_CACHE_S)
            self.log(f"    variant {variant.name}: {len(questions)} questions asked")

    def _raw_client(self) -> Any:
        from hindsight_client import Hindsight

        return Hindsight(base_url=self.target.url, api_key=self.target.credential, timeout=60.0)

    async def _ask_raw(self, raw: Any, bank_id: str, q: Question, memory_turns: dict[str, str]) -> None:
        started = time.perf_counter()
        response = await raw.arecall(
            bank_id=bank_id,
            query=q.question,
            budget=self.default_request["budget"],
            max_tokens=self.default_request["max_tokens"],
            trace=True,
        )
        latency = 1000 * (time.perf_counter() - started)
        results = response.results or []
        turns = _distinct([_turn_of(getattr(r, "document_id", None)) for r in results])
        block = "\n".join(str(r.text) for r in results)
        self.scored.append(Scored("raw", q.category, turns, block, latency, len(results)))
        trace = response.trace or {}
        self.traced_questions += 1
        arms: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for arm in trace.get("retrieval_results") or []:
            for hit in arm.get("results") or []:
                turn = memory_turns.get(str(hit.get("node_id")))
                if turn:
                    arms[str(arm.get("method_name"))].append((int(hit.get("rank", 0)), turn))
        if arms.get("temporal"):
            self.temporal_windows += 1
        for name in ("semantic", "bm25", "graph", "temporal"):
            ranked = [turn for _, turn in sorted(arms.get(name, []), key=lambda pair: pair[0])]
            self.scored.append(Scored(f"arm:{name}", q.category, _distinct(ranked)))
        fused = [memory_turns.get(str(m.get("node_id"))) for m in trace.get("rrf_merged") or []]
        self.scored.append(Scored("fused", q.category, _distinct(fused)))

    def _prior(self, caller: Any) -> tuple[Any, Any] | None:
        prior = _prior_art()
        if prior is None:
            return None
        prior.configure(hindsight_api_url=self.target.url, api_key=self.target.credential, timeout=30.0)
        bank = caller.bank_id
        adapter = prior.HindsightRuntimeAdapter(agent_name=EVAL_AGENT, bank_resolver=lambda _ctx: bank)
        ctx = prior.TurnContext(runtime_session_id="eval", user_id="eval", agent_name=EVAL_AGENT)
        return adapter, ctx

    async def close(self) -> None:
        await self.adapter.aclose()


def _prior_text(bullet: str) -> str:
    """The memory text of one prior-art bullet ``- {text} [{type}] ({mentioned_at})``."""
    text = bullet.strip().removeprefix("- ")
    if text.endswith(")") and " (" in text:
        text = text.rsplit(" (", 1)[0]
    if text.endswith("]") and " [" in text:
        text = text.rsplit(" [", 1)[0]
    return text.strip()


def _prior_art() -> Any:
    try:
        import hindsight_agentcore  # type: ignore[import-not-found]
    except ModuleNotFoundError:
        return None
    return hindsight_agentcore


# --- scoring ---------------------------------------------------------------------------------------------------


def _recall(turns: Sequence[str], evidence: Sequence[str], k: int | None) -> tuple[float, float]:
    top = set(turns if k is None else turns[:k])
    found = sum(1 for e in evidence if e in top)
    return found / len(evidence), float(found > 0)


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 3) if values else None


def score(scored: Sequence[Scored], questions: Sequence[Question], helper: VenvHelper) -> dict[str, Any]:
    """Aggregate per system and category: recall@k, hit@k, block recall and tokens, equal-token RAG, latency."""
    systems = list(dict.fromkeys(s.system for s in scored))
    per_system = {name: [s for s in scored if s.system == name] for name in systems}
    blocks = [s.block for s in scored if s.block]
    counts = iter(helper.count(blocks)) if blocks else iter(())
    tokens = {id(s): next(counts) for s in scored if s.block}
    out: dict[str, Any] = {}
    for name, answers in per_system.items():
        assert len(answers) == len(questions), (name, len(answers), len(questions))
        rows: dict[str, Any] = {}
        for category in [0, *CATEGORIES]:
            pairs = [(a, q) for a, q in zip(answers, questions, strict=True) if category in (0, q.category)]
            if not pairs:
                continue
            row: dict[str, Any] = {"n": len(pairs)}
            for k in KS:
                rec = [_recall(a.turns, q.evidence, k) for a, q in pairs]
                row[f"recall@{k}"] = _mean([r for r, _ in rec])
                row[f"hit@{k}"] = _mean([h for _, h in rec])
            if name in ("ours", "ours+wm", "raw", "prior") or name.startswith("ours@"):
                block = [_recall(a.turns, q.evidence, None) for a, q in pairs]
                row["block_recall"] = _mean([r for r, _ in block])
                row["block_hit"] = _mean([h for _, h in block])
                row["memories"] = _mean([a.memories for a, _ in pairs])
            with_tokens = [tokens[id(a)] for a, _ in pairs if id(a) in tokens]
            if with_tokens:
                row["tokens_mean"] = _mean([float(t) for t in with_tokens])
                row["tokens_max"] = max(with_tokens)
            judged = [float(a.correct) for a, _ in pairs if a.correct is not None]
            if judged:
                row["judge_accuracy"] = _mean(judged)
            latencies = [a.latency_ms for a, _ in pairs if a.latency_ms is not None]
            if latencies:
                ordered = sorted(latencies)
                row["latency_p50_ms"] = round(ordered[len(ordered) // 2], 1)
                row["latency_p99_ms"] = round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1)
            rows["all" if category == 0 else CATEGORIES[category]] = row
        out[name] = rows
    return out


def equal_token_rag(
    scored: Sequence[Scored],
    questions: Sequence[Question],
    helper: VenvHelper,
    conversations: Sequence[Conversation],
    question_conv: Sequence[int],
    system: str = "ours",
) -> dict[str, Any]:
    """Naive RAG given as many tokens as ``system``'s block had for the same question: its recall, per category."""
    ours = [s for s in scored if s.system == system]
    rag = [s for s in scored if s.system == "rag"]
    if not ours or not rag:
        return {}
    our_tokens = helper.count([s.block for s in ours])
    lines_tokens: dict[str, int] = {}
    results: list[tuple[int, float, float]] = []
    for o_tokens, r, q, conv_index in zip(our_tokens, rag, questions, question_conv, strict=True):
        conv = conversations[conv_index]
        by_id = {t.dia_id: t for t in conv.turns}
        missing = [i for i in r.turns[:60] if f"{conv.sample_id}|{i}" not in lines_tokens]
        if missing:
            for i, n in zip(missing, helper.count([rag_line(by_id[i]) for i in missing]), strict=True):
                lines_tokens[f"{conv.sample_id}|{i}"] = n + 1
        taken: list[str] = []
        used = 0
        for i in r.turns[:60]:
            cost = lines_tokens[f"{conv.sample_id}|{i}"]
            if used + cost > o_tokens:
                break
            taken.append(i)
            used += cost
        rec, hit = _recall(taken, q.evidence, None)
        results.append((q.category, rec, hit))
    out: dict[str, Any] = {}
    for category in [0, *CATEGORIES]:
        rows = [(rec, hit) for c, rec, hit in results if category in (0, c)]
        if rows:
            out["all" if category == 0 else CATEGORIES[category]] = {
                "n": len(rows),
                "recall": _mean([r for r, _ in rows]),
                "hit": _mean([h for _, h in rows]),
            }
    return out


async def evaluate(
    data: DataSet,
    target: Target,
    helper: VenvHelper,
    *,
    systems: Sequence[str],
    log: Callable[[str], None],
    variants: Sequence[Variant] = (),
    judge: Judge | None = None,
    bulk: bool = False,
) -> dict[str, Any]:
    """Ingest every conversation of ``data``, ask every question of every system (and variant), and score; with a
    ``judge``, our injected block is also answered from and the answer judged (LoCoMo's LLM-judge protocol). With
    ``bulk``, every conversation is ingested first, in bulk (:mod:`bench.eval.ingest`), instead of turn by turn."""
    run = Evaluation(target, helper, systems=systems, log=log, variants=variants, judge=judge)
    questions: list[Question] = []
    question_conv: list[int] = []
    suffix = uuid.uuid4().hex[:6]
    callers: list[Any] = []
    try:
        if bulk:
            callers = run.ingest_in_bulk(data.conversations, suffix)
        for index, conv in enumerate(data.conversations):
            log(
                f"==> [{index + 1}/{len(data.conversations)}] {conv.sample_id}: {len(conv.turns)} turns, "
                f"{len(conv.questions)} questions"
            )
            caller = callers[index] if bulk else await run.ingest_conversation(conv, f"eval-{conv.sample_id}-{suffix}")
            started = time.perf_counter()
            await run.ask(conv, caller, conv.questions)
            await run.ask_variants(caller, conv.questions)
            questions.extend(conv.questions)
            question_conv.extend([index] * len(conv.questions))
            log(f"    {conv.sample_id}: {len(conv.questions)} questions asked in {time.perf_counter() - started:.0f} s")
    finally:
        await run.close()
    return {
        "data": {
            "name": data.name,
            "conversations": len(data.conversations),
            "turns": sum(len(c.turns) for c in data.conversations),
            "questions": len(questions),
            "corrected_questions": data.corrected_questions,
            "dropped_evidence_ids": sum(data.dropped_evidence_ids.values()),
            "questions_without_evidence": data.questions_without_evidence,
        },
        "systems": run.systems,
        "judge": judge.llm.name if judge is not None else None,
        "variants": {v.name: {"bank": v.bank, "adapter": v.adapter} for v in run.variants},
        "scores": score(run.scored, questions, helper),
        "rag_at_our_tokens": equal_token_rag(run.scored, questions, helper, data.conversations, question_conv),
        "rag_at_variant_tokens": {
            v.name: equal_token_rag(
                run.scored, questions, helper, data.conversations, question_conv, system=f"ours@{v.name}"
            )
            for v in run.variants
        },
        "ingest": run.ingest,
        "temporal_arm_share": round(run.temporal_windows / run.traced_questions, 3) if run.traced_questions else None,
        "adapter_settings": {
            "recall_budget": run.default_request["budget"],
            "recall_max_tokens": run.default_request["max_tokens"],
        },
    }

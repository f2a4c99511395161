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
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.bank import BankAdmin
from bench.eval.baselines import BM25, LAYOUTS, prior_art, prior_text, rag_block
from bench.eval.data import Conversation, DataSet, Question, Turn
from bench.eval.helper import VenvHelper
from bench.eval.ingest import cpu_seconds
from bench.eval.judge import Judge
from bench.eval.scoring import Scored, combine_runs, equal_token_rag, per_conversation, score
from memory_adapter.recall_query import recall_query

__all__ = ["EVAL_AGENT", "SYSTEMS", "Target", "Variant", "evaluate"]

EVAL_AGENT = "eval"
SYSTEMS = ("ours", "ours+wm", "raw", "rag", "bm25", "prior")
_DOC_SEPARATOR = "|"
_ACK = "Noted."
#: Hindsight caches a bank's resolved config per process for 30 s: a changed setting applies after that.
_BANK_CONFIG_CACHE_S = 31.0


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


def _document_id(conv: Conversation, turn: Turn) -> str:
    return f"eval{_DOC_SEPARATOR}{conv.sample_id}{_DOC_SEPARATOR}{turn.dia_id}"


def _turn_of(document_id: str | None) -> str | None:
    if not document_id or _DOC_SEPARATOR not in document_id:
        return None
    return document_id.rsplit(_DOC_SEPARATOR, 1)[1]


def _distinct(ids: Sequence[str | None]) -> list[str]:
    return list(dict.fromkeys(i for i in ids if i))


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
        self.systems = [s for s in systems if s != "prior" or prior_art() is not None]
        self.log = log
        self.admin = BankAdmin(target.url, target.credential)
        self.workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"eval-{uuid.uuid4().hex[:8]}"  # noqa: S108
        self.recall_request: dict[str, Any] = {}
        self.adapter = self._adapter(target.recall_settings)
        self.default_request = dict(self.recall_request)
        self.scored: list[Scored] = []
        self.recall_ms: list[float] = []  # each Hindsight recall of our latest recall_for_turn (see _count_recalls)
        self._count_recalls()
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

    def _count_recalls(self) -> None:
        """Time every Hindsight recall our adapter makes: more than one for a question means
        :mod:`memory_adapter.currency`'s follow-up searches ran, and their time is their latency cost."""
        api = self.adapter._runtime().api
        plain = api.recall

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return plain(*args, **kwargs)
            finally:
                self.recall_ms.append(1000 * (time.perf_counter() - started))

        api.recall = timed

    # ------------------------------------------------------------------ ingest

    async def ingest_conversation(self, conv: Conversation, bank_user: str) -> Any:
        """Retain every turn of ``conv`` into a fresh bank, wait until Hindsight has processed it; the bank's caller."""
        from memory_adapter.identity import Caller

        caller = Caller.of(user=bank_user, agent=EVAL_AGENT, credential=self.target.credential)
        dated = "occurred_at" in inspect.signature(self.adapter.retain_for_turn).parameters
        cpu_before = cpu_seconds(self.target.pids()) if self.target.pids else None
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
        cpu = (cpu_seconds(self.target.pids()) - cpu_before) if self.target.pids and cpu_before is not None else None
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

    def callers(self, conversations: Sequence[Conversation], suffix: str) -> list[Any]:
        """The callers whose banks hold ``conversations`` for the ingest named ``suffix``."""
        from memory_adapter.identity import Caller

        credential = self.target.credential
        return [
            Caller.of(user=f"eval-{c.sample_id}-{suffix}", agent=EVAL_AGENT, credential=credential)
            for c in conversations
        ]

    def ingest_in_bulk(self, conversations: Sequence[Conversation], suffix: str) -> list[Any]:
        """Every conversation ingested at once, in bulk (:func:`bench.eval.ingest.bulk_ingest`); their callers."""
        from bench.eval.ingest import bulk_ingest
        from memory_adapter._hindsight_api import HindsightApi
        from memory_adapter.transport import HttpTransport

        pairs = list(zip(conversations, self.callers(conversations, suffix), strict=True))
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
                self.recall_ms.clear()
                got = await self.adapter.recall_for_turn(caller, q.question)
                turns = _distinct([_turn_of(m.document_id) for m in got.memories])
                answer = Scored("ours", q.category, turns, got.text, got.latency_ms, got.count)
                answer.follow_up_ms = self.recall_ms[1:]
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
                turns = _distinct([memory_turns.get("text:" + prior_text(b)) for b in text.split("\n\n") if b])
                self.scored.append(Scored("prior", q.category, turns, text, latency, text.count("\n\n") + bool(text)))

    async def ask_variants(self, banks: Sequence[tuple[Conversation, Any]]) -> None:
        """Our recall under each variant's settings, every conversation's questions in order, scored as
        ``ours@name``; a variant's bank config is patched on every bank at once (one wait for Hindsight's config
        cache per variant, not per bank), then reset."""
        for variant in self.variants:
            adapter = self._adapter({**self.target.recall_settings, **variant.adapter})
            for _, caller in banks if variant.bank else ():
                self.admin.configure(caller.bank_id, variant.bank)
            if variant.bank:
                await asyncio.sleep(_BANK_CONFIG_CACHE_S)
            try:
                for conv, caller in banks:
                    for q in conv.questions:
                        got = await adapter.recall_for_turn(caller, q.question)
                        turns = _distinct([_turn_of(m.document_id) for m in got.memories])
                        self.scored.append(
                            Scored(f"ours@{variant.name}", q.category, turns, got.text, got.latency_ms, got.count)
                        )
            finally:
                await adapter.aclose()
                for _, caller in banks if variant.bank else ():
                    self.admin.reset_config(caller.bank_id)
                if variant.bank:
                    await asyncio.sleep(_BANK_CONFIG_CACHE_S)
            self.log(f"    variant {variant.name}: {sum(len(c.questions) for c, _ in banks)} questions asked")

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
        prior = prior_art()
        if prior is None:
            return None
        prior.configure(hindsight_api_url=self.target.url, api_key=self.target.credential, timeout=30.0)
        bank = caller.bank_id
        adapter = prior.HindsightRuntimeAdapter(agent_name=EVAL_AGENT, bank_resolver=lambda _ctx: bank)
        ctx = prior.TurnContext(runtime_session_id="eval", user_id="eval", agent_name=EVAL_AGENT)
        return adapter, ctx

    async def close(self) -> None:
        await self.adapter.aclose()


async def _run_once(
    data: DataSet, run: Evaluation, *, bulk: bool, log: Callable[[str], None], reuse: str | None = None
) -> tuple[list[Question], list[int]]:
    """One pass: fresh banks for every conversation (or those an earlier ingest ``reuse`` left), every question
    asked of every system (and variant)."""
    questions: list[Question] = []
    question_conv: list[int] = []
    suffix = reuse or uuid.uuid4().hex[:6]
    if reuse:
        callers: list[Any] = run.callers(data.conversations, reuse)
    else:
        callers = run.ingest_in_bulk(data.conversations, suffix) if bulk else []
    for index, conv in enumerate(data.conversations):
        log(
            f"==> [{index + 1}/{len(data.conversations)}] {conv.sample_id}: {len(conv.turns)} turns, "
            f"{len(conv.questions)} questions"
        )
        if not bulk and not reuse:
            callers.append(await run.ingest_conversation(conv, f"eval-{conv.sample_id}-{suffix}"))
        started = time.perf_counter()
        await run.ask(conv, callers[index], conv.questions)
        questions.extend(conv.questions)
        question_conv.extend([index] * len(conv.questions))
        log(f"    {conv.sample_id}: {len(conv.questions)} questions asked in {time.perf_counter() - started:.0f} s")
    await run.ask_variants(list(zip(data.conversations, callers, strict=True)))
    return questions, question_conv


async def evaluate(
    data: DataSet,
    new_run: Callable[[], Evaluation],
    *,
    bulk: bool = False,
    runs: int = 1,
    reuse: str | None = None,
) -> dict[str, Any]:
    """Ingest every conversation of ``data``, ask every question of every system (and variant), and score, in an
    :class:`Evaluation` ``new_run()`` sets up (e.g. ``functools.partial(Evaluation, target, helper, systems=...)``);
    with its ``judge``, our injected block is also answered from and the answer judged (LoCoMo's LLM-judge protocol).
    With ``bulk``, every conversation is ingested first, in bulk (:mod:`bench.eval.ingest`), instead of turn by turn;
    ``runs`` > 1 repeats it all on fresh banks: the runs' mean, with their spread (:func:`.scoring.combine_runs`)."""
    passes: list[dict[str, Any]] = []
    for number in range(1, runs + 1):
        run = new_run()
        log = run.log
        if runs > 1:
            log(f"=== run {number} of {runs}")
        try:
            questions, question_conv = await _run_once(data, run, bulk=bulk, log=log, reuse=reuse)
        finally:
            await run.close()
        passes.append(
            {
                "scores": score(run.scored, questions, run.helper),
                "per_conversation": per_conversation(run.scored, questions, question_conv, data.conversations),
                "rag_at_our_tokens": equal_token_rag(
                    run.scored, questions, run.helper, data.conversations, question_conv
                ),
                "rag_at_variant_tokens": {
                    v.name: equal_token_rag(
                        run.scored, questions, run.helper, data.conversations, question_conv, system=f"ours@{v.name}"
                    )
                    for v in run.variants
                },
                "ingest": run.ingest,
                "temporal_arm_share": round(run.temporal_windows / run.traced_questions, 3)
                if run.traced_questions
                else None,
            }
        )
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
        "judge": run.judge.llm.name if run.judge is not None else None,
        "variants": {v.name: {"bank": v.bank, "adapter": v.adapter} for v in run.variants},
        **combine_runs(passes),
        "adapter_settings": {
            "recall_budget": run.default_request["budget"],
            "recall_max_tokens": run.default_request["max_tokens"],
        },
    }

"""Issue 31 item 2 against the real local Hindsight: the adapter asks for a wide candidate list and injects it in its
own order (memory_adapter.rerank), cut to the block's budget; with no candidate tokens, Hindsight's order as it is."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory_adapter import RetainOutcome
from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.identity import format_bank_id
from memory_adapter.policies import RecallPolicy
from memory_adapter.rerank import rerank
from memory_adapter.transport import HttpTransport

pytestmark = pytest.mark.integration

_SAID = (
    "I went hiking in the Alps last summer with my sister.",
    "My favourite food is a spicy green curry.",
    "I adopted a dog from the shelter and named him Pixel.",
    "I play the cello in a community orchestra on Thursdays.",
    "My sister works as a nurse at the city hospital.",
    "I am reading a long novel about a lighthouse keeper.",
    "Our team shipped the billing service rewrite in March.",
    "I started learning Japanese with an app every morning.",
)
_QUESTION = "What did I name my dog?"


async def test_the_block_is_the_re_ranked_candidates_cut_to_its_budget(
    local_hindsight, make_adapter, user_ctx, run_id, bank
):
    # GIVEN a user who said eight unrelated things, one turn a day
    user = f"ranker-{run_id}"
    writer = make_adapter(local_hindsight.url, timeout=30.0)
    start = datetime(2026, 3, 2, 9, tzinfo=UTC)
    for n, said in enumerate(_SAID):
        ctx = user_ctx(user, f"s{n}", request_id=f"{user}-t{n}")
        handle = writer.retain_for_turn(ctx, result="Noted.", query=said, occurred_at=start + timedelta(days=n))
        assert await handle is RetainOutcome.DELIVERED
    bank_id = format_bank_id(user=user, agent="support")
    bank.wait_for_documents(bank_id, {f"{user}-t{n}" for n in range(len(_SAID))})
    asking = user_ctx(user, "s9")
    # WHEN the agent recalls with a small block (default candidate tokens) and without re-ranking
    policy = RecallPolicy(max_tokens=150)
    ranked = await make_adapter(local_hindsight.url, recall_timeout=20.0, recall_policy=policy).recall_for_turn(
        asking, _QUESTION
    )
    plain = await make_adapter(
        local_hindsight.url, recall_timeout=20.0, recall_policy=policy, recall_candidate_tokens=0
    ).recall_for_turn(asking, _QUESTION)
    # THEN the re-ranked block is the head of the whole candidate list in the re-ranker's order, about the dog first
    api = HindsightApi(HttpTransport(local_hindsight.url), timeout=20.0)
    candidates = api.recall(bank_id, _QUESTION, budget="mid", max_tokens=16000, bearer=asking.credential)
    texts = [m.text for m in ranked.memories]
    assert texts == [m.text for m in rerank(_QUESTION, candidates)][: len(texts)]
    assert "dog" in texts[0] or "Pixel" in texts[0], texts
    # and without candidate tokens the block is Hindsight's own answer to the block's budget, in its order
    own = api.recall(bank_id, _QUESTION, budget="mid", max_tokens=150, bearer=asking.credential)
    assert [m.text for m in plain.memories] == [m.text for m in own][: plain.count]
    assert ranked.count > 0
    assert plain.count > 0

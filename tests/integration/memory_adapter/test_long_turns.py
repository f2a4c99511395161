"""Issue 22 item 4: after a 16,000-character turn the bank holds the user's statements only.

Hindsight cuts a long retained turn into chunks (3,000 characters by default) wherever its sentence-aware splitter
likes; a chunk from the middle of the agent's answer once lost its ``Assistant:`` line and the extractor stored the
echo model's "nothing recalled" line as a user fact. Every line of a retained turn now names its speaker.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from memory_adapter import RetainOutcome
from memory_adapter.identity import format_bank_id
from memory_adapter.tools.echo import NOTHING_RECALLED


def _memory_texts(url: str, key: str | None, bank_id: str) -> list[str]:
    request = urllib.request.Request(f"{url}/v1/default/banks/{bank_id}/memories/list?limit=500")  # noqa: S310
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
        items: list[dict[str, Any]] = json.loads(response.read())["items"]
    return [str(item["text"]) for item in items]


async def test_a_long_turn_stores_the_users_statements_and_nothing_the_agent_said(
    local_hindsight, make_adapter, user_ctx, run_id, bank
):
    # GIVEN a turn of ~16,000 characters: a long user message and a longer echoing answer, with line breaks
    user = f"long-{run_id}"
    facts = [f"My storage unit number {n} holds box {n * 7} of winter clothes." for n in range(40)]
    question = "\n".join(facts)
    answer = f"{NOTHING_RECALLED}\n" + "\n".join(
        f"You said: {fact} The agent notes paragraph {n} of its reply here." for n, fact in enumerate(facts * 3)
    )
    assert len(question) + len(answer) > 16_000
    adapter = make_adapter(local_hindsight.url, timeout=30.0)
    ctx = user_ctx(user, "s", request_id=f"{user}-turn")
    # WHEN it is retained and Hindsight has extracted every chunk
    assert await adapter.retain_for_turn(ctx, result=answer, query=question) is RetainOutcome.DELIVERED
    bank_id = format_bank_id(user=user, agent="support")
    bank.wait_for_documents(bank_id, {f"{user}-turn"})
    texts = _memory_texts(local_hindsight.url, local_hindsight.operator_key, bank_id)
    # THEN every one of the user's statements is a memory, and no memory holds anything of the answer
    assert {f for f in facts if any(t.startswith(f) for t in texts)} == set(facts)
    leaked = [t for t in texts if "Nothing relevant" in t or "agent notes" in t or "You said" in t]
    assert leaked == []

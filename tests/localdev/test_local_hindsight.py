"""The ``local_hindsight`` fixture serves a real Hindsight: retain, then recall by paraphrase."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from hindsight_client import Hindsight

pytestmark = pytest.mark.integration

FACTS = {
    "contact": "Alex prefers email over phone calls.",
    "budget": "The quarterly budget review happens in the Berlin office.",
    "dog": "My dog is allergic to chicken.",
}


@pytest.fixture(scope="module")
def client(local_hindsight) -> Iterator[Hindsight]:
    # The operator key: this test's bank is not a per-user bank (isolation lets only the operator reach it).
    hindsight = Hindsight(base_url=local_hindsight.url, api_key=local_hindsight.operator_key, timeout=120)
    yield hindsight
    hindsight.close()  # type: ignore[no-untyped-call]


@pytest.fixture(scope="module")
def bank(client) -> str:
    bank_id = f"localdev-test-{uuid.uuid4().hex[:10]}"
    for key, text in FACTS.items():
        client.retain(bank_id, text, document_id=key)
    return bank_id


def test_retain_stores_each_sentence_verbatim(client, bank):
    # WHEN listing what the retains stored
    listed = client.list_memories(bank, limit=50)

    # THEN the stand-in turned each sentence into exactly one memory, word for word
    assert sorted(m.text for m in listed.items) == sorted(FACTS.values())


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Which food should the pet avoid?", "dog"),
        ("Where is the finance meeting held?", "budget"),
    ],
)
def test_recall_matches_a_paraphrase_with_no_shared_words(client, bank, query, expected):
    # WHEN recalling with a paraphrase that shares no word with the stored sentence
    response = client.recall(bank, query)

    # THEN that sentence is the best match: lexical search cannot find it, real embeddings do
    texts = [r.text for r in response.results]
    assert texts, "recall returned nothing"
    assert texts[0] == FACTS[expected]


def test_reflect_answers_deterministically_from_recalled_memories(client, bank):
    # WHEN reflecting on a question only one memory answers
    answer = client.reflect(bank, "Which food should the pet avoid?").text

    # THEN the stand-in's answer quotes what the reflect agent's recall returned
    assert answer.startswith("From memory: ")
    assert FACTS["dog"] in answer

"""The memory tools without a server: schemas carry no identity, arguments are checked, ``forget`` selects
conservatively and deletes or invalidates, every failure is a result (never an exception), and every request goes
to the caller's bank with the caller's credential."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory_adapter.formatting import RecalledMemory
from memory_adapter.identity.caller import Caller
from memory_adapter.tools import TOOL_NAMES, TOOL_SPECS, MemoryTools, ToolInputError, matches, parse_arguments
from memory_adapter.tools.forgetting import select

from .scripted_hindsight import CODE_ID, EMAIL_ID, TEA_ID, ScriptedHindsight

ALEX = Caller.of(user="user-alex", agent="support", credential="token-a")


@pytest.fixture
def hindsight() -> ScriptedHindsight:
    return ScriptedHindsight()


@pytest.fixture
def tools(hindsight: ScriptedHindsight) -> MemoryTools:
    return MemoryTools(hindsight, settle_s=0.0, sleep=lambda _: None)


def test_no_schema_names_an_identity_and_none_accepts_extra_arguments() -> None:
    assert {"recall", "reflect", "remember", "forget", "list_recent"} == TOOL_NAMES
    for spec in TOOL_SPECS:
        schema = json.dumps(spec.input_schema).lower()
        for word in ("user", "tenant", "bank", "agent", "token"):
            assert f'"{word}' not in schema, (spec.name, word)
        assert spec.input_schema["additionalProperties"] is False
        assert spec.converse()["toolSpec"]["inputSchema"]["json"] == spec.input_schema


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("recall", {}, "missing argument(s) query"),
        ("recall", {"query": "x", "user_id": "bob"}, "unknown argument(s) user_id"),
        ("recall", {"query": "  "}, "must not be blank"),
        ("recall", {"query": 3}, "must be a string"),
        ("recall", {"query": "x", "max_results": True}, "whole number"),
        ("recall", {"query": "x", "max_results": 99}, "from 1 to 20"),
        ("remember", {"text": "x", "kind": "turn"}, "must be one of preference"),
        ("remember", {"text": "a\x00b"}, "NUL"),
        ("forget", {}, "give 'query'"),
        ("forget", {"memory_ids": ["../../banks/bob"]}, "is not a memory id"),
        ("forget", {"memory_ids": []}, "list of 1 to 20"),
        ("shell", {}, "unknown tool"),
        ("recall", ["x"], "JSON object"),
    ],
)
def test_bad_arguments_say_what_is_wrong(name: str, arguments: Any, message: str) -> None:
    with pytest.raises(ToolInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_arguments(name, arguments)


def test_forget_descriptions_select_conservatively() -> None:
    assert matches("that I prefer email", "I prefer email over phone, so please do not call me.")
    assert matches("my preferences about email", "I prefer email.")
    assert not matches("that I prefer email", "I prefer tea.")
    assert not matches("that I", "I prefer tea.")  # nothing significant: selects nothing


def _fact(text: str, similarity: float | None) -> RecalledMemory:
    return RecalledMemory(id=text, text=text, type="world", document_id=None, similarity=similarity)


def test_forget_selects_the_memory_a_description_means_by_words_and_similarity() -> None:
    # GIVEN a user's memories with the similarity recall gave each to the description (all-MiniLM-L6-v2 figures)
    dog, cat = _fact("My dog is called Pixel.", 0.46), _fact("My cat sleeps all day.", 0.35)
    name = _fact("My name is Alex.", None)  # under Hindsight's semantic floor: no similarity
    peanuts, nut = _fact("I'm allergic to peanuts.", 0.66), _fact("My daughter has a nut allergy.", 0.59)
    berlin, sister = _fact("I live in Berlin.", 0.32), _fact("My sister lives in Lisbon.", None)
    email, tea = _fact("I prefer email over phone.", 0.57), _fact("I prefer tea.", 0.16)
    job = _fact("I work as a data engineer.", 0.34)
    # THEN a paraphrase finds its memory: a shared word and similarity, or a shared stem ("allergy", "allergic")
    assert select("my dog's name", [name, cat, dog]) == [dog]
    assert select("peanut allergy", [nut, peanuts, dog]) == [peanuts]
    # AND of memories holding every word, only the nearest (and any as near) go
    assert select("where I live", [sister, berlin, job]) == [berlin]
    assert select("that I prefer email", [tea, email]) == [email]
    # AND a description that means none of them selects nothing, however near the search's hits are
    assert select("my cat's name", [dog, name]) == []
    assert select("my job", [job, dog]) == []  # no shared word and not similar enough alone
    assert select("my job", [_fact("I work as a data engineer.", 0.61)]) != []  # very similar alone


def test_forget_deletes_a_document_wholly_forgotten(tools: MemoryTools, hindsight: ScriptedHindsight) -> None:
    result = tools.call(ALEX, "forget", {"query": "that I prefer email"})
    assert result.data == {"forgotten": [{"id": EMAIL_ID, "text": "I prefer email over phone.", "how": "deleted"}]}
    assert result.text == 'Forgot 1 memory:\n- "I prefer email over phone." (deleted with its source)'
    deleted = [(r.path, r.body, r.bearer) for r in hindsight.calls("/documents/turn-1", "DELETE")]
    assert deleted == [(f"/v1/default/banks/{ALEX.bank_id}/documents/turn-1", None, "token-a")]
    assert set(hindsight.facts) == {TEA_ID, CODE_ID}


def test_forget_invalidates_a_fact_whose_document_keeps_others(
    tools: MemoryTools, hindsight: ScriptedHindsight
) -> None:
    result = tools.call(ALEX, "forget", {"query": "locker code"})
    assert [f["how"] for f in result.data["forgotten"]] == ["invalidated"]
    patch = next(r for r in hindsight.requests if r.method == "PATCH")
    assert patch.path.endswith(f"/memories/{CODE_ID}")
    assert patch.body == {"state": "invalidated", "reason": "forgotten at the user's request"}
    assert not any(r.method == "DELETE" for r in hindsight.requests)


def test_forget_by_unknown_id_forgets_nothing_and_says_so(tools: MemoryTools) -> None:
    result = tools.call(ALEX, "forget", {"memory_ids": ["99999999-9999-9999-9999-999999999999"]})
    assert result.data == {"forgotten": []}
    assert result.text == "Nothing was forgotten: no memory of yours has those ids."


def test_every_request_is_the_callers_bank_with_the_callers_credential(
    tools: MemoryTools, hindsight: ScriptedHindsight
) -> None:
    for name, arguments in [
        ("recall", {"query": "email"}),
        ("reflect", {"query": "contact?"}),
        ("remember", {"text": "I like green tea.", "kind": "preference"}),
        ("list_recent", {"kind": "preference"}),
        ("forget", {"query": "green tea"}),
    ]:
        assert not tools.call(ALEX, name, arguments).is_error, name
    assert {r.bearer for r in hindsight.requests} == {"token-a"}
    assert all(r.path.startswith(f"/v1/default/banks/{ALEX.bank_id}/") for r in hindsight.requests)
    remembered = next(r.body for r in hindsight.requests if r.method == "POST" and r.path.endswith("/memories"))
    assert remembered["items"][0]["tags"][:3] == ["user:user-alex", "agent:support", "kind:preference"]


def test_failures_are_results_never_exceptions(tools: MemoryTools, hindsight: ScriptedHindsight) -> None:
    assert tools.call(Caller.of(user="u", agent="a"), "recall", {"query": "x"}).error == "unauthorized"
    assert hindsight.requests == []  # no credential: nothing was sent
    hindsight.down = True
    down = tools.call(ALEX, "recall", {"query": "x"})
    assert (down.error, down.text) == ("memory_unavailable", "the memory server is unavailable; try again in a moment")
    assert tools.call(ALEX, "recall", {"query": "x", "bank_id": "other"}).error == "bad_arguments"

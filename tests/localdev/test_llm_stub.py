"""The deterministic LLM stand-in answers each kind of Hindsight request the same way every time."""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import httpx
import pytest

from localdev.llm_stub import LLMStub
from localdev.stub_answers import chat_completion, hashed_embedding, minimal_instance
from localdev.stub_extraction import extract_facts

SCHEMA_PROMPT = "You must respond with valid JSON matching this schema:\n"


def _retain_request(content: str) -> Any:
    schema = {"type": "object", "properties": {"facts": {"type": "array"}}, "required": ["facts"]}
    return {
        "model": "stub",
        "messages": [
            {"role": "system", "content": "Extract facts." + "\n\n" + SCHEMA_PROMPT + json.dumps(schema)},
            {
                "role": "user",
                "content": f"Extract facts from the following chunk.\n\nContext: none\n\nContent:\n{content}",
            },
        ],
        "response_format": {"type": "json_object"},
    }


def _content(response: dict[str, Any]) -> Any:
    return response["choices"][0]["message"]["content"]


def _tool_call(response: dict[str, Any]) -> tuple[str, Any]:
    call = response["choices"][0]["message"]["tool_calls"][0]["function"]
    return call["name"], json.loads(call["arguments"])


def test_retain_returns_each_of_the_users_sentences_as_a_verbatim_world_fact():
    # GIVEN a fact-extraction request whose user message ends with a retained turn
    request = _retain_request(
        "User: I prefer email over phone. Please never call me!\nAssistant: Noted. I will email you from now on."
    )

    # WHEN the stand-in answers
    facts = json.loads(_content(chat_completion(request)))["facts"]

    # THEN each of the user's sentences is one fact, word for word, and nothing the assistant said is
    assert [f["what"] for f in facts] == ["I prefer email over phone.", "Please never call me!"]
    assert {f["fact_type"] for f in facts} == {"world"}
    assert all(f["when"] == f["who"] == f["why"] == "N/A" for f in facts)


def test_retain_ignores_the_assistants_echo_and_the_memories_it_quotes():
    turn = (
        "User: My project codename is Bluebird.\n"
        "Assistant: You said: My project codename is Bluebird.\n"
        "From earlier conversations I remember:\n"
        "- I prefer email over phone. [world] (2026-11-29T15:09:44+00:00)"
    )
    assert [f["what"] for f in extract_facts(turn)] == ["My project codename is Bluebird."]


def test_retain_keeps_statements_only():
    # GIVEN questions, greetings and memory commands from the user
    turn = (
        "User: Hi! How should you contact me? Thanks.\nforget that I prefer email\nremember that my PIN is 12.\n"
        "list my memories\nrecall my codename\nAssistant: ok"
    )
    # THEN only the statement a command asked to keep is a fact
    assert [f["what"] for f in extract_facts(turn)] == ["My PIN is 12."]


def test_content_without_roles_is_all_the_users():
    assert [f["what"] for f in extract_facts("I like green tea. User accounts are fine.")] == [
        "I like green tea.",
        "User accounts are fine.",
    ]


def test_retain_answer_is_deterministic():
    request = _retain_request("Alex likes tea. Sam likes coffee.")
    assert _content(chat_completion(request)) == _content(chat_completion(request))


def test_extract_facts_skips_blank_punctuation_only_and_repeated_pieces():
    content = "  \n...\nOne fact here.\n\nOne fact here. A second one."
    assert [f["what"] for f in extract_facts(content)] == ["One fact here.", "A second one."]


def test_consolidation_creates_nothing():
    schema = {"type": "object", "properties": {"creates": {}, "updates": {}, "deletes": {}}}
    request = {
        "messages": [
            {"role": "system", "content": SCHEMA_PROMPT + json.dumps(schema)},
            {"role": "user", "content": "facts"},
        ]
    }
    assert json.loads(_content(chat_completion(request))) == {"creates": [], "updates": [], "deletes": []}


def test_strict_json_schema_requests_get_a_minimal_valid_instance():
    schema = {
        "type": "object",
        "properties": {
            "action": {"enum": ["keep", "merge"]},
            "reason": {"type": "string"},
            "score": {"type": "number"},
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}, "minItems": 1},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["action", "reason", "items", "note"],
        "$defs": {"Item": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}},
    }
    request = {
        "messages": [{"role": "user", "content": "decide"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "response", "schema": schema}},
    }
    assert json.loads(_content(chat_completion(request))) == {
        "action": "keep",
        "reason": "",
        "items": [{"ok": False}],
        "note": None,
    }
    assert minimal_instance({"type": "integer", "minimum": 3}) == 3


def test_plain_text_requests_get_ok():
    # The start-up verification call
    assert _content(chat_completion({"messages": [{"role": "user", "content": "Say 'ok'"}]})) == "ok"


def _tool(name: str, required: list[str]) -> Any:
    props = {k: {"type": "boolean" if k == "answer_found" else "string"} for k in required}
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": props, "required": required}},
    }


REFLECT_TOOLS = [_tool("recall", ["reason", "query"]), _tool("done", ["answer", "answer_found"])]


def test_reflect_searches_first_with_the_question():
    request = {
        "messages": [{"role": "user", "content": "How does Alex like to be contacted?"}],
        "tools": REFLECT_TOOLS,
        "tool_choice": "required",
    }
    name, args = _tool_call(chat_completion(request))
    assert name == "recall"
    assert args["query"] == "How does Alex like to be contacted?"


def test_reflect_forced_tool_choice_is_honoured():
    tools = [_tool("search_observations", ["reason", "query"]), *REFLECT_TOOLS]
    request = {
        "messages": [{"role": "user", "content": "q"}],
        "tools": tools,
        "tool_choice": {"type": "function", "function": {"name": "search_observations"}},
    }
    assert _tool_call(chat_completion(request))[0] == "search_observations"


def test_reflect_finishes_with_done_quoting_the_retrieved_memories():
    # GIVEN a conversation where the recall tool already returned two memories
    memories = {"memories": [{"id": "f1", "text": "Alex prefers email"}, {"id": "f2", "text": "Alex lives in Oslo."}]}
    request = {
        "messages": [
            {"role": "user", "content": "Tell me about Alex"},
            {
                "role": "assistant",
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "recall", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": json.dumps(memories)},
        ],
        "tools": REFLECT_TOOLS,
        "tool_choice": "auto",
    }

    # WHEN the stand-in answers
    name, args = _tool_call(chat_completion(request))

    # THEN it calls done with an answer built from exactly those memories
    assert name == "done"
    assert args["answer"] == "From memory: Alex prefers email. Alex lives in Oslo."
    assert args["answer_found"] is True
    assert args["memory_ids"] == ["f1", "f2"]


def test_reflect_with_nothing_found_says_so():
    request = {
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"memories": []})},
        ],
        "tools": [_tool("done", ["answer", "answer_found"])],
        "tool_choice": "required",
    }
    name, args = _tool_call(chat_completion(request))
    assert (name, args["answer_found"]) == ("done", False)
    assert args["answer"] == "I have no memories about that."


def test_hashed_embeddings_are_unit_length_and_word_sensitive():
    a, b, c = (hashed_embedding(t) for t in ("email over phone", "phone over email", "budget review"))
    assert len(a) == 384
    assert sum(x * x for x in a) == pytest.approx(1.0)
    assert sum(x * y for x, y in zip(a, b, strict=True)) == pytest.approx(1.0)  # same words
    assert sum(x * y for x, y in zip(a, c, strict=True)) < 0.5


def _post(url: str, body: dict[str, Any]) -> Any:
    response = httpx.post(url, json=body, timeout=10)
    response.raise_for_status()
    return response.json()


def test_http_server_serves_chat_and_base64_embeddings_and_logs_requests():
    with LLMStub() as stub:
        # WHEN a retain request and an embeddings request arrive over HTTP
        chat = _post(f"{stub.base_url}/chat/completions", _retain_request("Alex likes tea."))
        emb = _post(f"{stub.base_url}/embeddings", {"input": ["Alex likes tea."], "encoding_format": "base64"})

        # THEN the answers are the OpenAI shapes, and the log records what was asked
        assert json.loads(_content(chat))["facts"][0]["what"] == "Alex likes tea."
        raw = base64.b64decode(emb["data"][0]["embedding"])
        vector = struct.unpack(f"<{len(raw) // 4}f", raw)
        assert vector == pytest.approx(hashed_embedding("Alex likes tea."), abs=1e-6)
        assert [r["kind"] for r in stub.requests] == ["retain", "embeddings"]


def test_entities_are_names_and_things_not_sentence_openers_or_interjections():
    facts = extract_facts("Wow, thanks! It was great fun with John at the Louvre in Paris. Thanks Anna for the tip.")
    assert [f["entities"] for f in facts] == [["John", "Louvre", "Paris"], ["Anna"]]


def test_a_named_speakers_facts_read_on_their_own():
    # GIVEN a user line that names its speaker, WHEN extracted THEN first person becomes the speaker
    (fact,) = extract_facts("User: Maria: I'm sure my sister Greta loves me. That's awesome!\nAssistant: ok")
    assert fact["what"] == "Maria is sure Maria's sister Greta loves Maria."
    assert fact["entities"] == ["Greta"]
    assert fact["who"] == "Maria"


def test_relative_dates_are_resolved_against_the_event_date_of_the_request():
    # GIVEN an extraction request for a turn of Sunday 1 January 2023
    request = _retain_request("User: Maria: I took it at the beach last month. I met Jean yesterday. We chat daily.")
    request["messages"][1]["content"] = request["messages"][1]["content"].replace(
        "Context: none", "Event Date: Sunday, January 01, 2023 (2023-01-01T14:00:00+00:00)\nContext: none"
    )
    # WHEN the stand-in answers
    facts = json.loads(_content(chat_completion(request)))["facts"]
    # THEN dated statements are events on the days they refer to; the undated one is not
    assert [(f["when"], f.get("occurred_start"), f["fact_kind"]) for f in facts] == [
        ("01 December 2022 to 31 December 2022", "2022-12-01T00:00:00", "event"),
        ("31 December 2022", "2022-12-31T00:00:00", "event"),
        ("N/A", None, "conversation"),
    ]


def test_other_relative_forms_resolve_to_the_days_meant():
    from datetime import datetime

    from localdev.stub_extraction import resolve_relative_date

    thursday = datetime(2023, 5, 25, 9, 30)
    day = datetime
    assert resolve_relative_date("two days ago", thursday) == (day(2023, 5, 23), day(2023, 5, 23))
    assert resolve_relative_date("last Friday", thursday) == (day(2023, 5, 19), day(2023, 5, 19))
    assert resolve_relative_date("last weekend", thursday) == (day(2023, 5, 20), day(2023, 5, 21))
    assert resolve_relative_date("last week", thursday) == (day(2023, 5, 18), day(2023, 5, 24))
    assert resolve_relative_date("nothing dated", thursday) is None


def test_a_self_introduction_is_the_users_name():
    # GIVEN introductions, with and without a greeting, and statements that only look like one
    turns = {
        "User: Hi, I'm Alex.\nAssistant: Nice to meet you, Alex. I'm your assistant, Sam.": ["My name is Alex."],
        "User: Hello! I am Maria Lopez and I work as a nurse.": ["My name is Maria Lopez.", "I work as a nurse."],
        "User: my name is Jo, from Leeds.": ["My name is Jo, from Leeds."],
        "User: Call me Pat.": ["My name is Pat."],
        "User: I'm Canadian.": ["I'm Canadian."],
        "User: Hello world programs are fun to write.": ["Hello world programs are fun to write."],
    }
    for turn, expected in turns.items():
        assert [f["what"] for f in extract_facts(turn)] == expected, turn
    # AND a greeting does not hide the introduction from a mission that drops greetings
    mission = "Keep lasting facts about the user. Do not keep greetings, thanks or small talk."
    assert [f["what"] for f in extract_facts("User: Hi, I'm Alex.", mission=mission)] == ["My name is Alex."]
    assert extract_facts("User: Hi, how are you?", mission=mission) == []


def test_statements_joined_in_one_sentence_are_separate_facts():
    cases = {
        "I live in Berlin and work as a data engineer.": ["I live in Berlin.", "I work as a data engineer."],
        "My favourite colour is teal and my dog is called Pixel.": [
            "My favourite colour is teal.",
            "My dog is called Pixel.",
        ],
        "I love hiking, but my wife prefers the beach.": ["I love hiking.", "My wife prefers the beach."],
        "I like tea and coffee.": ["I like tea and coffee."],
        "I moved from Berlin to Lisbon and started a new job.": [
            "I moved from Berlin to Lisbon.",
            "I started a new job.",
        ],
        "Salt and pepper are on the table.": ["Salt and pepper are on the table."],
        "Ulla and I are training for a race.": ["Ulla and I are training for a race."],
        "My wife and I moved to Lisbon.": ["My wife and I moved to Lisbon."],
    }
    for sentence, expected in cases.items():
        assert [f["what"] for f in extract_facts(f"User: {sentence}")] == expected, sentence


def test_a_sentence_wrapped_across_lines_is_one_fact_not_fragments():
    # GIVEN a long pasted text whose lines were wrapped mid-sentence (as a retained turn's long lines may be)
    sentences = [f"My server room {n} is in the basement next to the old boiler and the fuse box." for n in range(60)]
    text = " ".join(sentences)
    lines, line = [], ""
    for word in text.split(" "):
        if len(line) + len(word) + 1 > 75:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    assert any(not ln.endswith(".") for ln in lines)
    turn = "\n".join(f"User: {ln}" for ln in lines) + "\nAssistant: Noted."
    # WHEN the stand-in extracts it
    facts = [f["what"] for f in extract_facts(turn)]
    # THEN each fact is one whole sentence; no fragment ("My server", "room 12 is in the") is a memory
    assert facts == sentences
    # AND short lines without an end mark (a list) stay separate
    assert [f["what"] for f in extract_facts("User: Shopping list\nmilk and eggs\nfresh bread")] == [
        "Shopping list",
        "Milk and eggs",
        "Fresh bread",
    ]

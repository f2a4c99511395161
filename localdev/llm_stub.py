"""A deterministic OpenAI-compatible stand-in for Hindsight's LLM (and, optionally, its embeddings).

Hindsight calls an LLM to extract facts on retain, to consolidate facts into observations, and to
drive the reflect agent. Tests must be able to assert exactly what gets recalled, so this server
answers every request the same way every time, derived only from what it was sent:

- **fact extraction** (a user message ending with ``Content:\n<text>``): what a real extractor keeps,
  the *user's* statements: when the content is a dialogue (lines opened by ``User:`` / ``Assistant:``, as
  retained turns are) only the user's lines count, so neither the assistant's answer nor the recalled
  memories it quotes become facts; each distinct statement of them becomes one ``world`` fact whose
  ``what`` is that statement, verbatim, except questions, one-word sentences ("Hi!", "Thanks."), small talk
  ("Talk soon!") and memory commands ("forget ...", "recall ...", "list my memories"; "remember that X" keeps X).
  A statement is a sentence, read as a real extractor reads one: a sentence wrapped across lines is one sentence
  (:func:`unwrapped_lines`), never fragments; statements it joins ("I live in Berlin and work as a data engineer")
  are separate facts (:func:`clauses`); a greeting that opens it is no part of it, and a self-introduction ("Hi,
  I'm Alex.") is the fact it states, "My name is Alex." (:func:`as_introduction`).
  Where retrieval depends on it, it does what a real extractor does: entities are names and things
  (capitalised words that are not sentence openers, pronouns, interjections or calendar words: never "It",
  "Wow", "Thanks"); a line that names its speaker (``User: Maria: I ...``) gives self-contained facts
  ("Maria ..."); a relative date ("yesterday", "last week", "two days ago", "last Friday") is resolved
  against the request's ``Event Date`` into ``when`` and ``occurred_start``/``occurred_end`` (an event); and the
  bank's ``retain_mission`` (which Hindsight puts in the request) is honoured: what it says not to keep is not
  extracted (:mod:`localdev.stub_missions`);
- **consolidation** (a schema with ``creates``): ``{"creates": [], "updates": [], "deletes": []}``, so
  recall returns exactly the extracted facts;
- **reflect** (tool calls): a retrieval tool first (``recall``, or whatever ``tool_choice`` forces),
  then ``done`` carrying an answer that quotes the memories the tools returned;
- any other structured request: the smallest instance of the JSON schema it was given; plain text
  requests (the start-up ``Say 'ok'`` check included) get ``ok``.

``/v1/embeddings`` serves *hashed* embeddings (bag of hashed words, L2-normalised): fast and
deterministic but blind to paraphrases, for unit-level use only. The real local Hindsight uses
all-MiniLM-L6-v2 instead (see ``localdev.hindsight``). ``/rerank`` answers Bedrock's Rerank API
(``localdev.rerank_stub``), for the deployed reranker's path.

Standard library only, so it runs in any interpreter: in a thread (``LLMStub().start()``) or as its
own process (``python -m localdev.llm_stub --port 8999``).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from localdev._serving import BackgroundHTTPServer, serve_in_foreground
from localdev.rerank_stub import rerank_response
from localdev.stub_missions import keeps, mission_of

__all__ = [
    "DEFAULT_EMBEDDING_DIMENSIONS",
    "LLMStub",
    "as_introduction",
    "chat_completion",
    "clauses",
    "entities_of",
    "event_date",
    "extract_facts",
    "hashed_embedding",
    "resolve_relative_date",
    "resolve_speaker",
    "unwrapped_lines",
    "users_statements",
]

DEFAULT_EMBEDDING_DIMENSIONS = 384
_SCHEMA_MARKER = "You must respond with valid JSON matching this schema:"
_CONTENT_MARKER = "Content:\n"
_RETRIEVAL_TOOLS = ("recall", "search_observations", "search_mental_models")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_ROLE_LINE = re.compile(r"^(User|Assistant):[ \t]?", re.MULTILINE)
_MEMORY_COMMAND = re.compile(
    r"^\W*(?:please\s+)?(?:forget|recall|reflect|what do you remember|list (?:my |recent )?memories|list recent)\b",
    re.IGNORECASE,
)
_REMEMBER_COMMAND = re.compile(r"^\W*(?:please\s+)?remember\b[\s:,]*(?:that\s+)?", re.IGNORECASE)
_MIN_FACT_WORDS = 2
_WORD = re.compile(r"[a-z0-9]+")
_ENTITY = re.compile(r"\b[A-Z][a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*\b")
#: Capitalised words that are not names or things: sentence openers, pronouns, interjections, calendar words.
_NOT_ENTITIES = frozenset(
    """
    a an the i i'm im it its it's this that these those there here he she they we you me my your our their his her
    them us mine yours what when where why who whom which how whose yes no not oh ok okay wow hey hi hello thanks
    thank yeah yep nope hmm haha lol omg great nice cool awesome sure well so and but or if then also just really
    very too maybe please sorry congrats congratulations good bad glad happy sounds absolutely totally definitely
    anyway besides still yet now today yesterday tomorrow tonight last next every some any all both each one
    monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
    september october november december after before since until while because as at in on of for to from by with
    about into over under again once do does did done have has had be is am are was were been being can could
    will would shall should might must let let's thats dont don't
    """.split()  # noqa: SIM905 (a word list reads best as words)
)
#: Words that carry no fact on their own: a sentence made only of these is small talk ("That's awesome, good for you.").
_SMALL_TALK = _NOT_ENTITIES | frozenset(
    """
    s t d m ll re ve that's amazing fun same here busy week talk soon tell more plan agree like love sounds lovely
    cool fantastic wonderful interesting true right exactly see care bye catch up miss going been how's what's
    """.split()  # noqa: SIM905
)
_SPEAKER = re.compile(r"^([A-Z][a-zA-Z'-]+(?: [A-Z][a-zA-Z'-]+)?):\s+(?=\S)")
#: First-person forms and what they become once the speaker is known (``{}`` is the speaker's name).
_FIRST_PERSON = (
    (re.compile(r"\bI'm\b|\bI am\b"), "{} is"),
    (re.compile(r"\bI've\b"), "{} has"),
    (re.compile(r"\bI'd\b"), "{} would"),
    (re.compile(r"\bI'll\b"), "{} will"),
    (re.compile(r"\bI\b"), "{}"),
    (re.compile(r"\b[Mm]y\b"), "{}'s"),
    (re.compile(r"\b[Mm]ine\b"), "{}'s"),
    (re.compile(r"\b[Mm]yself\b"), "{}"),
    (re.compile(r"\bme\b"), "{}"),
)
_EVENT_DATE = re.compile(r"Event Date:[^(\n]*\((\d{4}-\d{2}-\d{2})[^)]*\)")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "a couple of": 2,
    "a few": 3,
}
_AGO = re.compile(r"\b(\d+|a couple of|a few|an?|one|two|three|four|five|six)\s+(day|week|month|year)s?\s+ago\b", re.I)
_LAST_WEEKDAY = re.compile(r"\blast\s+(" + "|".join(_WEEKDAYS) + r")\b", re.I)
_RELATIVE = (
    (re.compile(r"\byesterday\b", re.I), (-1, -1)),
    (re.compile(r"\btoday\b|\bthis morning\b|\btonight\b", re.I), (0, 0)),
    (re.compile(r"\blast weekend\b", re.I), None),
    (re.compile(r"\blast week\b", re.I), (-7, -1)),
    (re.compile(r"\blast month\b", re.I), "month"),
    (re.compile(r"\blast year\b", re.I), "year"),
)
_REQUEST_LOG_SIZE = 200
#: A line at least this long that stops mid-sentence was wrapped (see :func:`unwrapped_lines`).
_WRAPPED_LINE_CHARS = 40
_GREETING = re.compile(
    r"^(?:hi|hello|hey|hiya|howdy|greetings|good (?:morning|afternoon|evening))(?: there| everyone| all)?"
    r"(?:[\s]*[,!.:;\u2014-]+\s*|\s+(?=I\b|I'm\b|[Mm]y\b|[Tt]his is\b|[Ii]t's\b)|\s*$)",
    re.IGNORECASE,
)
_NAME = r"(?P<name>[A-Z][a-zA-Z'-]+(?: [A-Z][a-zA-Z'-]+)?)(?=\s*[,.!]|\s*$|\s+(?:and|from|here)\b)"
_NAMED = re.compile(r"(?i:my name is|my name's|call me|i go by)\s+" + _NAME)
_INTRODUCED = re.compile(r"(?i:i'm|i am|this is|it's)\s+" + _NAME)
_CLAUSE_JOINT = re.compile(r"(,?\s+(?:and|but|while|whereas)\s+|;\s+)")
_I_STATEMENT = re.compile(r"^(?:[A-Za-z]+,\s+)?I\s+[a-z]")
#: Words that open a clause with a subject of its own.
_SUBJECTS = frozenset("i i'm i've i'd i'll my we we're we've our he he's his she she's her they they're their".split())  # noqa: SIM905
#: Common verbs of statements people make about themselves (a verb phrase after "and" continues an "I ..." statement).
_COMMON_VERBS = frozenset(
    """
    am have has work works live lives like likes love loves prefer prefers hate own use study teach manage lead run
    play speak drive need want enjoy go went got made make take took keep kept know knew write wrote read build
    built sold bought left joined started moved grew spend spent visit visited
    """.split()  # noqa: SIM905 (a word list reads best as words)
)
_MIN_PAST_TENSE = 5
#: Words a statement needs before a joint to be a clause of its own (subject, verb, object or complement).
_MIN_CLAUSE_WORDS = 3

JSON = dict[str, Any]


# --- request analysis ---------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    """The text of a message, whether a string or a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _messages(body: Mapping[str, Any]) -> list[JSON]:
    msgs = body.get("messages")
    return [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []


def _response_schema(body: Mapping[str, Any]) -> JSON | None:
    """The JSON schema the caller wants back: strict ``json_schema`` mode or the soft in-prompt form."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = fmt.get("json_schema", {}).get("schema")
        if isinstance(schema, dict):
            return schema
    for message in _messages(body):
        text = _text_of(message.get("content"))
        at = text.find(_SCHEMA_MARKER)
        if at < 0:
            continue
        start = text.find("{", at)
        try:
            schema, _ = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(schema, dict):
            return schema
    return None


def _retain_content(body: Mapping[str, Any]) -> str | None:
    """The chunk a fact-extraction request carries after ``Content:``, or None for other requests."""
    for message in _messages(body):
        if message.get("role") != "user":
            continue
        text = _text_of(message.get("content"))
        at = text.rfind(_CONTENT_MARKER)
        if at >= 0:
            return text[at + len(_CONTENT_MARKER) :]
    return None


def _event_date_of(body: Mapping[str, Any]) -> datetime | None:
    """The turn's time from the extraction request's user message (``Event Date: ... (<iso>)``)."""
    for message in _messages(body):
        if message.get("role") == "user":
            found = event_date(_text_of(message.get("content")))
            if found is not None:
                return found
    return None


def _mission_of(body: Mapping[str, Any]) -> str | None:
    """The bank's retain mission Hindsight put in the extraction request's user message, if any."""
    for message in _messages(body):
        if message.get("role") == "user" and (found := mission_of(_text_of(message.get("content")))) is not None:
            return found
    return None


def _last_user_text(body: Mapping[str, Any]) -> str:
    for message in reversed(_messages(body)):
        if message.get("role") == "user":
            text = _text_of(message.get("content")).strip()
            if text:
                return text
    return ""


# --- deterministic answers ------------------------------------------------------------------------


def users_statements(content: str) -> str:
    """The user's side of ``content``: the ``User:`` lines of a dialogue, or all of it when it is no dialogue."""
    marks = list(_ROLE_LINE.finditer(content))
    if not marks:
        return content
    parts = []
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        if mark.group(1) == "User":
            parts.append(content[mark.end() : following.start() if following else len(content)].rstrip("\n"))
    return "\n".join(parts)


def _as_fact(sentence: str) -> str | None:
    """The fact a real extractor would keep from one of the user's sentences, if any."""
    if _MEMORY_COMMAND.match(sentence) or sentence.endswith("?"):
        return None
    sentence = _REMEMBER_COMMAND.sub("", sentence, count=1).strip()
    words = _WORD.findall(sentence.lower())
    if len(words) < _MIN_FACT_WORDS or all(w in _SMALL_TALK for w in words):  # "Wow, thanks!", "Talk soon!"
        return None
    return sentence[:1].upper() + sentence[1:]


def entities_of(sentence: str) -> list[str]:
    """Names and things in ``sentence`` (at most five): capitalised words that are not sentence openers, pronouns,
    interjections or calendar words. The speaker is not added: an entity every fact of a conversation shares links
    everything to everything in Hindsight's graph arm and tells retrieval nothing (the fact's text names them)."""
    found = [w for w in _ENTITY.findall(sentence) if w.lower() not in _NOT_ENTITIES]
    return list(dict.fromkeys(found))[:5]


def resolve_speaker(sentence: str, speaker: str) -> str:
    """``sentence`` with its first-person words replaced by ``speaker`` ("I adopted my cat" -> "Maria adopted
    Maria's cat"), so the fact reads on its own."""
    for pattern, replacement in _FIRST_PERSON:
        sentence = pattern.sub(replacement.format(speaker), sentence)
    return sentence


def event_date(body_text: str) -> datetime | None:
    """The ``Event Date`` Hindsight put in an extraction request (the retained turn's time), if any."""
    match = _EVENT_DATE.search(body_text)
    return datetime.fromisoformat(match.group(1)) if match else None


def _day_range(day: datetime, first: int, last: int) -> tuple[datetime, datetime]:
    return day + timedelta(days=first), day + timedelta(days=last)


def resolve_relative_date(sentence: str, at: datetime) -> tuple[datetime, datetime] | None:
    """The days a relative date in ``sentence`` refers to, read against ``at`` (the turn's date), else None."""
    day = datetime(at.year, at.month, at.day)
    if match := _AGO.search(sentence):
        raw = match.group(1).lower()
        count = int(raw) if raw.isdigit() else _NUMBERS.get(raw, 1)
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[match.group(2).lower()] * count
        return _day_range(day, -days, -days)
    if match := _LAST_WEEKDAY.search(sentence):
        back = (day.weekday() - _WEEKDAYS.index(match.group(1).lower())) % 7 or 7
        return _day_range(day, -back, -back)
    for pattern, span in _RELATIVE:
        if not pattern.search(sentence):
            continue
        if span is None:  # last weekend: the Saturday and Sunday before
            back = (day.weekday() - 5) % 7 or 7
            return _day_range(day, -back, -back + 1)
        if span == "month":
            end = day.replace(day=1) - timedelta(days=1)
            return end.replace(day=1), end
        if span == "year":
            return datetime(day.year - 1, 1, 1), datetime(day.year - 1, 12, 31)
        assert isinstance(span, tuple)
        return _day_range(day, *span)
    return None


def _speaker_and_text(line: str) -> tuple[str | None, str]:
    match = _SPEAKER.match(line)
    if match and match.group(1).lower() not in _NOT_ENTITIES:
        return match.group(1), line[match.end() :]
    return None, line


def unwrapped_lines(text: str) -> list[str]:
    """The lines of ``text`` with hard-wrapped sentences joined again, as a reader takes them: a line of at least
    :data:`_WRAPPED_LINE_CHARS` characters that stops mid-sentence (no ``.!?:;`` at its end) and is followed by a
    line that goes on in lower case or with a number is one sentence cut by a line break (a retained turn's long
    lines are wrapped, and pasted text often is). Short lines, list items and headings stay lines of their own."""
    lines: list[str] = []
    for raw in text.split("\n"):
        line = raw.strip()
        previous = lines[-1] if lines else ""
        if (
            (line[:1].islower() or line[:1].isdigit())
            and len(previous) >= _WRAPPED_LINE_CHARS
            and not previous.endswith((".", "!", "?", ":", ";"))
        ):
            lines[-1] = f"{previous} {line}"
        else:
            lines.append(line)
    return lines


def _without_greeting(sentence: str) -> tuple[str, bool]:
    """``sentence`` without a greeting that opens it ("Hi, I'm Alex." -> "I'm Alex."), and whether it had one."""
    match = _GREETING.match(sentence)
    if match is None:
        return sentence, False
    return sentence[match.end() :].strip(), True


def clauses(sentence: str) -> list[str]:
    """The statements ``sentence`` joins (", and", "but", ";"), each a sentence of its own, when what follows the
    joint is a clause with its own subject ("... teal and my dog is called Pixel") or, after an "I ..." statement,
    a verb phrase of the same subject ("I live in Berlin and work as a data engineer" -> "I work as a data
    engineer."). A real extractor stores such statements as separate facts: they are about different things.
    Anything else ("I like tea and coffee") stays one statement."""
    pieces = _CLAUSE_JOINT.split(sentence)  # [clause, joint, clause, joint, clause, ...]
    if len(pieces) == 1:
        return [sentence]
    out = [pieces[0]]
    for joint, part in zip(pieces[1::2], pieces[2::2], strict=True):
        words = part.split()
        first = words[0].lower().strip(",") if words else ""
        if len(out[-1].split()) < _MIN_CLAUSE_WORDS:  # "Ulla and I are ...", "My wife and I moved ...": one subject
            out[-1] = out[-1] + joint + part
        elif len(words) >= _MIN_FACT_WORDS and first in _SUBJECTS:
            out.append(part[:1].upper() + part[1:])
        elif (
            len(words) >= _MIN_FACT_WORDS
            and _I_STATEMENT.match(pieces[0])
            and (first in _COMMON_VERBS or (len(first) >= _MIN_PAST_TENSE and first.endswith("ed")))
        ):
            out.append(f"I {part}")
        else:
            out[-1] = out[-1] + joint + part
    if len(out) == 1:
        return [sentence]
    return [c if c.endswith((".", "!", "?")) else c.rstrip(",;") + "." for c in out]


def as_introduction(statement: str, *, greeted: bool) -> str | None:
    """A self-introduction ("my name is Alex", "call me Alex"; after a greeting also "I'm Alex", "this is Alex") as
    the fact it states ("My name is Alex."), else None. "I'm Canadian" without a greeting is no introduction."""
    match = _NAMED.match(statement) or (_INTRODUCED.match(statement) if greeted else None)
    if match is None or match.group("name").split()[0].lower() in _NOT_ENTITIES:
        return None
    return "My name is " + statement[match.start("name") :]


def _statements(text: str) -> Iterator[str]:
    """The user's statements in one line: sentences, split into clauses, self-introductions read as names."""
    greeted = False
    for raw in _SENTENCE_SPLIT.split(text):
        sentence, greeting = _without_greeting(raw.strip())
        greeted = greeted or greeting
        if not sentence:
            continue
        for clause in clauses(sentence):
            yield as_introduction(clause, greeted=greeted) or clause


def extract_facts(content: str, at: datetime | None = None, *, mission: str | None = None) -> list[JSON]:
    """One ``world`` fact per distinct statement of the user in ``content`` (see the module docstring); ``at`` is
    the turn's time, against which relative dates are resolved; ``mission`` the bank's retain mission."""
    facts: list[JSON] = []
    seen: set[str] = set()
    for line in unwrapped_lines(users_statements(content)):
        speaker, text = _speaker_and_text(line)
        for statement in _statements(text):
            sentence = _as_fact(statement)
            if sentence is None or not keeps(mission, sentence):
                continue
            what = resolve_speaker(sentence, speaker) if speaker else sentence
            if what in seen:
                continue
            seen.add(what)
            fact: JSON = {
                "what": what,
                "when": "N/A",
                "where": "N/A",
                "who": speaker or "N/A",
                "why": "N/A",
                "fact_kind": "conversation",
                "fact_type": "world",
                "entities": entities_of(sentence),
            }
            span = resolve_relative_date(sentence, at) if at is not None else None
            if span is not None:
                start, end = span
                fact["when"] = start.strftime("%d %B %Y") if start == end else f"{start:%d %B %Y} to {end:%d %B %Y}"
                fact["fact_kind"] = "event"
                fact["occurred_start"] = start.strftime("%Y-%m-%dT00:00:00")
                fact["occurred_end"] = end.strftime("%Y-%m-%dT23:59:59")
            facts.append(fact)
    return facts


def _resolve(schema: JSON, root: JSON) -> JSON:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        return node if isinstance(node, dict) else {}
    return schema


def minimal_instance(schema: JSON, root: JSON | None = None, depth: int = 0) -> Any:
    """The smallest value that satisfies ``schema`` (required fields only, first enum option)."""
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if depth > 20:
        return None
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            if key != "allOf" and any(_resolve(o, root).get("type") == "null" for o in options):
                return None
            return minimal_instance(options[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = "null" if "null" in kind else (kind[0] if kind else None)
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        required = schema.get("required", [])
        return {name: minimal_instance(props.get(name, {}), root, depth + 1) for name in required}
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [minimal_instance(schema.get("items", {}), root, depth + 1) for _ in range(count)]
    if kind == "string":
        return "x" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def _memory_texts(messages: list[JSON]) -> tuple[list[str], list[str]]:
    """Texts and ids of the memories that tool results (role ``tool``) handed back."""
    texts: list[str] = []
    ids: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            text = node.get("text")
            if isinstance(text, str) and text.strip():
                texts.append(text.strip())
                if isinstance(node.get("id"), str):
                    ids.append(node["id"])
            for value in node.values():
                if isinstance(value, dict | list):
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for message in messages:
        if message.get("role") != "tool":
            continue
        content = _text_of(message.get("content"))
        try:
            walk(json.loads(content))
        except ValueError:
            continue
    return list(dict.fromkeys(texts)), list(dict.fromkeys(ids))


def reflect_answer(texts: list[str]) -> str:
    """The deterministic reflect answer: the memories retrieved, quoted in order."""
    if not texts:
        return "I have no memories about that."
    return "From memory: " + " ".join(t if t.endswith((".", "!", "?")) else t + "." for t in texts)


def _tool_names(body: Mapping[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
            names.append(str(tool["function"].get("name", "")))
    return names


def _tool_params(body: Mapping[str, Any], name: str) -> JSON:
    for tool in body.get("tools") or []:
        fn = tool.get("function", {}) if isinstance(tool, dict) else {}
        if fn.get("name") == name and isinstance(fn.get("parameters"), dict):
            params: JSON = fn["parameters"]
            return params
    return {"type": "object", "properties": {}}


def _called_tools(messages: list[JSON]) -> set[str]:
    called = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                called.add(str(call["function"].get("name")))
    return called


def _first_user_text(body: Mapping[str, Any]) -> str:
    for message in _messages(body):
        if message.get("role") == "user":
            text = _text_of(message.get("content")).strip()
            if text:
                return text
    return ""


def _pick_tool(body: Mapping[str, Any], names: list[str]) -> str | None:
    """The tool a compliant model calls next: a forced one, else search once, else finish."""
    choice = body.get("tool_choice")
    if choice == "none" or not names:
        return None
    if isinstance(choice, dict):
        forced = choice.get("function", {}).get("name")
        if isinstance(forced, str) and forced in names:
            return forced
    messages = _messages(body)
    called = _called_tools(messages)
    searched = any(m.get("role") == "tool" for m in messages)
    retrieval = [n for n in _RETRIEVAL_TOOLS if n in names and n not in called]
    finish = [n for n in ("done", "answer_ready") if n in names]
    if not searched and retrieval:
        return retrieval[0]
    if finish:
        return finish[0]
    if choice == "required":
        return retrieval[0] if retrieval else names[0]
    return None


def _tool_call(body: Mapping[str, Any]) -> tuple[str, JSON] | None:
    """Which tool to call next, and with what arguments (None: answer in text)."""
    name = _pick_tool(body, _tool_names(body))
    if name is None:
        return None
    texts, ids = _memory_texts(_messages(body))
    args = minimal_instance(_tool_params(body, name))
    args = args if isinstance(args, dict) else {}
    if "reason" in args:
        args["reason"] = "deterministic stub"
    if "query" in args:
        args["query"] = _first_user_text(body)[:500] or "memories"
    if name in ("done", "answer_ready"):
        args["answer_found"] = bool(texts)
        if name == "done":
            args["answer"] = reflect_answer(texts)
            args["memory_ids"] = ids
    return name, args


def _usage(body: Mapping[str, Any], output: str) -> JSON:
    prompt = sum(len(_text_of(m.get("content"))) for m in _messages(body)) // 4 + 1
    completion = len(output) // 4 + 1
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def classify(body: Mapping[str, Any]) -> str:
    """A short label for the kind of request (used in the request log and by tests)."""
    if body.get("tools"):
        return "tools"
    if _retain_content(body) is not None:
        return "retain"
    schema = _response_schema(body)
    if schema is not None:
        return "consolidation" if "creates" in schema.get("properties", {}) else "structured"
    return "text"


def chat_completion(body: Mapping[str, Any]) -> JSON:
    """The full ``/v1/chat/completions`` response for ``body``."""
    model = str(body.get("model") or "stub")
    message: JSON = {"role": "assistant", "content": None}
    finish = "stop"
    kind = classify(body)
    call = _tool_call(body) if kind == "tools" else None
    if call is not None:
        name, args = call
        digest = hashlib.sha256(json.dumps([name, args], sort_keys=True).encode()).hexdigest()[:16]
        message["tool_calls"] = [
            {"id": f"call_{digest}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        ]
        finish = "tool_calls"
        output = json.dumps(args)
    elif kind == "retain":
        facts = extract_facts(_retain_content(body) or "", _event_date_of(body), mission=_mission_of(body))
        output = json.dumps({"facts": facts})
    elif kind == "consolidation":
        output = json.dumps({"creates": [], "updates": [], "deletes": []})
    elif kind == "structured":
        output = json.dumps(minimal_instance(_response_schema(body) or {}))
    elif kind == "tools":
        output = reflect_answer(_memory_texts(_messages(body))[0])
    elif isinstance(body.get("response_format"), dict) and body["response_format"].get("type") == "json_object":
        output = "{}"
    else:
        output = "ok"
    if message.get("tool_calls") is None:
        message["content"] = output
    return {
        "id": "chatcmpl-" + hashlib.sha256(output.encode()).hexdigest()[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": _usage(body, output),
    }


def hashed_embedding(text: str, dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS) -> list[float]:
    """A bag-of-hashed-words vector, L2-normalised: equal words give close vectors, synonyms do not."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dimensions
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    return [v / norm for v in vector]


def embeddings_response(body: Mapping[str, Any]) -> JSON:
    """The ``/v1/embeddings`` response (float lists, or base64 little-endian float32 when asked)."""
    inputs = body.get("input", [])
    texts = [inputs] if isinstance(inputs, str) else [str(i) for i in inputs]
    dimensions = int(body.get("dimensions") or DEFAULT_EMBEDDING_DIMENSIONS)
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(texts):
        vector = hashed_embedding(text, dimensions)
        encoded: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if as_base64 else vector
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    tokens = sum(len(t) // 4 + 1 for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": str(body.get("model") or "hashed"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


# --- HTTP server ----------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server: _StubServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet by default: the request log (``/_stub/requests``) is the useful record."""

    def _reply(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            self._reply(200, {"object": "list", "data": [{"id": "stub", "object": "model", "owned_by": "localdev"}]})
        elif path in ("/health", ""):
            self._reply(200, {"status": "ok"})
        elif path == "/_stub/requests":
            self._reply(200, list(self.server.request_log))
        else:
            self._reply(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._reply(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        if not isinstance(body, dict):
            self._reply(400, {"error": {"message": "body must be an object", "type": "invalid_request_error"}})
            return
        if path.endswith("/chat/completions"):
            response = chat_completion(body)
            self.server.record("chat", classify(body), body, response)
            self._reply(200, response)
        elif path.endswith("/embeddings"):
            response = embeddings_response(body)
            self.server.record("embeddings", "embeddings", {"count": len(response["data"])}, None)
            self._reply(200, response)
        elif path == "/rerank":  # Bedrock's Rerank (localdev.rerank_stub)
            response = rerank_response(body)
            self.server.record("rerank", "rerank", body, response)
            self._reply(200, response)
        else:
            self._reply(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})


class _StubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.request_log: deque[JSON] = deque(maxlen=_REQUEST_LOG_SIZE)
        self._lock = threading.Lock()

    def record(self, endpoint: str, kind: str, body: Any, response: Any) -> None:
        with self._lock:
            self.request_log.append({"endpoint": endpoint, "kind": kind, "request": body, "response": response})


class LLMStub(BackgroundHTTPServer[_StubServer]):
    """The stand-in served from a background thread.

    >>> with LLMStub() as stub:
    ...     base_url = stub.base_url  # "http://127.0.0.1:<port>/v1", for HINDSIGHT_API_LLM_BASE_URL
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(_StubServer((host, port)), name="llm-stub")

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ending in ``/v1``."""
        return f"{self.url}/v1"

    @property
    def requests(self) -> list[JSON]:
        """The most recent requests served (oldest first), with their kind and response."""
        return list(self.server.request_log)

    def requests_of(self, kind: str) -> Iterator[JSON]:
        return (r for r in self.requests if r["kind"] == kind)


def main(argv: list[str] | None = None) -> int:
    """Serve the stand-in in the foreground until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m localdev.llm_stub", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on start)")
    args = parser.parse_args(argv)
    server = _StubServer((args.host, args.port))
    print(f"llm stub listening on http://{args.host}:{server.server_address[1]}/v1", flush=True)
    serve_in_foreground(server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

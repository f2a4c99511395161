"""The LLM stand-in's fact extraction (:mod:`localdev.llm_stub`): what a real extractor keeps of a retained turn.

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
  extracted (:mod:`localdev.stub_missions`).

Standard library only (see :mod:`localdev.llm_stub`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from localdev.stub_missions import keeps

__all__ = [
    "WORD",
    "as_introduction",
    "clauses",
    "entities_of",
    "event_date",
    "extract_facts",
    "resolve_relative_date",
    "resolve_speaker",
    "unwrapped_lines",
    "users_statements",
]

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_ROLE_LINE = re.compile(r"^(User|Assistant):[ \t]?", re.MULTILINE)
_MEMORY_COMMAND = re.compile(
    r"^\W*(?:please\s+)?(?:forget|recall|reflect|what do you remember|list (?:my |recent )?memories|list recent)\b",
    re.IGNORECASE,
)
_REMEMBER_COMMAND = re.compile(r"^\W*(?:please\s+)?remember\b[\s:,]*(?:that\s+)?", re.IGNORECASE)
_MIN_FACT_WORDS = 2
#: A word, as the stand-in counts words (facts, embeddings): lower-case letters and digits.
WORD = re.compile(r"[a-z0-9]+")
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
    words = WORD.findall(sentence.lower())
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

"""What is current comes first: a recalled memory that a later one supersedes is placed after it and marked.

People restate what changed: "I live in Berlin", weeks later "I moved to Lisbon"; "my phone number is 0151 ...", then
"actually, my phone number is 0160 ..."; "I work as a nurse", then "I started a new job as a teacher". Hindsight 1.1.0
returns both statements and ranks them by relevance, so the stale one may come first with nothing marking it
outdated. :func:`current_first` reads each recalled memory as a statement of **one value of one attribute of one
subject** when it has one of these forms (general English, in the first or the third person):

* where the subject lives: "<S> live(s) in X" (also "moved to X", "relocated to X"),
* what the subject works as, and where: "<S> work(s) as X", "<S> work(s) at/for X" (also "started a new job as/at X",
  "joined X", "got a job at X"),
* a single-valued attribute: "<S>'s <attribute> is X" / "my <attribute> is X" ("my favourite colour is teal", "my
  phone number is ..."), where the attribute is not itself a person or an animal ("my sister is a nurse" says nothing
  that a later "my sister is in Rome" would replace),
* a preference in a context: "<S> prefer(s) X in/for/when/... <context>" ("I prefer green tea in the morning"),
* a negation of one of these ("I no longer live in Berlin", "I don't work at Acme anymore"): no new value, the old
  one is over; and of any other statement of the user's own ("I no longer volunteer at the library" ends "I volunteer
  at the library").

Discourse words that mark a correction or an update ("actually", "correction:", "now", "these days") are read past.
A relation whose change is said in other words than its state ("I joined Globex" after "I work at Acme") is also
searched for once more (:data:`CHANGE_QUERIES`, :func:`with_later`), since the search for the question may miss the
later statement. Of two statements of the same subject and attribute with different values, the later one
(``mentioned_at``) is current: it takes the better of the two ranks, and the earlier one follows it, marked with the
date it was superseded (:attr:`~memory_adapter.formatting.RecalledMemory.superseded_on`). A statement of no such form
is left where it is; so is every memory when no two of them are about the same attribute.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from memory_adapter.formatting import RecalledMemory

__all__ = ["CHANGE_QUERIES", "Statement", "current_first", "follow_up_queries", "statement_of", "with_later"]

#: Openers that mark a correction or an update, read past ("Actually, my number is ...").
_OPENERS: Final = re.compile(
    r"^(?:(?:actually|correction|update|oh|well|so|btw|by the way|fyi|just so you know|sorry|quick update|news)"
    r"\s*[,:;!.-]*\s+)+",
    re.IGNORECASE,
)
_ADVERBS: Final = re.compile(
    r"\b(?:now|currently|these days|nowadays|actually|finally|recently|just|officially|still)\b,?\s*", re.IGNORECASE
)
_SUBJECT: Final = r"(?P<subject>I|[Ww]e|[A-Z][a-zA-Z'-]+(?: [A-Z][a-zA-Z'-]+)?)"
_NEGATION: Final = r"(?P<negation>no longer |don't |do not |doesn't |does not |am not |is not |isn't |not )?"
_RELATIONS: Final = (
    (
        "lives in",
        re.compile(
            _SUBJECT + r" " + _NEGATION + r"(?:am |is |are |was )?"
            r"(?:live|lives|living|moved|relocated|moving)(?: back)?(?: from [^,.;]+?)?\s+(?:in|to)\s+(?P<value>.+)$"
        ),
    ),
    (
        "works as",
        re.compile(
            _SUBJECT + r" " + _NEGATION + r"(?:am |is |are |was )?"
            r"(?:work|works|working|started (?:a new job|a job|working)|got a (?:new )?job|took a (?:new )?job|"
            r"accepted a (?:new )?job)\s+as\s+(?P<value>.+)$"
        ),
    ),
    (
        "works at",
        re.compile(
            _SUBJECT + r" " + _NEGATION + r"(?:am |is |are |was )?"
            r"(?:(?:work|works|working|started (?:a new job|a job|working)|got a (?:new )?job|took a (?:new )?job|"
            r"accepted a (?:new )?job)\s+(?:at|for|with)|joined)\s+(?P<value>.+)$"
        ),
    ),
)
_PREFERENCE: Final = re.compile(
    _SUBJECT + r" " + _NEGATION + r"(?:prefer|prefers)\s+(?P<value>.+?)\s+"
    r"(?P<context>(?:in|for|when|on|at|during|with|before|after)\s.+)$"
)
_HABIT: Final = re.compile(
    _SUBJECT + r" (?P<negation>no longer |don't |do not |doesn't |does not |never )?(?P<rest>[a-z][a-z' ]+?)"
    r"(?: any ?more)?$"
)
_ATTRIBUTE: Final = re.compile(
    r"(?P<subject>[Mm]y|[Oo]ur|[A-Z][a-zA-Z'-]+(?: [A-Z][a-zA-Z'-]+)?'s)\s+(?P<attribute>[a-z][a-z' -]{1,40}?)\s+"
    r"(?P<negation>is no longer |is not |isn't )?(?:is|are)\s+(?P<value>.+)$"
)
#: Heads of "my X is ..." that name a being, not an attribute (a being has many attributes at once).
_BEINGS: Final = frozenset(
    """
    sister brother mother mom mum father dad parent parents wife husband partner girlfriend boyfriend friend friends
    son daughter child children kid kids baby family cousin aunt uncle grandma grandmother grandpa grandfather niece
    nephew neighbour neighbor boss colleague coworker team dog cat pet puppy kitten horse bird fish house home car
    """.split()  # noqa: SIM905 (a word list reads best as words)
)
_VERBISH: Final = re.compile(r"^(?:\w+ing|\w+ed|going|not|so|very|really|too|also)\b")


#: What to search for the later statement of a relation whose change is said in other words than its state ("I
#: joined Globex" for "I work at Acme"): the search for the question may well not find it.
CHANGE_QUERIES: Final = {
    "lives in": "moved to, relocated to, lives in",
    "works as": "started a new job as, works as",
    "works at": "joined, started working at, works at",
}


@dataclass(frozen=True, slots=True)
class Statement:
    """A memory read as one value of one attribute of one subject (``value`` ``None``: the old value is over)."""

    subject: str
    attribute: str
    value: str | None


def _plain(text: str) -> str:
    core = text.split(" | ", 1)[0].strip()
    core = _OPENERS.sub("", core)
    core = _ADVERBS.sub("", core).strip()
    return core.rstrip(".!").strip()


def _subject(raw: str) -> str:
    word = raw.lower().removesuffix("'s")
    return "i" if word in ("i", "my", "me") else "we" if word in ("we", "our") else word


def statement_of(text: str) -> Statement | None:
    """The attribute statement ``text`` makes (see the module docstring), else ``None``."""
    core = re.sub(r"^I'm ", "I am ", _plain(text))
    for attribute, pattern in _RELATIONS:
        match = pattern.match(core)
        if match:
            value = None if match.group("negation") else match.group("value").strip().lower()
            return Statement(_subject(match.group("subject")), attribute, value)
    match = _PREFERENCE.match(core)
    if match:
        value = None if match.group("negation") else match.group("value").strip().lower()
        return Statement(_subject(match.group("subject")), "prefers " + match.group("context").lower(), value)
    match = _ATTRIBUTE.match(core)
    if match:
        name = match.group("attribute").strip()
        if name.split()[-1] in _BEINGS or _VERBISH.match(match.group("value")):
            return None
        value = None if match.group("negation") else match.group("value").strip().lower()
        return Statement(_subject(match.group("subject")), name, value)
    match = _HABIT.match(core)
    if match is None or match.group("subject") not in ("I", "We", "we"):
        return None
    # "I volunteer at the library" / "I no longer volunteer at the library": the statement itself is the attribute.
    return Statement(_subject(match.group("subject")), match.group("rest"), None if match.group("negation") else "yes")


def _day(stamp: str | None) -> str:
    return (stamp or "")[:10]


def current_first(memories: Sequence[RecalledMemory]) -> list[RecalledMemory]:
    """``memories`` (best first) with every superseded memory right after the one that supersedes it, marked with
    the day it was superseded; the current one takes the better rank of the two. Order otherwise unchanged."""
    read = [statement_of(m.text) for m in memories]
    groups: dict[tuple[str, str], list[int]] = {}
    for index, (memory, statement) in enumerate(zip(memories, read, strict=True)):
        if statement is not None and memory.mentioned_at:
            groups.setdefault((statement.subject, statement.attribute), []).append(index)
    current_of: dict[int, int] = {}  # a stale memory's index -> the index of the memory that supersedes it
    for indexes in groups.values():
        by_time = sorted(indexes, key=lambda i: memories[i].mentioned_at or "")
        latest = by_time[-1]
        current_of.update({older: latest for older in by_time[:-1] if read[older] != read[latest]})
    if not current_of:
        return list(memories)
    stale_of: dict[int, list[int]] = {}
    for older, latest in current_of.items():
        stale_of.setdefault(latest, []).append(older)
    out: list[RecalledMemory] = []
    placed: set[int] = set()
    for index in range(len(memories)):
        lead = current_of.get(index, index)
        if lead in placed:
            continue
        out.append(memories[lead])
        placed.add(lead)
        on = _day(memories[lead].mentioned_at)
        for older in sorted(stale_of.get(lead, ()), key=lambda i: memories[i].mentioned_at or "", reverse=True):
            out.append(replace(memories[older], superseded_on=on))
            placed.add(older)
    return out


def follow_up_queries(memories: Sequence[RecalledMemory]) -> list[str]:
    """The searches (:data:`CHANGE_QUERIES`) for later statements of the relations ``memories`` state."""
    read = (statement_of(m.text) for m in memories)
    return [CHANGE_QUERIES[a] for a in sorted({s.attribute for s in read if s and s.attribute in CHANGE_QUERIES})]


def with_later(memories: Sequence[RecalledMemory], found: Sequence[RecalledMemory]) -> list[RecalledMemory]:
    """``memories``, then those of ``found`` that state another value of an attribute of a subject ``memories``
    already state (a later statement the first search missed), not already there; :func:`current_first` places
    them."""
    keys = {(s.subject, s.attribute) for s in (statement_of(m.text) for m in memories) if s is not None}
    seen = {m.id or m.text for m in memories}
    out = list(memories)
    for memory in found:
        statement = statement_of(memory.text)
        key = memory.id or memory.text
        if statement is None or (statement.subject, statement.attribute) not in keys or key in seen:
            continue
        out.append(memory)
        seen.add(key)
    return out

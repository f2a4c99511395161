"""Conversations and questions to measure recall on: any LoCoMo-format file, or a set generated here.

A LoCoMo file (``--data PATH``; the dev set lives outside the repository, see ``../shared/eval/README.md``) is a list
of samples: ``conversation`` holds ``speaker_a``/``speaker_b``, ``session_N`` turn lists and ``session_N_date_time``
dates; ``qa`` holds questions with ``evidence`` (turn ids ``D<session>:<turn>``) and a ``category``. Evidence ids are
parsed leniently (``'D8:6; D9:17'``, ``'D30:05'``, ``'D:11:26'``) and what cannot be parsed is counted, not guessed.
An audit file (a list of ``{sample_id, qa_index, correct_evidence}``) replaces the cited evidence where it is known
to be wrong.

:func:`synthetic` builds a small set in code (no licensed data): two speakers, dated sessions, facts planted at
known turns among small talk, and questions of each category whose evidence is those turns. Tests run the whole
harness on it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORIES",
    "Conversation",
    "DataSet",
    "Question",
    "Turn",
    "load_locomo",
    "parse_evidence",
    "parse_session_time",
    "synthetic",
]

#: LoCoMo's categories by number (5, adversarial, has no evidence to score and is left out).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")
_SESSION_KEY = re.compile(r"session_(\d+)")


@dataclass(frozen=True)
class Turn:
    """One utterance: ``dia_id`` ``D<session>:<turn>``, who said it, when the session happened."""

    dia_id: str
    speaker: str
    text: str
    session: int
    at: datetime

    @property
    def line(self) -> str:
        """``speaker: text``, the form every system indexes (the same for all of them)."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    """``lead``: the user's previous message in the session (working memory), when the question follows it up."""

    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int
    lead: str | None = None


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    def limited(self, questions: int | None) -> Conversation:
        """The same conversation with at most ``questions`` questions (the first ones)."""
        if questions is None:
            return self
        return Conversation(self.sample_id, self.speakers, self.turns, self.questions[:questions])


@dataclass
class DataSet:
    """Conversations plus what loading them had to correct or drop (reported with the results)."""

    name: str
    conversations: list[Conversation]
    dropped_evidence_ids: Counter[str] = field(default_factory=Counter)
    corrected_questions: int = 0
    questions_without_evidence: int = 0

    def limited(self, conversations: int | None, questions: int | None) -> DataSet:
        picked = self.conversations[:conversations] if conversations else self.conversations
        return DataSet(
            self.name,
            [c.limited(questions) for c in picked],
            self.dropped_evidence_ids,
            self.corrected_questions,
            self.questions_without_evidence,
        )


def parse_evidence(raw: Iterable[Any], dropped: Counter[str]) -> tuple[str, ...]:
    """Canonical ``D<s>:<t>`` ids from LoCoMo's evidence list; unparseable pieces are counted in ``dropped``."""
    ids: list[str] = []
    for item in raw:
        text = str(item)
        found = _EVIDENCE_ID.findall(text)
        if not found:
            dropped[text] += 1
            continue
        ids.extend(f"D{int(s)}:{int(t)}" for s, t in found)
    return tuple(dict.fromkeys(ids))


def parse_session_time(text: str) -> datetime:
    """LoCoMo's session date (``"1:56 pm on 8 May, 2023"``), read as UTC (the data names no timezone)."""
    cleaned = " ".join(text.replace(",", " ").split())
    for fmt in ("%I:%M %p on %d %B %Y", "%I:%M %p on %d %b %Y", "%d %B %Y"):
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unreadable session date {text!r}: expected like '1:56 pm on 8 May, 2023'")


def _turns(conversation: dict[str, Any]) -> list[Turn]:
    sessions = sorted(int(m.group(1)) for k in conversation if (m := _SESSION_KEY.fullmatch(k)))
    turns: list[Turn] = []
    for number in sessions:
        at = parse_session_time(str(conversation[f"session_{number}_date_time"]))
        for raw in conversation[f"session_{number}"]:
            text = str(raw.get("text", "")).strip()
            caption = raw.get("blip_caption")
            if caption:
                text = f"{text} [shares a photo: {caption}]".strip()
            ids = _EVIDENCE_ID.findall(str(raw.get("dia_id", "")))
            if not text or not ids:
                continue
            dia_id = f"D{int(ids[0][0])}:{int(ids[0][1])}"
            turns.append(Turn(dia_id, str(raw.get("speaker", "")), text, number, at))
    return turns


def load_locomo(path: Path, audit: Path | None = None) -> DataSet:
    """Read a LoCoMo-format file; ``audit`` (optional) corrects evidence; category 5 and evidence-less questions go."""
    try:
        samples = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"cannot read {path}: {exc}; pass --data with a LoCoMo-format JSON file") from exc
    corrections: dict[tuple[str, int], list[str]] = {}
    if audit is not None and audit.exists():
        for entry in json.loads(audit.read_text()):
            if entry.get("correct_evidence"):
                corrections[(str(entry["sample_id"]), int(entry["qa_index"]))] = list(entry["correct_evidence"])
    data = DataSet(name=path.name, conversations=[])
    for sample in samples:
        sample_id = str(sample["sample_id"])
        conv = sample["conversation"]
        turns = _turns(conv)
        known = {t.dia_id for t in turns}
        questions: list[Question] = []
        for index, qa in enumerate(sample.get("qa", [])):
            category = int(qa.get("category", 0))
            if category not in CATEGORIES:
                continue
            raw = corrections.get((sample_id, index))
            if raw is not None:
                data.corrected_questions += 1
            evidence = parse_evidence(raw if raw is not None else qa.get("evidence", []), data.dropped_evidence_ids)
            unknown = [e for e in evidence if e not in known]
            for e in unknown:
                data.dropped_evidence_ids[e] += 1
            evidence = tuple(e for e in evidence if e in known)
            if not evidence:
                data.questions_without_evidence += 1
                continue
            lead = questions[-1].question if questions else None  # the previous, unrelated question
            questions.append(Question(str(qa["question"]), str(qa.get("answer", "")), evidence, category, lead))
        speakers = (str(conv.get("speaker_a", "A")), str(conv.get("speaker_b", "B")))
        data.conversations.append(Conversation(sample_id, speakers, tuple(turns), tuple(questions)))
    return data


# --- the generated set ------------------------------------------------------------------------------------------

_SMALL_TALK = (
    "Hey! How have you been?",
    "Wow, that sounds great!",
    "Thanks for sharing that with me.",
    "Haha, same here. Busy week.",
    "Oh nice, tell me more!",
    "That's awesome, good for you.",
    "Yeah, totally agree with you.",
    "Sounds like a plan. Talk soon!",
)

#: (speaker index, statement, question, answer, category, session offset). Statements are planted as turns; each
#: question's evidence is the turn (or turns, for multi-hop) that carry its facts.
_PEOPLE = (("Nora", "Felix"), ("Ivo", "Leah"))
_FACTS: tuple[tuple[tuple[int, str], ...], ...] = (
    ((0, "I adopted a grey kitten last week and named her Pepper."),),
    ((1, "I started learning the cello with a teacher called Mr Alvarez."),),
    ((0, "My sister Greta moved to Lisbon for a job at an aquarium."),),
    ((1, "Yesterday I ran my first half marathon in Rotterdam."),),
    ((0, "I work as a nurse in the children's ward at Saint Mary hospital."),),
    ((1, "I am allergic to peanuts, so I always check the menu."),),
    (
        (0, "I bought a small sailboat and keep it at the marina in Kiel."),
        (0, "I sailed my boat to Denmark with my brother Jonas."),
    ),
    ((1, "My favourite book is The Left Hand of Darkness by Ursula Le Guin."),),
)
_QUESTIONS: tuple[tuple[str, str, int], ...] = (
    ("What is the name of {a}'s kitten?", "Pepper", 4),
    ("Which instrument is {b} learning?", "the cello", 4),
    ("Where did {a}'s sister move to?", "Lisbon", 4),
    ("When did {b} run a half marathon?", "the day before session 4", 2),
    ("What does {a} do for a living?", "nurse", 4),
    ("What food should {b} avoid?", "peanuts", 3),
    ("Where did {a} sail the boat kept in Kiel?", "Denmark", 1),
    ("Who wrote {b}'s favourite book?", "Ursula Le Guin", 4),
)
#: Follow-ups of the same facts: (what the user said before, the follow-up), answered by the same evidence.
_FOLLOW_UPS: tuple[tuple[str, str], ...] = (
    ("Tell me about {a}'s new kitten.", "What is its name?"),
    ("{b} takes music lessons, right?", "Which instrument is it?"),
    ("Let's talk about {a}'s sister.", "Where did she move?"),
    ("{b} ran a half marathon.", "When was that?"),
    ("What about {a}'s job?", "Where does she do it?"),
    ("{b} has a food allergy.", "What is it?"),
    ("{a} keeps a boat in Kiel.", "Where did she sail it?"),
    ("{b} has a favourite book.", "Who wrote it?"),
)


def synthetic(conversations: int = 2, small_talk: int = 3) -> DataSet:
    """A small generated set: ``conversations`` conversations of 8 sessions, each session one planted fact (two for
    the multi-hop one, in consecutive sessions) among ``small_talk`` small-talk turns per speaker."""
    out: list[Conversation] = []
    for c in range(conversations):
        a, b = _PEOPLE[c % len(_PEOPLE)]
        names = (a, b)
        start = datetime(2023, 3, 1, 10, 0, tzinfo=UTC) + timedelta(days=40 * c)
        turns: list[Turn] = []
        evidence: list[list[str]] = []
        session = 0
        for group in _FACTS:
            ids: list[str] = []
            for speaker, statement in group:
                session += 1
                at = start + timedelta(days=7 * session)
                lines = [(i % 2, _SMALL_TALK[(i + session + c) % len(_SMALL_TALK)]) for i in range(2 * small_talk)]
                lines.insert(small_talk, (speaker, statement))
                for n, (who, text) in enumerate(lines, start=1):
                    turn = Turn(f"D{session}:{n}", names[who], text, session, at)
                    turns.append(turn)
                    if text == statement:
                        ids.append(turn.dia_id)
            evidence.append(ids)
        questions = tuple(
            Question(q.format(a=a, b=b), answer, tuple(ids), category)
            for (q, answer, category), ids in zip(_QUESTIONS, evidence, strict=True)
        ) + tuple(
            Question(follow, answer, tuple(ids), category, lead.format(a=a, b=b))
            for (lead, follow), (_, answer, category), ids in zip(_FOLLOW_UPS, _QUESTIONS, evidence, strict=True)
        )
        out.append(Conversation(f"synthetic-{c + 1}", names, tuple(turns), questions))
    return DataSet(name="synthetic", conversations=out)

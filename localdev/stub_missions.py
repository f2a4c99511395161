"""How the LLM stand-in honours a bank's ``retain_mission``, as a real extractor reading it would, in a simple way.

Hindsight 1.1.0 puts the mission in every extraction request's user message, under a ``FOCUS — What to retain for
this bank`` banner, before ``Extract facts from the following chunk.`` (``_retain_mission_preamble`` in
``hindsight_api/engine/retain/fact_extraction.py``). :func:`mission_of` reads it back from there; :func:`keeps`
decides whether one candidate fact survives it:

* the mission is read as clauses: a clause that says not to keep something (``do not keep``, ``don't``, ``ignore``,
  ``skip``, ``exclude``, ``never``, ``avoid``) names what to *drop*, any other names what to *keep*;
* what a clause names is matched to the memory model's kinds (preference, decision, plan, problem, solution, fact)
  and to small-talk topics (greetings, thanks, weather, the weekend, how someone is, chit-chat in general), each of
  which a sentence is recognised by through a few common English cue words, the way the rest of this stand-in
  recognises entities and dates;
* a fact of a dropped topic that is of no kept kind is not extracted; with ``only`` in a keep clause, neither is a
  fact of no kept kind.

No mission, or one that names none of these, changes nothing. The vocabulary is general English, not any test's or
scenario's sentences; what it does not recognise it keeps, as the default extraction would.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["KIND_CUES", "SMALL_TALK_CUES", "keeps", "mission_of"]

_BANNER = "FOCUS — What to retain for this bank"
_END = "Extract facts from the following chunk."

#: How a sentence of each kind usually reads: whole words or phrases; ``*`` ends a stem ("decid*": decide, decided).
KIND_CUES: Mapping[str, tuple[str, ...]] = {
    "preference": ("prefer*", "like", "likes", "love", "loves", "favourite", "favorite", "rather", "hate", "dislike*",
                   "want", "wants", "always", "never", "enjoy*"),
    "decision": ("decid*", "decision", "chose", "choos*", "going with", "go with", "settled on", "picked", "switch*",
                 "opt for", "opted"),
    "plan": ("plan", "plans", "planning", "going to", "will", "schedul*", "next week", "next month", "intend*"),
    "problem": ("error*", "fail*", "broken", "breaks", "issue*", "problem*", "bug", "bugs", "crash*", "can't",
                "cannot", "doesn't work", "stopped working", "timeout*", "timed out"),
    "solution": ("fixed", "solved", "resolved", "workaround", "worked", "the fix"),
}  # fmt: skip
#: Small-talk topics and how a sentence about one usually reads (same form).
SMALL_TALK_CUES: Mapping[str, tuple[str, ...]] = {
    "greeting": ("hello", "hi", "hey", "good morning", "good afternoon", "good evening"),
    "thanks": ("thank*", "appreciate*", "cheers"),
    "weather": ("weather", "rain*", "sunny", "snow*", "cold", "hot outside", "forecast", "storm*", "humid"),
    "weekend": ("weekend", "saturday", "sunday", "holiday*", "day off"),
    "wellbeing": ("how are you", "how's it going", "doing well", "hope you", "have a nice", "have a great"),
}
#: What a mission may call the kinds and the topics.
_KIND_NAMES: Mapping[str, tuple[str, ...]] = {
    "preference": ("preference", "prefer", "likes", "taste"),
    "decision": ("decision", "decide", "choice"),
    "plan": ("plan", "commitment", "intention"),
    "problem": ("problem", "issue", "bug", "error", "complaint"),
    "solution": ("solution", "resolution", "fix", "solved"),
}
_TOPIC_NAMES: Mapping[str, tuple[str, ...]] = {
    "greeting": ("greeting", "hello"),
    "thanks": ("thanks", "thank", "gratitude"),
    "weather": ("weather",),
    "weekend": ("weekend", "holiday"),
    "wellbeing": ("how they are", "how you are", "wellbeing", "well-being"),
}
_ALL_SMALL_TALK = ("small talk", "small-talk", "chit-chat", "chitchat", "pleasantr", "banter", "social")
_NEGATION = re.compile(r"\b(?:do not|don't|dont|never|ignore|skip|exclude|avoid|not)\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[.;\n]+|\bbut\b", re.IGNORECASE)


def mission_of(user_message: str) -> str | None:
    """The bank's retain mission from an extraction request's user message (``None``: the bank has none)."""
    at = user_message.find(_BANNER)
    if at < 0:
        return None
    rest = user_message[at + len(_BANNER) :]
    rest = rest.split("\n", 2)[-1] if rest.count("\n") >= 2 else rest  # past the banner's closing rule
    end = rest.find(_END)
    mission = (rest[:end] if end >= 0 else rest).strip()
    return mission or None


def _names(text: str, names: Mapping[str, tuple[str, ...]]) -> set[str]:
    return {key for key, words in names.items() if any(w in text for w in words)}


def _cue(word: str) -> re.Pattern[str]:
    stem = word.endswith("*")
    return re.compile(r"(?<![a-z'])" + re.escape(word.rstrip("*")) + ("" if stem else r"(?![a-z])"))


def _cued(sentence: str, cues: Mapping[str, tuple[str, ...]]) -> set[str]:
    text = sentence.lower()
    return {key for key, words in cues.items() if any(_cue(w).search(text) for w in words)}


def _read(mission: str) -> tuple[set[str], set[str], bool]:
    """``(kinds to keep, small-talk topics to drop, whether only the kept kinds are kept)``."""
    keep: set[str] = set()
    drop: set[str] = set()
    only = False
    for clause in _CLAUSE.split(mission.lower()):
        if _NEGATION.search(clause):
            drop |= set(SMALL_TALK_CUES) if any(w in clause for w in _ALL_SMALL_TALK) else set()
            drop |= _names(clause, _TOPIC_NAMES)
        else:
            kinds = _names(clause, _KIND_NAMES)
            keep |= kinds
            only = only or (bool(kinds) and re.search(r"\bonly\b", clause) is not None)
    return keep, drop, only


def keeps(mission: str | None, sentence: str) -> bool:
    """Whether a fact read from ``sentence`` survives ``mission`` (see the module docstring)."""
    if not mission:
        return True
    keep, drop, only = _read(mission)
    kinds = _cued(sentence, KIND_CUES) & keep
    if kinds:
        return True
    if _cued(sentence, SMALL_TALK_CUES) & drop:
        return False
    return not only

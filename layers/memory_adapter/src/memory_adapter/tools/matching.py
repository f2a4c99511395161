"""How a ``forget`` description's words meet a memory's: every significant word of it present (:func:`matches`), or
which share of them is (:func:`coverage`).

The description's significant words are those that are not stop words ("that", "I", "my", "about"; at least two
letters). A word is found in a memory as the same word, as the start of one ("prefer" in "preferences"), or as a word
of the same stem (a common start of at least :data:`_MIN_STEM` letters, all of the shorter word's but its last one:
"allergy" and "allergic", not "information" and "informal"). "forget that I prefer email" holds every word of "I prefer
email over phone", never of "I prefer tea". Standard library only (the agent uses :func:`matches` to drop forgotten
exchanges from working memory too).
:mod:`memory_adapter.tools.forgetting` decides what a description selects, with the search's similarity besides.
"""

from __future__ import annotations

import re
from itertools import takewhile
from typing import Final

__all__ = ["coverage", "matches", "significant_words"]

_WORD = re.compile(r"[^\W_]+")
_MIN_PREFIX: Final = 4
_MIN_STEM: Final = 5
_STEM_SLACK: Final = 1
#: Words that say nothing about which memory is meant (English; a description of only these selects nothing).
STOP_WORDS: Final = frozenset(
    """a about all also am an and any are as at be been but by can could did do does for forget from had has have he
    her him his how i if in into is it its just ll me mine my myself no not now of on or our ours please re remember
    she so some that the their them then there these they this those to too us ve was we were what when where which
    who why will with would you your yours""".split()  # noqa: SIM905 (a word list reads better as text)
)


def significant_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` that can select a memory, lower-cased, in order, once each."""
    words = (word.lower() for word in _WORD.findall(text))
    return tuple(dict.fromkeys(word for word in words if len(word) >= 2 and word not in STOP_WORDS))


def _found(word: str, words: set[str]) -> bool:
    if word in words:
        return True
    if len(word) < _MIN_PREFIX:
        return False
    return any(
        candidate.startswith(word)
        or (len(candidate) >= _MIN_PREFIX and word.startswith(candidate))
        or _same_stem(word, candidate)
        for candidate in words
    )


def _same_stem(one: str, other: str) -> bool:
    shared = sum(1 for _ in takewhile(lambda pair: pair[0] == pair[1], zip(one, other, strict=False)))
    return shared >= _MIN_STEM and shared >= min(len(one), len(other)) - _STEM_SLACK


def coverage(description: str, text: str) -> float:
    """The share of ``description``'s significant words that ``text`` holds (0.0 when there are none)."""
    wanted = significant_words(description)
    if not wanted:
        return 0.0
    present = {word.lower() for word in _WORD.findall(text)}
    return sum(_found(word, present) for word in wanted) / len(wanted)


def matches(description: str, text: str) -> bool:
    """Whether ``text`` holds every significant word of ``description`` (``False`` when there are none)."""
    wanted = significant_words(description)
    if not wanted:
        return False
    present = {word.lower() for word in _WORD.findall(text)}
    return all(_found(word, present) for word in wanted)

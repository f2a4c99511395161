"""Which memories a ``forget`` description selects: conservatively, every significant word of it must appear.

Semantic search always returns *something* (the nearest memories, however far), so it cannot decide alone what a user
asked to forget. The search narrows the candidates; this rule picks from them: the description's significant words
(not stop words such as "that", "I", "my", "about"; at least two letters) must each appear in the memory, as a word
or the start of one ("prefer" matches "preferences"). "forget that I prefer email" selects "I prefer email over
phone", never "I prefer tea". Standard library only (the agent uses it to drop forgotten exchanges from working
memory too).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["matches", "significant_words"]

_WORD = re.compile(r"[^\W_]+")
_MIN_PREFIX: Final = 4
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
        candidate.startswith(word) or (len(candidate) >= _MIN_PREFIX and word.startswith(candidate))
        for candidate in words
    )


def matches(description: str, text: str) -> bool:
    """Whether ``text`` holds every significant word of ``description`` (``False`` when there are none)."""
    wanted = significant_words(description)
    if not wanted:
        return False
    present = {word.lower() for word in _WORD.findall(text)}
    return all(_found(word, present) for word in wanted)

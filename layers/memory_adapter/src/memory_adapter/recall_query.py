"""The recall query for a turn: the user's message, plus the one before it when the message is a follow-up.

"What did I decide about it?" names nothing a memory could match; the session's working memory knows what "it" is.
:func:`recall_query` prepends the previous user message when the new one reads as a follow-up: it refers back (it,
that, this, they, there, ...), is short and names no one ("When did Maria sell her car?" is standalone), or it has
almost no words of its own. Standalone questions are sent as
they are, so the rule costs nothing when it does not apply (``make eval`` measures both: BENCHMARKS.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

__all__ = ["recall_query"]

_WORD: Final = re.compile(r"[a-z0-9']+")
_NAME: Final = re.compile(r"(?<!^)(?<![.!?] )\b[A-Z][a-z]+")
_BACK_REFERENCES: Final = frozenset(
    "it its it's that this these those they them their there he she him his her one".split()  # noqa: SIM905
)
_FUNCTION_WORDS: Final = _BACK_REFERENCES | frozenset(
    """
    a an the and or but so of to in on at for with about from by what which who whom when where why how is are was
    were be been do does did can could will would should i me my you your we our ok okay then also again more tell
    about please any anything else
    """.split()  # noqa: SIM905
)
#: A message this short that refers back is a follow-up.
_SHORT_WORDS: Final = 10
#: A message with this few words of its own is a follow-up whatever it says.
_FEW_CONTENT_WORDS: Final = 1
_PREVIOUS_CHARS: Final = 400


def recall_query(message: str, previous_user_messages: Sequence[str] = ()) -> str:
    """``message``, or the last of ``previous_user_messages`` (cut to 400 characters) then ``message`` when
    ``message`` is a follow-up."""
    if not previous_user_messages or not previous_user_messages[-1].strip():
        return message
    words = _WORD.findall(message.lower())
    content = [w for w in words if w not in _FUNCTION_WORDS]
    names_someone = bool(_NAME.search(message.strip()))
    refers_back = any(w in _BACK_REFERENCES for w in words) and not names_someone
    if (refers_back and len(words) <= _SHORT_WORDS) or len(content) <= _FEW_CONTENT_WORDS:
        return f"{previous_user_messages[-1].strip()[:_PREVIOUS_CHARS]}\n{message}"
    return message

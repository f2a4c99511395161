"""The memory block within its token budget as the model sees it, and a retained turn laid out so every chunk
says who spoke.

**Budget.** Hindsight's ``max_tokens`` counts only each memory's text (o200k), not the delimiters, the notice, the
``[type]`` tags and the timestamps the formatter adds: measured on LoCoMo, a 1,500-token budget became a 4,935-token
block. :func:`fit_to_budget` keeps the longest prefix of the recalled memories (they arrive best first) whose
*formatted* block is within the budget, with any formatter. Tokens are estimated by :func:`estimate_tokens`, an
upper bound of byte-pair tokenizers on ordinary text: a run of letters costs one token per 4 letters, a run of
digits one per 3 (o200k groups digits by three), any other character one, whitespace nothing (it joins the next
word). A plain bytes/3 rule undercounted timestamps (``2026-12-01T21:46:21.786075+00:00``: 32 bytes, 19 o200k
tokens).

**Dialogue layout.** Hindsight splits a long turn into chunks (3,000 characters by default) anywhere, sentence-aware
but blind to roles: a chunk from the middle of a long answer lost its ``Assistant:`` line and the extractor read the
agent's words as the user's. :func:`dialogue_text` prefixes *every* line with its role and wraps lines longer than
:data:`MAX_LINE_CHARS` (after a sentence when one ends late enough, else at a space), so any chunk made of whole lines
names its speaker and an extractor reads whole sentences; hard-wrapped prose (pasted mail or documents) is first
joined back into its paragraphs, so no chunk ends in the middle of a sentence. A short single-line turn keeps the
prior art's exact ``User: {query}\\nAssistant: {result}``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Final, TypeVar

__all__ = ["MAX_LINE_CHARS", "dialogue_text", "estimate_tokens", "fit_to_budget"]

#: Well under Hindsight's smallest sensible chunk, so the sentence-aware splitter cuts between lines, not inside.
MAX_LINE_CHARS: Final = 800
_PIECE: Final = re.compile(r"[A-Za-z]+|[0-9]+|\s+|.", re.DOTALL)
_ELLIPSIS: Final = "…"
_SENTENCE_END: Final = re.compile(r"[.!?][\"')\]]*(?= )")
#: A line at least this long that stops mid-sentence (without one of these at its end) was hard-wrapped.
_WRAPPED_LINE_CHARS: Final = 40
_SENTENCE_MARKS: Final = (".", "!", "?", ":", ";")

M = TypeVar("M")


def estimate_tokens(text: str) -> int:
    """An upper bound of ``text``'s token count for ordinary text (see the module docstring)."""
    total = 0
    for piece in _PIECE.findall(text):
        first = piece[0]
        if first.isspace():
            continue
        if first.isascii() and first.isalpha():
            total += -(-len(piece) // 4)
        elif first.isdigit() and first.isascii():
            total += -(-len(piece) // 3)
        else:
            total += 1
    return total


def fit_to_budget(memories: Sequence[M], render: Callable[[Sequence[M]], str], max_tokens: int) -> list[M]:
    """The longest prefix of ``memories`` whose ``render``-ed block is within ``max_tokens`` (estimated).

    When not even the first memory fits, its text is cut (with an ellipsis) to fit, so a single long memory still
    reaches the model; when not even an empty-text memory fits (a tiny budget), nothing is returned.
    """
    if max_tokens <= 0 or not memories:
        return []

    def fits(items: Sequence[M]) -> bool:
        return estimate_tokens(render(items)) <= max_tokens

    low, high = 0, len(memories)  # invariant: memories[:low] fits; memories[:high + 1] does not (or high == len)
    if fits(memories):
        return list(memories)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(memories[:middle]):
            low = middle
        else:
            high = middle - 1
    if low:
        return list(memories[:low])
    return _cut_first(memories[0], render, max_tokens)


def _cut_first(first: M, render: Callable[[Sequence[M]], str], max_tokens: int) -> list[M]:
    text = getattr(first, "text", None)
    if not isinstance(text, str):
        return []
    low, high = 0, len(text)
    best: M | None = None
    while low <= high:
        middle = (low + high) // 2
        candidate = replace(first, text=text[:middle].rstrip() + _ELLIPSIS)  # type: ignore[type-var]
        if estimate_tokens(render([candidate])) <= max_tokens:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return [best] if best is not None and getattr(best, "text", _ELLIPSIS) != _ELLIPSIS else []


def _wrapped(line: str, width: int) -> list[str]:
    """``line`` in pieces of at most ``width`` characters, each cut after a sentence when one ends in the second half
    of the window, else at a space, so a sentence is rarely split across lines (an extractor reading one chunk of
    them sees whole sentences)."""
    out: list[str] = []
    while len(line) > width:
        ends = [m.end() for m in _SENTENCE_END.finditer(line, width // 2, width + 1)]
        cut = ends[-1] if ends else line.rfind(" ", width // 2, width)
        cut = cut if cut > 0 else width
        out.append(line[:cut].rstrip())
        line = line[cut:].lstrip()
    if line:
        out.append(line)
    return out


def _paragraphs(text: str) -> list[str]:
    """The lines of ``text``, hard-wrapped prose joined back into one line per paragraph: a line of at least
    :data:`_WRAPPED_LINE_CHARS` characters that stops mid-sentence, followed by one that goes on in lower case or with
    a number, continues on that line (pasted mail and documents are wrapped at ~72 columns; left so, Hindsight's
    chunker, which cuts between lines, would cut their sentences in two). Short lines and lists stay as they are."""
    lines: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        previous = lines[-1] if lines else ""
        if (
            (line[:1].islower() or line[:1].isdigit())
            and len(previous) >= _WRAPPED_LINE_CHARS
            and not previous.endswith(_SENTENCE_MARKS)
        ):
            lines[-1] = f"{previous} {line}"
        elif line:
            lines.append(line)
    return lines


def _labelled(role: str, text: str, width: int) -> list[str]:
    return [f"{role}: {piece}" for line in _paragraphs(text) for piece in _wrapped(line, width)]


def dialogue_text(query: str | None, result: str, *, width: int = MAX_LINE_CHARS) -> str:
    """The turn as retained: every line opened by ``User:`` or ``Assistant:``, none longer than ``width`` + label."""
    lines = _labelled("User", query, width) if query and query.strip() else []
    lines.extend(_labelled("Assistant", result, width))
    return "\n".join(lines)

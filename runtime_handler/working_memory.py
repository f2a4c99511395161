"""Working memory: the session's own conversation, kept in the agent process and given to the model each turn.

Long-term memory (Hindsight) extracts facts seconds after a turn is retained, so without this the second turn of a
session cannot know what the first one said. A session's turns are kept per **session and caller**: the key is the
verified caller's bank id (tenant, user, agent) together with the runtime session id, so a second user presenting
the same session id starts from an empty conversation, and anonymous turns (no verified caller) keep none.

Bounds, all configurable (``runtime_handler.settings``): the most recent ``max_turns`` exchanges whose text adds up to
at most ``max_chars`` characters (older ones are dropped first; one exchange longer than the whole budget is kept
shortened), and at most ``max_sessions`` conversations per process, least recently used dropped first (one AgentCore
session is one process, so that bound matters only for local and self-hosted runs serving many sessions).

Standard library only and thread-safe (a lock around a few dictionary operations: well under a microsecond of work
per call), so ``make bench`` measures it in-process.

Example:
    >>> memory = WorkingMemory(WorkingMemoryLimits(max_turns=2))
    >>> memory.add(caller, "session-1", Exchange("My codename is Bluebird.", "Noted."))
    >>> memory.history(caller, "session-1")
    (Exchange(user='My codename is Bluebird.', assistant='Noted.'),)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from memory_adapter.identity.caller import Caller

__all__ = ["DEFAULT_LIMITS", "Exchange", "WorkingMemory", "WorkingMemoryLimits"]

_SHORTENED: Final = " [...]"


@dataclass(frozen=True, slots=True)
class Exchange:
    """One turn of the conversation: what the user said and what the agent answered."""

    user: str
    assistant: str

    @property
    def size(self) -> int:
        """Characters this exchange counts against ``max_chars``."""
        return len(self.user) + len(self.assistant)


@dataclass(frozen=True, slots=True)
class WorkingMemoryLimits:
    """How much of a session's conversation is kept (``max_turns=0`` turns working memory off).

    Args:
        max_turns: Most recent exchanges kept per conversation (default 20).
        max_chars: Characters of those exchanges together (default 24,000: about 6,000 tokens).
        max_sessions: Conversations kept per process, least recently used dropped first (default 1,000).
    """

    max_turns: int = 20
    max_chars: int = 24_000
    max_sessions: int = 1_000


DEFAULT_LIMITS: Final = WorkingMemoryLimits()

_Key = tuple[str, str]


class WorkingMemory:
    """The conversations of this process, each bounded by ``limits``."""

    def __init__(self, limits: WorkingMemoryLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._conversations: OrderedDict[_Key, tuple[Exchange, ...]] = OrderedDict()

    @staticmethod
    def _key(caller: Caller, session_id: str) -> _Key:
        # The bank id names (tenant, user, agent) injectively: another user cannot produce this key.
        return (caller.bank_id, session_id)

    def history(self, caller: Caller | None, session_id: str) -> tuple[Exchange, ...]:
        """The conversation so far, oldest first (``()`` for an anonymous caller or a new session)."""
        if caller is None or self.limits.max_turns <= 0:
            return ()
        key = self._key(caller, session_id)
        with self._lock:
            turns = self._conversations.get(key, ())
            if turns:
                self._conversations.move_to_end(key)
            return turns

    def add(self, caller: Caller | None, session_id: str, exchange: Exchange) -> None:
        """Append ``exchange`` and drop what no longer fits (nothing is kept for an anonymous caller)."""
        limits = self.limits
        if caller is None or limits.max_turns <= 0:
            return
        exchange = _fit(exchange, limits.max_chars)
        key = self._key(caller, session_id)
        with self._lock:
            turns = (*self._conversations.get(key, ()), exchange)[-limits.max_turns :]
            total = sum(turn.size for turn in turns)
            start = 0
            while total > limits.max_chars and start < len(turns) - 1:
                total -= turns[start].size
                start += 1
            self._conversations[key] = turns[start:]
            self._conversations.move_to_end(key)
            while len(self._conversations) > limits.max_sessions:
                self._conversations.popitem(last=False)

    def drop(self, caller: Caller | None, session_id: str, matches: Callable[[Exchange], bool]) -> int:
        """Remove the exchanges ``matches`` selects (after a ``forget``); return how many were removed."""
        if caller is None:
            return 0
        key = self._key(caller, session_id)
        with self._lock:
            turns = self._conversations.get(key, ())
            kept = tuple(turn for turn in turns if not matches(turn))
            if kept:
                self._conversations[key] = kept
            else:
                self._conversations.pop(key, None)
            return len(turns) - len(kept)

    def __len__(self) -> int:
        """Conversations held."""
        with self._lock:
            return len(self._conversations)


def _fit(exchange: Exchange, max_chars: int) -> Exchange:
    """The exchange shortened to ``max_chars`` (the user's side keeps at least half of the budget)."""
    if exchange.size <= max_chars:
        return exchange
    user_budget = max(max_chars // 2, max_chars - len(exchange.assistant))
    user = _shorten(exchange.user, user_budget)
    return Exchange(user, _shorten(exchange.assistant, max(0, max_chars - len(user))))


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    if limit <= len(_SHORTENED):
        return text[:limit]
    return text[: limit - len(_SHORTENED)] + _SHORTENED

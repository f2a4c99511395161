"""Token buckets per bank owner: how fast one user's recalls that state no deadline may join the recall queue.

A recall that states no deadline is never shed for the queue's length (its caller said it will wait), only past its
user's share of the gate (:meth:`hindsight_isolation.admission.RecallGate.over_share`). The share bounds how many
places one user holds at once, not how often that user comes back: a user whose recalls are answered sends the next
at once, and many users doing so keep the queue long, so every recall that states a deadline behind them is shed.
The bucket bounds the rate: each user's recalls that state no deadline and would wait take a token, ``rate`` tokens
a second, one second's worth (one at least) held at most; with none left, the recall is shed (stage ``rate``) and
told when the next token comes.

Tokens are taken only while recalls contend (a recall that finds a free slot nobody waits for starts and takes
none): on an idle server a batch job's recalls cost nobody anything, and the gate never refuses a free slot. Recalls
that state a deadline take none either: the gate's estimate already sheds those that would wait too long.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

__all__ = ["MAX_OWNERS", "TokenBuckets"]

#: Buckets kept at most; past it, the full ones (owners not seen for a while) are forgotten: a full bucket is what a
#: new owner gets anyway.
MAX_OWNERS: Final = 4096


@dataclass(slots=True)
class TokenBuckets:
    """One bucket per owner: ``rate`` tokens a second (0: no limit), ``max(1, rate)`` held at most."""

    rate: float
    clock: Callable[[], float] = time.monotonic
    buckets: dict[str, tuple[float, float]] = field(default_factory=dict)  # owner -> (tokens, when counted)

    @property
    def burst(self) -> float:
        return max(1.0, self.rate)

    def _tokens(self, owner: str, now: float) -> float:
        tokens, at = self.buckets.get(owner, (self.burst, now))
        return min(self.burst, tokens + (now - at) * self.rate)

    def take(self, owner: str) -> float:
        """Take one of ``owner``'s tokens: ``0.0``; with none left, the seconds until the next (nothing taken)."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        tokens = self._tokens(owner, now)
        if tokens < 1.0:
            self.buckets[owner] = (tokens, now)
            return (1.0 - tokens) / self.rate
        self.buckets[owner] = (tokens - 1.0, now)
        if len(self.buckets) > MAX_OWNERS:
            self._forget(now)
        return 0.0

    def _forget(self, now: float) -> None:
        full = [owner for owner in self.buckets if self._tokens(owner, now) >= self.burst]
        for owner in full:
            del self.buckets[owner]

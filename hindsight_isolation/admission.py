"""Admission control for recalls: serve what can be served in time, answer the rest at once.

A caller may state how long it will wait for a recall (:data:`~memory_adapter.recall_deadline.DEADLINE_HEADER`,
milliseconds from when it sent the request; the memory adapter sends what is left of its recall deadline). Past
saturation, a recall that waits in a queue and then misses that deadline costs the caller the whole deadline for
nothing (issue 34: turns paid the full 2 s and got no memory anyway). The gate here answers such a recall at once with
``503`` + ``Retry-After`` and a JSON body naming the reason (:data:`~memory_adapter.recall_deadline.OVERLOADED`), a
*shed* recall, and starts no work for it.

How it decides (one gate per server process, in the request guard, REST recalls only), **at once, on arrival**:

* At most ``slots`` recalls run at once; the others wait in one FIFO queue. A recall that finds a free slot and
  nobody waiting always starts (so the estimates below keep learning, even when they say "too slow").
* ``slots`` is an adaptive limit between 1 and ``concurrency`` (:meth:`RecallGate._adapt`): on one core, every
  recall let in beside another only slows both, so once per round of ``slots`` served recalls the limit comes down
  in proportion when the round's median ran over ``tolerance`` times a recall served *alone* (the baseline: recalls
  no other ran beside, so a saturated process cannot talk itself into a slower baseline), and goes up by one when it
  did not and the gate was full. What a process serves at once follows from its measured recall times, whatever the
  machine; ``tolerance`` 0 keeps it at ``concurrency``.
* ``service`` is the median of the last :data:`RECENT` served recalls' times (slot taken to answer sent, 200 only: a
  flood of refused requests must not make recalls look fast). Because those times are measured at the concurrency the
  gate allows, ``slots / service`` is the rate at which slots free up (Little's law): the gate's depth follows from
  the measured service time and the deadline, not from a fixed queue length.
* A new recall with ``q`` recalls queued ahead of it expects to wait ``wait = (q + 1) * service / slots`` for a
  slot. With a stated deadline ``d`` it is shed when ``wait + service > d`` (it would miss its deadline) or
  ``wait > max_wait`` (it would make it, but only by queueing longer than a recall should: past that, serving late
  only delays everyone behind it; this is what keeps the served recalls fast past saturation). ``max_wait`` is the
  setting or half a recall served alone, whichever is longer (:meth:`RecallGate.max_wait_s`). It is shed too (stage
  ``target``) when ``wait + service`` exceeds ``target`` times a recall served alone (:meth:`RecallGate.bound_s`,
  never past ``d``): issue 34's served turn within 2x the unloaded one, however long the deadline; while recent
  recalls run over it themselves (a contended CPU), only a free slot admits, and the limit comes down. Otherwise it is
  admitted, and an admitted recall is served: it is never shed after queueing, so a shed costs its caller one round
  trip and nothing more. (One exception cleans up after a bad estimate: a recall still queued when its whole stated
  deadline has passed is answered 503 then; its caller stopped waiting at that moment, so nothing is lost.)
* One user (the owner of the bank a recall names: all of that user's banks, whichever agent's, whoever's credential
  asks; a bank id of no user counts alone) holds at most half the slots, one at least, running or queued, while
  recalls contend for them: past that, a recall of that user's that would wait is shed at once (stage ``share``),
  whether it states a deadline or not, so one caller sending recalls in parallel, to one bank or to many, with
  deadlines or without, cannot take every admitted place. A free slot nobody waits for is never refused.
* Likewise one tenant (the bank's: ``tenant:{t}:...`` bank ids; only a recall its caller may read takes part, so a
  user's or a tenant's agent's recall is always of its own tenant), while other tenants hold places too: it holds at
  most the slots shared evenly among the tenants holding any (one at least), running or queued; past that, its
  recall that would wait is shed at once (stage ``tenant``), deadline or not, so a tenant of many users cannot crowd
  out a small one. A tenant alone in the gate, and banks without a tenant, are not capped by this.
* Before the first served recall of the process (no estimate yet), a recall that states a deadline and finds every
  slot busy is shed (stage ``unmeasured``): a new process that starts into a burst (a task autoscaling added to a
  saturated service) would otherwise queue the whole burst on no estimate at all and have it time out.
* Without a deadline (header absent or not a number) a recall within its user's and its tenant's shares, and its
  user's rate (:mod:`hindsight_isolation.rate`: ``user_rate`` a second of those that would wait; stage ``rate``), is
  never shed: it queues, however long the queue. Past either share or the rate it is shed like any other (above).
  Retains, reflects, MCP and everything else never pass through the gate.
* Only authenticated callers take part, and only in recalls of banks they may read (:func:`configure`'s
  ``identify``: the tenant extension's own authentication, the same keys and the same cache of verified tokens, so a
  recall's credential is verified once either way; then :func:`hindsight_isolation.policy.authorize`, the
  validator's own rule). A recall whose credential does not authenticate, or does not reach the bank it names, passes
  the gate untouched and Hindsight refuses it as before: the same ``401`` or ``403`` it always got, never a shed
  answer (so it learns nothing about the load, nor whether another user's bank is busy), and it never holds a slot,
  joins the queue, counts against the bank owner's share or adds to the estimate (so it cannot make others shed).
  What it can still cost is one failed verification, as before the gate existed.

The stated deadline is clamped to ``[MIN_DEADLINE_S, MAX_DEADLINE_S]``. It only decides whether *this* request waits
or is answered at once; it never reorders the queue and never counts towards the estimate (only served recalls do),
so no caller can push others back or make the server shed theirs by what it states: a short deadline gets its own
recall shed, a long one is held to ``max_wait`` like any other.

:class:`~hindsight_isolation.settings.AdmissionConfig`'s fields are the tenant extension's settings
(``HINDSIGHT_API_TENANT_RECALL_CONCURRENCY``, ``..._RECALL_MAX_WAIT_MS``, ``..._RECALL_LATENCY_TOLERANCE``,
``..._RECALL_LATENCY_TARGET``, ``..._RECALL_USER_RATE``), configured once at start-up by :func:`configure`;
``RECALL_CONCURRENCY=0`` turns the gate off. What a shed recall gets (the 503, when to retry, one ``WARNING`` line
starting with :data:`hindsight_isolation.shed.SHED_LOG`) is :mod:`hindsight_isolation.shed`'s; the adapter counts
the sheds it receives (``MemoryRecallShed``), which the stack graphs and alarms on (``RecallsShed``).
"""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hindsight_isolation import policy, route
from hindsight_isolation.principal import Principal
from hindsight_isolation.rate import TokenBuckets
from hindsight_isolation.route import RequestKind
from hindsight_isolation.settings import AdmissionConfig
from hindsight_isolation.shed import Shed, answer_shed
from memory_adapter.identity.bank_ids import parse_bank_id
from memory_adapter.recall_deadline import DEADLINE_HEADER

__all__ = [
    "MAX_DEADLINE_S",
    "MIN_DEADLINE_S",
    "RECENT",
    "WINDOW",
    "RecallGate",
    "configure",
    "credential",
    "gate",
    "serve",
    "stated_deadline",
]

#: Bounds of a stated deadline (anything longer is treated as this long; shorter, as this short).
MIN_DEADLINE_S: Final = 0.01
MAX_DEADLINE_S: Final = 60.0
#: Recalls served alone whose times make the baseline.
WINDOW: Final = 64
#: Served recalls whose median is the service estimate: few, so it follows the limit (a recall's time at 4 at once is
#: not its time at 1).
RECENT: Final = 16
_HEADER: Final = DEADLINE_HEADER.encode("ascii")


@dataclass(slots=True)
class RecallGate:
    """The slots, the queue and the recent service times of one server process (one event loop)."""

    config: AdmissionConfig
    clock: Callable[[], float] = time.monotonic
    running: int = 0
    waiters: deque[asyncio.Future[None]] = field(default_factory=deque)
    times: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT))
    alone: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))
    limit: float = 0.0
    round: list[float] = field(default_factory=list)
    round_full: bool = False
    starts: int = 0
    held: Counter[str] = field(default_factory=Counter)
    tenants: Counter[str] = field(default_factory=Counter)
    shed: int = 0
    rates: TokenBuckets = field(init=False)

    def __post_init__(self) -> None:
        self.limit = float(self.config.concurrency)
        self.rates = TokenBuckets(self.config.user_rate, lambda: self.clock())

    def slots(self) -> int:
        """Recalls let in at once now: the adaptive limit, whole (at least one)."""
        return max(1, int(self.limit))

    def service_s(self) -> float | None:
        """The median of the recent served recalls' times; ``None`` before the first."""
        return statistics.median(self.times) if self.times else None

    def baseline_s(self) -> float | None:
        """What a recall takes served alone: the median of recent recalls that ran with no other (before any, the
        fastest recent recall); ``None`` before the first. Never from recalls that shared the CPU, so a saturated
        process cannot talk itself into a slower baseline."""
        if self.alone:
            return statistics.median(self.alone)
        return min(self.times) if self.times else None

    def over_share(self, owner: str, deadline: float | None, tenant: str | None = None) -> Shed | None:
        """A shed when this recall would wait and its bank's ``owner`` (:func:`_place`) already holds its share of the
        gate, half the slots, one at least, running or queued (``held`` counts this recall too), or its ``tenant``
        holds more than its fair share while other tenants hold places (:meth:`tenant_over`): one caller, or one
        tenant of many users, cannot take every admitted place from others, yet a free slot nobody waits for is
        never refused (an agent's recalls in parallel on an idle server are served). With or without a ``deadline``:
        a recall that states none is shed past its share too, or one user's deadline-less flood would fill the queue
        and shed everyone else's."""
        if self._free():
            return None
        if self.held[owner] > max(1, self.slots() // 2):
            return Shed(0.0, self.service_s() or 0.0, deadline, len(self.waiters), "share")
        if tenant is not None and self.tenant_over(tenant):
            return Shed(0.0, self.service_s() or 0.0, deadline, len(self.waiters), "tenant")
        if deadline is None and (until := self.rates.take(owner)) > 0:
            return Shed(until, self.service_s() or 0.0, deadline, len(self.waiters), "rate")
        return None

    def tenant_over(self, tenant: str) -> bool:
        """Whether ``tenant`` holds more places (running or queued, this recall's included) than the slots shared
        evenly among the tenants holding any, one at least; never while it is the only tenant in the gate."""
        return len(self.tenants) > 1 and self.tenants[tenant] > max(1, self.slots() // len(self.tenants))

    def max_wait_s(self) -> float:
        """The longest expected queueing admitted: ``max_wait_s``, or half a recall served alone where that is
        longer (a slow machine's recall in its slot, at most ``tolerance`` 1.5 x alone, plus half of one stays
        within 2x the unloaded recall, so the bound scales with the machine instead of shedding below saturation)."""
        return max(self.config.max_wait_s, (self.baseline_s() or 0.0) / 2)

    def _free(self) -> bool:
        """A slot is free and nobody waits for one: a recall arriving now starts at once."""
        return self.running < self.slots() and not self.waiters

    def expected_wait_s(self, service: float) -> float:
        """How long a recall arriving now expects to wait for a slot."""
        if self._free():
            return 0.0
        return (len(self.waiters) + 1) * service / self.slots()

    def _verdict(self, deadline: float | None) -> Shed | None:
        """A shed, or ``None``: admitted."""
        service = self.service_s()
        if deadline is None or self._free():
            return None
        if service is None:  # nothing measured yet (a new process in a burst): queue nothing on a guess
            return Shed(0.0, 0.0, deadline, len(self.waiters), "unmeasured")
        wait = self.expected_wait_s(service)
        if wait + service > deadline or wait > self.max_wait_s():
            return Shed(wait, service, deadline, len(self.waiters), "arrival")
        if wait + service > self.bound_s(deadline):
            return Shed(wait, service, deadline, len(self.waiters), "target")
        return None

    def bound_s(self, deadline: float) -> float:
        """The longest a recall stating ``deadline`` may expect to take, wait included, to be admitted: ``target``
        times a recall served alone, never past the deadline (before any recall, or with ``target`` 0: the
        deadline)."""
        baseline = self.baseline_s()
        if self.config.target <= 0 or baseline is None:
            return deadline
        return min(deadline, self.config.target * baseline)

    async def acquire(self, deadline: float | None) -> Shed | None:
        """Take a slot (``None``) or say why not; call :meth:`release` after a ``None``."""
        started = self.clock()
        verdict = self._verdict(deadline)
        if verdict is not None:
            return verdict
        if self._free():
            self.running += 1
            return None
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        service = self.service_s() or 0.0
        try:
            await asyncio.wait((waiter,), timeout=deadline)  # admitted: served, unless its caller has given up
        except BaseException:  # cancelled while queued (client gone, shutdown)
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot was handed over just as this request was cancelled: pass it on
            else:
                self._drop(waiter)
            raise
        if not waiter.done():  # the estimate was wrong and its caller stopped waiting: answer, start nothing
            self._drop(waiter)
            assert deadline is not None  # only a deadline times out
            return Shed(self.clock() - started, service, deadline, len(self.waiters), "expired")
        return None  # release() handed this waiter its slot (``running`` unchanged)

    def _drop(self, waiter: asyncio.Future[None]) -> None:
        waiter.cancel()
        self.waiters.remove(waiter)

    def release(self, served_s: float | None = None, *, alone: bool = False) -> None:
        """Give the slot back (to the first waiter, if any); ``served_s`` is a served recall's time, ``alone``
        whether no other recall ran beside it."""
        if served_s is not None:
            full = self.running >= self.slots() or bool(self.waiters)
            self.times.append(served_s)
            if alone:
                self.alone.append(served_s)
            self._adapt(served_s, full)
        while self.waiters:
            if self.running > self.slots():  # the limit came down: this slot closes instead of passing on
                break
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.running -= 1

    def _adapt(self, served_s: float, full: bool) -> None:
        """Move the limit once per ``slots()`` served recalls (a round, as TCP Vegas moves its window once per round
        trip; Netflix's concurrency limits and Envoy's adaptive concurrency work in the same manner): down in
        proportion when the round's median ran over ``tolerance`` times a recall served alone, up by one when it
        did not and the gate was full (a gate that is not full is not what holds recalls back)."""
        tolerance, baseline = self.config.tolerance, self.baseline_s()
        if tolerance <= 0 or baseline is None:
            return
        self.round.append(served_s)
        self.round_full = self.round_full or full
        if len(self.round) < self.slots():
            return
        recent, target = statistics.median(self.round), tolerance * baseline
        if recent > target:
            self.limit = max(1.0, self.limit * max(0.5, target / recent))
        elif self.round_full:
            self.limit = min(float(self.config.concurrency), self.limit + 1)
        self.round.clear()
        self.round_full = False


#: Who a bearer credential is (``None``: nobody this server accepts): the tenant extension's authentication.
Identify = Callable[[str | None], Awaitable[Principal | None]]

_gate: RecallGate | None = RecallGate(AdmissionConfig())
_identify: Identify | None = None


def configure(config: AdmissionConfig, identify: Identify | None = None) -> None:
    """Set how the gate runs (called once by the tenant extension at start-up); ``concurrency`` 0: no gate.

    ``identify``: which callers take part (the tenant extension's authentication); ``None``: every caller (tests)."""
    global _gate, _identify
    _gate = RecallGate(config) if config.concurrency > 0 else None
    _identify = identify


def gate() -> RecallGate | None:
    """This process's gate (``None`` when admission control is off)."""
    return _gate


def stated_deadline(scope: Scope) -> float | None:
    """The deadline the request states, in seconds, clamped; ``None`` when absent or not a finite number."""
    raw = _header(scope, _HEADER)
    if raw is None:
        return None
    try:
        milliseconds = float(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not math.isfinite(milliseconds):
        return None
    return min(MAX_DEADLINE_S, max(MIN_DEADLINE_S, milliseconds / 1000))


def credential(scope: Scope) -> str | None:
    """The request's credential as Hindsight reads it (``Authorization``: ``Bearer <key>`` or the bare key)."""
    raw = _header(scope, b"authorization")
    if not raw:
        return None
    value = raw.decode("latin-1")
    return value[7:].strip() if value.lower().startswith("bearer ") else value.strip()


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value)
    return None


async def serve(kind: RequestKind, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Serve one request: a REST recall through the gate, anything else as it is."""
    current = _gate
    arrived = time.monotonic()
    place = await _place(scope) if kind is RequestKind.RECALL and current is not None else None
    if current is None or place is None:
        await app(scope, receive, send)  # not gated: Hindsight answers (401, 403 for a caller it does not accept)
        return
    deadline, (owner, tenant) = stated_deadline(scope), place
    left = False

    def leave() -> None:
        """The owner's (and tenant's) place in the gate goes once: at the answer's last byte, or when the request
        ends without one."""
        nonlocal left
        if not left:
            left = True
            _give_back(current.held, owner)
            if tenant is not None:
                _give_back(current.tenants, tenant)

    try:
        current.held[owner] += 1
        if tenant is not None:
            current.tenants[tenant] += 1
        shed = current.over_share(owner, deadline, tenant) or await current.acquire(deadline)
        if shed is not None:
            current.shed += 1
            took = time.monotonic() - arrived
            await answer_shed(scope, send, shed, took, current.slots(), current.baseline_s())
            return
        await _served(current, app, scope, receive, send, leave)
    finally:
        leave()


def _give_back(places: Counter[str], key: str) -> None:
    places[key] -= 1
    if places[key] <= 0:
        del places[key]


async def _served(
    current: RecallGate, app: ASGIApp, scope: Scope, receive: Receive, send: Send, leave: Callable[[], None]
) -> None:
    """An admitted recall: Hindsight serves it in its slot; its time teaches the gate.

    The slot is given back when the answer's last byte is sent, not when the app returns: work the server does
    after answering (hooks, background tasks) must not hold the slot, or the caller's next recall, sent the moment
    it has its answer, finds its own finished recall still in the gate (and is shed as over its owner's share)."""
    started = current.clock()
    current.starts += 1
    start, first = current.starts, current.running == 1  # alone: nothing running when it started, nor started since
    status = 0
    released = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            served = current.clock() - started if status == 200 else None
            current.release(served, alone=first and current.starts == start)
            leave()

    async def watched(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message.get("status", 0))
        last = message["type"] == "http.response.body" and not message.get("more_body", False)
        if last:
            release()  # before the send: the caller may act on the answer before this coroutine runs again
        await send(message)

    try:
        await app(scope, receive, watched)
    finally:
        release()


async def _place(scope: Scope) -> tuple[str, str | None] | None:
    """Whose shares of the gate a recall counts against (:meth:`RecallGate.over_share`): the owner of the bank it
    names (a user, whichever agent's bank; the path when the bank id names no user) and that bank's tenant (``None``:
    none). ``None``: the recall takes no part, its credential does not authenticate or may not read that bank (the
    validator's rule; without an ``identify``, every caller may). Once authorized, a user's or a tenant's agent's
    recall names a bank of the credential's own tenant, so the bank's tenant is the caller's."""
    path = str(scope.get("path", ""))
    bank_id = route.recall_bank(path) or ""
    if _identify is not None:
        principal = await _identify(credential(scope))
        allowed = principal is not None and policy.authorize(
            principal, bank_id, policy.Action.READ, request=RequestKind.RECALL
        )
        if not allowed:
            return None
    owner = parse_bank_id(bank_id)
    if owner is None:
        return path.rstrip("/"), None
    return json.dumps(["user", owner.tenant, owner.user]), owner.tenant

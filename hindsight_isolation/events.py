"""Memory events: one event per change to what a bank holds, built inside the server where every change passes.

Why here (docs/events.md has the whole argument): every change reaches Hindsight through its memory engine, and the
engine calls the operation-validator slot for each of them with the caller's principal, including the worker's
background extraction seconds after an async retain (``on_retain_complete`` with the new unit ids) and every
curation (``on_memory_update_complete``). Deletions have no completion hook in 1.1.0, so the validator snapshots the
bank's memory ids before a delete is allowed to run and the request guard, once the request is over, reports the ids
that are gone (:class:`DeleteWatch`). The admin functions, the forget tool and expiry all change memory through
these same routes, so nothing they do escapes; Hindsight's own webhooks were not enough (``retain.completed`` and
``consolidation.completed`` only: no memory ids, no deletions, no curation).

An event is the EventBridge entry's ``detail`` (:meth:`MemoryEvent.detail`); the sink decides where it goes:
:class:`FileSink` (JSONL, local runs and tests) or :class:`QueueSink` (an SQS FIFO queue grouped by bank, so events
of one bank stay in order, from which an EventBridge pipe puts them on the bus). No memory text unless the
``EVENTS_INCLUDE_TEXT`` setting is on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from hindsight_isolation.principal import Kind, Principal
from memory_adapter.identity import parse_bank_id

__all__ = [
    "EVENT_SOURCE",
    "Change",
    "DeleteWatch",
    "EventSink",
    "FileSink",
    "MemoryEvent",
    "QueueSink",
    "configure",
    "emit",
    "message_group",
    "watching_deletes",
]

logger = logging.getLogger("hindsight_isolation.events")

#: The EventBridge ``source`` of every event.
EVENT_SOURCE = "agentcore.memory"
_MAX_ACTOR = 256


class Change(StrEnum):
    """What happened to one memory (the EventBridge ``detail-type`` is ``memory.<change>``)."""

    CREATED = "created"
    UPDATED = "updated"
    INVALIDATED = "invalidated"
    DELETED = "deleted"
    RESTORED = "restored"


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    """One change to one memory, with who caused it. ``text`` only when the deployment allows it."""

    change: Change
    bank_id: str
    memory_id: str
    operation: str
    principal: Principal | None
    source_id: str | None = None
    kind: str | None = None
    actor: str | None = None
    text: str | None = None
    event_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    time: str = field(default_factory=lambda: datetime.now(UTC).isoformat())

    @property
    def detail_type(self) -> str:
        return f"memory.{self.change.value}"

    def detail(self) -> dict[str, Any]:
        """The event as JSON-ready data (EventBridge ``detail``)."""
        owner = parse_bank_id(self.bank_id)
        body: dict[str, Any] = {
            "event_id": self.event_id,
            "time": self.time,
            "change": self.change.value,
            "operation": self.operation,
            "bank": {
                "id": self.bank_id,
                "tenant": owner.tenant if owner else None,
                "user": owner.user if owner else None,
                "agent": owner.agent if owner else None,
            },
            "memory_id": self.memory_id,
            "source_id": self.source_id,
            "kind": self.kind,
            "caused_by": _caused_by(self.principal, self.actor),
        }
        if self.text is not None:
            body["text"] = self.text
        return body


def _caused_by(principal: Principal | None, actor: str | None) -> dict[str, Any]:
    if principal is None:
        return {"kind": "server"}  # Hindsight's own housekeeping (no caller)
    if principal.kind is Kind.OPERATOR:
        if actor and actor.startswith("schedule:"):
            return {"kind": "schedule", "name": actor.removeprefix("schedule:")}
        return {"kind": "operator", "principal": actor}
    if principal.kind is Kind.AGENT:
        return {"kind": "agent", "tenant": principal.tenant, "agent": principal.agent}
    grace = principal.kind is Kind.USER_GRACE
    return {"kind": "user", "tenant": principal.tenant, "user": principal.user, "grace": grace}


class EventSink(Protocol):
    """Where events go. ``send`` raises when the events could not be handed over (the caller logs it)."""

    def send(self, events: Sequence[MemoryEvent]) -> None: ...


class FileSink:
    """Appends one JSON line per event (``{"detail-type", "source", "detail"}``), for local runs and tests."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def send(self, events: Sequence[MemoryEvent]) -> None:
        lines = "".join(
            json.dumps({"source": EVENT_SOURCE, "detail-type": e.detail_type, "detail": e.detail()}) + "\n"
            for e in events
        )
        with self._lock, self.path.open("a", encoding="utf-8") as out:
            out.write(lines)


#: SQS's longest message group id (SendMessage's ``MessageGroupId``: at most 128 characters).
_MAX_GROUP_ID = 128


def message_group(bank_id: str) -> str:
    """A bank's FIFO message group: its id, or for an id longer than SQS allows (a tenant, user and agent of up to
    256 bytes each make ids of several hundred characters) ``sha256:`` and the id's digest, so every bank still has
    one group of its own and its events stay in order. Bank ids are ASCII letters, digits and ``.:_@-~``, all of
    which SQS accepts in a group id."""
    if len(bank_id) <= _MAX_GROUP_ID:
        return bank_id
    return "sha256:" + hashlib.sha256(bank_id.encode("utf-8")).hexdigest()


class QueueSink:
    """Sends each event to an SQS FIFO queue: message group = the bank's (:func:`message_group`: order per bank),
    dedup id = event id.

    The queue is the durable hand-off (an EventBridge pipe moves its messages to the bus, retrying, with a
    dead-letter queue behind it); boto3's standard retry mode retries a throttled or failed send.
    """

    _BATCH = 10  # SQS SendMessageBatch limit

    def __init__(self, queue_url: str, client: Any | None = None) -> None:
        self.queue_url = queue_url
        if client is None:
            import boto3  # in the stock image; only needed when events go to SQS
            from botocore.config import Config

            client = boto3.client("sqs", config=Config(retries={"mode": "standard", "max_attempts": 8}))
        self._client = client

    def send(self, events: Sequence[MemoryEvent]) -> None:
        for start in range(0, len(events), self._BATCH):
            batch = events[start : start + self._BATCH]
            entries: list[Any] = [
                {
                    "Id": str(i),
                    "MessageBody": json.dumps({"detail-type": e.detail_type, "detail": e.detail()}),
                    "MessageGroupId": message_group(e.bank_id),
                    "MessageDeduplicationId": e.event_id,
                }
                for i, e in enumerate(batch)
            ]
            answer = self._client.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            failed = answer.get("Failed") or []
            if failed:
                raise RuntimeError(f"SQS refused {len(failed)} of {len(batch)} memory events: {failed[0]}")


@dataclass(slots=True)
class _State:
    sink: EventSink | None = None
    include_text: bool = False
    #: The validator's lookup of the memory ids still in each bank (set when the validator is loaded).
    remaining: Callable[[list[str]], Awaitable[dict[str, set[str]]]] | None = None


_state = _State()


def configure(sink: EventSink | None, *, include_text: bool = False) -> None:
    """Set where events go (called once by the tenant extension at start-up; ``None``: events off)."""
    _state.sink = sink
    _state.include_text = include_text


def register_lookup(remaining: Callable[[list[str]], Awaitable[dict[str, set[str]]]]) -> None:
    """The validator hands over its database lookup, which :func:`report_deletes` needs."""
    _state.remaining = remaining


async def report_deletes(watch: DeleteWatch) -> None:
    """Emit ``deleted`` for what ``watch`` snapshotted and is gone now (the request is over). Never raises."""
    if not watch.before or _state.remaining is None:
        return
    try:
        remaining = await _state.remaining(list(watch.before))
    except Exception:
        logger.exception("hindsight_isolation: MEMORY EVENTS LOST: could not read what a delete left behind")
        return
    emit(watch.gone(remaining))


def enabled() -> bool:
    return _state.sink is not None


def include_text() -> bool:
    return _state.include_text


def emit(events: Iterable[MemoryEvent]) -> None:
    """Hand events to the sink. Never raises: a memory change has already committed when this runs."""
    batch = list(events)
    sink = _state.sink
    if sink is None or not batch:
        return
    try:
        sink.send(batch)
    except Exception:
        logger.exception(
            "hindsight_isolation: MEMORY EVENTS LOST: %d event(s) of bank %s could not be sent (ids: %s)",
            len(batch),
            batch[0].bank_id,
            ",".join(e.memory_id for e in batch[:20]),
        )


# -- deletions ---------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class DeleteWatch:
    """The memories a request may delete, per bank, snapshotted before the delete ran; reported after it."""

    actor: str | None = None
    before: dict[str, tuple[str, Principal | None, dict[str, tuple[str | None, str | None]]]] = field(
        default_factory=dict
    )

    def snapshot(
        self,
        bank_id: str,
        operation: str,
        principal: Principal | None,
        units: Mapping[str, tuple[str | None, str | None]],
    ) -> None:
        """Remember ``units`` (memory id -> (document id, fact type)) of ``bank_id`` (first snapshot wins)."""
        self.before.setdefault(bank_id, (operation, principal, dict(units)))

    def gone(self, remaining: Mapping[str, set[str]]) -> list[MemoryEvent]:
        """``deleted`` events for the snapshotted ids no longer in ``remaining`` (bank id -> ids still there)."""
        events = []
        for bank_id, (operation, principal, units) in self.before.items():
            still = remaining.get(bank_id, set())
            actor = self.actor if principal is not None and principal.kind is Kind.OPERATOR else None
            for memory_id, (document_id, fact_type) in sorted(units.items()):
                if memory_id not in still:
                    events.append(
                        MemoryEvent(
                            Change.DELETED,
                            bank_id,
                            memory_id,
                            operation,
                            principal,
                            source_id=document_id,
                            kind=fact_type,
                            actor=actor,
                        )
                    )
        return events


_watch: ContextVar[DeleteWatch | None] = ContextVar("hindsight_isolation_delete_watch", default=None)


@contextmanager
def watching_deletes(actor: str | None) -> Any:
    """Serve the enclosed request with a :class:`DeleteWatch` the validator fills (yields it)."""
    watch = DeleteWatch(actor=actor[:_MAX_ACTOR] if actor else None)
    token = _watch.set(watch)
    try:
        yield watch
    finally:
        _watch.reset(token)


def current_watch() -> DeleteWatch | None:
    return _watch.get()


def current_actor(principal: Principal | None) -> str | None:
    """The operator tool's declared actor for this request (only for operator requests)."""
    watch = _watch.get()
    if watch is None or principal is None or principal.kind is not Kind.OPERATOR:
        return None
    return watch.actor

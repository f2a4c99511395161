"""The admission tests' harness: a clock the test moves, an app whose recalls stay open until released, and
requests through :func:`hindsight_isolation.admission.serve`."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hindsight_isolation import admission
from hindsight_isolation.admission import RecallGate
from hindsight_isolation.route import RequestKind
from hindsight_isolation.settings import AdmissionConfig
from memory_adapter.recall_deadline import DEADLINE_HEADER


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class HeldApp:
    """An ASGI app whose requests stay open until the test releases them (with the status to answer)."""

    started: list[asyncio.Future[int]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gate: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.started.append(gate)
        status = await gate
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})


@dataclass
class Call:
    """One request through :func:`admission.serve`, running as a task."""

    task: asyncio.Task[None]
    sent: list[Message]

    @property
    def status(self) -> int | None:
        return next((m["status"] for m in self.sent if m["type"] == "http.response.start"), None)

    @property
    def body(self) -> Any:
        return json.loads(b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body"))

    @property
    def headers(self) -> dict[bytes, bytes]:
        start = next(m for m in self.sent if m["type"] == "http.response.start")
        return dict(start["headers"])


_banks = itertools.count()


def start(
    app: ASGIApp,
    deadline_ms: str | None = None,
    kind: RequestKind = RequestKind.RECALL,
    credential: str = "known",
    bank: str | None = None,
) -> Call:
    """One request, of its own bank unless ``bank`` is given."""
    headers = [] if deadline_ms is None else [(DEADLINE_HEADER.encode(), deadline_ms.encode())]
    headers.append((b"authorization", f"Bearer {credential}".encode()))
    path = f"/v1/default/banks/{bank or f'b{next(_banks)}'}/memories/recall"
    scope: Scope = {"type": "http", "method": "POST", "path": path, "headers": headers}
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    return Call(asyncio.ensure_future(admission.serve(kind, app, scope, receive, send)), sent)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def serve_one(app: HeldApp, clock: Clock, seconds: float, status: int = 200) -> None:
    """One recall served alone, taking ``seconds``."""
    call = start(app)
    await settle()
    clock.now += seconds
    app.started[-1].set_result(status)
    await call.task


async def saturate(app: HeldApp, count: int) -> list[Call]:
    """``count`` recalls without a deadline: two run, the rest queue."""
    calls = [start(app) for _ in range(count)]
    await settle()
    return calls


async def rounds_of(app: HeldApp, clock: Clock, *, rounds: int, at_once: int, seconds: float) -> None:
    """``rounds`` times: ``at_once`` recalls without a deadline arrive together; the ones the gate lets in share one
    CPU (each takes ``seconds`` times as many as run together), the rest queue."""
    for _ in range(rounds):
        calls = await saturate(app, at_once)
        while not all(c.task.done() for c in calls):
            running = [f for f in app.started if not f.done()]
            clock.now += seconds * len(running)
            for future in running:
                future.set_result(200)
            await settle()


@contextmanager
def installed_gate(
    clock: Clock, config: AdmissionConfig, identify: admission.Identify | None = None
) -> Iterator[RecallGate]:
    """The gate ``config`` makes (with ``identify``, who takes part), installed for the test with ``clock``, and the
    default gate again after it."""
    admission.configure(config, identify)
    current = admission.gate()
    assert current is not None
    current.clock = clock
    try:
        yield current
    finally:
        admission.configure(AdmissionConfig())

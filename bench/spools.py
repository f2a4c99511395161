"""8. The turn path while Hindsight is down, per spool: the SQS queue (moto's server) next to the local directory.

Deployed, a retain that cannot be delivered goes to the retain queue (``SqsSpool``: an SQS ``SendMessage`` on a
delivery thread); locally to a directory (``DirectorySpool``: a file write and fsync on a delivery thread). Three
sides, all our adapter with its defaults and only the spool differing, interleaved turn by turn against a Hindsight
that is down (hung: accepts, never answers; and refusing connections):

- ``directory``: ``DirectorySpool`` in a scratch directory;
- ``sqs``: ``SqsSpool`` on moto's SQS server, run as its own process (as SQS is remote: its request handling must
  not compete with the turns for this process's interpreter);
- ``sqs_slow``: the same queue, every send held back ``SLOW_SEND_S`` more (a congested or distant SQS endpoint).

A turn's memory cost is ``recall_for_turn`` + ``retain_for_turn`` + one loop tick, as in measurement 3; the turn
thread's own CPU time is recorded next to it. Turns are spaced ``gap_s`` apart (as real turns are, by the model
call; as in measurement 2): back to back, every turn would also compete with the previous turns' spooling, which runs
on delivery threads of this same interpreter (boto3 signs and serialises each send in Python). Also recorded: when
each retain became safe (its handle resolved: spooled), from the turn's start. That is where a spool's own cost
shows; the turn path must not show it.
Target: the turn path stays at or under 5 ms at p99 once the breaker is open, with every spool.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from bench.stats import summarize

__all__ = ["SIDES", "SLOW_SEND_S", "measure"]

SIDES = ("directory", "sqs", "sqs_slow")
#: Extra time every send of the ``sqs_slow`` side takes.
SLOW_SEND_S = 0.2
_REGION = "us-east-1"


class _SlowSqs:
    """An SQS client whose sends take ``delay`` seconds longer (everything else passes through)."""

    def __init__(self, client: Any, delay: float) -> None:
        self._client = client
        self._delay = delay

    def send_message(self, **kwargs: Any) -> Any:
        time.sleep(self._delay)
        return self._client.send_message(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class MotoSqs:
    """moto's server as a child process on a free loopback port (``python -m moto.server``)."""

    def __init__(self, workdir: Path) -> None:
        self._log = workdir / "moto.log"
        self._pid: int | None = None
        self.url = ""

    def __enter__(self) -> MotoSqs:
        from localdev.supervisor import REPO_ROOT, child_env, free_port, http_status, spawn, wait_until_ready

        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
        self._pid = spawn(command, log_file=self._log, env=child_env(), cwd=REPO_ROOT)
        wait_until_ready(
            lambda: http_status(f"{self.url}/moto-api/") is not None,
            name="moto's server",
            pid=self._pid,
            log_file=self._log,
            timeout_s=60,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        from localdev.supervisor import terminate

        terminate(self._pid, grace_s=5)

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "sqs",
            endpoint_url=self.url,
            region_name=_REGION,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",  # noqa: S106 - moto's throwaway credential
        )


async def _turn(adapter: Any, ctx: Any, n: int, cpu: list[float], safe: dict[int, float]) -> float:
    started, cpu_started = time.perf_counter(), time.thread_time()
    await adapter.recall_for_turn(ctx, f"What did I tell you last time? ({n})")
    handle = adapter.retain_for_turn(ctx, result=f"Here is my answer number {n}.", query=f"Question {n}")
    await asyncio.sleep(0)
    elapsed = (time.perf_counter() - started) * 1000
    cpu.append((time.thread_time() - cpu_started) * 1000)

    async def until_safe() -> None:
        await handle
        safe[n] = (time.perf_counter() - started) * 1000

    asyncio.ensure_future(until_safe())  # noqa: RUF006 - awaited through the adapter's flush below
    return elapsed


async def _one_fault(env: Any, fault: str, url: str, sqs: MotoSqs, *, turns: int, gap_s: float) -> dict[str, Any]:
    from memory_adapter import HindsightRuntimeAdapter, TurnContext
    from memory_adapter.breaker import BreakerState
    from memory_adapter.spool import DirectorySpool
    from memory_adapter.sqs_spool import SqsSpool

    client = sqs.client()
    queue = client.create_queue(QueueName=f"bench-{fault}-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    directory = DirectorySpool(env.workdir / f"spool-{fault}")
    spools: dict[str, Any] = {
        "directory": directory,
        "sqs": SqsSpool(queue, client=client),
        "sqs_slow": SqsSpool(queue, client=cast(Any, _SlowSqs(client, SLOW_SEND_S))),
    }
    adapters = {
        side: HindsightRuntimeAdapter("bench", hindsight_api_url=url, spool=spools[side], auto_replay=False)
        for side in SIDES
    }
    samples: dict[str, list[float]] = {side: [] for side in SIDES}
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    safe: dict[str, dict[int, float]] = {side: {} for side in SIDES}  # by turn: they resolve out of order
    open_after: dict[str, int | None] = dict.fromkeys(SIDES)
    user = f"bench-spools-{uuid.uuid4().hex[:8]}"
    for n in range(turns):
        for k in range(len(SIDES)):
            side = SIDES[(n + k) % len(SIDES)]
            ctx = TurnContext(f"bench-spools-session-{side}", user, "bench", request_id=str(uuid.uuid4()))
            samples[side].append(await _turn(adapters[side], ctx, n, cpu[side], safe[side]))
            if open_after[side] is None and adapters[side].breaker_state is not BreakerState.CLOSED:
                open_after[side] = n + 1
            await asyncio.sleep(gap_s)
    flushed = {side: await adapters[side].flush(120) for side in SIDES}
    await asyncio.sleep(0.1)  # the until_safe waiters record their last samples
    queued = int(
        client.get_queue_attributes(QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"][
            "ApproximateNumberOfMessages"
        ]
    )
    spooled = {"directory": directory.count(), "sqs+sqs_slow (one queue)": queued}
    for adapter in adapters.values():
        await adapter.aclose(timeout=1)
    skip = {side: open_after[side] or 0 for side in SIDES}
    return {
        "turns_per_side": turns,
        "gap_between_turns_ms": gap_s * 1000,
        "breaker_open_after_turns": open_after,
        "summary_after_breaker_open": {side: summarize(samples[side][skip[side] :]) for side in SIDES},
        "summary_thread_cpu_after_breaker_open": {side: summarize(cpu[side][skip[side] :]) for side in SIDES},
        "summary_until_safe_after_breaker_open": {
            side: summarize([ms for n, ms in safe[side].items() if n >= skip[side]]) for side in SIDES
        },
        "summary": {side: summarize(samples[side]) for side in SIDES},
        "all_flushed": flushed,
        "spooled": spooled,
        "samples_ms": samples,
    }


async def measure(
    env: Any, *, turns: int = 200, gap_s: float = 0.05, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Both faults, the three spools; moto's server runs for the measurement only."""
    import os

    out: dict[str, Any] = {"slow_send_s": SLOW_SEND_S}
    with MotoSqs(env.workdir) as sqs:
        for fault, url in (("hung", env.hung_url), ("refused", env.refused_url)):
            log(f"  {fault}: {turns} turns per spool ...")
            out[fault] = await _one_fault(env, fault, url, sqs, turns=turns, gap_s=gap_s)
    out["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    return out

"""The durable spool of a deployed agent: an Amazon SQS queue, whose messages outlive the AgentCore microVM.

A :class:`~memory_adapter.spool.DirectorySpool` lives on the microVM's disk and is gone when AgentCore reclaims the
session. :class:`SqsSpool` implements the same :class:`~memory_adapter.spool.Spool` protocol on a standard queue
(KMS-encrypted by the stack): the agent only *sends* (:meth:`SqsSpool.put`, on a delivery thread, never on a turn's
path), and the replay function (:mod:`memory_adapter.queue_replay`) consumes the queue and delivers each record with
its own credential. ``boto3`` is imported on the first call that needs it, off the cold-start path.

The messages themselves are :mod:`memory_adapter.sqs_codec`'s (one record a message, never with the deployment's
agent key, so neither the queue nor its dead letters, kept 14 days, hold the key; compressed when large; a record
still too large raises :class:`~memory_adapter.exceptions.RecordTooLargeError`, which the delivery counts and logs as
lost: see docs/operating.md, "oversized turns"). A standard queue can deliver a message twice: the record's
``operation_id`` makes a second delivery a no-op in Hindsight.

Example:
    >>> spool = SqsSpool("https://sqs.us-east-1.amazonaws.com/123456789012/retains")   # nothing imported yet
    >>> adapter = HindsightRuntimeAdapter("support", spool=spool, auto_replay=False)
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from memory_adapter.constants import SQS_MAX_MESSAGE_BYTES
from memory_adapter.exceptions import SpoolError
from memory_adapter.spool import RetainRecord
from memory_adapter.sqs_codec import (
    MOVED_BY_SQS,
    QueueMessage,
    decode_record,
    encode_dead_letter,
    encode_record,
    forwarded_dead_letter,
    string_attributes,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

__all__ = ["SqsSpool"]

_RECEIPT_QUEUES: Final = ("main", "dead")
_REGION_IN_HOST: Final = re.compile(r"^sqs[.-](?P<region>[a-z]{2}(?:-[a-z]+)+-\d+)\.")


class SqsSpool:
    """A :class:`~memory_adapter.spool.Spool` on an SQS queue (and, for consumers, its dead-letter queue).

    The agent needs only :meth:`put` (``sqs:SendMessage``); :meth:`items`, :meth:`remove`, :meth:`count` and the
    dead-letter methods serve the replay function and the operator's commands. Differences from the directory
    spool, all harmless because delivery is idempotent by ``operation_id``: the same record put twice is two
    messages, and :meth:`items` is only approximately oldest first. Without a ``dead_letter_queue_url`` (the
    agent), :meth:`dead_letter` sends the record back to the queue with its reason: the consumer tries it once
    more and dead-letters it for good if Hindsight still refuses.

    Args:
        queue_url: The queue (``https://sqs.<region>.amazonaws.com/<account>/<name>``).
        dead_letter_queue_url: Its dead-letter queue (consumers only).
        client: An SQS client (default: created on first use with bounded, retried calls; region from
            ``AWS_REGION`` or the queue URL, endpoint from the usual ``AWS_ENDPOINT_URL_SQS``).
        max_message_bytes: The queue's message size limit.
        visibility_timeout: Seconds a message received by :meth:`items` stays hidden from other consumers.
        wait_seconds: Long-poll time of one receive (an empty answer ends :meth:`items`).
        send_budget_s: How long :meth:`put` keeps trying while SQS cannot be reached (boto3 retries each call a few
            times; this retries the call): the turn is not safe yet, so the agent's ``/ping`` stays busy meanwhile.
    """

    def __init__(
        self,
        queue_url: str,
        *,
        dead_letter_queue_url: str | None = None,
        client: SQSClient | None = None,
        max_message_bytes: int = SQS_MAX_MESSAGE_BYTES,
        visibility_timeout: int = 60,
        wait_seconds: int = 1,
        send_budget_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not queue_url.startswith(("https://", "http://")):
            raise ValueError(f"not an SQS queue URL: {queue_url!r}")
        self.queue_url = queue_url
        self.dead_letter_queue_url = dead_letter_queue_url
        self.max_message_bytes = max_message_bytes
        self._visibility_timeout = visibility_timeout
        self._wait_seconds = wait_seconds
        self._send_budget_s = send_budget_s
        self._sleep = sleep
        self._client = client
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SqsSpool({self.queue_url!r}, dead_letter_queue_url={self.dead_letter_queue_url!r})"

    # -- the client, created on first use (a delivery or replay thread; never the turn)

    def _sqs(self) -> SQSClient:
        client = self._client
        if client is not None:
            return client
        with self._client_lock:  # creating boto3 clients is not thread-safe; using one is
            if self._client is None:
                try:
                    import boto3
                    from botocore.config import Config
                except ImportError as exc:  # pragma: no cover - boto3 is in every Lambda and AgentCore runtime
                    raise SpoolError("the SQS spool needs boto3") from exc
                config = Config(retries={"mode": "standard", "max_attempts": 6}, connect_timeout=3, read_timeout=10)
                session = boto3.session.Session()
                region = _region_of(self.queue_url) or session.region_name or os.environ.get("AWS_REGION")
                self._client = session.client("sqs", region_name=region, config=config)
            return self._client

    def _call(self, what: str, operation: str, **kwargs: Any) -> Any:
        try:
            return getattr(self._sqs(), operation)(**kwargs)
        except SpoolError:
            raise
        except Exception as exc:  # botocore's errors (no region, client, connection, credentials): the spool failed
            # botocore's messages name the operation, the endpoint and the error code; never a message body.
            raise SpoolError(f"cannot {what}: {type(exc).__name__}: {str(exc)[:300]}") from exc

    def _url(self, dead: bool) -> str:
        if not dead:
            return self.queue_url
        if self.dead_letter_queue_url is None:
            raise SpoolError("this spool has no dead-letter queue (dead_letter_queue_url)")
        return self.dead_letter_queue_url

    # -- Spool

    def put(self, record: RetainRecord) -> None:
        """Send ``record`` to the queue (compressed if needed); raise :class:`RecordTooLargeError` if it cannot fit."""
        body, attributes = encode_record(record, max_bytes=self.max_message_bytes)
        deadline = time.monotonic() + self._send_budget_s
        delay = 0.5
        while True:
            try:
                self._call(
                    "send to the retain queue",
                    "send_message",
                    QueueUrl=self.queue_url,
                    MessageBody=body,
                    MessageAttributes=string_attributes(attributes),
                )
                return
            except SpoolError as exc:
                if not _unreachable(exc.__cause__) or time.monotonic() + delay > deadline:
                    raise
            self._sleep(delay)
            delay = min(delay * 2, 5.0)

    def items(self, limit: int | None = None, *, dead: bool = False) -> list[RetainRecord]:
        """Receive up to ``limit`` records (hidden for ``visibility_timeout`` s), approximately oldest first.

        A message that is not a record is moved to the dead letters with the reason (or, when listing the dead
        letters, skipped: :meth:`messages` shows it).
        """
        records: list[RetainRecord] = []
        for message in self.messages(limit, dead=dead):
            try:
                record = decode_record(message)
            except SpoolError as exc:
                if not dead and self.dead_letter_queue_url is not None:
                    self.forward_dead_letter(message, f"malformed: {exc}")
                    self.delete(message, dead=False)
                continue
            record.receipt = _receipt(dead, message.receipt)
            if dead:
                record.last_error = message.dead_letter_reason or MOVED_BY_SQS
            records.append(record)
        records.sort(key=lambda r: r.created_at)
        return records

    def remove(self, record: RetainRecord) -> None:
        """Delete the message ``record`` was received from (records never received are ignored)."""
        dead, handle = _parse_receipt(record.receipt)
        if handle is not None:
            self._delete(handle, dead=dead)

    def dead_letter(self, record: RetainRecord, reason: str) -> None:
        """Send ``record`` to the dead-letter queue with ``reason`` (without one: back to the queue, see the class)."""
        record.last_error = reason
        body, attributes = encode_dead_letter(record, reason, max_bytes=self.max_message_bytes)
        target = self.dead_letter_queue_url or self.queue_url
        self._call(
            "send a dead letter",
            "send_message",
            QueueUrl=target,
            MessageBody=body,
            MessageAttributes=string_attributes(attributes),
        )
        dead, handle = _parse_receipt(record.receipt)
        if handle is not None and not dead:
            self._delete(handle, dead=False)

    def count(self, *, dead: bool = False) -> int:
        """Messages in the queue (or its dead letters): visible, in flight and delayed (approximate, as SQS says)."""
        answer = self._call(
            "read the queue's attributes",
            "get_queue_attributes",
            QueueUrl=self._url(dead),
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )
        return sum(int(value) for value in answer.get("Attributes", {}).values() if str(value).isdigit())

    # -- for consumers: raw messages

    def messages(self, limit: int | None = None, *, dead: bool = False) -> list[QueueMessage]:
        """Receive up to ``limit`` raw messages (each once), hidden for ``visibility_timeout`` s."""
        url = self._url(dead)
        seen: dict[str, QueueMessage] = {}
        while limit is None or len(seen) < limit:
            wanted = 10 if limit is None else min(10, limit - len(seen))
            answer = self._call(
                "receive from the queue",
                "receive_message",
                QueueUrl=url,
                MaxNumberOfMessages=wanted,
                VisibilityTimeout=self._visibility_timeout,
                WaitTimeSeconds=self._wait_seconds,
                MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
                MessageAttributeNames=["All"],
            )
            batch = [QueueMessage.from_sqs(m) for m in answer.get("Messages", [])]
            fresh = [m for m in batch if m.message_id not in seen]
            if not fresh:
                break
            seen.update((m.message_id, m) for m in fresh)
        return list(seen.values())

    def delete(self, message: QueueMessage, *, dead: bool) -> None:
        """Delete a message received by :meth:`messages` from the queue (or its dead letters)."""
        if message.receipt is not None:
            self._delete(message.receipt, dead=dead)

    def release(self, messages: list[QueueMessage], *, dead: bool) -> None:
        """Make received messages visible again at once (they were only looked at)."""
        url = self._url(dead)
        for start in range(0, len(messages), 10):
            entries = [
                {"Id": str(n), "ReceiptHandle": m.receipt, "VisibilityTimeout": 0}
                for n, m in enumerate(messages[start : start + 10])
                if m.receipt is not None
            ]
            if entries:
                self._call(
                    "release received messages", "change_message_visibility_batch", QueueUrl=url, Entries=entries
                )

    def forward_dead_letter(self, message: QueueMessage, reason: str) -> None:
        """Send a received message, as it is, to the dead-letter queue with ``reason`` (the replay function's move:
        it then reports the original as processed, so SQS deletes it)."""
        body, attributes = forwarded_dead_letter(message, reason)
        self._call(
            "send a dead letter",
            "send_message",
            QueueUrl=self._url(dead=True),
            MessageBody=body,
            MessageAttributes=string_attributes(attributes),
        )

    def _delete(self, handle: str, *, dead: bool) -> None:
        try:
            self._call("delete from the queue", "delete_message", QueueUrl=self._url(dead), ReceiptHandle=handle)
        except SpoolError as exc:
            if _error_code(exc.__cause__) in ("ReceiptHandleIsInvalid", "InvalidParameterValue"):
                return  # already deleted, or its receipt expired: "missing records are ignored"
            raise


def _unreachable(exc: BaseException | None) -> bool:
    """Whether a botocore error means "SQS could not be reached" (worth another call), not "SQS said no"."""
    try:
        from botocore.exceptions import ConnectionError as NoConnection
        from botocore.exceptions import HTTPClientError
    except ImportError:  # pragma: no cover - a custom client without botocore
        return False
    return isinstance(exc, NoConnection | HTTPClientError)


def _error_code(exc: BaseException | None) -> str | None:
    """The AWS error code of a botocore ``ClientError`` (``None`` for anything else)."""
    response = getattr(exc, "response", None)
    if not isinstance(response, Mapping):
        return None
    code = response.get("Error", {}).get("Code")
    return str(code) if code else None


def _region_of(queue_url: str) -> str | None:
    """The region in an SQS URL's host (``sqs.<region>.amazonaws.com``), if it names one."""
    match = _REGION_IN_HOST.match(queue_url.split("://", 1)[-1])
    return match["region"] if match else None


def _receipt(dead: bool, handle: str | None) -> str | None:
    return None if handle is None else f"{_RECEIPT_QUEUES[dead]}\n{handle}"


def _parse_receipt(receipt: str | None) -> tuple[bool, str | None]:
    if receipt is None or "\n" not in receipt:
        return False, None
    queue, handle = receipt.split("\n", 1)
    return queue == _RECEIPT_QUEUES[True], handle

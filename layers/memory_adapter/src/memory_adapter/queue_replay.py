"""Replaying the retain queue into Hindsight: each message with its own credential, once, never retried forever.

The replay function (``infra/functions/retain_replay``, on this package's Lambda layer, triggered by the queue with
partial batch failures) hands every message of a batch to :meth:`QueueReplayer.handle`:

- **delivered** (2xx): Hindsight has it. The record's ``operation_id`` makes a second delivery (SQS delivers at
  least once; a lost acknowledgement) return the original operation, so a turn is stored once;
- **dead-lettered**: Hindsight refused it for good (401/403: the token expired beyond the grace window, was revoked,
  or does not own the bank; any other 4xx), or the message is malformed or inflates beyond
  :data:`~memory_adapter.sqs_codec.MAX_DECODED_RECORD_BYTES`. It is sent to the dead-letter queue with the reason
  (attribute ``dead_letter_reason``) and counts as processed, so SQS deletes the original: nothing retries it;
- **retry later** (:class:`RetryLaterError`): Hindsight is unavailable (unreachable, timeout, 429, 5xx), or the
  dead letter could not be sent. Only that message is reported as failed; SQS hands it out again after its
  visibility timeout and, after the queue's last allowed receive, moves it to the dead-letter queue itself (no
  reason attribute: :data:`~memory_adapter.sqs_codec.MOVED_BY_SQS`). Once Hindsight failed in a batch, the rest of
  that batch is not tried (each would wait its timeout).

A record queued by an IAM-mode agent carries no credential, only the ``agent_key`` mark: the function presents the
deployment's agent key, read from Secrets Manager (``HINDSIGHT_API_KEY_SECRET_ARN``, cached for
:data:`~memory_adapter.agentcore.credentials.SECRET_MAX_AGE_S` so a rotation is picked up). A key that cannot be
read leaves the message for a later receive; a function configured without one dead-letters it with the reason.

The operator re-delivers reviewed dead letters with the operator credential: :mod:`memory_adapter.redrive`.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, NoReturn, Protocol

from memory_adapter._hindsight_api import post_retain
from memory_adapter.constants import (
    HINDSIGHT_API_KEY_SECRET_ARN_ENV,
    RETAIN_DEAD_LETTER_QUEUE_URL_ENV,
    RETAIN_DELIVERY_TIMEOUT_ENV,
)
from memory_adapter.exceptions import (
    ConfigurationError,
    HindsightAgentCoreError,
    HindsightRequestError,
    HindsightUnavailableError,
    MalformedMessageError,
    RecordTooLargeError,
    SpoolError,
)
from memory_adapter.observability import Metric, MetricsSink, Observer, short_hash
from memory_adapter.settings_fields import HindsightClientSettings, secret_arn, setting
from memory_adapter.settings_reader import SettingsReader
from memory_adapter.sqs_codec import QueueMessage, decode_record
from memory_adapter.sqs_spool import SqsSpool
from memory_adapter.transport import HttpTransport, Transport

__all__ = [
    "DeadLetters",
    "QueueReplayer",
    "ReplayOutcome",
    "ReplaySettings",
    "ReplayVerdict",
    "RetryLaterError",
    "refusal_reason",
]

DEFAULT_DELIVERY_TIMEOUT_S: Final = 10.0


class RetryLaterError(HindsightAgentCoreError):
    """Not processed now (Hindsight unavailable, no time left, the dead letter not sent): leave it on the queue."""


class ReplayVerdict(StrEnum):
    """What became of one message."""

    DELIVERED = "delivered"
    DEAD_LETTERED = "dead_lettered"


@dataclass(frozen=True, slots=True)
class ReplayOutcome:
    """The verdict, and for a dead letter the reason it carries."""

    verdict: ReplayVerdict
    reason: str | None = None


class DeadLetters(Protocol):
    """Where refused messages go (:class:`~memory_adapter.sqs_spool.SqsSpool` is one)."""

    def forward_dead_letter(self, message: QueueMessage, reason: str) -> None:
        """Send ``message`` as it is, with ``reason``; raise :class:`SpoolError` when it could not be sent."""
        ...


def _queue_url(get: SettingsReader, env: str) -> str:
    dead = get.text(env) or ""
    if not dead.startswith(("http://", "https://")):
        get.problem(f"{env} must be the dead-letter queue's URL, got {dead!r}")
    return dead


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplaySettings(HindsightClientSettings):
    """The replay function's configuration (environment variables, each named by its field)."""

    dead_letter_queue_url: str = setting(
        RETAIN_DEAD_LETTER_QUEUE_URL_ENV, required="the dead-letter queue's URL", parse=_queue_url
    )
    delivery_timeout_s: float = setting(
        RETAIN_DELIVERY_TIMEOUT_ENV, DEFAULT_DELIVERY_TIMEOUT_S, above=0, high=120, always=True
    )
    agent_key_secret_arn: str | None = setting(HINDSIGHT_API_KEY_SECRET_ARN_ENV, parse=secret_arn)

    @classmethod
    def error(cls, problems: list[str]) -> Exception:
        """A :class:`ConfigurationError` naming the replay function."""
        return ConfigurationError(problems, subject="retain replay")


class QueueReplayer:
    """Delivers queue messages to Hindsight (see the module docstring for the three outcomes).

    Args:
        transport: HTTP to Hindsight.
        dead_letters: Where refused and malformed messages go, with their reason.
        agent_key: Returns the deployment's agent key for records marked ``agent_key`` (IAM mode), e.g.
            :meth:`~memory_adapter.agentcore.credentials.AgentKey.get`; raises when it cannot be read. ``None``: no
            key configured (such records are dead-lettered).
        timeout: Seconds per delivery.
        metrics: A Powertools ``Metrics`` (``MemoryQueueDelivered``, ``MemoryQueueDeadLettered``,
            ``MemoryQueueRetried``).
        clock: Monotonic seconds (the batch deadline is on it).
        now: Unix seconds (token ages in reasons).
    """

    def __init__(
        self,
        *,
        transport: Transport,
        dead_letters: DeadLetters,
        agent_key: Callable[[], str | None] | None = None,
        timeout: float = DEFAULT_DELIVERY_TIMEOUT_S,
        metrics: MetricsSink | None = None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._transport = transport
        self._dead_letters = dead_letters
        self._agent_key = agent_key
        self._timeout = timeout
        self._obs = Observer(metrics, verbose=True)
        self._clock = clock
        self._now = now
        self._deadline: float | None = None
        self._unavailable: str | None = None

    @classmethod
    def from_settings(cls, settings: ReplaySettings, *, metrics: MetricsSink | None = None) -> QueueReplayer:
        """The replayer the function runs: HTTP to Hindsight, refusals to the dead-letter queue."""
        # Only the spool's dead-letter side is used: the event source mapping receives and deletes.
        dead_letters = SqsSpool(settings.dead_letter_queue_url, dead_letter_queue_url=settings.dead_letter_queue_url)
        agent_key = None
        if settings.agent_key_secret_arn is not None:
            from memory_adapter.agentcore.credentials import AgentKey  # Powertools' cached secret, on first read

            agent_key = AgentKey(secret_arn=settings.agent_key_secret_arn).get
        return cls(
            transport=HttpTransport(settings.hindsight_api_url),
            dead_letters=dead_letters,
            agent_key=agent_key,
            timeout=settings.delivery_timeout_s,
            metrics=metrics,
        )

    def start_batch(self, *, seconds_left: float | None = None) -> None:
        """Begin a batch: forget an earlier outage; stop trying once fewer than a delivery's seconds are left."""
        self._unavailable = None
        self._deadline = None if seconds_left is None else self._clock() + seconds_left

    def handle(self, message: QueueMessage) -> ReplayOutcome:
        """Deliver or dead-letter ``message``; raise :class:`RetryLaterError` to leave it on the queue."""
        if self._unavailable is not None:
            self._retry(message, "not tried: Hindsight failed earlier in this batch")
        if self._deadline is not None and self._clock() + self._timeout > self._deadline:
            self._retry(message, "not tried: the invocation is about to time out")
        try:
            record = decode_record(message)
        except RecordTooLargeError as exc:
            return self._dead(message, f"oversized: {exc}", bank=None)
        except MalformedMessageError as exc:
            return self._dead(message, f"malformed: {exc}", bank=None)
        bearer = record.credential
        if record.agent_key and bearer is None:
            if self._agent_key is None:
                reason = f"needs the agent key; this function has none ({HINDSIGHT_API_KEY_SECRET_ARN_ENV} unset)"
                return self._dead(message, reason, bank=record.bank_id)
            try:
                bearer = self._agent_key()
            except Exception as exc:  # Secrets Manager unreachable or denied: the message waits for a later receive
                self._retry(message, f"the agent key could not be read: {type(exc).__name__}: {str(exc)[:200]}")
        try:
            post_retain(self._transport, record, bearer=bearer, timeout=self._timeout)
        except HindsightUnavailableError as exc:
            self._unavailable = str(exc)
            self._retry(message, f"Hindsight unavailable: {exc}")
        except HindsightRequestError as exc:
            reason = refusal_reason(exc.status, str(exc), bearer, now=self._now())
            return self._dead(message, reason, bank=record.bank_id)
        self._obs.count(Metric.QUEUE_DELIVERED)
        self._obs.event(
            logging.INFO,
            "queued retain delivered",
            event="queue.delivered",
            bank=short_hash(record.bank_id),
            message_id=message.message_id,
            receive_count=message.receive_count,
        )
        return ReplayOutcome(ReplayVerdict.DELIVERED)

    def _retry(self, message: QueueMessage, reason: str) -> NoReturn:
        self._obs.count(Metric.QUEUE_RETRIED)
        self._obs.event(
            logging.WARNING,
            "queued retain left for a later receive",
            event="queue.retry",
            message_id=message.message_id,
            receive_count=message.receive_count,
            reason=reason[:300],
        )
        raise RetryLaterError(reason)

    def _dead(self, message: QueueMessage, reason: str, *, bank: str | None) -> ReplayOutcome:
        try:
            self._dead_letters.forward_dead_letter(message, reason)
        except SpoolError as exc:
            self._retry(message, f"could not dead-letter ({reason}): {exc}")
        self._obs.count(Metric.QUEUE_DEAD_LETTERED)
        self._obs.event(
            logging.ERROR,
            "queued retain moved to the dead-letter queue",
            event="queue.dead_lettered",
            bank=short_hash(bank) if bank else None,
            message_id=message.message_id,
            reason=reason,
        )
        return ReplayOutcome(ReplayVerdict.DEAD_LETTERED, reason)


def refusal_reason(status: int, detail: str, credential: str | None, *, now: float) -> str:
    """A dead letter's reason for Hindsight's refusal, for the operator who reviews it (no identity, no token)."""
    if status == 401:
        return f"credential refused (HTTP 401): {_credential_note(credential, now)}"
    if status == 403:
        return "refused (HTTP 403): the credential may not retain into this bank"
    return detail[:300]


def _credential_note(credential: str | None, now: float) -> str:
    if not credential:
        return "the record carries no credential"
    try:
        expiry = _token_expiry(credential)
    except ValueError as exc:
        return f"a JWT whose exp claim is unreadable ({exc})"
    if expiry is None:
        return "not a JWT: a key Hindsight no longer accepts (rotated?)"
    if expiry <= now:
        hours = (now - expiry) / 3600
        return f"the token expired {hours:.1f} h ago (its exp claim), beyond the server's grace window"
    return "the token has not expired (its exp claim): revoked, unknown signing key or issuer?"


#: The first second of the year 10000: an exp at or past it (or before 1970) is no time a token carries.
_EXP_END = 253_402_300_800


def _token_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT, read without verifying it: only to explain a refusal, never to decide one.

    ValueError when the claim is a number but no time (a crafted record's ``10**400`` overflows a float), so the
    record is dead-lettered with that reason instead of failing its delivery on every receive."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError, RecursionError):  # RecursionError: JSON nested past the parser's depth
        return None
    exp = payload.get("exp") if isinstance(payload, dict) else None
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        return None
    if not 0 <= exp < _EXP_END:  # compared before float(), which 10**400 overflows; NaN and infinity fail it too
        raise ValueError("not a time between 1970 and 9999")
    return float(exp)

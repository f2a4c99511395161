"""The messages of the SQS spool: a :class:`~memory_adapter.spool.RetainRecord` as a message body and attributes,
and back; a dead letter's attributes; a received message (:class:`QueueMessage`), from SQS or a Lambda event.

One message is one record (its JSON, with the characters SQS refuses escaped), never with the deployment's agent
key (IAM mode): such a record is marked ``agent_key`` and its consumer presents its own copy. A record over the
queue's size limit is sent zlib-compressed and base64-encoded (message attribute ``encoding``); one still too large
raises :class:`~memory_adapter.exceptions.RecordTooLargeError`. Dead letters carry the reason in the
``dead_letter_reason`` attribute. Standard library only: the agent, the replay function and the redrive command read
the same messages without boto3.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from memory_adapter.constants import SQS_MAX_MESSAGE_BYTES
from memory_adapter.exceptions import MalformedMessageError, RecordTooLargeError, SpoolError
from memory_adapter.spool import RetainRecord

__all__ = [
    "DEAD_LETTER_REASON_ATTRIBUTE",
    "ENCODING_ATTRIBUTE",
    "MAX_DECODED_RECORD_BYTES",
    "MOVED_BY_SQS",
    "QueueMessage",
    "decode_record",
    "encode_dead_letter",
    "encode_record",
    "forwarded_dead_letter",
    "string_attributes",
]

#: Message attribute naming the body's encoding: ``json`` or ``zlib+base64``.
ENCODING_ATTRIBUTE: Final = "encoding"
#: Message attribute of a dead letter: why it was moved aside (HTTP status, token expiry, malformed, ...).
DEAD_LETTER_REASON_ATTRIBUTE: Final = "dead_letter_reason"
#: Message attributes of a dead letter: the message it was, and how often that one had been received.
SOURCE_MESSAGE_ID_ATTRIBUTE: Final = "source_message_id"
RECEIVE_COUNT_ATTRIBUTE: Final = "source_receive_count"
#: The reason of a dead letter SQS moved itself (its last allowed receive failed: Hindsight unavailable too long).
MOVED_BY_SQS: Final = "moved by SQS after its last allowed receive (Hindsight was unavailable for too long)"
_PLAIN: Final = "json"
_PACKED: Final = "zlib+base64"
#: Kept free in every message for the dead-letter attributes, so a record that fits the queue fits its DLQ too.
_DEAD_LETTER_HEADROOM: Final = 4096
_MAX_REASON_CHARS: Final = 500
#: Largest record a message may expand to (a compressed body is inflated up to this, never further).
MAX_DECODED_RECORD_BYTES: Final = 8 * 2**20
#: Characters SQS refuses in a message body that JSON leaves unescaped (lone surrogates, U+FFFE, U+FFFF).
_SQS_REFUSED: Final = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _escape_refused(text: str) -> str:
    # They can only occur inside JSON strings, where a \uXXXX escape means the same character.
    return _SQS_REFUSED.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _size(body: str, attributes: Mapping[str, str]) -> int:
    """What SQS counts against its limit: the body plus each attribute's name, type and value."""
    fields = sum(len(name) + len("String") + len(value.encode("utf-8")) for name, value in attributes.items())
    return len(body.encode("utf-8")) + fields


def encode_record(record: RetainRecord, *, max_bytes: int = SQS_MAX_MESSAGE_BYTES) -> tuple[str, dict[str, str]]:
    """The message body and attributes of ``record``: its JSON, or compressed when that does not fit.

    Raises:
        RecordTooLargeError: Even compressed, the message would exceed ``max_bytes`` (less the dead-letter room).
    """
    limit = max_bytes - _DEAD_LETTER_HEADROOM
    body = _escape_refused(record.to_json(drop_agent_key=True))  # the consumer reads the key itself
    attributes = {ENCODING_ATTRIBUTE: _PLAIN}
    plain_size = _size(body, attributes)
    if plain_size <= limit:
        return body, attributes
    packed = base64.b64encode(zlib.compress(body.encode("utf-8"), 6)).decode("ascii")
    attributes = {ENCODING_ATTRIBUTE: _PACKED}
    if _size(packed, attributes) <= limit:
        return packed, attributes
    raise RecordTooLargeError(plain_size, limit)


def decode_record(message: QueueMessage, *, max_bytes: int = MAX_DECODED_RECORD_BYTES) -> RetainRecord:
    """The record a message carries (``receipt`` set to the message's).

    Raises:
        MalformedMessageError: Not a spooled retain (unknown encoding, bad base64 or zlib, not a record).
        RecordTooLargeError: It inflates beyond ``max_bytes`` (never decompressed further).
    """
    encoding = message.attributes.get(ENCODING_ATTRIBUTE, _PLAIN)
    if encoding == _PLAIN:
        if len(message.body) > max_bytes:
            raise RecordTooLargeError(len(message.body), max_bytes, what="queued record")
        text = message.body
    elif encoding == _PACKED:
        try:
            packed = base64.b64decode(message.body, validate=True)
            inflater = zlib.decompressobj()
            raw = inflater.decompress(packed, max_bytes + 1)
        except (binascii.Error, ValueError, zlib.error) as exc:
            raise MalformedMessageError(f"cannot unpack a {_PACKED} body: {exc}") from exc
        if len(raw) > max_bytes or inflater.unconsumed_tail:
            raise RecordTooLargeError(len(raw), max_bytes, what="queued record (inflated)")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedMessageError(f"the unpacked body is not UTF-8: {exc}") from exc
    else:
        raise MalformedMessageError(f"unknown {ENCODING_ATTRIBUTE} {encoding[:40]!r}")
    try:
        return RetainRecord.from_json(text, receipt=message.receipt)
    except SpoolError as exc:
        raise MalformedMessageError(str(exc)) from exc


@dataclass(frozen=True, slots=True)
class QueueMessage:
    """One received message, from ``ReceiveMessage`` or from a Lambda SQS event: what replaying it needs.

    Attributes:
        message_id: SQS message id.
        body: The body as sent.
        attributes: String message attributes by name.
        receive_count: How many times SQS has handed it out (this one included).
        receipt: The receipt handle (deletes it, changes its visibility).
    """

    message_id: str
    body: str
    attributes: Mapping[str, str] = field(default_factory=dict)
    receive_count: int = 1
    receipt: str | None = None

    @classmethod
    def from_lambda(cls, record: Mapping[str, Any]) -> QueueMessage:
        """A record of a Lambda SQS event (``messageId``, ``body``, ``messageAttributes``, ``attributes``)."""
        attributes = {
            str(name): str(value.get("stringValue"))
            for name, value in (record.get("messageAttributes") or {}).items()
            if isinstance(value, Mapping) and value.get("stringValue") is not None
        }
        return cls(
            message_id=str(record.get("messageId", "")),
            body=str(record.get("body") or ""),
            attributes=attributes,
            receive_count=_int((record.get("attributes") or {}).get("ApproximateReceiveCount"), 1),
            receipt=record.get("receiptHandle"),
        )

    @classmethod
    def from_sqs(cls, message: Mapping[str, Any]) -> QueueMessage:
        """A message of a ``ReceiveMessage`` answer (``MessageId``, ``Body``, ``MessageAttributes``, ...)."""
        attributes = {
            str(name): str(value.get("StringValue"))
            for name, value in (message.get("MessageAttributes") or {}).items()
            if isinstance(value, Mapping) and value.get("StringValue") is not None
        }
        return cls(
            message_id=str(message.get("MessageId", "")),
            body=str(message.get("Body") or ""),
            attributes=attributes,
            receive_count=_int((message.get("Attributes") or {}).get("ApproximateReceiveCount"), 1),
            receipt=message.get("ReceiptHandle"),
        )

    @property
    def dead_letter_reason(self) -> str | None:
        """Why it was dead-lettered (``None``: not by us; SQS moved it after its last allowed receive)."""
        return self.attributes.get(DEAD_LETTER_REASON_ATTRIBUTE)


def _int(value: object, default: int) -> int:
    try:
        return int(str(value))
    except ValueError:
        return default


def string_attributes(attributes: Mapping[str, str]) -> dict[str, Any]:
    return {name: {"DataType": "String", "StringValue": value} for name, value in attributes.items()}


def encode_dead_letter(
    record: RetainRecord, reason: str, *, max_bytes: int = SQS_MAX_MESSAGE_BYTES
) -> tuple[str, dict[str, str]]:
    """The body and attributes of ``record`` as a dead letter: :func:`encode_record`'s plus the reason."""
    body, attributes = encode_record(record, max_bytes=max_bytes)
    attributes[DEAD_LETTER_REASON_ATTRIBUTE] = reason[:_MAX_REASON_CHARS]
    return body, attributes


def forwarded_dead_letter(message: QueueMessage, reason: str) -> tuple[str, dict[str, str]]:
    """A received message, as it is, as a dead letter with ``reason`` and the message it was."""
    attributes = {
        ENCODING_ATTRIBUTE: message.attributes.get(ENCODING_ATTRIBUTE, _PLAIN),
        DEAD_LETTER_REASON_ATTRIBUTE: reason[:_MAX_REASON_CHARS],
        SOURCE_MESSAGE_ID_ATTRIBUTE: message.message_id[:100],
        RECEIVE_COUNT_ATTRIBUTE: str(message.receive_count),
    }
    return message.body or " ", attributes  # SQS refuses an empty body; a malformed empty one stays visible as such

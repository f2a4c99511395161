"""Bank ids: an injective, reversible mapping between (tenant, user, agent) and a Hindsight bank id.

Standard library only, so the Hindsight server extension that authorizes bank access can import this very module
and agree with the adapter by construction.

Form: ``tenant:{t}:user:{u}:agent:{a}`` or, without a tenant, ``user:{u}:agent:{a}`` (the prior-art form).
A part made only of safe characters (``A-Z a-z 0-9 . _ @ -``, at most 128 of them) is written as it is, so ordinary
ids stay readable. Any other part is written as ``~`` followed by its UTF-8 bytes in unpadded base64url. Neither form
can contain ``:``, and only the encoded form starts with ``~``, so splitting on ``:`` recovers every part exactly:
distinct identities always give distinct bank ids. ``/`` (which makes every Hindsight call 404), ``:``, control
characters and white space are therefore never written raw.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from memory_adapter.identity.errors import BankResolutionError

__all__ = ["MAX_PART_BYTES", "BankOwner", "decode_part", "encode_part", "format_bank_id", "parse_bank_id"]

#: Longest accepted part, in UTF-8 bytes, before encoding. Longer ids are refused, never truncated or hashed
#: (truncation or hashing would break injectivity or reversibility).
MAX_PART_BYTES = 256

_SAFE_PART = re.compile(r"[A-Za-z0-9._@-]{1,128}")
_ENCODED_PART = re.compile(r"~[A-Za-z0-9_-]+")
_ENCODED_PREFIX = "~"


@dataclass(frozen=True, slots=True)
class BankOwner:
    """The identity a bank belongs to. ``tenant`` is ``None`` for single-tenant deployments."""

    tenant: str | None
    user: str
    agent: str


def encode_part(value: str, *, label: str) -> str:
    """Encode one identity part; raise :class:`BankResolutionError` (naming ``label``) if it is unusable."""
    if not isinstance(value, str):
        raise BankResolutionError(f"{label} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise BankResolutionError(f"{label} is empty or blank: refusing to resolve a memory bank")
    if _SAFE_PART.fullmatch(value):
        return value
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BankResolutionError(f"{label} is not valid Unicode text") from exc
    if len(raw) > MAX_PART_BYTES:
        raise BankResolutionError(f"{label} is longer than {MAX_PART_BYTES} bytes")
    return _ENCODED_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_part(part: str) -> str | None:
    """Invert :func:`encode_part`; ``None`` when ``part`` is not something :func:`encode_part` can produce."""
    if _SAFE_PART.fullmatch(part):
        return part
    if not _ENCODED_PART.fullmatch(part):
        return None
    body = part[1:]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        value = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    # Only the canonical encoding is accepted, so one identity has exactly one bank id.
    try:
        canonical = encode_part(value, label="part")
    except BankResolutionError:
        return None
    return value if canonical == part else None


def format_bank_id(*, user: str, agent: str, tenant: str | None = None) -> str:
    """The bank id of (tenant, user, agent). ``tenant`` ``None`` or ``""`` means no tenant."""
    user_part = encode_part(user, label="user_id")
    agent_part = encode_part(agent, label="agent_name")
    if tenant is None or tenant == "":
        return f"user:{user_part}:agent:{agent_part}"
    return f"tenant:{encode_part(tenant, label='tenant_id')}:user:{user_part}:agent:{agent_part}"


def parse_bank_id(bank_id: str) -> BankOwner | None:
    """The owner of ``bank_id``, or ``None`` when it is not a bank id of this scheme."""
    fields = bank_id.split(":")
    if len(fields) == 6 and fields[0] == "tenant" and fields[2] == "user" and fields[4] == "agent":
        tenant, user, agent = (decode_part(fields[i]) for i in (1, 3, 5))
        if tenant is None or user is None or agent is None:
            return None
        return BankOwner(tenant=tenant, user=user, agent=agent)
    if len(fields) == 4 and fields[0] == "user" and fields[2] == "agent":
        user, agent = decode_part(fields[1]), decode_part(fields[3])
        if user is None or agent is None:
            return None
        return BankOwner(tenant=None, user=user, agent=agent)
    return None

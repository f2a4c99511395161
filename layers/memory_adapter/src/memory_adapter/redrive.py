"""The operator's redrive of the retain queue's dead letters: review first, then deliver with the operator credential.

A dead letter is a turn Hindsight refused when the replay function delivered it with the turn's own credential
(expired beyond the grace window, revoked, not the bank owner's), or one SQS moved after Hindsight was unavailable
for too long. Only an operator, never the agent, re-delivers it::

    python -m memory_adapter.redrive list --dead-letter-queue-url URL
    python -m memory_adapter.redrive deliver --dead-letter-queue-url URL --hindsight-url URL \\
        --operator-key-secret-arn ARN --message-id ID [--message-id ID ...] [--dry-run]

``list`` shows each dead letter's reason, bank, age, size and whether its token, verified with the agent's ``JWT_*``
settings (expiry aside), names the bank's owner; nothing is changed (the messages are made visible again). ``deliver``
sends the chosen ones to Hindsight with the operator credential (Secrets Manager, or ``HINDSIGHT_OPERATOR_KEY``; never
a command-line argument) and deletes each from the dead-letter queue once Hindsight accepted it. It refuses a record
whose token names another user than its bank's owner, or that it cannot verify (no ``JWT_*`` settings, a forged token,
a credential that is no JWT): that is what a steered agent or a crafted queue message writing into someone else's bank
looks like, and the operator credential would let it through. Delivery is idempotent (the record's ``operation_id``):
running it twice stores a turn once. Run it where Hindsight is reachable (inside the VPC). Dead letters SQS moved
because Hindsight was down can instead go back to the queue, to be delivered with their own (still valid) tokens:
``aws sqs start-message-move-task --source-arn <dead-letter queue ARN>``.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from memory_adapter._hindsight_api import post_retain
from memory_adapter.constants import HINDSIGHT_OPERATOR_KEY_ENV
from memory_adapter.exceptions import HindsightAgentCoreError, SpoolError
from memory_adapter.identity.bank_ids import parse_bank_id
from memory_adapter.identity.errors import IdentityConfigError, TokenRejectedError
from memory_adapter.identity.settings import ENV_NAMING, JwtSettings
from memory_adapter.identity.verifier import JwtVerifier
from memory_adapter.spool import RetainRecord
from memory_adapter.sqs_codec import MOVED_BY_SQS, QueueMessage, decode_record
from memory_adapter.sqs_spool import SqsSpool
from memory_adapter.transport import HttpTransport, Transport

__all__ = ["DeadLetter", "OwnerCheck", "main", "owner_check", "redrive", "review"]


@dataclass(frozen=True, slots=True)
class OwnerCheck:
    """Whether a record's credential names its bank's owner (``ok=None``: cannot tell, e.g. an agent key)."""

    ok: bool | None
    detail: str


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One dead letter as the operator reviews it."""

    message: QueueMessage
    record: RetainRecord | None
    reason: str
    owner: OwnerCheck

    def row(self, now: float) -> dict[str, Any]:
        """The review line (no credential, no content)."""
        record = self.record
        return {
            "message_id": self.message.message_id,
            "reason": self.reason,
            "bank": record.bank_id if record else None,
            "age_hours": round((now - record.created_at) / 3600, 1) if record else None,
            "content_bytes": len(json.dumps(record.item).encode()) if record else len(self.message.body),
            "owner_check": self.owner.detail,
            "redrivable": self.record is not None and self.owner.ok is not False,
        }


def _claims(token: str) -> Mapping[str, Any] | None:
    """A JWT's claims read WITHOUT verifying it: only to compare with the bank it was spooled for."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError, RecursionError):
        return None
    return claims if isinstance(claims, dict) else None


#: How long after its ``exp`` a queued token may still be verified for the review: SQS keeps a message 14 days at most.
_REVIEW_EXPIRY_GRACE_S = 14 * 24 * 3600


def owner_check(
    record: RetainRecord,
    *,
    verifier: JwtVerifier | None = None,
    user_claim: str = "sub",
    tenant_claim: str | None = None,
) -> OwnerCheck:
    """Does the record's token name the owner of its bank (tenant and user), and is it a token the issuer signed?

    Only a verified token (``verifier``: the agent's issuer settings; expiry ignored, the turn was queued while it
    was valid) or an IAM-mode record (the agent-key mark: not checkable) can be redrivable: claims read without
    verifying prove nothing (anyone with SendMessage on the queue can write a token that names the owner, and the
    operator credential would then write the turn into that user's bank), and no agent queues a record with a
    credential that is no JWT, or with none and no mark.
    """
    owner = parse_bank_id(record.bank_id)
    if owner is None:
        return OwnerCheck(False, "the bank id is not one of this product's")
    if record.agent_key:  # queued without the key (IAM mode): the agent key names no user
        return OwnerCheck(None, "the agent key (IAM mode), not a user token: not checkable")
    if not record.credential:
        return OwnerCheck(False, "NOT REDRIVABLE: no credential and no agent-key mark: no agent queues such a record")
    claims = _claims(record.credential)
    if claims is None:
        return OwnerCheck(
            False, "NOT REDRIVABLE: a credential that is no JWT and no agent-key mark: no agent queues one"
        )
    if verifier is None:
        return OwnerCheck(
            False,
            "NOT VERIFIED: set the JWT_* variables (the agent's issuer settings) so the token's signature is checked "
            "before the operator credential lets it through",
        )
    try:
        identity = verifier.verify(record.credential, expiry_grace=_REVIEW_EXPIRY_GRACE_S)
    except TokenRejectedError as exc:
        return OwnerCheck(False, f"NOT VERIFIED ({exc.reason.value}): not a token this issuer signed for a user")
    if identity.user != owner.user:
        return OwnerCheck(False, f"OWNER MISMATCH: the token's {user_claim} is not the bank's user")
    if (tenant_claim is not None or verifier.settings.tenant_claim) and identity.tenant != owner.tenant:
        return OwnerCheck(False, f"OWNER MISMATCH: the token's {tenant_claim or 'tenant'} is not the bank's tenant")
    return OwnerCheck(True, "the token's subject owns the bank (signature verified)")


def review(
    spool: SqsSpool,
    *,
    limit: int | None = None,
    verifier: JwtVerifier | None = None,
    user_claim: str = "sub",
    tenant_claim: str | None = None,
) -> list[DeadLetter]:
    """Receive the dead letters (hidden from others until released or deleted) and check each."""
    letters: list[DeadLetter] = []
    for message in spool.messages(limit, dead=True):
        try:
            record = decode_record(message)
        except SpoolError as exc:
            unreadable = OwnerCheck(False, "not a retain record")
            letters.append(DeadLetter(message, None, message.dead_letter_reason or str(exc), unreadable))
            continue
        check = owner_check(record, verifier=verifier, user_claim=user_claim, tenant_claim=tenant_claim)
        letters.append(DeadLetter(message, record, message.dead_letter_reason or MOVED_BY_SQS, check))
    return letters


@dataclass(frozen=True, slots=True)
class RedriveResult:
    """What ``deliver`` did, by message id."""

    delivered: list[str]
    refused: dict[str, str]
    not_found: list[str]


def redrive(
    spool: SqsSpool,
    transport: Transport,
    *,
    operator_credential: str,
    message_ids: Sequence[str],
    dry_run: bool = False,
    timeout: float = 15.0,
    verifier: JwtVerifier | None = None,
    user_claim: str = "sub",
    tenant_claim: str | None = None,
) -> RedriveResult:
    """Deliver the named dead letters with the operator credential and delete each one Hindsight accepted."""
    wanted = set(message_ids)
    letters = review(spool, verifier=verifier, user_claim=user_claim, tenant_claim=tenant_claim)
    delivered: list[str] = []
    refused: dict[str, str] = {}
    untouched: list[QueueMessage] = []
    try:
        for letter in letters:
            message_id = letter.message.message_id
            if message_id not in wanted:
                untouched.append(letter.message)
                continue
            if letter.record is None or letter.owner.ok is False:
                refused[message_id] = letter.owner.detail
                untouched.append(letter.message)
                continue
            if dry_run:
                delivered.append(message_id)
                untouched.append(letter.message)
                continue
            try:
                post_retain(transport, letter.record, bearer=operator_credential, timeout=timeout)
            except HindsightAgentCoreError as exc:
                refused[message_id] = f"Hindsight: {exc}"
                untouched.append(letter.message)
                continue
            spool.delete(letter.message, dead=True)
            delivered.append(message_id)
    finally:
        spool.release(untouched, dead=True)
    found = {letter.message.message_id for letter in letters}
    return RedriveResult(delivered, refused, sorted(wanted - found))


def _operator_credential(secret_arn: str | None, env: Mapping[str, str]) -> str:
    if secret_arn:
        import boto3  # the operator's own AWS credentials read the secret

        value = boto3.client("secretsmanager").get_secret_value(SecretId=secret_arn).get("SecretString")
        if not value:
            raise SystemExit(f"secret {secret_arn} holds no string")
        return str(value).strip()
    value = env.get(HINDSIGHT_OPERATOR_KEY_ENV, "").strip()
    if not value:
        raise SystemExit(f"give --operator-key-secret-arn, or set {HINDSIGHT_OPERATOR_KEY_ENV}")
    return value


def _verifier(env: Mapping[str, str]) -> JwtVerifier | None:
    """The agent's token checks from the ``JWT_*`` variables, if they are set (``None``: user tokens cannot be
    verified, so no record carrying one is redrivable)."""
    if not any(name.startswith("JWT_") for name in env):
        return None
    try:
        return JwtVerifier(JwtSettings.from_mapping(env, ENV_NAMING))
    except IdentityConfigError as exc:
        raise SystemExit(f"the JWT_* variables are incomplete: {exc}") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m memory_adapter.redrive",
        description="Review the retain queue's dead letters, then deliver chosen ones with the operator credential.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("list", "show every dead letter (changes nothing)"), ("deliver", "deliver chosen ones")):
        command = sub.add_parser(name, help=text)
        command.add_argument("--dead-letter-queue-url", required=True)
        command.add_argument("--user-claim", default="sub", help="the token claim naming the user (auth.user_claim)")
        command.add_argument("--tenant-claim", help="the token claim naming the tenant (auth.tenant_claim)")
    listing = sub.choices["list"]
    listing.add_argument("--limit", type=int, help="at most this many")
    deliver = sub.choices["deliver"]
    deliver.add_argument("--hindsight-url", required=True, help="Hindsight's URL (HindsightUrl output)")
    deliver.add_argument("--operator-key-secret-arn", help=f"OperatorKeySecretArn (else ${HINDSIGHT_OPERATOR_KEY_ENV})")
    deliver.add_argument("--message-id", action="append", required=True, help="a reviewed dead letter (repeat)")
    deliver.add_argument("--dry-run", action="store_true", help="check the chosen ones, deliver nothing")
    return parser


def main(argv: Sequence[str] | None = None, *, env: Mapping[str, str] | None = None, out: TextIO = sys.stdout) -> int:
    """Run the command; exit 0 when everything asked for was done, 1 when something was refused or not found."""
    args = _parser().parse_args(argv)
    env = os.environ if env is None else env
    url = args.dead_letter_queue_url
    spool = SqsSpool(url, dead_letter_queue_url=url, visibility_timeout=120)
    verifier = _verifier(env)
    try:
        if args.command == "list":
            letters = review(
                spool, limit=args.limit, verifier=verifier, user_claim=args.user_claim, tenant_claim=args.tenant_claim
            )
            spool.release([letter.message for letter in letters], dead=True)
            now = time.time()
            for letter in letters:
                print(json.dumps(letter.row(now), sort_keys=True), file=out)
            print(f"{len(letters)} dead letter(s)", file=out)
            return 0
        credential = _operator_credential(args.operator_key_secret_arn, env)
        result = redrive(
            spool,
            HttpTransport(args.hindsight_url),
            operator_credential=credential,
            message_ids=args.message_id,
            dry_run=args.dry_run,
            verifier=verifier,
            user_claim=args.user_claim,
            tenant_claim=args.tenant_claim,
        )
    except SpoolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    verb = "would deliver" if args.dry_run else "delivered"
    for message_id in result.delivered:
        print(f"{verb} {message_id}", file=out)
    for message_id, why in result.refused.items():
        print(f"refused {message_id}: {why}", file=out)
    for message_id in result.not_found:
        print(f"not found {message_id} (not in the dead-letter queue, or received by someone else)", file=out)
    return 0 if not result.refused and not result.not_found else 1


if __name__ == "__main__":
    sys.exit(main())

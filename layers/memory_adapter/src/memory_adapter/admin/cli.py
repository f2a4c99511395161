"""``python -m memory_adapter.admin``: the operator's command line for the memory administration actions.

Deployed, it calls the admin function (its IAM-authorized function URL, the stack output ``MemoryAdminUrl``,
signed with your AWS credentials by botocore: the function logs your principal). With ``--local`` it talks straight
to a local Hindsight (``make hindsight-start``: operator key from ``.local/hindsight/operator-key``) and writes
artifacts under ``.local/admin/``.

Examples::

    python -m memory_adapter.admin --local banks --user user-alex
    python -m memory_adapter.admin --local export --user user-alex
    python -m memory_adapter.admin --local forget-memory --user user-alex --query "my phone number"
    python -m memory_adapter.admin --local forget-memory --user user-alex --query "my phone number" --confirm sha256:...
    python -m memory_adapter.admin --local forget-user --user user-alex --confirm user-alex --reason "ticket 42"
    python -m memory_adapter.admin --local expire --dry-run
    python -m memory_adapter.admin --local backup
    python -m memory_adapter.admin --function-url https://....lambda-url.us-east-1.on.aws/ export --tenant acme
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from pathlib import Path
from typing import Any, Final

from memory_adapter.admin.errors import AdminError, InvalidRequestError
from memory_adapter.exceptions import HindsightAgentCoreError

__all__ = ["main"]

ENV_FUNCTION_URL: Final = "MEMORY_ADMIN_URL"
ENV_RETENTION: Final = "MEMORY_RETENTION_DAYS"
_LOCAL_URL: Final = "http://127.0.0.1:8888"
_LOCAL_KEY_FILE: Final = ".local/hindsight/operator-key"
_LOCAL_OUT: Final = ".local/admin"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m memory_adapter.admin",
        description="Memory administration: list, export, forget, expire, back up.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("Examples::", 1)[1] if __doc__ else None,
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--local", action="store_true", help="talk to a local Hindsight directly")
    where.add_argument("--function-url", help=f"the admin function's URL (default ${ENV_FUNCTION_URL})")
    parser.add_argument("--url", default=_LOCAL_URL, help="--local: Hindsight's URL (default %(default)s)")
    parser.add_argument("--operator-key-file", default=_LOCAL_KEY_FILE, help="--local: the operator key file")
    parser.add_argument("--out", default=_LOCAL_OUT, help="--local: where artifacts are written")
    parser.add_argument("--retention", help=f"--local: retention JSON (default ${ENV_RETENTION}, else the defaults)")
    sub = parser.add_subparsers(dest="action", required=True)

    def subject(p: argparse.ArgumentParser, *, user_required: bool = False) -> None:
        p.add_argument("--user", required=user_required)
        p.add_argument("--tenant")

    subject(sub.add_parser("banks", help="a user's (or tenant's) banks, every agent, with counts"))
    subject(sub.add_parser("export", help="export a user's (or tenant's) memories as JSONL"))
    fu = sub.add_parser("forget-user", help="delete every bank of a user, verify, write an erasure receipt")
    subject(fu, user_required=True)
    fu.add_argument("--confirm", help="the user id again: required to delete")
    fu.add_argument("--reason", help="why (ticket, request reference): recorded in the receipt")
    fm = sub.add_parser("forget-memory", help="preview, then delete, the memories matching an id or description")
    subject(fm, user_required=True)
    what = fm.add_mutually_exclusive_group(required=True)
    what.add_argument("--memory-id")
    what.add_argument("--query", help="a description; the top --limit recalled memories match")
    fm.add_argument("--limit", type=int)
    fm.add_argument("--confirm", help="the preview's confirmation digest: required to delete")
    ex = sub.add_parser("expire", help="delete what is past its kind's retention")
    ex.add_argument("--dry-run", action="store_true")
    ex.add_argument("--batch-size", type=int)
    bk = sub.add_parser("backup", help="every bank's transfer archive and a manifest")
    bk.add_argument("--bank", action="append", dest="banks")
    return parser


def _request(args: argparse.Namespace) -> dict[str, Any]:
    names = ("user", "tenant", "confirm", "reason", "memory_id", "query", "limit", "dry_run", "batch_size", "banks")
    request: dict[str, Any] = {"action": args.action}
    for name in names:
        value = getattr(args, name, None)
        if value is not None and value is not False:
            request[name] = value
    return request


def _run_local(args: argparse.Namespace, request: dict[str, Any]) -> dict[str, Any]:
    from memory_adapter.admin.actions import AdminDeps, run_action
    from memory_adapter.admin.client import OperatorClient
    from memory_adapter.admin.store import DirectoryStore
    from memory_adapter.kinds import RetentionRules

    key_file = Path(args.operator_key_file)
    if not key_file.is_file():
        raise InvalidRequestError(f"no operator key at {key_file}: start the local Hindsight (make hindsight-start)")
    rules = RetentionRules.from_json(args.retention or os.environ.get(ENV_RETENTION))
    deps = AdminDeps(OperatorClient(args.url, key_file.read_text().strip()), DirectoryStore(args.out), rules)
    return run_action(request, deps=deps, principal=f"local:{getpass.getuser()}")


def _run_remote(url: str, request: dict[str, Any]) -> dict[str, Any]:
    """POST the request to the function URL, SigV4-signed (service ``lambda``) with the caller's credentials."""
    import urllib.error
    import urllib.request

    import boto3
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    session = boto3.Session()
    credentials = session.get_credentials()
    if credentials is None:
        raise InvalidRequestError("no AWS credentials found (AWS_PROFILE, environment, or instance role)")
    region = url.split(".lambda-url.", 1)[1].split(".", 1)[0] if ".lambda-url." in url else session.region_name
    body = json.dumps(request).encode()
    signed = AWSRequest(method="POST", url=url, data=body, headers={"Content-Type": "application/json"})
    SigV4Auth(credentials.get_frozen_credentials(), "lambda", region or "us-east-1").add_auth(signed)
    http = urllib.request.Request(url, data=body, headers=dict(signed.headers), method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(http, timeout=900) as answer:  # noqa: S310 (the operator's own URL)
            result: dict[str, Any] = json.loads(answer.read())
            return result
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")
        raise AdminError(f"the admin function answered {exc.code}: {detail}") from exc


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    request = _request(args)
    try:
        if args.local:
            result = _run_local(args, request)
        else:
            url = args.function_url or os.environ.get(ENV_FUNCTION_URL)
            if not url:
                raise InvalidRequestError(f"pass --local, or --function-url / ${ENV_FUNCTION_URL} (stack output)")
            result = _run_remote(url, request)
    except (AdminError, HindsightAgentCoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False, default=str))
    return 0

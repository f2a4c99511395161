"""``python -m memory_adapter.admin``: the operator's command line for the memory administration actions.

Deployed, it calls the admin function (its IAM-authorized function URL, the stack output ``MemoryAdminUrl``,
signed with your AWS credentials by botocore: the function logs your principal). With ``--local`` it talks straight
to a local Hindsight (``make hindsight-start``: operator key from ``.local/hindsight/operator-key``) and writes
artifacts under ``.local/admin/``. The connection options (``--local``, ``--function-url``, ``--url``...) go before or
after the action. Every error is one line on stderr saying what to do, with exit code 2; a backup or expiry that
skipped banks prints its result and exits 1 (``failed`` lists them); a ``forget-user`` that left a bank is an error
naming its receipt (``outcome: partial``). A ``forget-memory`` preview ends with the command that carries it out
(``--confirm <digest>``). With ``--local`` the audit lines go to ``<out>/audit.jsonl`` (deployed, the admin function
logs them).

Examples::

    python -m memory_adapter.admin --local banks --user user-alex
    python -m memory_adapter.admin --local export --user user-alex
    python -m memory_adapter.admin --local forget-memory --user user-alex --query "my phone number"
    python -m memory_adapter.admin --local forget-memory --user user-alex --query "my phone number" --confirm sha256:...
    python -m memory_adapter.admin forget-memory --local --user user-alex --memory-id ID --memory-id ID2
    python -m memory_adapter.admin --local forget-user --user user-alex --confirm user-alex --reason "ticket 42"
    python -m memory_adapter.admin --local expire --dry-run
    python -m memory_adapter.admin --local backup
    python -m memory_adapter.admin --local import history.jsonl --dry-run
    python -m memory_adapter.admin import history.jsonl --url http://hindsight.internal --operator-key-file key --local
    python -m memory_adapter.admin --function-url https://....lambda-url.us-east-1.on.aws/ export --tenant acme
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import logging
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, NoReturn

from memory_adapter.admin.errors import AdminError, InvalidRequestError
from memory_adapter.exceptions import HindsightAgentCoreError, HindsightRequestError, HindsightUnavailableError
from memory_adapter.kinds import RetentionRulesError

__all__ = ["main"]

ENV_FUNCTION_URL: Final = "MEMORY_ADMIN_URL"
ENV_RETENTION: Final = "MEMORY_RETENTION_DAYS"
_LOCAL_URL: Final = "http://127.0.0.1:8888"
_LOCAL_KEY_FILE: Final = ".local/hindsight/operator-key"
_LOCAL_OUT: Final = ".local/admin"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (what is wrong, where to look) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def _connection(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """Where the actions run; on the main parser (with defaults) and on every action's (so they may follow it)."""

    def default(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS

    where = parser.add_mutually_exclusive_group()
    where.add_argument("--local", action="store_true", default=default(False), help="talk to a local Hindsight")
    where.add_argument(
        "--function-url", default=default(None), help=f"the admin function's URL (default ${ENV_FUNCTION_URL})"
    )
    parser.add_argument("--url", default=default(_LOCAL_URL), help=f"--local: Hindsight's URL (default {_LOCAL_URL})")
    parser.add_argument("--operator-key-file", default=default(_LOCAL_KEY_FILE), help="--local: the operator key file")
    parser.add_argument("--out", default=default(_LOCAL_OUT), help="--local: where artifacts are written")
    parser.add_argument(
        "--retention", default=default(None), help=f"--local: retention JSON (default ${ENV_RETENTION}, else defaults)"
    )


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m memory_adapter.admin",
        description="Memory administration: list, export, forget, expire, back up.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("Examples::", 1)[1] if __doc__ else None,
    )
    _connection(parser, defaults=True)
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        _connection(p, defaults=False)
        return p

    def subject(p: argparse.ArgumentParser, *, user_required: bool = False) -> None:
        p.add_argument("--user", required=user_required)
        p.add_argument("--tenant")

    subject(action("banks", "a user's (or tenant's) banks, every agent, with counts"))
    subject(action("export", "export a user's (or tenant's) memories as JSONL"))
    fu = action("forget-user", "delete every bank of a user, verify, write an erasure receipt")
    subject(fu, user_required=True)
    fu.add_argument("--confirm", help="the user id again: required to delete")
    fu.add_argument("--reason", help="why (ticket, request reference): recorded in the receipt")
    fm = action("forget-memory", "preview, then forget, the memories with these ids or matching a description")
    subject(fm, user_required=True)
    what = fm.add_mutually_exclusive_group(required=True)
    what.add_argument("--memory-id", action="append", dest="memory_ids", help="a memory's id (repeat for more)")
    what.add_argument(
        "--query", help="a description: the memories holding every significant word of it (as the forget tool)"
    )
    fm.add_argument("--limit", type=int, help="most memories a --query selects (default 5)")
    fm.add_argument("--confirm", help="the preview's confirmation digest: required to forget")
    ex = action("expire", "delete what is past its kind's retention")
    ex.add_argument("--dry-run", action="store_true")
    ex.add_argument("--batch-size", type=int)
    bk = action("backup", "every bank's transfer archive and a manifest")
    bk.add_argument("--bank", action="append", dest="banks")
    im = action("import", "import conversation history (JSONL turns) into the right banks; re-runs skip what is there")
    im.add_argument("file", type=Path, help="JSONL, one turn a line: user, agent, time, user_text[, agent_text, ...]")
    im.add_argument("--dry-run", action="store_true", help="check the file and count what would be imported")
    return parser


def _request(args: argparse.Namespace) -> dict[str, Any]:
    names = (
        *("user", "tenant", "confirm", "reason", "memory_ids", "query", "limit"),
        *("dry_run", "batch_size", "banks"),
    )
    request: dict[str, Any] = {"action": args.action}
    for name in names:
        value = getattr(args, name, None)
        if value is not None and value is not False:
            request[name] = value
    return request


def _operator_key(args: argparse.Namespace) -> str:
    key_file = Path(args.operator_key_file)
    if not key_file.is_file():
        where = "" if key_file.is_absolute() else f" (under {Path.cwd()})"
        raise InvalidRequestError(
            f"no operator key at {key_file}{where}: run this from the project folder once the local Hindsight runs "
            "(make hindsight-start or make local), or pass --operator-key-file"
        )
    return key_file.read_text().strip()


def _refused_key(args: argparse.Namespace, exc: HindsightRequestError) -> AdminError:
    """A 401/403 from Hindsight means the operator key is not this server's: say which key was sent where."""
    return AdminError(
        f"Hindsight at {args.url} refused the operator key from {args.operator_key_file} (HTTP {exc.status}): "
        "pass that server's key with --operator-key-file (make local's is .local/hindsight/operator-key)"
    )


def _run_import(args: argparse.Namespace) -> dict[str, Any]:
    """Import runs against Hindsight itself (the file stays on the operator's machine), with the operator key."""
    from memory_adapter.admin.importer import import_file

    if not args.local:
        raise InvalidRequestError(
            "import talks to Hindsight directly: pass --local (with --url and --operator-key-file for a Hindsight "
            "inside the VPC)"
        )
    try:
        return import_file(
            args.file,
            url=args.url,
            operator_key=_operator_key(args),
            dry_run=args.dry_run,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except HindsightUnavailableError as exc:
        raise AdminError(f"{exc}: is Hindsight up at {args.url}? (make hindsight-start)") from exc
    except HindsightRequestError as exc:
        if exc.status in (401, 403):
            raise _refused_key(args, exc) from exc
        raise


@contextlib.contextmanager
def _audit_to_file(out: Path) -> Iterator[None]:
    """Send the admin logger's audit lines to ``<out>/audit.jsonl`` while the action runs (and not to the terminal,
    where Python's last-resort handler would print a refusal's line before its error)."""
    out.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(out / "audit.jsonl", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("memory_adapter.admin")
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
        handler.close()


def _confirm_command(argv: list[str], result: dict[str, Any]) -> str | None:
    """The command that carries out a ``forget-memory`` preview exactly (``None``: nothing to confirm)."""
    if not result.get("preview") or not result.get("matched"):
        return None
    python = os.path.relpath(sys.executable)
    shown = python if not python.startswith("..") else sys.executable
    return shlex.join([shown, "-m", "memory_adapter.admin", *argv, "--confirm", str(result["confirmation"])])


def _run_local(args: argparse.Namespace, request: dict[str, Any]) -> dict[str, Any]:
    from memory_adapter.admin.actions import AdminDeps, run_action
    from memory_adapter.admin.client import OperatorClient
    from memory_adapter.admin.store import DirectoryStore
    from memory_adapter.kinds import RetentionRules

    retention = args.retention or os.environ.get(ENV_RETENTION)
    try:
        rules = RetentionRules.from_json(retention)
    except RetentionRulesError as exc:
        source = "--retention" if args.retention else f"${ENV_RETENTION}"
        raise InvalidRequestError(f"{source}: {exc}; give a JSON object of kind -> days (1-36500) or null") from exc
    deps = AdminDeps(
        OperatorClient(args.url, _operator_key(args)),
        DirectoryStore(args.out),
        rules,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
    )
    try:
        with _audit_to_file(Path(args.out)):
            return run_action(request, deps=deps, principal=f"local:{getpass.getuser()}")
    except HindsightUnavailableError as exc:
        raise AdminError(f"{exc}: is the local Hindsight up at {args.url}? (make hindsight-start)") from exc
    except HindsightRequestError as exc:
        if exc.status in (401, 403):
            raise _refused_key(args, exc) from exc
        raise


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
    except (OSError, ValueError) as exc:  # unreachable, refused, a URL that is no URL, an answer that is no JSON
        reason = getattr(exc, "reason", exc)
        raise AdminError(f"cannot call the admin function at {url} ({reason}): check the URL (stack output)") from exc


def main(argv: list[str] | None = None) -> int:
    """Run one action; print its JSON result (exit 0), or one line saying what is wrong (exit 2)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    request = _request(args)
    try:
        if args.local and args.function_url:
            raise InvalidRequestError("give --local or --function-url, not both")
        if args.action == "import":
            result = _run_import(args)
        elif args.local:
            result = _run_local(args, request)
        else:
            url = args.function_url or os.environ.get(ENV_FUNCTION_URL)
            if not url:
                raise InvalidRequestError(f"pass --local, or --function-url / ${ENV_FUNCTION_URL} (stack output)")
            result = _run_remote(url, request)
    except (AdminError, HindsightAgentCoreError) as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False, default=str))
    confirm = _confirm_command(argv, result) if args.action == "forget-memory" else None
    if confirm:
        print(f"to forget exactly this, run:\n  {confirm}", file=sys.stderr)
    if isinstance(result.get("failed"), list) and result["failed"]:  # a backup or expiry that skipped banks
        print(f'error: {len(result["failed"])} bank(s) failed, the others done: see "failed"', file=sys.stderr)
        return 1
    return 0


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())

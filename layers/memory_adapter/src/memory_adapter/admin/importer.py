"""Import conversation history (JSONL turns) into the right banks, through the agent's own retain path.

An enterprise rollout starts with conversations that already happened. Each line of the file is one turn::

    {"user": "user-alex", "agent": "support", "time": "2024-05-08T13:56:00+00:00",
     "user_text": "I prefer email over phone.", "agent_text": "Noted.", "tenant": "acme", "session": "crm-4711"}

``user``, ``agent``, ``time`` (ISO 8601 with an offset) and ``user_text`` are required; ``agent_text``, ``tenant`` and
``session`` are optional. The bank comes from the identity fields only (:meth:`Caller.of`, the same scheme the
isolation extension enforces); the turn is retained with :meth:`HindsightRuntimeAdapter.retain_for_turn` and its own
``time`` as ``occurred_at``, so facts keep their dates.

The whole file is checked before anything is sent: one bad line (reported with its number) and nothing is imported,
so a fix and a re-run never leave half a file behind. Each turn's document id is derived from its bank and content,
so a re-run skips what is already stored (no turn is imported twice) and an interrupted run can simply be repeated.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from memory_adapter.admin.errors import InvalidRequestError
from memory_adapter.context import turn_time
from memory_adapter.identity.caller import Caller
from memory_adapter.identity.errors import BankResolutionError

__all__ = ["ImportedTurn", "import_turns", "read_turns"]

_REQUIRED: Final = ("user", "agent", "time", "user_text")
_OPTIONAL: Final = ("agent_text", "tenant", "session")
#: Document ids of imported turns live in their own namespace (never equal to a live turn's request id).
_IMPORT_NAMESPACE: Final = uuid.UUID("a7c4f1de-3b52-4d8e-9a61-0f2b9c5d7e43")
#: Session id of a turn whose line names none (metadata and tags only: never part of a bank id).
DEFAULT_SESSION: Final = "imported"
#: Most problems listed before the rest are only counted (a file of 100,000 bad lines stays readable).
_SHOWN_PROBLEMS: Final = 20


@dataclass(frozen=True, slots=True)
class ImportedTurn:
    """One valid line: who (the caller, with its bank), when, what was said, and the turn's stable document id."""

    line: int
    caller: Caller
    occurred_at: datetime
    user_text: str
    agent_text: str
    session: str

    @property
    def document_id(self) -> str:
        key = json.dumps(
            [self.caller.bank_id, self.occurred_at.isoformat(), self.user_text, self.agent_text], ensure_ascii=False
        )
        return f"import-{uuid.uuid5(_IMPORT_NAMESPACE, key)}"


#: Fields whose text becomes tags, metadata or a bank id, where Hindsight (PostgreSQL text) cannot hold NUL.
_NO_NUL: Final = ("user", "agent", "tenant", "session", "time")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose every key is given once: with a repeated one (``"user": "a", "user": "b"``) tools that keep
    the first and this reader (the last) would see different identities, so the line is refused."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"field {key[:40]} given twice")
        data[key] = value
    return data


def _checked_text(data: dict[str, Any]) -> None:
    """Refuse text that cannot be stored or hashed: lone surrogates anywhere (the document id's UTF-8 key would fail
    mid-import), NUL in the fields that become tags, metadata or a bank id."""
    for name in (*_REQUIRED, *_OPTIONAL):
        value = data.get(name)
        if not isinstance(value, str):
            continue
        if any(0xD800 <= ord(char) <= 0xDFFF for char in value):
            raise ValueError(f"{name} is not valid Unicode text (a lone surrogate)")
        if name in _NO_NUL and "\x00" in value:
            raise ValueError(f"{name} must not contain NUL characters")


def _turn(number: int, raw: str) -> ImportedTurn:
    try:
        data = json.loads(raw, object_pairs_hook=_object)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise ValueError("not JSON (nested too deeply)") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    unknown = sorted(set(data) - {*_REQUIRED, *_OPTIONAL})
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)} (fields: {', '.join((*_REQUIRED, *_OPTIONAL))})")
    missing = [name for name in _REQUIRED if data.get(name) in (None, "")]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    for name in (*_REQUIRED, *_OPTIONAL):
        if name in data and data[name] is not None and not isinstance(data[name], str):
            raise ValueError(f"{name} must be a string")
    _checked_text(data)
    if not data["user_text"].strip():
        raise ValueError("user_text is blank")
    try:
        parsed = datetime.fromisoformat(data["time"])
    except ValueError:
        raise ValueError(f"time {data['time']!r} is not ISO 8601") from None
    if parsed.utcoffset() is None:  # the file's words, not the Python API's (an aware datetime)
        raise ValueError(f"time {data['time']!r} has no UTC offset: write it with one, e.g. {data['time']}+00:00")
    try:
        when = turn_time(parsed)
    except ValueError as exc:  # in the future (past the clock skew allowed) or too old: turn_time's words
        raise ValueError(f"time {str(exc).removeprefix('occurred_at ')}") from None
    try:
        caller = Caller.of(user=data["user"], agent=data["agent"], tenant=data.get("tenant") or None)
    except BankResolutionError as exc:
        raise ValueError(f"identity: {exc}") from None
    return ImportedTurn(
        line=number,
        caller=caller,
        occurred_at=when,
        user_text=data["user_text"],
        agent_text=data.get("agent_text") or "",
        session=data.get("session") or DEFAULT_SESSION,
    )


def read_turns(lines: Iterable[str]) -> list[ImportedTurn]:
    """Every turn of a JSONL file (blank lines skipped); raise :class:`InvalidRequestError` listing each bad line."""
    turns: list[ImportedTurn] = []
    problems: list[str] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            turns.append(_turn(number, raw))
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
    if problems:
        shown = "; ".join(problems[:_SHOWN_PROBLEMS])
        more = f"; and {len(problems) - _SHOWN_PROBLEMS} more" if len(problems) > _SHOWN_PROBLEMS else ""
        raise InvalidRequestError(
            f"{len(problems)} bad line(s), nothing was imported: {shown}{more}; fix them and run the import again"
        )
    return turns


def read_file(path: Path) -> list[ImportedTurn]:
    """:func:`read_turns` of a file, with a clear error when it cannot be read."""
    try:
        with path.open(encoding="utf-8") as handle:
            return read_turns(handle)
    except OSError as exc:
        raise InvalidRequestError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(f"{path} is not UTF-8 text (byte {exc.start}): save it as UTF-8 JSONL") from None


def import_turns(
    turns: list[ImportedTurn],
    *,
    stored: Callable[[str], Iterable[str]],
    retain: Callable[[ImportedTurn], bool],
    dry_run: bool = False,
    progress: Callable[[str], None] = lambda _line: None,
) -> dict[str, Any]:
    """Retain every turn not already stored; return the summary.

    Args:
        stored: A bank's document ids (to skip turns imported before).
        retain: Retain one turn, ``True`` once Hindsight accepted it.
        dry_run: Count what would be imported, send nothing.
        progress: Called with one line per bank and every 100 turns.
    """
    banks: dict[str, list[ImportedTurn]] = {}
    for turn in turns:
        banks.setdefault(turn.caller.bank_id, []).append(turn)
    summary: dict[str, Any] = {"dry_run": dry_run, "turns": len(turns), "banks": len(banks)}
    imported = skipped = failed = 0
    failed_lines: list[int] = []
    done = 0
    for index, (bank_id, bank_turns) in enumerate(sorted(banks.items()), start=1):
        known = set(stored(bank_id))
        todo = [t for t in _unique(bank_turns) if t.document_id not in known]
        skipped += len(bank_turns) - len(todo)
        progress(
            f"[{index}/{len(banks)}] {bank_id}: {len(todo)} to import, {len(bank_turns) - len(todo)} already there"
        )
        for turn in todo:
            if dry_run or retain(turn):
                imported += 1
            else:
                failed += 1
                failed_lines.append(turn.line)
            done += 1
            if done % 100 == 0:
                progress(f"  {done} turns sent")
    summary.update({"imported" if not dry_run else "would_import": imported, "skipped": skipped, "failed": failed})
    if failed_lines:
        summary["failed_lines"] = failed_lines[:100]
    return summary


def _unique(turns: list[ImportedTurn]) -> Iterator[ImportedTurn]:
    """The same turn twice in one file is imported once."""
    seen: set[str] = set()
    for turn in turns:
        if turn.document_id not in seen:
            seen.add(turn.document_id)
            yield turn


#: What an imported turn without ``agent_text`` is retained with (the retain path stores exchanges).
NO_REPLY: Final = "(no reply recorded)"
#: Seconds one turn may take to be accepted (retries included) before it counts as failed; a re-run retries it.
_TURN_TIMEOUT_S: Final = 120.0


def import_file(
    path: Path,
    *,
    url: str,
    operator_key: str,
    dry_run: bool = False,
    progress: Callable[[str], None] = lambda _line: None,
) -> dict[str, Any]:
    """Check ``path`` whole, then retain its new turns into ``url``'s banks with the operator key; the summary."""
    import asyncio
    import tempfile

    from memory_adapter.adapter import HindsightRuntimeAdapter
    from memory_adapter.admin.client import OperatorClient

    turns = read_file(path)
    progress(f"{path}: {len(turns)} turns")
    client = OperatorClient(url, operator_key)

    def stored(bank_id: str) -> list[str]:
        return [str(doc["id"]) for doc in client.documents(bank_id)]

    if dry_run:
        return import_turns(turns, stored=stored, retain=lambda _turn: True, dry_run=True, progress=progress)
    with tempfile.TemporaryDirectory(prefix="memory-import-") as spool_dir:
        adapter = HindsightRuntimeAdapter(
            hindsight_api_url=url, api_key=operator_key, spool_dir=spool_dir, auto_replay=False
        )

        def retain(turn: ImportedTurn) -> bool:
            handle = adapter.retain_for_turn(
                turn.caller.with_credential(operator_key),
                query=turn.user_text,
                result=turn.agent_text or NO_REPLY,
                session_id=turn.session,
                request_id=turn.document_id,
                occurred_at=turn.occurred_at,
            )
            try:
                return handle.result(timeout=_TURN_TIMEOUT_S).value == "delivered"
            except TimeoutError:
                return False

        try:
            return import_turns(turns, stored=stored, retain=retain, progress=progress)
        finally:
            asyncio.run(adapter.aclose())

"""The durable spool: where a retain goes when it cannot be delivered, until :meth:`replay` re-delivers it.

A spooled record keeps everything needed to deliver it later exactly as it would have been delivered at first: the
bank, the memory item (with its original turn timestamp and document id), the operation id that makes the delivery
idempotent on the server, and the turn's bearer credential. Because of the credential, the default
:class:`DirectorySpool` keeps its files private (directory ``0700``, files ``0600``).

:class:`Spool` is the small interface a backend implements; :class:`DirectorySpool` is the default (a local
directory: survives process restarts on the same host). A queue backend (for example SQS, whose messages outlive the
AgentCore microVM) implements the same five methods, using :attr:`RetainRecord.receipt` for its receipt handle.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from memory_adapter.exceptions import SpoolError

__all__ = ["DirectorySpool", "RetainRecord", "Spool"]

_FORMAT_VERSION = 1


@dataclass
class RetainRecord:
    """One retain: what to deliver, where, with which credential, and its idempotency key.

    Attributes:
        operation_id: UUID sent as Hindsight's ``operation_id``: a re-delivery returns the original operation.
        bank_id: Target bank.
        item: The memory item (``content``, ``context``, ``metadata``, ``document_id``, ``tags``, ``timestamp``).
        credential: Bearer credential for this retain (``None``: the adapter's api_key). Never logged.
        agent_key: The credential is the deployment's agent key (IAM mode), not a caller's token. A queue message
            leaves it out (``to_json(drop_agent_key=True)``) and its consumer presents its own copy of the key.
        created_at: Unix time the turn was retained.
        attempts: Delivery attempts so far.
        last_error: Why the last attempt failed (no content, no credential).
        receipt: Backend-specific handle of a spooled copy (a file path, a queue receipt); not serialised.
    """

    operation_id: str
    bank_id: str
    item: dict[str, Any]
    credential: str | None = field(default=None, repr=False)
    agent_key: bool = False
    created_at: float = field(default_factory=time.time)
    attempts: int = 0
    last_error: str | None = None
    receipt: str | None = field(default=None, compare=False)

    def to_json(self, *, drop_agent_key: bool = False) -> str:
        """Serialise (without the receipt; with ``drop_agent_key``, without an agent key as the credential)."""
        data: dict[str, Any] = {
            "v": _FORMAT_VERSION,
            "operation_id": self.operation_id,
            "bank_id": self.bank_id,
            "item": self.item,
            "credential": None if drop_agent_key and self.agent_key else self.credential,
            "created_at": self.created_at,
            "attempts": self.attempts,
            "last_error": self.last_error,
        }
        if self.agent_key:  # only then: records without it keep the format they always had
            data["agent_key"] = True
        return json.dumps(data, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, raw: str, *, receipt: str | None = None) -> RetainRecord:
        """Parse :meth:`to_json` output; raise :class:`SpoolError` when it is not a record."""
        try:
            data = json.loads(raw)
            if not isinstance(data, Mapping) or data.get("v") != _FORMAT_VERSION:
                raise ValueError("unknown record format")
            item = data["item"]
            if not isinstance(item, dict):
                raise ValueError("item is not an object")
            agent_key = data.get("agent_key", False)
            if not isinstance(agent_key, bool):
                raise ValueError("agent_key is not a boolean")
            credential = data.get("credential")
            if credential is not None and not _header_safe(credential):
                raise ValueError("credential is not a header-safe string")
            last_error = data.get("last_error")
            return cls(
                operation_id=_name(data, "operation_id"),
                bank_id=_name(data, "bank_id"),
                item=item,
                credential=credential,
                agent_key=agent_key,
                created_at=float(data.get("created_at", 0.0)),
                attempts=int(data.get("attempts", 0)),
                last_error=last_error if isinstance(last_error, str) else None,
                receipt=receipt,
            )
        except RecursionError:  # JSON nested past the parser's depth: never a record, on any receive
            raise SpoolError("not a spooled retain: its JSON is nested too deeply") from None
        except (ValueError, KeyError, TypeError, OverflowError) as exc:  # OverflowError: "attempts": 1e400
            raise SpoolError(f"not a spooled retain: {exc}") from exc


def _name(data: Mapping[str, Any], key: str) -> str:
    """``data[key]`` if it is a non-empty string that can be encoded (it becomes part of a URL or a request)."""
    value = data[key]
    if not isinstance(value, str) or not value or any(0xD800 <= ord(char) <= 0xDFFF for char in value):
        raise ValueError(f"{key} is not a non-empty string of valid Unicode text")
    return value


def _header_safe(value: object) -> bool:
    """A string that can be sent as a bearer token: printable ASCII only (no CR/LF to inject a header)."""
    return isinstance(value, str) and all(" " <= char <= "~" for char in value)


class Spool(Protocol):
    """Durable storage of undelivered retains. Methods are called from background threads, never on a turn's path."""

    def put(self, record: RetainRecord) -> None:
        """Store ``record`` durably (storing the same ``operation_id`` twice keeps one copy)."""
        ...

    def items(self, limit: int | None = None, *, dead: bool = False) -> list[RetainRecord]:
        """Up to ``limit`` stored records, oldest first, each with its ``receipt`` set; ``dead`` lists dead letters."""
        ...

    def remove(self, record: RetainRecord) -> None:
        """Delete a record returned by :meth:`items` (delivered). Missing records are ignored."""
        ...

    def dead_letter(self, record: RetainRecord, reason: str) -> None:
        """Move ``record`` aside: Hindsight refused it for good. Kept for inspection, never replayed automatically."""
        ...

    def count(self, *, dead: bool = False) -> int:
        """Number of stored (or dead-lettered) records."""
        ...


class DirectorySpool:
    """A spool in a local directory: one JSON file per retain in ``pending/``, dead letters in ``dead/``.

    Writes are atomic (temp file, fsync, rename). Several processes may share the directory: a record replayed by
    two of them is delivered twice, and Hindsight's ``operation_id`` idempotency keeps it once in the bank.

    Example:
        >>> spool = DirectorySpool("/tmp/memory-spool")
        >>> spool.count()
        0
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._pending = self.path / "pending"
        self._dead = self.path / "dead"
        self._ready = False

    def _ensure(self) -> None:
        if self._ready:
            return
        try:
            for directory in (self.path, self._pending, self._dead):
                directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                info = directory.stat()
                if info.st_uid != os.getuid():
                    # It holds bearer credentials: never write them into a directory someone else controls.
                    raise SpoolError(f"spool directory {directory} belongs to another user")
                if info.st_mode & 0o077:
                    directory.chmod(0o700)
        except OSError as exc:
            raise SpoolError(f"cannot create spool directory {self.path}: {exc}") from exc
        self._ready = True

    @staticmethod
    def _name(record: RetainRecord) -> str:
        # Oldest first when sorted by name; one file per operation id.
        return f"{int(record.created_at * 1000):015d}-{record.operation_id}.json"

    def _write(self, directory: Path, record: RetainRecord) -> None:
        self._ensure()
        target = directory / self._name(record)
        # One temp file per writer: a shutdown and a delivery thread may spool the same record at the same moment.
        tmp = directory / f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(record.to_json())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise SpoolError(f"cannot write to spool {directory}: {exc}") from exc

    def put(self, record: RetainRecord) -> None:
        """Store ``record`` in ``pending/``."""
        self._write(self._pending, record)

    def items(self, limit: int | None = None, *, dead: bool = False) -> list[RetainRecord]:
        """Records oldest first; unreadable files are moved to ``dead/`` rather than blocking the queue."""
        self._ensure()
        directory = self._dead if dead else self._pending
        try:
            names = sorted(n for n in os.listdir(directory) if n.endswith(".json") and not n.startswith("."))
        except OSError as exc:
            raise SpoolError(f"cannot list spool {directory}: {exc}") from exc
        records: list[RetainRecord] = []
        for name in names:
            if limit is not None and len(records) >= limit:
                break
            path = directory / name
            try:
                records.append(RetainRecord.from_json(path.read_text(encoding="utf-8"), receipt=str(path)))
            except FileNotFoundError:
                continue  # taken by another process
            except (OSError, SpoolError, UnicodeDecodeError):
                if not dead:
                    with contextlib.suppress(OSError):
                        os.replace(path, self._dead / f"corrupt-{name}")
        return records

    def remove(self, record: RetainRecord) -> None:
        """Delete the file behind ``record.receipt`` (or the pending file named after it)."""
        path = Path(record.receipt) if record.receipt else self._pending / self._name(record)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    def dead_letter(self, record: RetainRecord, reason: str) -> None:
        """Write ``record`` to ``dead/`` with ``reason`` and drop its pending copy."""
        record.last_error = reason
        self._write(self._dead, record)
        pending = self._pending / self._name(record)
        if record.receipt is None or Path(record.receipt) != self._dead / self._name(record):
            with contextlib.suppress(FileNotFoundError):
                (Path(record.receipt) if record.receipt else pending).unlink()

    def count(self, *, dead: bool = False) -> int:
        """Number of records in ``pending/`` (or ``dead/``)."""
        directory = self._dead if dead else self._pending
        try:
            return sum(1 for n in os.listdir(directory) if n.endswith(".json") and not n.startswith("."))
        except FileNotFoundError:
            return 0
        except OSError as exc:
            raise SpoolError(f"cannot list spool {directory}: {exc}") from exc

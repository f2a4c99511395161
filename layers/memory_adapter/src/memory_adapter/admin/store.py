"""Where exports, erasure receipts and backups go: a local directory (``--local``) or the private S3 bucket.

Keys are ``/``-separated and made only of S3-safe characters (identity parts go through
:func:`memory_adapter.identity.bank_ids.encode_part`). Objects are written whole and never overwritten in place:
the bucket is versioned, and every key carries the time it was written.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memory_adapter.admin.errors import InvalidRequestError

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["ArtifactStore", "DirectoryStore", "S3Store"]


class ArtifactStore(Protocol):
    """Write-once storage of administration artifacts."""

    def put(self, key: str, data: bytes, *, content_type: str) -> str:
        """Store ``data`` under ``key``; return where it went (a path or ``s3://`` URL)."""
        ...

    def get(self, key: str) -> bytes:
        """The bytes stored under ``key`` (``KeyError`` if none)."""
        ...

    def keys(self, prefix: str) -> Iterator[str]:
        """Every key under ``prefix``, sorted."""
        ...


def _check_key(key: str) -> str:
    parts = key.split("/")
    if not key or any(p in ("", ".", "..") for p in parts):
        raise InvalidRequestError(f"invalid artifact key {key!r}")
    return key


class DirectoryStore:
    """Artifacts as files under ``root`` (the CLI's ``--local`` mode and the tests)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def put(self, key: str, data: bytes, *, content_type: str) -> str:
        path = self.root / _check_key(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
        return str(path)

    def get(self, key: str) -> bytes:
        path = self.root / _check_key(key)
        if not path.is_file():
            raise KeyError(key)
        return path.read_bytes()

    def keys(self, prefix: str) -> Iterator[str]:
        base = self.root
        found = sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())
        yield from (k for k in found if k.startswith(prefix) and not k.endswith(".tmp"))


class S3Store:
    """Artifacts in the administration bucket (private, versioned, KMS-encrypted with ``kms_key_id``).

    Args:
        bucket: The bucket name.
        kms_key_id: The bucket's KMS key; every object is written with it (``aws:kms``).
        client: A boto3 S3 client (default: a new one; boto3 is imported only here).
    """

    def __init__(self, bucket: str, *, kms_key_id: str | None = None, client: Any | None = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("s3")
        self.bucket = bucket
        self._kms_key_id = kms_key_id
        self._s3 = client

    def put(self, key: str, data: bytes, *, content_type: str) -> str:
        extra: dict[str, Any] = {"ServerSideEncryption": "aws:kms"}
        if self._kms_key_id:
            extra["SSEKMSKeyId"] = self._kms_key_id
        self._s3.put_object(Bucket=self.bucket, Key=_check_key(key), Body=data, ContentType=content_type, **extra)
        return f"s3://{self.bucket}/{key}"

    def get(self, key: str) -> bytes:
        try:
            answer = self._s3.get_object(Bucket=self.bucket, Key=_check_key(key))
        except self._s3.exceptions.NoSuchKey as exc:
            raise KeyError(key) from exc
        data: bytes = answer["Body"].read()
        return data

    def keys(self, prefix: str) -> Iterator[str]:
        pages = self._s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        found = [obj["Key"] for page in pages for obj in page.get("Contents", [])]
        yield from sorted(found)

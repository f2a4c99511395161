"""Memory administration with the operator credential: list, export, forget, expire, back up, restore, re-embed.

One job per module, all standard library (boto3 only where S3 or SigV4 is used):

* :mod:`~memory_adapter.admin.client`: ``OperatorClient``, Hindsight's operator routes over HTTP;
* :mod:`~memory_adapter.admin.inventory`: whose banks are whose (:class:`Subject`), and their counts;
* :mod:`~memory_adapter.admin.export`: a user's (or tenant's) memories as JSONL;
* :mod:`~memory_adapter.admin.forget`: forget a user (verified, with an erasure receipt) or chosen memories;
* :mod:`~memory_adapter.admin.expiry`: delete what is past its kind's retention (:mod:`memory_adapter.kinds`);
* :mod:`~memory_adapter.admin.backup`: every bank's transfer archive plus a manifest;
* :mod:`~memory_adapter.admin.maintenance`: restore and re-embed, run inside Hindsight's environment;
* :mod:`~memory_adapter.admin.actions`: the one entry point the admin function and the CLI share;
* :mod:`~memory_adapter.admin.cli`: ``python -m memory_adapter.admin``.

Example:
    >>> from memory_adapter.admin import OperatorClient, Subject, DirectoryStore, export_subject
    >>> client = OperatorClient("http://127.0.0.1:8888", operator_key)
    >>> export_subject(client, Subject(tenant=None, user="user-alex"), DirectoryStore(".local/admin"),
    ...                principal="local:me", now=datetime.now(UTC))
"""

from __future__ import annotations

from memory_adapter.admin.actions import AdminDeps, run_action
from memory_adapter.admin.client import OperatorClient
from memory_adapter.admin.errors import AdminError, ConfirmationError, InvalidRequestError, VerificationError
from memory_adapter.admin.export import export_subject
from memory_adapter.admin.inventory import Subject, bank_summary, subject_banks
from memory_adapter.admin.store import ArtifactStore, DirectoryStore, S3Store

__all__ = [
    "AdminDeps",
    "AdminError",
    "ArtifactStore",
    "ConfirmationError",
    "DirectoryStore",
    "InvalidRequestError",
    "OperatorClient",
    "S3Store",
    "Subject",
    "VerificationError",
    "bank_summary",
    "export_subject",
    "run_action",
    "subject_banks",
]

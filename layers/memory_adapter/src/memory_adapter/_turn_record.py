"""The :class:`~memory_adapter.spool.RetainRecord` of one turn: what is stored, under which ids, with which tags.

Private to the adapter. Built on a delivery thread (never the turn's): the document id, the idempotency digest and
the metadata cost more than queuing the turn's inputs.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from memory_adapter.budget import dialogue_text
from memory_adapter.context import turn_metadata, turn_tags
from memory_adapter.formatting import storable_text
from memory_adapter.identity.caller import Caller
from memory_adapter.kinds import KIND_METADATA_KEY, kind_tag
from memory_adapter.policies import RetentionPolicy
from memory_adapter.spool import RetainRecord

__all__ = ["turn_record"]

_OPERATION_NAMESPACE: Final = uuid.UUID("5b0f7f3e-8d0c-4f43-9a77-6d2f1c0e9b11")


def turn_record(
    caller: Caller,
    session_id: str,
    request_id: str | None,
    result: str,
    query: str | None,
    occurred_at: datetime,
    *,
    policy: RetentionPolicy,
    tags: Sequence[str],
) -> RetainRecord:
    """The turn's record. The document id is ``request_id`` (else a new UUID), so no turn overwrites another; the
    ``operation_id`` is derived from the bank and the item (its time aside), so re-delivering the same turn creates
    no new work on the server."""
    content = result
    if policy.include_user_message and query and query.strip():
        content = dialogue_text(query, result)  # every line names its speaker, whatever chunk it lands in
    item: dict[str, Any] = {
        "content": storable_text(content),
        "context": policy.context_label,
        "metadata": {
            **turn_metadata(
                session_id=session_id,
                user=caller.user,
                agent=caller.agent,
                tenant=caller.tenant,
                request_id=request_id,
            ),
            KIND_METADATA_KEY: str(policy.kind),
            **policy.extra_metadata,
        },
        "document_id": request_id or str(uuid.uuid4()),
        "tags": [
            *turn_tags(session_id=session_id, user=caller.user, agent=caller.agent, tenant=caller.tenant),
            kind_tag(policy.kind),
            *tags,
            *policy.extra_tags,
        ],
    }
    digest = hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
    item["timestamp"] = occurred_at.isoformat()
    return RetainRecord(
        operation_id=str(uuid.uuid5(_OPERATION_NAMESPACE, f"{caller.bank_id}\n{digest}")),
        bank_id=caller.bank_id,
        item=item,
        credential=caller.credential,
        agent_key=caller.agent_key,
    )

"""The expiry goes bank by bank: a bank Hindsight fails to list or delete from is skipped and reported, and the other
banks' due memories still go (``memory_adapter.admin.expiry``). Hindsight is scripted with
:class:`~memory_adapter.testing.MockTransport`; tests/integration/admin covers the real server's expiry."""

from __future__ import annotations

import json
import logging
import urllib.parse
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_adapter.admin import OperatorClient
from memory_adapter.admin.errors import BatchFailedError
from memory_adapter.admin.expiry import expire
from memory_adapter.identity.bank_ids import format_bank_id
from memory_adapter.kinds import RetentionRules, kind_tag
from memory_adapter.observability import short_hash
from memory_adapter.testing import MockTransport
from memory_adapter.transport import HttpRequest, HttpResponse

NOW = datetime(2026, 12, 8, 3, 0, tzinfo=UTC)
RULES = RetentionRules.from_json('{"plan": 30}')
BANKS = [format_bank_id(user=f"user-{n}", agent="support") for n in (1, 2, 3)]


class ScriptedBanks(MockTransport):
    """Each bank holds one plan stored 40 days ago (due); ``broken[bank]`` is what its listing or delete answers."""

    def __init__(self, broken: dict[str, tuple[str, int]]) -> None:
        super().__init__(self._answer)
        self.broken = broken
        self.deleted: list[str] = []

    def _answer(self, request: HttpRequest) -> HttpResponse:
        path = urllib.parse.unquote(request.path.split("?")[0])
        if path == "/v1/default/banks":
            return HttpResponse(200, {"banks": [{"bank_id": b} for b in BANKS], "total": len(BANKS)})
        bank = path.removeprefix("/v1/default/banks/").partition("/")[0]
        method = "list" if request.method == "GET" else "delete"
        if self.broken.get(bank, ("", 0))[0] == method:
            return HttpResponse(self.broken[bank][1], {"detail": "Internal Server Error"})
        if method == "delete":
            self.deleted.append(bank)
            return HttpResponse(200, {"memory_units_deleted": 2})
        offset = int(urllib.parse.parse_qs(urllib.parse.urlsplit(request.path).query)["offset"][0])
        created = (NOW - timedelta(days=40)).isoformat()
        items = [] if offset else [{"id": f"doc-{bank}", "created_at": created, "tags": [kind_tag("plan")]}]
        return HttpResponse(200, {"items": items, "total": 1})


def _expire(transport: ScriptedBanks) -> dict[str, Any]:
    return expire(OperatorClient("http://h", "op", transport=transport), RULES, now=NOW).as_dict()


@pytest.mark.parametrize("method", ["list", "delete"])
def test_a_bank_hindsight_fails_on_is_skipped_and_the_others_expire(
    method: str, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN three banks with a due plan each, and Hindsight failing on the second's listing (or delete)
    transport = ScriptedBanks({BANKS[1]: (method, 500)})
    # WHEN the expiry runs
    with caplog.at_level(logging.WARNING, logger="memory_adapter.admin"):
        report = _expire(transport)
    # THEN the other two banks' plans went, and the second is reported (the next run tries it again)
    assert transport.deleted == [BANKS[0], BANKS[2]]
    assert (report["expired"], report["facts_deleted"]) == ({"plan": 2}, 4)
    assert [(f["bank_id"], f["status"]) for f in report["failed"]] == [(BANKS[1], 500)]
    (line,) = [json.loads(r.getMessage()) for r in caplog.records if "expiry.bank_failed" in r.getMessage()]
    assert (line["bank"], line["status"]) == (short_hash(BANKS[1]), 500)
    assert BANKS[1] not in caplog.text


def test_an_expiry_that_failed_for_every_bank_fails() -> None:
    transport = ScriptedBanks({bank: ("list", 503) for bank in BANKS})
    with pytest.raises(BatchFailedError, match="every bank") as failure:
        _expire(transport)
    assert len(failure.value.result["failed"]) == len(BANKS)
    assert transport.deleted == []

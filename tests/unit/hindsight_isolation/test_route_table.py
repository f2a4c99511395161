"""The server extension's route table and the client wire share one spelling of Hindsight's routes."""

from __future__ import annotations

import urllib.parse

import pytest

from hindsight_isolation.route import RequestKind, classify, recall_bank, refine, retain_bank
from memory_adapter import hindsight_routes as routes
from memory_adapter.identity import format_bank_id

BANK = format_bank_id(user="alice@example.com", agent="support")


def _served(path: str) -> str:
    """The path as the server sees it: decoded (Starlette), behind a root path."""
    return "/prefix" + urllib.parse.unquote(path)


@pytest.mark.parametrize(
    ("method", "suffix", "kind"),
    [
        ("POST", routes.MEMORIES, RequestKind.RETAIN),
        ("POST", routes.RECALL, RequestKind.RECALL),
        ("POST", routes.REFLECT, RequestKind.OTHER),
        ("PATCH", routes.CONFIG, RequestKind.SETTINGS),
        ("DELETE", routes.CONFIG, RequestKind.SETTINGS),
        ("POST", routes.TRANSFER_IMPORT, RequestKind.TRANSFER),
        ("POST", routes.CLONE, RequestKind.TRANSFER),
        ("POST", routes.DOCUMENT_TRANSFER, RequestKind.TRANSFER),
        ("POST", routes.TEMPLATE_IMPORT, RequestKind.SETTINGS),
        ("PUT", "", RequestKind.SETTINGS),
        ("GET", routes.MEMORY_LIST, RequestKind.OTHER),
    ],
)
def test_each_path_the_client_builds_is_the_kind_the_server_tells(method: str, suffix: str, kind: RequestKind) -> None:
    # GIVEN a path the client wire builds for a bank whose id needs encoding
    path = _served(routes.bank_path(BANK, suffix))
    # THEN the server classifies it by the same route names
    assert classify(method, path) is kind
    assert classify(method, path + "/") is kind


def test_the_server_reads_back_the_bank_the_client_named() -> None:
    assert retain_bank(_served(routes.bank_path(BANK, routes.MEMORIES))) == BANK
    assert recall_bank(_served(routes.bank_path(BANK, routes.RECALL))) == BANK
    assert retain_bank(_served(routes.bank_path(BANK, routes.RECALL))) is None


def test_a_mission_update_the_client_sends_is_a_mission() -> None:
    path = _served(routes.bank_path(BANK, routes.CONFIG))
    body = {"updates": {"retain_mission": "Keep the user's preferences."}}
    assert refine(classify("PATCH", path), "PATCH", path, body) is RequestKind.MISSION


def test_the_fake_serves_the_routes_the_wire_sends() -> None:
    found = routes.BANK_REQUEST.match(routes.item_path(BANK, routes.DOCUMENTS, "a/b"))
    assert found is not None
    assert urllib.parse.unquote(found["bank"]) == BANK
    assert found["rest"] == routes.DOCUMENTS + "/a%2Fb"

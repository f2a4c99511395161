"""Over MCP (``/mcp/``), the same rules: tools are filtered to the caller's banks and every call is authorized."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from memory_adapter.identity import format_bank_id
from tests.integration.isolation.support import Mcp, Server

pytestmark = pytest.mark.integration

BOB_FACT = "Bob parks his car on level three."
REFUSED = "Operation validation failed: forbidden"


@dataclass
class Pair:
    alice_token: str
    bob_token: str
    alice_bank: str
    bob_bank: str


@pytest.fixture(scope="module")
def pair(iso: Server) -> Pair:
    suffix = uuid.uuid4().hex[:8]
    alice_user, bob_user = f"alice-mcp-{suffix}", f"bob-mcp-{suffix}"
    alice_token, bob_token = iso.mint(alice_user, ttl=3600), iso.mint(bob_user, ttl=3600)
    alice_bank = format_bank_id(user=alice_user, agent="support")
    bob_bank = format_bank_id(user=bob_user, agent="support")
    assert iso.api(alice_token).retain(alice_bank, "Alice takes the train.").status_code == 200
    assert iso.api(bob_token).retain(bob_bank, BOB_FACT).status_code == 200
    return Pair(alice_token, bob_token, alice_bank, bob_bank)


def test_unauthenticated_mcp_is_refused(iso: Server, pair: Pair) -> None:
    assert Mcp(iso.url, None).initialize() == 401
    assert Mcp(iso.url, "not-a-token", bank=pair.alice_bank).initialize() == 401


def test_session_on_another_users_bank_shows_no_tools(iso: Server, pair: Pair) -> None:
    # GIVEN alice connecting to the single-bank endpoint of bob's bank
    mcp = Mcp(iso.url, pair.alice_token, bank=pair.bob_bank)
    assert mcp.initialize() == 200
    # THEN she sees no tool, and calling one anyway fails
    assert mcp.tools() == set()
    assert "Unknown tool" in mcp.call("recall", query="car")


def test_session_on_own_bank_works(iso: Server, pair: Pair) -> None:
    mcp = Mcp(iso.url, pair.alice_token, bank=pair.alice_bank)
    mcp.initialize()
    assert {"recall", "retain", "reflect", "delete_bank"} <= mcp.tools()
    assert "Alice takes the train." in mcp.call("recall", query="How does Alice travel?")


def test_multi_bank_tools_refuse_another_users_bank(iso: Server, pair: Pair) -> None:
    # GIVEN a multi-bank session whose default bank is alice's own
    mcp = Mcp(iso.url, pair.alice_token, header_bank=pair.alice_bank)
    mcp.initialize()
    assert {"list_banks", "recall", "retain", "delete_bank"} <= mcp.tools()
    # WHEN she passes bob's bank to the tools
    for tool, arguments in (
        ("recall", {"query": "car"}),
        ("reflect", {"query": "Where is the car?"}),
        ("retain", {"content": "Bob's car was sold."}),
        ("list_memories", {}),
        ("list_documents", {}),
        ("get_bank", {}),
        ("update_bank", {"name": "mine now"}),
        ("clear_memories", {}),
        ("delete_bank", {}),
    ):
        # THEN each is refused, with nothing of bob's in the answer
        output = mcp.call(tool, bank_id=pair.bob_bank, **arguments)
        assert REFUSED in output, f"{tool}: {output[:300]}"
        assert "level three" not in output
    # AND bob's memory is intact
    assert BOB_FACT in _recall_over_mcp(iso, pair.bob_token, pair.bob_bank, "car")


def _recall_over_mcp(iso: Server, token: str, bank: str, query: str) -> str:
    mcp = Mcp(iso.url, token, bank=bank)
    mcp.initialize()
    return mcp.call("recall", query=query)


def test_list_banks_tool_shows_only_own_banks(iso: Server, pair: Pair) -> None:
    mcp = Mcp(iso.url, pair.alice_token, header_bank=pair.alice_bank)
    mcp.initialize()
    output = mcp.call("list_banks")
    assert pair.alice_bank in output
    assert pair.bob_bank not in output


def test_create_bank_tool_refuses_another_users_bank_id(iso: Server, pair: Pair) -> None:
    mcp = Mcp(iso.url, pair.alice_token)
    mcp.initialize()
    assert mcp.tools() == {"list_banks", "create_bank"}  # the default bank is nobody's
    planted = format_bank_id(user=pair.bob_bank.split(":")[1], agent="planted")
    assert REFUSED in mcp.call("create_bank", bank_id=planted)


def test_operator_uses_every_tool_on_any_bank(iso: Server, pair: Pair) -> None:
    mcp = Mcp(iso.url, iso.operator_key, header_bank=pair.bob_bank)
    mcp.initialize()
    assert len(mcp.tools()) >= 35
    assert "level three" in mcp.call("recall", query="car")


def test_grace_token_sees_only_retain_tools(iso: Server, pair: Pair) -> None:
    user = pair.alice_bank.split(":")[1]
    expired = iso.mint(user, ttl=-120)
    mcp = Mcp(iso.url, expired, bank=pair.alice_bank)
    assert mcp.initialize() == 200
    assert mcp.tools() == {"retain", "sync_retain"}
    assert "Alice" not in mcp.call("recall", query="train")


def test_grace_token_retains_over_mcp(iso: Server, pair: Pair) -> None:
    # The grace window is for re-delivering one's own turns, whichever transport the agent uses.
    user = pair.alice_bank.split(":")[1]
    mcp = Mcp(iso.url, iso.mint(user, ttl=-120), bank=pair.alice_bank)
    assert mcp.initialize() == 200
    output = mcp.call("sync_retain", content="Alice switched to cycling.")
    assert "forbidden" not in output.lower(), output
    assert "Alice switched to cycling." in iso.api(pair.alice_token).listed(pair.alice_bank)

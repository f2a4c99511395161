"""The request facts (``memory_adapter.agentcore.request``): headers parsed once, one rule for a repeated header."""

from __future__ import annotations

import pytest

from memory_adapter.agentcore.request import (
    REQUEST_ID_HEADER,
    SESSION_HEADER,
    DuplicateHeaderError,
    Headers,
    InvalidSessionError,
    RequestFacts,
)

SESSION = "session-0123456789-0123456789-0123456789"


def test_the_session_and_request_ids_come_from_their_headers_in_any_case() -> None:
    facts = RequestFacts.of([(SESSION_HEADER.upper(), SESSION), ("X-Amzn-Bedrock-AgentCore-Runtime-Request-Id", "r-1")])
    assert (facts.session_id, facts.request_id) == (SESSION, "r-1")
    assert facts.headers.single("x-amzn-bedrock-agentcore-runtime-session-id") == SESSION


def test_absent_ids_are_made_up() -> None:
    facts = RequestFacts.of([])
    assert facts.session_id != facts.request_id
    assert len(facts.session_id) == len(facts.request_id) == 36


@pytest.mark.parametrize("value", ["a b", "x" * 257, "caf\u00e9"])
def test_a_malformed_session_id_is_invalid(value: str) -> None:
    with pytest.raises(InvalidSessionError, match="not a valid session id"):
        RequestFacts.of([(SESSION_HEADER, value)])


def test_a_repeated_header_counts_for_nothing() -> None:
    # a session id sent twice is refused, not resolved to either value (a proxy must not choose the session)
    with pytest.raises(InvalidSessionError, match="more than once"):
        RequestFacts.of([(SESSION_HEADER, SESSION), (SESSION_HEADER, SESSION + "-2")])
    # a request id sent twice is replaced, like a malformed one
    facts = RequestFacts.of([(REQUEST_ID_HEADER, "r-1"), (REQUEST_ID_HEADER, "r-2")])
    assert facts.request_id not in {"r-1", "r-2"}
    with pytest.raises(DuplicateHeaderError, match="authorization sent 2 times"):
        Headers([("Authorization", "a"), ("authorization", "b")]).single("Authorization")

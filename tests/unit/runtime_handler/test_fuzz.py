"""Property-based fuzz over HTTP: no body and no header set makes the agent answer 5xx (or crash)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_adapter.testing import FakeHindsight
from tests.unit.issuers import LoopbackIssuer

from .fakes import jwt_agent

_json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50)
_json = st.recursive(
    _json_leaf,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
_payload = st.one_of(
    _json,
    st.fixed_dictionaries({"prompt": st.text(max_size=300)}, optional={"stream": _json}),
    st.fixed_dictionaries({"prompt": _json, "stream": st.booleans()}),
)
_body = st.one_of(
    _payload.map(lambda value: json.dumps(value).encode()),
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda text: text.encode("utf-8", "surrogatepass")),
)
# Header values must be latin-1, without CR/LF/NUL or surrounding white space, to be sendable at all.
_header_value = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"), max_size=120
).map(lambda value: value.strip(" \t"))
_header_name = st.sampled_from(
    [
        "Authorization",
        "X-Amzn-Bedrock-AgentCore-Runtime-User-Id",
        "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id",
        "X-Amzn-Bedrock-AgentCore-Runtime-Request-Id",
        "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Tenant-Id",
        "Content-Type",
        "baggage",
        "X-Anything",
    ]
)
_headers = st.lists(st.tuples(_header_name, _header_value), max_size=5)


@pytest.fixture(scope="module")
def fuzz_url(loopback_issuer: LoopbackIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with jwt_agent(loopback_issuer, FakeHindsight(), tmp_path_factory.mktemp("spool")) as url:
        yield url


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_body, headers=_headers, authenticated=st.booleans())
def test_no_input_gives_a_5xx(
    fuzz_url: str, loopback_issuer: LoopbackIssuer, body: bytes, headers: list[tuple[str, str]], authenticated: bool
) -> None:
    all_headers: list[tuple[str, Any]] = list(headers)
    if authenticated:
        all_headers = [(k, v) for k, v in all_headers if k.lower() != "authorization"]
        all_headers.append(("Authorization", f"Bearer {loopback_issuer.mint('user-fuzz')}"))
    with httpx.Client(base_url=fuzz_url, timeout=10) as client:
        response = client.post("/invocations", content=body, headers=[(k, v.encode("latin-1")) for k, v in all_headers])
    assert response.status_code < 500, response.text
    if response.status_code != 200:
        assert set(response.json()) >= {"error"}

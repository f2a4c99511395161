"""Tokens an attacker can mint or bend, sent to the agent over real HTTP: each is refused (401) or served under
exactly the identity its verified ``sub`` names; never a 5xx, a traceback, or a memory under another identity."""

from __future__ import annotations

import base64
import json
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

from memory_adapter.identity.bank_ids import parse_bank_id
from memory_adapter.testing import FakeHindsight
from tests.unit.issuers import LoopbackIssuer

from .fakes import jwt_agent


@pytest.fixture(scope="module")
def agent(loopback_issuer: LoopbackIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    fake = FakeHindsight()
    with jwt_agent(loopback_issuer, fake, tmp_path_factory.mktemp("spool")) as url:
        yield url, fake


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _part(value: Any) -> str:
    return _b64(json.dumps(value).encode("utf-8", "surrogatepass"))


def _signed(issuer: LoopbackIssuer, header: Any, claims: Any) -> str:
    """A compact JWS signed with the issuer's real key, whatever its header and claims hold (PyJWT would refuse to
    encode some of them)."""
    signing_input = f"{_part(header)}.{_part(claims)}".encode("ascii")
    signature = issuer.key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input.decode()}.{_b64(signature)}"


#: name: (header overrides, claim overrides) on a valid token of ``user-edge``; ``None`` removes the field.
_EDGES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "kid missing": ({"kid": None}, {}),
    "kid a number": ({"kid": 7}, {}),
    "kid an object": ({"kid": {"a": "key-1"}}, {}),
    "kid very long": ({"kid": "k" * 5000}, {}),
    "kid unknown": ({"kid": "not-a-key"}, {}),
    "kid with a NUL": ({"kid": "key-1\x00"}, {}),
    "alg none": ({"alg": "none"}, {}),
    "alg HS256": ({"alg": "HS256"}, {}),
    "alg a list": ({"alg": ["RS256"]}, {}),
    "crit header": ({"crit": ["exp"]}, {}),
    "sub a number": ({}, {"sub": 12345}),
    "sub a float": ({}, {"sub": 1.5}),
    "sub true": ({}, {"sub": True}),
    "sub an object": ({}, {"sub": {"sub": "user-alex"}}),
    "sub a list": ({}, {"sub": ["user-alex"]}),
    "sub null": ({}, {"sub": None}),
    "sub blank": ({}, {"sub": "   "}),
    "sub very long": ({}, {"sub": "u" * 10_000}),
    "sub with a NUL": ({}, {"sub": "user\x00alex"}),
    "sub a lone surrogate": ({}, {"sub": "user\ud800"}),
    "sub with colons": ({}, {"sub": "user-alex:agent:other"}),
    "sub with a slash": ({}, {"sub": "../user-alex"}),
    "sub unicode": ({}, {"sub": "ユーザー"}),
    "sub with a newline": ({}, {"sub": "user-alex\nuser-bob"}),
    "nested claims": ({}, {"extra": {"a": {"b": [{"c": {"d": [1, 2, {"e": None}]}}]}}}),
    "very long claim": ({}, {"pad": "x" * 6000}),
    "exp huge int": ({}, {"exp": 10**400}),
    "exp huge float": ({}, {"exp": 1e308}),
    "exp a string": ({}, {"exp": str(int(time.time()) + 300)}),
    "exp true": ({}, {"exp": True}),
    "iat far ahead": ({}, {"iat": 1e308}),
    "nbf huge int": ({}, {"nbf": 10**400}),
    "client_id a list": ({}, {"client_id": ["client-app"]}),
    "token_use an object": ({}, {"token_use": {"a": 1}}),
    "aud nested": ({}, {"token_use": "id", "aud": [["client-app"]]}),
    "iss a list": ({}, {"iss": None, "iss_list": True}),
}


def _token(issuer: LoopbackIssuer, edge: str) -> str:
    header_overrides, claim_overrides = _EDGES[edge]
    header = {"alg": "RS256", "typ": "JWT", "kid": issuer.kid, **header_overrides}
    claims = issuer.claims("user-edge")
    if claim_overrides.pop("iss_list", False):
        claim_overrides = {**claim_overrides, "iss": [claims["iss"]]}
    claims.update(claim_overrides)
    header = {k: v for k, v in header.items() if v is not None}
    claims = {k: v for k, v in claims.items() if v is not None}
    return _signed(issuer, header, claims)


def _users_since(fake: FakeHindsight, before: int) -> set[str]:
    """Whose banks the fake was asked about since request ``before``."""
    users = set()
    for request in list(fake.requests)[before:]:
        if request.path.startswith("/v1/default/banks/"):
            owner = parse_bank_id(urllib.parse.unquote(request.path.split("/")[4]))
            users.add("<not a bank of the scheme>" if owner is None else owner.user)
    return users


def _settled(url: str) -> None:
    """Wait until the agent's background retains are delivered (``/ping`` leaves HealthyBusy), so each test sees only
    its own requests: an earlier test's retain, still on its way, is that test's user, not this one's."""
    deadline = time.monotonic() + 30
    with httpx.Client(base_url=url, timeout=10) as client:
        while client.get("/ping").json()["status"] == "HealthyBusy":
            assert time.monotonic() < deadline, "retains never settled"
            time.sleep(0.01)


def _post(url: str, token: str, **kwargs: Any) -> httpx.Response:
    with httpx.Client(base_url=url, timeout=60) as client:
        return client.post("/invocations", headers={"Authorization": f"Bearer {token}"}, **kwargs)


@pytest.mark.parametrize("edge", list(_EDGES))
def test_an_odd_token_is_refused_or_served_as_its_own_user(
    agent: tuple[str, FakeHindsight], loopback_issuer: LoopbackIssuer, edge: str
) -> None:
    url, fake = agent
    _settled(url)
    before = len(fake.requests)
    response = _post(url, _token(loopback_issuer, edge), json={"prompt": "remember me"})
    assert response.status_code in (200, 401), (response.status_code, response.text[:300])
    assert "Traceback" not in response.text
    _settled(url)
    served = _EDGES[edge][1].get("sub", "user-edge") if response.status_code == 200 else None
    assert _users_since(fake, before) <= ({served} if served else set()), edge


_BODIES: dict[str, Callable[[], dict[str, Any]]] = {
    "a huge prompt": lambda: {"content": json.dumps({"prompt": "x" * 3_000_000}).encode()},
    "a prompt of NULs": lambda: {"json": {"prompt": "\x00" * 1000}},
    "a lone surrogate": lambda: {"content": b'{"prompt": "\\ud800"}'},
    "deep nesting": lambda: {"content": b'{"prompt": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"},
    "a huge integer": lambda: {"content": b'{"prompt": "x", "stream": ' + b"9" * 5000 + b"}"},
    "NaN": lambda: {"content": b'{"prompt": NaN}'},
    "chunked": lambda: {"content": iter([b'{"prompt":', b' "hi"}'])},
    "form-encoded": lambda: {"data": {"prompt": "hi"}},
    "multipart": lambda: {"files": {"prompt": ("p.txt", b"hi")}},
    "text/plain JSON": lambda: {"content": b'{"prompt": "hi"}', "headers": {"Content-Type": "text/plain"}},
}


@pytest.mark.parametrize("body", list(_BODIES))
def test_an_odd_body_from_a_verified_caller_gets_no_5xx(
    agent: tuple[str, FakeHindsight], loopback_issuer: LoopbackIssuer, body: str
) -> None:
    url, _ = agent
    kwargs = _BODIES[body]()
    headers = {"Authorization": f"Bearer {loopback_issuer.mint('user-edge')}", **kwargs.pop("headers", {})}
    with httpx.Client(base_url=url, timeout=120) as client:
        response = client.post("/invocations", headers=headers, **kwargs)
    assert response.status_code < 500, (response.status_code, response.text[:300])
    assert "Traceback" not in response.text

"""The local OIDC issuer mints tokens that the project's own verifier accepts, in-process and from the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import jwt
import pytest

from localdev.supervisor import pid_alive
from localdev.token_issuer import (
    LOCAL_CLIENT_ID,
    TENANT_CLAIM,
    TokenIssuer,
    ensure_running,
    stop_background,
    stop_when_gone,
)
from memory_adapter.identity import JwtSettings, JwtVerifier, RejectReason, TokenRejectedError

REPO_ROOT = Path(__file__).resolve().parents[2]


def _verifier(issuer_discovery_url: str, **kwargs) -> JwtVerifier:
    return JwtVerifier(JwtSettings(discovery_url=issuer_discovery_url, allowed_clients=(LOCAL_CLIENT_ID,), **kwargs))


def test_discovery_and_jwks_are_served(token_issuer):
    discovery = httpx.get(token_issuer.discovery_url, timeout=5).json()
    assert discovery["issuer"] == token_issuer.issuer
    assert discovery["jwks_uri"] == token_issuer.jwks_url
    keys = httpx.get(token_issuer.jwks_url, timeout=5).json()["keys"]
    assert [k["kid"] for k in keys] == [token_issuer.kid]
    assert {k["kty"] for k in keys} == {"RSA"}
    assert all("d" not in k for k in keys), "the JWKS must hold public keys only"


def test_minted_access_token_has_cognito_like_claims(token_issuer):
    token = token_issuer.mint("user-alex", tenant="acme", ttl=120)
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert header == {"alg": "RS256", "kid": token_issuer.kid, "typ": "JWT"}
    assert claims["iss"] == token_issuer.issuer
    assert claims["sub"] == "user-alex"
    assert claims["client_id"] == LOCAL_CLIENT_ID
    assert claims["token_use"] == "access"
    assert claims[TENANT_CLAIM] == "acme"
    assert claims["exp"] - claims["iat"] == 120


def test_project_verifier_accepts_a_minted_token(token_issuer):
    identity = _verifier(token_issuer.discovery_url, tenant_claim=TENANT_CLAIM).verify(
        token_issuer.mint("user-alex", tenant="acme")
    )
    assert (identity.user, identity.tenant) == ("user-alex", "acme")


@pytest.mark.parametrize(
    ("mint_kwargs", "reason"),
    [
        ({"ttl": -60}, RejectReason.EXPIRED),
        ({"client_id": "someone-else"}, RejectReason.CLIENT),
        ({"kid": "not-a-published-kid"}, RejectReason.UNKNOWN_KEY),
    ],
)
def test_bad_tokens_are_rejected_for_the_right_reason(token_issuer, mint_kwargs, reason):
    with pytest.raises(TokenRejectedError) as caught:
        _verifier(token_issuer.discovery_url).verify(token_issuer.mint("user-alex", **mint_kwargs))
    assert caught.value.reason is reason


def test_id_tokens_carry_the_client_as_audience(token_issuer):
    claims = jwt.decode(token_issuer.mint("user-alex", token_use="id"), options={"verify_signature": False})
    assert claims["aud"] == LOCAL_CLIENT_ID
    assert "client_id" not in claims


def test_extra_claims_override_and_none_removes(token_issuer):
    token = token_issuer.mint("user-alex", extra_claims={"sub": "user-bob", "client_id": None, "groups": ["a"]})
    claims = jwt.decode(token, options={"verify_signature": False})
    assert (claims["sub"], claims["groups"], "client_id" in claims) == ("user-bob", ["a"], False)


def test_rotated_keys_keep_old_tokens_valid():
    with TokenIssuer() as issuer:
        old = issuer.mint("user-alex")
        issuer.rotate_key()
        new = issuer.mint("user-alex")
        verifier = _verifier(issuer.discovery_url)
        assert verifier.verify(old).user == verifier.verify(new).user == "user-alex"


def _cli(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "localdev.token_issuer", *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        check=False,
    )


def test_cli_mints_tokens_the_background_issuer_accepts(tmp_path):
    # GIVEN the issuer running in the background from a data dir, on a free port
    started = _cli("start", "--port", "0", data_dir=tmp_path)
    assert started.returncode == 0, started.stderr
    try:
        state = json.loads((tmp_path / "issuer.json").read_text())

        # WHEN a separate CLI process mints a token
        minted = _cli("mint", "--user", "user-alex", "--tenant", "acme", data_dir=tmp_path)
        assert minted.returncode == 0, minted.stderr

        # THEN the running issuer's keys verify it (the key persisted in the data dir, mode 0600)
        identity = _verifier(f"{state['issuer']}/.well-known/openid-configuration", tenant_claim=TENANT_CLAIM).verify(
            minted.stdout.strip()
        )
        assert (identity.user, identity.tenant) == ("user-alex", "acme")
        assert (tmp_path / "signing-key.pem").stat().st_mode & 0o077 == 0

        # AND start is idempotent
        again = _cli("start", "--port", "0", data_dir=tmp_path)
        assert "already running" in again.stdout
    finally:
        stopped = _cli("stop", data_dir=tmp_path)
    assert stopped.returncode == 0
    deadline = time.monotonic() + 10
    while _cli("status", data_dir=tmp_path).returncode == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _cli("status", data_dir=tmp_path).returncode == 3


def test_background_issuer_is_stopped_once_its_owner_dies(tmp_path):
    # GIVEN the background issuer, watched on behalf of a short-lived owner
    issuer_url = ensure_running(tmp_path, port=0)
    pid = json.loads((tmp_path / "issuer.json").read_text())["pid"]
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stop_when_gone(tmp_path, owner_pid=owner.pid)
        assert httpx.get(f"{issuer_url}/.well-known/jwks.json", timeout=5).status_code == 200

        # WHEN the owner dies without stopping it
        owner.kill()
        owner.wait()

        # THEN the watchdog stops the issuer
        deadline = time.monotonic() + 30
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pid_alive(pid), (tmp_path / "watchdog.log").read_text()
    finally:
        stop_background(tmp_path)

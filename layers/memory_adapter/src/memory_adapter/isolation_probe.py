"""Isolation probe: prove a Hindsight server we do not run keeps one identity out of another's bank.

With ``hindsight.mode=external`` the per-user boundary is only as good as that server: the agent's bank naming is no
security boundary (docs/isolation.md). The probe asks the server itself, with the credentials the deployment holds,
whether a foreign identity can read a bank it does not own:

1. the **operator key** lists banks (the server is reachable, the key is the server's) and writes a *canary* bank
   owned by a probe user of another agent, holding a random marker in its retain mission (no memory, so no LLM
   call and nothing the expiry or an export would meet); then, for each identity that must not reach it,
2. **no credential**, a **forged token** (unsigned ``alg=none``, and HS256 signed with a key of our own; a server
   that verifies signatures against its issuer's keys refuses both), and, when given, the **agent key** (IAM mode:
   it reaches its own agent's banks, never another agent's), and a **user token** (``make smoke``: a real token of
   another user) each read the canary's configuration and the bank list: a 200 holding the canary, or a bank list
   naming it, is a leak;
3. the canary is deleted with the operator key, whatever happened.

What it cannot show: with the agent key, one user's bank from another's of the *same* agent (the agent key reaches
them all by design, docs/isolation.md "The agent credential"); the user-id header AgentCore adds in IAM mode is not
seen by Hindsight at all. It speaks Hindsight through the package's one wire (``HindsightApi`` over ``HttpTransport``,
trusting ``HINDSIGHT_CA_BUNDLE``), standard library only, so the deploy-time function (on the memory adapter layer)
and ``python -m smoke`` share it.

Example:
    >>> report = run_probe(ProbeTarget(url, operator_key=op, agent_key=ak, agent_name="assistant"))
    >>> report.passed, report.leaks
    (True, [])
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.exceptions import HindsightAgentCoreError, HindsightRequestError, HindsightUnavailableError
from memory_adapter.identity.bank_ids import format_bank_id
from memory_adapter.transport import HttpTransport, Transport

__all__ = ["ProbeError", "ProbeReport", "ProbeTarget", "run_probe"]

#: The probe's own identities: never a real user's or agent's (a real agent name is lowercase letters and digits).
PROBE_USER = "isolation-probe-owner"
PROBE_AGENT = "isolation-probe-agent"
PROBE_OTHER_USER = "isolation-probe-reader"
#: Seconds per request; the probe makes about a dozen.
TIMEOUT_S = 10.0


class ProbeError(HindsightAgentCoreError):
    """The probe could not run (server unreachable, operator key refused): nothing was proven either way."""


@dataclass(frozen=True)
class ProbeTarget:
    """The server and the credentials the deployment holds.

    Args:
        url: Hindsight's base URL.
        operator_key: The operator credential (writes and deletes the canary).
        agent_key: The IAM-mode agent key, or None.
        agent_name: The agent the agent key belongs to (the canary is another agent's bank).
        tenant: The tenant in this deployment's bank ids (None: single-tenant ids).
        user_token: A real user's token (``make smoke``), or None; the canary then belongs to another user of
            ``agent_name``, which that token must not read.
    """

    url: str
    operator_key: str
    agent_key: str | None = None
    agent_name: str = PROBE_AGENT
    tenant: str | None = None
    user_token: str | None = None


@dataclass
class ProbeReport:
    """What each identity could do with the canary; ``leaks`` names every identity that read it."""

    canary_bank: str
    checks: dict[str, str] = field(default_factory=dict)
    leaks: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when no identity read the canary."""
        return not self.leaks

    def summary(self) -> str:
        """One line: passed, or which identities read another's bank."""
        if self.passed:
            return f"isolation probe passed: {len(self.checks)} foreign identities were refused {self.canary_bank}"
        return (
            f"isolation probe FAILED: {', '.join(self.leaks)} read the probe's bank {self.canary_bank}: the server "
            "does not run the hindsight_isolation extension (or runs it misconfigured); see docs/deploying.md "
            "'Bring your own Hindsight'"
        )


def run_probe(target: ProbeTarget, *, transport: Transport | None = None) -> ProbeReport:
    """Write the canary, try it with every foreign identity, delete it (see the module docstring).

    ``transport``: how to reach the server (default: :class:`~memory_adapter.transport.HttpTransport` to
    ``target.url``, trusting ``HINDSIGHT_CA_BUNDLE``).

    Raises:
        ProbeError: The server cannot be reached or refuses the operator key.
    """
    api = HindsightApi(transport or HttpTransport(target.url), timeout=TIMEOUT_S)
    marker = f"isolation-probe-{secrets.token_hex(8)}"
    if target.user_token is not None:  # a real user's token: the canary is another user's bank of the same agent
        bank = format_bank_id(user=PROBE_OTHER_USER, agent=target.agent_name, tenant=target.tenant)
    else:  # deploy time: another agent's bank, which the agent key must not reach either
        bank = format_bank_id(user=PROBE_USER, agent=PROBE_AGENT, tenant=target.tenant)
    report = ProbeReport(canary_bank=bank)
    with _reaching(target.url):
        try:
            api.bank_ids(bearer=target.operator_key)
        except HindsightRequestError as exc:
            raise ProbeError(
                f"the operator key got {exc.status} listing banks at {target.url}: give the ARN of the secret holding "
                "the server's HINDSIGHT_API_TENANT_OPERATOR_KEY"
            ) from exc
        try:
            api.create_bank(bank, {"retain_mission": marker}, bearer=target.operator_key)
        except HindsightRequestError as exc:
            raise ProbeError(
                f"the operator key could not create the probe's bank ({exc.status}) at {target.url}"
            ) from exc
        try:
            identities: dict[str, str | None] = {
                "no credential": None,
                "an unsigned token (alg=none)": _forged_token("none", bank),
                "a token signed with a key of our own (HS256)": _forged_token("HS256", bank),
            }
            if target.agent_key is not None:
                identities["the agent key"] = target.agent_key
            if target.user_token is not None:
                identities["another user's token"] = target.user_token
            for name, bearer in identities.items():
                report.checks[name] = _try_read(api, bank, bearer, marker)
                if report.checks[name] != "refused":
                    report.leaks.append(name)
        finally:
            api.delete_bank(bank, bearer=target.operator_key)
    return report


def _try_read(api: HindsightApi, bank: str, bearer: str | None, marker: str) -> str:
    """``refused``, or what the identity could see of the canary (its configuration, or its name in a list).

    Any refusal or failure is no read (unless its detail tells the marker); a server gone for good fails the
    canary's deletion after the reads, which the caller reports as a :class:`ProbeError`."""
    try:
        if api.bank_config_overrides(bank, bearer=bearer) is not None:
            return "read the bank's configuration (200)"
    except (HindsightRequestError, HindsightUnavailableError) as exc:
        if marker in str(exc):
            return f"read the bank's configuration (in its refusal: {str(exc)[:60]})"
    try:
        if bank in api.bank_ids(bearer=bearer):
            return "saw the bank in its bank list"
    except (HindsightRequestError, HindsightUnavailableError):
        pass
    return "refused"


@contextlib.contextmanager
def _reaching(url: str) -> Iterator[None]:
    """Turn "no answer" into the probe's error, with what to check."""
    try:
        yield
    except HindsightUnavailableError as exc:
        raise ProbeError(
            f"cannot reach Hindsight at {url} ({exc}): the endpoint must be reachable from the isolated subnets "
            "(peering, PrivateLink or an egress path, and hindsight.external_egress_cidrs)"
        ) from exc


def _forged_token(alg: str, bank: str) -> str:
    """A token claiming to be the canary's owner, which no honest issuer signed."""

    def part(value: Mapping[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    now = int(time.time())
    claims = {"sub": PROBE_USER, "iss": "https://isolation-probe.invalid", "iat": now, "exp": now + 300, "bank": bank}
    head = f"{part({'alg': alg, 'typ': 'JWT'})}.{part(claims)}"
    if alg == "none":
        return head + "."
    signature = hmac.new(secrets.token_bytes(32), head.encode(), hashlib.sha256).digest()
    return head + "." + base64.urlsafe_b64encode(signature).decode().rstrip("=")

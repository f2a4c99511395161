"""Hindsight's tenant slot: authenticate every request and record the caller's principal on its context.

Loaded by Hindsight with ``HINDSIGHT_API_TENANT_EXTENSION=hindsight_isolation.tenant:IsolationTenantExtension``; its
settings are the ``HINDSIGHT_API_TENANT_*`` variables (see ``hindsight_isolation/README.md``). Runs inside the
Hindsight server's virtualenv. This slot never sees a bank id: authorization is the validator's job
(:mod:`hindsight_isolation.validator`), which reads the principal this class writes to ``RequestContext.tenant_id``.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from hindsight_api.config import (
    ENV_ENABLE_DOCUMENT_IMPORT_API,
    ENV_MCP_AUTH_TOKEN,
    ENV_METRICS_INCLUDE_BANK_ID,
    get_config,
)
from hindsight_api.extensions.tenant import AuthenticationError, Tenant, TenantContext, TenantExtension

from hindsight_isolation import admission, events, guard, missions, usage
from hindsight_isolation.audit import log_unauthenticated, logger
from hindsight_isolation.authn import Authenticator, UnauthenticatedError
from hindsight_isolation.principal import Principal
from hindsight_isolation.settings import (
    ENV_HTTP_EXTENSION,
    ENV_OPERATION_VALIDATOR_EXTENSION,
    HTTP_EXTENSION_CLASS,
    OPERATION_VALIDATOR_CLASS,
    IsolationSettings,
)

if TYPE_CHECKING:
    from hindsight_api.models import RequestContext

__all__ = ["IsolationTenantExtension"]

#: What a refused caller is told: nothing that helps guess a valid credential.
_UNAUTHORIZED = "unauthorized"
#: Set on a refused request's context. Hindsight asks twice per REST request (alias resolution on the route class,
#: then the endpoint, sharing one context) and remembers only successes, so a refusal would otherwise be checked
#: and logged twice.
_REFUSED_CREDENTIAL = "_hindsight_isolation_refused"
_NOTHING_REFUSED = object()


def _startup_problems() -> list[str]:
    """Server settings that would undo the isolation this extension provides."""
    problems = []
    if os.environ.get(ENV_OPERATION_VALIDATOR_EXTENSION, "").strip() != OPERATION_VALIDATOR_CLASS:
        problems.append(
            f"{ENV_OPERATION_VALIDATOR_EXTENSION} must be {OPERATION_VALIDATOR_CLASS}: without it every "
            "authenticated caller could reach every bank"
        )
    if os.environ.get(ENV_HTTP_EXTENSION, "").strip() != HTTP_EXTENSION_CLASS:
        problems.append(
            f"{ENV_HTTP_EXTENSION} must be {HTTP_EXTENSION_CLASS}: without the request guard, malformed input answers "
            "500 and restores, clones and imports cannot be told from plain bank creations"
        )
    if os.environ.get(ENV_MCP_AUTH_TOKEN, "").strip():
        problems.append(f"{ENV_MCP_AUTH_TOKEN} must be unset: it makes MCP skip tenant authentication")
    if os.environ.get(ENV_METRICS_INCLUDE_BANK_ID, "").strip().lower() in ("1", "true", "yes", "on"):
        problems.append(
            f"{ENV_METRICS_INCLUDE_BANK_ID} must be off: /metrics is unauthenticated and bank ids name users"
        )
    return problems


def _events_sink(settings: IsolationSettings) -> events.EventSink | None:
    """The configured memory-events sink (``None``: events off)."""
    if settings.events_file is not None:
        return events.FileSink(Path(settings.events_file))
    if settings.events_queue_url is not None:
        return events.QueueSink(settings.events_queue_url)
    return None


#: Threads that verify tokens (a cache miss: a signature check, at worst a key fetch), apart from the default executor.
_AUTH_THREADS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hindsight-isolation-auth")


class IsolationTenantExtension(TenantExtension):  # type: ignore[misc]  # hindsight_api is untyped here
    """Authenticates operator key, agent key or user JWT; one database schema for everyone."""

    def __init__(self, config: dict[str, str]) -> None:
        super().__init__(config)
        problems = _startup_problems()
        if problems:
            raise ValueError("hindsight_isolation: refusing to start: " + "; ".join(problems))
        self.settings = IsolationSettings.from_config(config)
        self.authenticator = Authenticator(self.settings)
        self._schema = self.settings.schema or get_config().database_schema
        events.configure(_events_sink(self.settings), include_text=self.settings.events_include_text)
        usage.configure(
            usage.FadingConfig(
                self.settings.fading, self.settings.fading_clock, clock_header=self.settings.fading_clock_header
            )
        )
        missions.configure(self.settings.missions)
        admission.configure(self.settings.admission, identify=self._identify)
        guard.configure(max_body_bytes=self.settings.max_body_mib * 2**20, authenticate=self.principal_for)

    async def on_startup(self) -> None:
        """Warm the issuer's keys; an unreachable issuer is logged loudly but does not stop the server."""
        if os.environ.get(ENV_ENABLE_DOCUMENT_IMPORT_API, "true").strip().lower() not in ("false", "0", "no", "off"):
            logger.warning(
                "hindsight_isolation: %s is on. Bank restore, clone and document import are refused to everyone but "
                "the operator; an operator's restore writes the archive's rows (banks, webhooks, directives, audit "
                "entries) as they are, whatever bank they name, or none: restore only archives this deployment "
                "exported. Set it to false again after the maintenance window.",
                ENV_ENABLE_DOCUMENT_IMPORT_API,
            )
        verifier = self.authenticator.verifier
        try:
            if verifier is not None:
                await asyncio.to_thread(verifier.prefetch)
        except Exception as exc:  # any failure here is only reported: verification fails closed
            logger.error(
                "hindsight_isolation: could not fetch the token issuer's keys at start-up (%s); user tokens are "
                "refused until the keys are reachable",
                exc,
            )
        logger.info(
            "hindsight_isolation: tenant extension ready (user tokens %s, operator key %s, agent key %s, "
            "expiry grace %.0f s)",
            "verified" if verifier is not None else "refused: no issuer configured",
            "set" if self.settings.operator_key else "unset",
            f"for agent {self.settings.agent_name!r}" if self.settings.agent_key else "unset",
            self.settings.expiry_grace_s,
        )

    async def principal_for(self, credential: str | None) -> Principal:
        """The principal for a bearer credential; raise :class:`UnauthenticatedError`."""
        known = self.authenticator.cached(credential)
        if known is not None:
            return known
        # Signature checks are fast, but a cache miss may fetch keys: keep that off the event loop, on threads of
        # its own (Hindsight's embeddings fill the default executor under load; a shed must not wait behind them).
        return await asyncio.get_running_loop().run_in_executor(
            _AUTH_THREADS, self.authenticator.authenticate, credential
        )

    async def _identify(self, credential: str | None) -> Principal | None:
        """The principal, or ``None`` (admission control gates authenticated recalls only; the refusal itself is
        left to :meth:`authenticate`, which logs it)."""
        try:
            return await self.principal_for(credential)
        except UnauthenticatedError:
            return None

    async def authenticate(self, context: RequestContext) -> TenantContext:
        """Identify the caller and record the principal on ``context.tenant_id``; 401 otherwise."""
        return await self._authenticate(context, transport="http")

    async def authenticate_mcp(self, context: RequestContext) -> TenantContext:
        """Same as :meth:`authenticate` (MCP must never be weaker than REST)."""
        return await self._authenticate(context, transport="mcp")

    async def _authenticate(self, context: RequestContext, *, transport: str) -> TenantContext:
        if getattr(context, _REFUSED_CREDENTIAL, _NOTHING_REFUSED) == context.api_key:
            context.tenant_id = None  # this request's credential was refused (and logged) already
            raise AuthenticationError(_UNAUTHORIZED)
        try:
            principal = await self.principal_for(context.api_key)
        except UnauthenticatedError as exc:
            context.tenant_id = None
            setattr(context, _REFUSED_CREDENTIAL, context.api_key)
            log_unauthenticated(exc.reason, transport=transport)
            raise AuthenticationError(_UNAUTHORIZED) from None
        context.tenant_id = principal.encode()
        return TenantContext(schema_name=self._schema)

    async def list_tenants(self) -> list[Tenant]:
        """One schema; background sweeps run as server housekeeping (no principal)."""
        return [Tenant(schema=self._schema)]

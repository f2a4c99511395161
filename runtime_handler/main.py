"""The AgentCore Runtime app: wiring and error -> status mapping only (the story of a turn is in ``turn.py``).

``POST /invocations`` answers ``{"output", "session_id", "memory": {"recalled", "degraded"}}``, or server-sent events
when the payload has ``"stream": true``. Failures answer small JSON bodies ``{"error", "code"}``: 400 for a bad
payload, 401 for any identity failure (the reason is logged, never sent), 502 when the model fails. ``GET /ping``
reports ``HealthyBusy`` while a turn's retain is still on its way to Hindsight (an AgentCore async task), so the
session is not reclaimed before its memory is safe: delivered, or durably spooled (deployed: queued in SQS).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp
from starlette.middleware import Middleware
from starlette.responses import JSONResponse

from memory_adapter.agentcore.app import BodyGuard, error_response, unauthorized_response
from memory_adapter.agentcore.busy import RetainWatcher
from memory_adapter.agentcore.credentials import AgentKey, KeyUnavailableError
from memory_adapter.agentcore.identity import RequestAuthenticator, TokenVerifier, default_verifier
from memory_adapter.agentcore.memory import RECALL_BACKSTOP_MARGIN_S
from memory_adapter.agentcore.request import (
    REQUEST_ID_HEADER,
    SESSION_HEADER,
    InvalidSessionError,
    raw_headers,
    request_meta,
)
from memory_adapter.identity.caller import Caller
from memory_adapter.identity.errors import RejectReason
from runtime_handler.errors import AuthError, ModelError, PayloadError
from runtime_handler.model import BedrockModel, EchoModel, Model
from runtime_handler.observability import Observability
from runtime_handler.settings import IdentitySource, ModelProvider, Settings
from runtime_handler.turn import Memory, TurnDeps, TurnMeta, TurnRequest, parse_turn, run_turn, stream_turn
from runtime_handler.working_memory import WorkingMemory

if TYPE_CHECKING:
    from memory_adapter.delivery import RetainHandle
    from memory_adapter.tools.memory_tools import ToolRunner

__all__ = ["REQUEST_ID_HEADER", "SESSION_HEADER", "Agent", "BodyGuard", "create_app"]
#: How long the memory gateway's URL read from SSM is reused.
GATEWAY_URL_MAX_AGE_S = 300


@dataclass(frozen=True, slots=True)
class _Invocation:
    caller: Caller | None  # None: anonymous (no memory)
    request: TurnRequest
    meta: TurnMeta


class Agent:
    """Everything one invocation needs, built once per process (one AgentCore session = one process)."""

    def __init__(
        self,
        settings: Settings,
        *,
        memory: Memory | None,
        model: Model,
        verifier: TokenVerifier | None,
        agent_key: AgentKey,
        observability: Observability,
        tools: ToolRunner | None = None,
    ) -> None:
        self.settings = settings
        self.memory = memory
        self.model = model
        self.tools = tools
        self.authenticator = RequestAuthenticator(settings, verifier)
        self.agent_key = agent_key
        self.obs = observability
        self.retains = RetainWatcher(wait_s=settings.retain_wait_s, logger=observability.logger)
        self.working = WorkingMemory(settings.working_memory)

    # -- the entrypoint -----------------------------------------------------------------------------------------

    async def invoke(self, payload: Any, context: Any) -> Any:
        """Handle one ``/invocations`` call; never raises (every failure becomes a deliberate answer)."""
        started = time.perf_counter()
        streaming = False
        try:
            invocation = await self._admit(payload, context)
            caller, deps = await self._deps(invocation.caller)
            invocation = replace(invocation, caller=caller)
            self.obs.count("Invocations")
            if invocation.request.stream:
                streaming = True
                return self._stream(invocation, deps, started)
            result = await run_turn(invocation.request, invocation.caller, invocation.meta, deps)
            if result.retain is not None:
                self._watch_retain(result.retain)
            self._record(result.recalled, result.degraded, started)
            return JSONResponse(result.body())
        except AuthError as exc:
            return self._refuse(exc)
        except PayloadError as exc:
            self.obs.logger.info("bad payload", extra={"code": exc.code, "detail": exc.message[:200]})
            self.obs.count("BadRequests")
            return error_response(400, exc.message, exc.code)
        except ModelError as exc:
            self.obs.logger.error("model call failed", extra={"detail": str(exc)})
            self.obs.count("ModelErrors")
            return error_response(502, "the model is unavailable", "model_unavailable")
        except Exception:
            self.obs.logger.exception("unexpected failure in the invocation")
            self.obs.count("InternalErrors")
            return error_response(500, "internal error", "internal")
        finally:
            if not streaming:
                self.obs.flush()

    def _refuse(self, exc: AuthError) -> JSONResponse:
        """The uniform 401 for an identity failure; the reason is logged and counted, never sent."""
        self.obs.logger.warning("identity rejected", extra={"reason": exc.reason, "detail": exc.detail[:200]})
        self.obs.count("AuthFailures")
        if exc.reason == RejectReason.KEYS_UNAVAILABLE.value:
            self.obs.logger.error("issuer keys unavailable: every JWT caller is refused until they are reachable")
            self.obs.count("JwksUnavailable")
        return unauthorized_response(bearer=self.settings.auth_mode is IdentitySource.JWT)

    async def gate(self, headers: list[tuple[str, str]]) -> JSONResponse | None:
        """Identity before the body is even read (:class:`BodyGuard`'s gate): the 401 for a caller who fails it,
        so an unauthenticated request learns nothing, not even that its body is too large; ``None`` to go on
        (:meth:`invoke` verifies again, with the request context the SDK builds)."""
        try:
            await asyncio.to_thread(self.authenticator.authenticate, headers)
        except AuthError as exc:
            try:
                return self._refuse(exc)
            finally:
                self.obs.flush()
        return None

    async def _admit(self, payload: Any, context: Any) -> _Invocation:
        """Identity first (nothing about the payload is revealed to an unauthenticated caller), then the payload."""
        raw = raw_headers(context)
        if raw is None:
            raise AuthError("no_request", "the SDK could not build the request context")
        meta = self._meta(raw)
        self.obs.begin(session_id=meta.session_id, request_id=meta.request_id)
        caller = await asyncio.to_thread(self.authenticator.authenticate, raw)
        if caller is None:
            self.obs.identify(user=None, tenant=None, source="anonymous")
        else:
            self.obs.identify(user=caller.user, tenant=caller.tenant, source=self.settings.auth_mode.value)
        turn = parse_turn(payload, max_prompt_chars=self.settings.max_prompt_chars)
        return _Invocation(caller=caller, request=turn, meta=meta)

    @staticmethod
    def _meta(headers: list[tuple[str, str]]) -> TurnMeta:
        try:
            meta = request_meta(headers)
        except InvalidSessionError as exc:
            raise PayloadError(str(exc)) from None
        return TurnMeta(session_id=meta.session_id, request_id=meta.request_id)

    async def _deps(self, caller: Caller | None) -> tuple[Caller | None, TurnDeps]:
        memory, unavailable = self.memory, False
        if caller is not None and self.settings.auth_mode is IdentitySource.IAM and memory is not None:
            try:
                key = await asyncio.to_thread(self.agent_key.get)
            except KeyUnavailableError as exc:
                self.obs.logger.error("Hindsight key unavailable; answering without memory", extra={"detail": str(exc)})
                self.obs.count("MemoryKeyUnavailable")
                memory, unavailable = None, True
            else:
                caller = caller.with_agent_key(key)
        return caller, TurnDeps(
            memory=memory,
            model=self.model,
            recall_timeout_s=self.settings.recall_timeout_s + RECALL_BACKSTOP_MARGIN_S,
            memory_unavailable=unavailable,
            working=self.working,
            tools=self.tools if memory is not None else None,
        )

    async def _stream(self, invocation: _Invocation, deps: TurnDeps, started: float) -> AsyncIterator[dict[str, Any]]:
        try:
            async for event in stream_turn(
                invocation.request, invocation.caller, invocation.meta, deps, on_retain=self._watch_retain
            ):
                if event.get("type") == "done":
                    memory = event["memory"]
                    self._record(memory["recalled"], memory["degraded"], started)
                yield event
        except ModelError as exc:
            self.obs.logger.error("model call failed mid-stream", extra={"detail": str(exc)})
            self.obs.count("ModelErrors")
            yield {"type": "error", "error": "the model is unavailable", "code": "model_unavailable"}
        except Exception:
            self.obs.logger.exception("unexpected failure mid-stream")
            self.obs.count("InternalErrors")
            yield {"type": "error", "error": "internal error", "code": "internal"}
        finally:
            self.obs.flush()

    def _record(self, recalled: int, degraded: bool, started: float) -> None:
        self.obs.count("MemoriesRecalled", recalled)
        if degraded:
            self.obs.count("MemoryDegraded")
        self.obs.millis("TurnLatency", (time.perf_counter() - started) * 1000)
        self.obs.logger.info("turn answered", extra={"recalled": recalled, "degraded": degraded})

    # -- the retain as an AgentCore async task -------------------------------------------------------------------

    def _watch_retain(self, handle: RetainHandle) -> None:
        """Keep /ping at HealthyBusy until the turn is safe: delivered, or durably spooled (deployed: queued in SQS)."""
        self.retains.watch(handle)

    async def aclose(self) -> None:
        """Deliver or spool pending retains and release connections (called at shutdown; bounded by the adapter)."""
        if self.memory is not None:
            await self.memory.aclose()


def _default_memory(settings: Settings, observability: Observability) -> Memory:
    """The memory adapter with the settings read at start-up; memories come back as its sanitised bullets, which
    :mod:`runtime_handler.model` wraps as inert data."""
    from memory_adapter.adapter import HindsightRuntimeAdapter
    from memory_adapter.formatting import format_memories_as_bullets

    return HindsightRuntimeAdapter(
        settings.agent_name,
        settings=settings.memory,
        formatter=format_memories_as_bullets,
        metrics=observability.metrics,
    )


def _default_model(settings: Settings) -> Model:
    if settings.model_provider is ModelProvider.ECHO:
        return EchoModel()
    assert settings.model_id is not None
    return BedrockModel(settings.model_id, max_tokens=settings.model_max_tokens, max_tool_rounds=settings.tool_rounds)


def _default_tools(settings: Settings) -> ToolRunner | None:
    """The memory tools over their own connections to Hindsight, or through the memory gateway with the caller's
    token (``MEMORY_TOOLS_GATEWAY_URL[_PARAMETER]``); ``MEMORY_TOOLS=false``: none."""
    if not settings.memory_tools:
        return None
    if settings.tools_via_gateway:
        return _gateway_tools(settings)
    from memory_adapter.tools.memory_tools import MemoryTools

    return MemoryTools.for_settings(settings.memory)


def _gateway_tools(settings: Settings) -> ToolRunner:
    from memory_adapter.tools.gateway_client import GatewayTools

    if settings.gateway_url is not None:
        return GatewayTools(settings.gateway_url, target=settings.gateway_target)
    name = settings.gateway_url_parameter
    assert name is not None

    def read_url() -> str:  # the stack's parameter, through the VPC's SSM endpoint; cached by Powertools
        from aws_lambda_powertools.utilities import parameters

        return str(parameters.get_parameter(name, max_age=GATEWAY_URL_MAX_AGE_S))

    return GatewayTools(read_url, target=settings.gateway_target)


def _default_verifier(settings: Settings) -> TokenVerifier | None:
    return default_verifier(settings)


def create_app(
    settings: Settings,
    *,
    memory: Memory | None = None,
    model: Model | None = None,
    verifier: TokenVerifier | None = None,
    agent_key: AgentKey | None = None,
    observability: Observability | None = None,
    tools: ToolRunner | None = None,
) -> BedrockAgentCoreApp:
    """Build the app. Every collaborator can be injected (tests); defaults come from ``settings``."""
    observability = observability or Observability()
    agent = Agent(
        settings,
        memory=memory if memory is not None else _default_memory(settings, observability),
        model=model if model is not None else _default_model(settings),
        verifier=verifier if verifier is not None else _default_verifier(settings),
        agent_key=agent_key
        or AgentKey(static_key=settings.hindsight_api_key, secret_arn=settings.hindsight_api_key_secret_arn),
        observability=observability,
        tools=tools if tools is not None else _default_tools(settings),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: BedrockAgentCoreApp) -> AsyncIterator[None]:
        yield
        # The adapter's clients live on the SDK's worker loop (where the handler runs): close them there.
        loop = getattr(app, "_worker_loop", None)
        if loop is not None and loop.is_running():
            future = asyncio.run_coroutine_threadsafe(agent.aclose(), loop)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.wrap_future(future), timeout=10)

    app = BedrockAgentCoreApp(
        lifespan=lifespan, middleware=[Middleware(BodyGuard, max_bytes=settings.max_body_bytes, gate=agent.gate)]
    )
    agent.retains.attach(app, spool=getattr(agent.memory, "spool", None))

    async def invoke(payload: Any, context: Any) -> Any:  # the SDK passes context only to a parameter so named
        return await agent.invoke(payload, context)

    app.entrypoint(invoke)
    app.state.agent = agent
    return app


def app_from_env(env: Mapping[str, str] | None = None) -> BedrockAgentCoreApp:
    """The app configured from the process environment (raises SettingsError listing every problem)."""
    return create_app(Settings.from_env(os.environ if env is None else env))

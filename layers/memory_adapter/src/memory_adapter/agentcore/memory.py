"""``AgentCoreMemory``: the memory wiring of an AgentCore Runtime agent, for the reference agent's pieces and yours.

One object per process (one AgentCore session = one microVM = one process) that turns an invocation into a verified
:class:`MemoryTurn` (the caller from a verified JWT or, on IAM runtimes, the runtime user-id header: never from the
payload or the model; the credential Hindsight is shown: the caller's token, or the deployment's agent key), recalls
for it under a deadline, and retains after it in the background while ``/ping`` answers ``HealthyBusy``. Framework
integrations (:mod:`memory_adapter.integrations.strands`, :mod:`memory_adapter.integrations.langgraph`) take a
``MemoryTurn`` from here; they never build one.

Example:
    >>> memory = AgentCoreMemory.from_env()      # AGENT_NAME, HINDSIGHT_API_URL, AUTH_MODE, JWT_* ...
    >>> app = memory.create_app()                # a BedrockAgentCoreApp with the body guard and /ping busy
    >>> @memory.entrypoint                       # identity first: 401 before the payload is looked at
    ... async def invoke(payload, turn):         # turn: MemoryTurn, or None for an allowed anonymous caller
    ...     memories = await memory.recall(turn, payload["prompt"])
    ...     answer = await my_model(payload["prompt"], memories.text)
    ...     memory.retain(turn, query=payload["prompt"], result=answer)
    ...     return {"output": answer}
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from memory_adapter.agentcore.busy import AsyncTaskTracker, RetainWatcher
from memory_adapter.agentcore.credentials import AgentKey, KeyUnavailableError
from memory_adapter.agentcore.errors import AuthError
from memory_adapter.agentcore.identity import RequestAuthenticator, TokenVerifier, default_verifier
from memory_adapter.agentcore.request import InvalidSessionError, raw_headers, request_meta
from memory_adapter.agentcore.settings import AgentMemorySettings, IdentitySource
from memory_adapter.identity.caller import Caller
from memory_adapter.identity.errors import RejectReason

if TYPE_CHECKING:
    from bedrock_agentcore.runtime import BedrockAgentCoreApp

    from memory_adapter.adapter import Recollection
    from memory_adapter.delivery import RetainHandle
    from memory_adapter.observability import MetricsSink
    from memory_adapter.tools.memory_tools import MemoryTools

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "MEMORY_TURN_KEY",
    "RECALL_BACKSTOP_MARGIN_S",
    "AgentCoreMemory",
    "MemoryTurn",
    "TurnMemory",
]

logger = logging.getLogger("memory_adapter.agentcore")

#: Where a framework integration finds the turn: the key of Strands' ``invocation_state`` and of a LangGraph run's
#: context mapping (or the attribute of a context object). Server-side state: a model cannot set it.
MEMORY_TURN_KEY = "memory_turn"
#: The turn's own recall deadline exceeds the adapter's by this much, so the adapter (which also feeds its circuit
#: breaker) is normally the one that gives up; this is only the backstop for any memory implementation.
RECALL_BACKSTOP_MARGIN_S = 0.5
#: Largest ``/invocations`` body :meth:`AgentCoreMemory.create_app` reads (the reference agent sizes its own).
DEFAULT_MAX_BODY_BYTES = 1 << 20

_H = TypeVar("_H", bound=Callable[..., Any])


class TurnMemory(Protocol):
    """Long-term memory as a turn sees it (``memory_adapter.HindsightRuntimeAdapter`` is one). Implementations never
    raise for Hindsight failures: they degrade."""

    async def recall_for_turn(self, context: Caller, query: str) -> Recollection:
        """The caller's memories relevant to ``query``."""
        ...

    def retain_for_turn(
        self, context: Caller, *, result: str, query: str | None = None, session_id: str, request_id: str | None = None
    ) -> RetainHandle:
        """Schedule retaining the turn and return at once (the handle resolves once delivered or spooled)."""
        ...

    async def aclose(self, timeout: float | None = None) -> None:  # noqa: ASYNC109 (bounded drain)
        """Deliver or spool what is pending (bounded), then release connections."""
        ...


@dataclass(frozen=True, slots=True)
class MemoryTurn:
    """Whose memory one invocation uses, and which session and request it is. Built only by
    :meth:`AgentCoreMemory.authenticate` (or by tests) from verified identity.

    Attributes:
        caller: The verified caller, its bank id and the credential shown to Hindsight.
        session_id: The runtime session (``X-Amzn-Bedrock-AgentCore-Runtime-Session-Id``).
        request_id: The runtime request id: the retained turn's document id.
        memory_unavailable: Memory is down for this turn (e.g. the IAM agent key could not be read): recalls
            degrade at once, nothing is retained.
    """

    caller: Caller
    session_id: str
    request_id: str | None = None
    memory_unavailable: bool = False

    def state(self) -> dict[str, Any]:
        """``{MEMORY_TURN_KEY: self}``: Strands' ``invocation_state``, or a LangGraph run's ``context``."""
        return {MEMORY_TURN_KEY: self}


class AgentCoreMemory:
    """Identity, credential, recall, retain and ``/ping`` busy for one agent process (see the module docstring).

    Args:
        settings: The wiring's settings (:meth:`AgentMemorySettings.from_env`).
        memory: The long-term memory (default: a ``HindsightRuntimeAdapter`` on ``settings.memory`` whose recalled
            memories are delimited as inert data, :func:`memory_adapter.formatting.format_memories_as_data`).
        verifier: The JWT verifier (default: from ``settings.jwt``; a seam for tests).
        agent_key: The IAM agent key source (default: ``HINDSIGHT_API_KEY`` / ``HINDSIGHT_API_KEY_SECRET_ARN``).
        metrics: A Powertools ``Metrics`` (or any ``add_metric`` sink) for the adapter's metrics.
        tools: The memory tools (default: :meth:`MemoryTools.for_settings` on ``settings.memory``, built on first
            use), which the framework integrations offer to the model.
    """

    def __init__(
        self,
        settings: AgentMemorySettings,
        *,
        memory: TurnMemory | None = None,
        verifier: TokenVerifier | None = None,
        agent_key: AgentKey | None = None,
        metrics: MetricsSink | None = None,
        tools: MemoryTools | None = None,
    ) -> None:
        self.settings = settings
        self._tools = tools
        self.memory: TurnMemory = memory if memory is not None else _default_memory(settings, metrics)
        self.authenticator = RequestAuthenticator(
            settings, verifier if verifier is not None else default_verifier(settings)
        )
        self.agent_key = agent_key or AgentKey(
            static_key=settings.hindsight_api_key, secret_arn=settings.hindsight_api_key_secret_arn
        )
        self.retains = RetainWatcher(wait_s=settings.retain_wait_s)
        self.app: BedrockAgentCoreApp | None = None

    @property
    def tools(self) -> MemoryTools:
        """The memory tools (``memory_adapter.tools``), for the verified caller of each call."""
        if self._tools is None:
            from memory_adapter.tools.memory_tools import MemoryTools

            self._tools = MemoryTools.for_settings(self.settings.memory)
        return self._tools

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **kwargs: Any) -> AgentCoreMemory:
        """The wiring configured from ``env`` (default: the process environment); raises
        :class:`~memory_adapter.agentcore.settings.SettingsError` listing every problem."""
        return cls(AgentMemorySettings.from_env(os.environ if env is None else env), **kwargs)

    # -- the app ----------------------------------------------------------------------------------------------------

    def create_app(self, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, **app_kwargs: Any) -> BedrockAgentCoreApp:
        """A ``BedrockAgentCoreApp`` with the reference agent's body guard (identity first: an unverified caller gets
        the 401 whatever its body; then oversized or malformed JSON: 400), ``/ping`` busy while a retain is pending,
        and the adapter drained and closed at shutdown."""
        from bedrock_agentcore.runtime import BedrockAgentCoreApp
        from starlette.middleware import Middleware

        from memory_adapter.agentcore.app import BodyGuard

        @contextlib.asynccontextmanager
        async def lifespan(app: BedrockAgentCoreApp) -> AsyncIterator[None]:
            yield
            # The adapter's clients live on the SDK's worker loop (where handlers run): close them there.
            loop = getattr(app, "_worker_loop", None)
            if loop is not None and loop.is_running():
                future = asyncio.run_coroutine_threadsafe(self.aclose(), loop)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.wrap_future(future), timeout=10)

        from memory_adapter.agentcore.app import unauthorized_response

        async def gate(headers: list[tuple[str, str]]) -> Any:
            try:
                await asyncio.to_thread(self.authenticator.authenticate, headers)
            except AuthError as exc:
                logger.warning("identity rejected", extra={"reason": exc.reason, "detail": exc.detail[:200]})
                return unauthorized_response(bearer=self.settings.auth_mode is IdentitySource.JWT)
            return None

        guard = Middleware(BodyGuard, max_bytes=max_body_bytes, gate=gate)
        middleware = [guard, *app_kwargs.pop("middleware", [])]
        app = BedrockAgentCoreApp(lifespan=lifespan, middleware=middleware, **app_kwargs)
        self.attach(app)
        return app

    def attach(self, app: AsyncTaskTracker) -> None:
        """Report pending retains through ``app``'s ``/ping`` (done by :meth:`create_app`; for an app you built)."""
        self.retains.attach(app, spool=getattr(self.memory, "spool", None))
        self.app = app  # type: ignore[assignment]

    def entrypoint(self, handler: _H) -> _H:
        """Register ``handler(payload, turn)`` as the attached app's entrypoint, identity first.

        An unverified caller gets the reference agent's 401 (the reason is logged, never sent) and a malformed session
        header a 400, before ``handler`` runs or the payload is looked at. ``turn`` is ``None`` for an anonymous
        caller when ``ALLOW_ANONYMOUS=true`` (no memory). ``handler`` may be sync or async and return anything the
        SDK accepts (a dict, a Starlette response, a generator to stream).
        """
        app = self.app
        if app is None:
            raise RuntimeError("call create_app() (or attach(app)) before registering the entrypoint")
        from memory_adapter.agentcore.app import error_response, unauthorized_response

        async def invoke(payload: Any, context: Any) -> Any:  # the SDK passes context only to a parameter so named
            try:
                turn = await self.authenticate(context)
            except AuthError:
                return unauthorized_response(bearer=self.settings.auth_mode is IdentitySource.JWT)
            except InvalidSessionError as exc:
                return error_response(400, str(exc), "bad_request")
            result = handler(payload, turn)
            return await result if inspect.isawaitable(result) else result

        app.entrypoint(invoke)
        return handler

    # -- one invocation ---------------------------------------------------------------------------------------------

    async def authenticate(self, context: Any) -> MemoryTurn | None:
        """The verified turn of the SDK's request ``context``; ``None`` for an allowed anonymous caller.

        Raises :class:`~memory_adapter.agentcore.errors.AuthError` (logged here with its reason) for any identity
        failure, :class:`~memory_adapter.agentcore.request.InvalidSessionError` for a malformed session header.
        """
        headers = raw_headers(context)
        try:
            if headers is None:
                raise AuthError("no_request", "the SDK could not build the request context")
            caller = await asyncio.to_thread(self.authenticator.authenticate, headers)
        except AuthError as exc:
            logger.warning("identity rejected", extra={"reason": exc.reason, "detail": exc.detail[:200]})
            if exc.reason == RejectReason.KEYS_UNAVAILABLE.value:
                logger.error("issuer keys unavailable: every JWT caller is refused until they are reachable")
            raise
        meta = request_meta(headers)
        if caller is None:
            return None
        unavailable = False
        if self.settings.auth_mode is IdentitySource.IAM:
            try:
                caller = caller.with_agent_key(await asyncio.to_thread(self.agent_key.get))
            except KeyUnavailableError as exc:
                logger.error("Hindsight key unavailable; answering without memory", extra={"detail": str(exc)})
                unavailable = True
        return MemoryTurn(caller, meta.session_id, meta.request_id, memory_unavailable=unavailable)

    async def recall(self, turn: MemoryTurn | None, query: str) -> Recollection:
        """The turn's memories for ``query``, delimited as inert data in ``.text``; never raises (degrades)."""
        from memory_adapter.adapter import Recollection

        if turn is None:
            return Recollection("", 0, False)
        if turn.memory_unavailable:
            return Recollection("", 0, True, "unavailable")
        timeout_s = self.settings.recall_timeout_s + RECALL_BACKSTOP_MARGIN_S
        try:
            return await asyncio.wait_for(self.memory.recall_for_turn(turn.caller, query), timeout_s)
        except TimeoutError:
            logger.warning("recall exceeded its %.2f s deadline; answering without memory", timeout_s)
        except Exception:
            logger.exception("recall failed; answering without memory")
        return Recollection("", 0, True, "unavailable")

    def retain(self, turn: MemoryTurn | None, *, query: str, result: str) -> RetainHandle | None:
        """Retain the exchange in the background and keep ``/ping`` busy until it is delivered or spooled; never
        raises. ``None`` when nothing was scheduled (no turn, memory down, empty answer, or a failure, logged)."""
        if turn is None or turn.memory_unavailable or not result.strip():
            return None
        try:
            handle = self.memory.retain_for_turn(
                turn.caller, result=result, query=query, session_id=turn.session_id, request_id=turn.request_id
            )
        except Exception:
            logger.exception("could not schedule the retain of this turn")
            return None
        self.watch(handle)
        return handle

    def watch(self, handle: RetainHandle) -> None:
        """Keep ``/ping`` busy until ``handle`` resolves (for retains scheduled some other way, e.g. a memory tool)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop (a sync caller): the delivery still runs, /ping just cannot report it
            return
        self.retains.watch(handle)

    async def aclose(self) -> None:
        """Deliver or spool pending retains and release connections (bounded by the adapter)."""
        await self.memory.aclose()


def _default_memory(settings: AgentMemorySettings, metrics: MetricsSink | None) -> TurnMemory:
    from memory_adapter.adapter import HindsightRuntimeAdapter

    return HindsightRuntimeAdapter(settings.agent_name, settings=settings.memory, metrics=metrics)

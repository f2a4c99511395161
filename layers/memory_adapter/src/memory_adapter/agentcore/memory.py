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
    ...     ask = memory.read_turn(payload)      # the reference agent's payload rule: PayloadError -> 400
    ...     memories = await memory.recall(turn, ask.prompt)
    ...     answer = await my_model(ask.prompt, memories.text)
    ...     memory.retain(turn, query=ask.prompt, result=answer)
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
from memory_adapter.agentcore.errors import AuthError, PayloadError
from memory_adapter.agentcore.hooks import InvocationHooks, notify
from memory_adapter.agentcore.identity import RequestAuthenticator, TokenVerifier, default_verifier
from memory_adapter.agentcore.payload import TurnRequest, parse_turn
from memory_adapter.agentcore.request import Headers, InvalidSessionError, RequestFacts
from memory_adapter.agentcore.settings import AgentMemorySettings, IdentitySource
from memory_adapter.identity.caller import Caller
from memory_adapter.identity.errors import RejectReason
from memory_adapter.recall_deadline import recall_backstop_s

if TYPE_CHECKING:
    from bedrock_agentcore.runtime import BedrockAgentCoreApp
    from starlette.types import Scope

    from memory_adapter.adapter import Recollection
    from memory_adapter.observability import MetricsSink
    from memory_adapter.retains import RetainHandle
    from memory_adapter.tools.memory_tools import ToolRunner

__all__ = [
    "MEMORY_TURN_KEY",
    "AgentCoreMemory",
    "MemoryTurn",
    "TurnMemory",
    "start_memory",
]

_log = logging.getLogger("memory_adapter.agentcore")

#: Where a framework integration finds the turn: the key of Strands' ``invocation_state`` and of a LangGraph run's
#: context mapping (or the attribute of a context object). Server-side state: a model cannot set it.
MEMORY_TURN_KEY = "memory_turn"

_H = TypeVar("_H", bound=Callable[..., Any])

#: The ASGI scope key under which the body guard's gate leaves the caller it verified (server-side only: no request
#: can set a scope key), so :meth:`AgentCoreMemory.admit` does not verify the same token a second time.
_ADMITTED = "memory_adapter.admitted"


@dataclass(frozen=True, slots=True)
class _Admitted:
    """The gate's verdict on a request: its verified caller (``None``: an allowed anonymous caller)."""

    caller: Caller | None


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
        hooks: What the agent wants told about each invocation, for its own logs and metrics (default: nothing).
        logger: Where the wiring logs (default: the ``memory_adapter.agentcore`` logger; e.g. a Powertools ``Logger``).
    """

    def __init__(
        self,
        settings: AgentMemorySettings,
        *,
        memory: TurnMemory | None = None,
        verifier: TokenVerifier | None = None,
        agent_key: AgentKey | None = None,
        metrics: MetricsSink | None = None,
        tools: ToolRunner | None = None,
        hooks: InvocationHooks | None = None,
        logger: Any = None,
    ) -> None:
        self.settings = settings
        self.log: Any = logger if logger is not None else _log
        self.hooks = hooks if hooks is not None else InvocationHooks()
        self._tools = tools
        self.memory: TurnMemory = memory if memory is not None else _default_memory(settings, metrics)
        self.authenticator = RequestAuthenticator(
            settings, verifier if verifier is not None else default_verifier(settings)
        )
        self.agent_key = agent_key or AgentKey(
            static_key=settings.hindsight_api_key, secret_arn=settings.hindsight_api_key_secret_arn
        )
        self.retains = RetainWatcher(wait_s=settings.retain_wait_s, logger=self.log)
        self.app: BedrockAgentCoreApp | None = None

    @property
    def tools(self) -> ToolRunner:
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

    def create_app(self, *, max_body_bytes: int | None = None, **app_kwargs: Any) -> BedrockAgentCoreApp:
        """A ``BedrockAgentCoreApp`` with the reference agent's body guard (identity first: an unverified caller gets
        the 401 whatever its body; then a body over ``max_body_bytes``, default ``settings.max_body_bytes``, or
        malformed JSON: 400), ``/ping`` busy while a retain is pending, pending retains replayed at start-up and the
        memory drained and closed at shutdown, on the SDK's worker loop where the handlers run."""
        from bedrock_agentcore.runtime import BedrockAgentCoreApp
        from starlette.middleware import Middleware

        from memory_adapter.agentcore.app import BodyGuard

        @contextlib.asynccontextmanager
        async def lifespan(app: BedrockAgentCoreApp) -> AsyncIterator[None]:
            start_memory(self.memory)  # an earlier process's spooled retains drain now, not at the first turn
            yield
            # The adapter's clients live on the SDK's worker loop (where handlers run): close them there.
            loop = getattr(app, "_worker_loop", None)
            if loop is not None and loop.is_running():
                future = asyncio.run_coroutine_threadsafe(self.aclose(), loop)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.wrap_future(future), timeout=10)

        async def gate(scope: Scope) -> Any:
            headers = Headers.of_raw(scope.get("headers", []))
            try:
                caller = await asyncio.to_thread(self.authenticator.authenticate, headers)
            except AuthError as exc:
                return self._refuse(exc)
            scope[_ADMITTED] = _Admitted(caller)  # admit() takes it from here: one verification per invocation
            return None

        limit = self.settings.max_body_bytes if max_body_bytes is None else max_body_bytes
        guard = Middleware(BodyGuard, max_bytes=limit, gate=gate)
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
        caller when ``ALLOW_ANONYMOUS=true`` (no memory). A handler with a third parameter named ``request`` also gets
        the :class:`~memory_adapter.agentcore.request.RequestFacts` (session and request ids, even when anonymous).
        A :class:`~memory_adapter.agentcore.errors.PayloadError` it raises (:meth:`read_turn`) is answered 400.
        ``handler`` may be sync or async and return anything the SDK accepts (a dict, a Starlette response, a
        generator to stream).
        """
        app = self.app
        if app is None:
            raise RuntimeError("call create_app() (or attach(app)) before registering the entrypoint")
        from memory_adapter.agentcore.app import error_response

        wants_request = "request" in inspect.signature(handler).parameters

        async def invoke(payload: Any, context: Any) -> Any:  # the SDK passes context only to a parameter so named
            try:
                request, turn = await self.admit(context)
                result = handler(payload, turn, request) if wants_request else handler(payload, turn)
                return await result if inspect.isawaitable(result) else result
            except AuthError:
                return self._unauthorized()
            except PayloadError as exc:
                self.log.info("bad request", extra={"code": exc.code, "detail": exc.message[:200]})
                notify(self.hooks.invalid, exc)
                return error_response(400, exc.message, exc.code)

        app.entrypoint(invoke)
        return handler

    def read_turn(self, payload: object) -> TurnRequest:
        """The payload as a turn (``{"prompt", "stream"}``, prompt within ``MAX_PROMPT_CHARS``): the reference agent's
        rule (:mod:`~memory_adapter.agentcore.payload`); raises :class:`PayloadError`, which :meth:`entrypoint`
        answers 400."""
        return parse_turn(payload, max_prompt_chars=self.settings.max_prompt_chars)

    # -- one invocation ---------------------------------------------------------------------------------------------

    async def admit(self, context: Any) -> tuple[RequestFacts, MemoryTurn | None]:
        """The request facts and the verified turn of the SDK's request ``context`` (``None``: an allowed anonymous
        caller), with the hooks told each step.

        Raises :class:`~memory_adapter.agentcore.errors.AuthError` (logged here with its reason) for any identity
        failure, :class:`~memory_adapter.agentcore.errors.PayloadError` for a malformed session header.
        """
        try:
            request = RequestFacts.of_context(context)
        except InvalidSessionError as exc:
            raise PayloadError(str(exc)) from None
        if request is None:
            raise self._rejected(AuthError("no_request", "the SDK could not build the request context"))
        notify(self.hooks.started, request)
        admitted = getattr(getattr(context, "request", None), "scope", {}).get(_ADMITTED)
        if isinstance(admitted, _Admitted):  # the body guard's gate verified this request already
            caller = admitted.caller
        else:  # an app without the gate (attach): verify here
            try:
                caller = await asyncio.to_thread(self.authenticator.authenticate, request.headers)
            except AuthError as exc:
                raise self._rejected(exc) from None
        notify(self.hooks.identified, caller)
        if caller is None:
            return request, None
        unavailable = False
        if self.settings.auth_mode is IdentitySource.IAM:  # the credential, chosen once: the deployment's agent key
            try:
                caller = caller.with_agent_key(await asyncio.to_thread(self.agent_key.get))
            except KeyUnavailableError as exc:
                self.log.error("Hindsight key unavailable; answering without memory", extra={"detail": str(exc)})
                notify(self.hooks.key_unavailable, exc)
                unavailable = True
        return request, MemoryTurn(caller, request.session_id, request.request_id, memory_unavailable=unavailable)

    async def authenticate(self, context: Any) -> MemoryTurn | None:
        """The verified turn of the SDK's request ``context`` (:meth:`admit` without the request facts)."""
        return (await self.admit(context))[1]

    def _rejected(self, exc: AuthError) -> AuthError:
        self.log.warning("identity rejected", extra={"reason": exc.reason, "detail": exc.detail[:200]})
        if exc.reason == RejectReason.KEYS_UNAVAILABLE.value:
            self.log.error("issuer keys unavailable: every JWT caller is refused until they are reachable")
        notify(self.hooks.rejected, exc)
        return exc

    def _refuse(self, exc: AuthError) -> Any:
        """The uniform 401 for an identity failure (logged and reported with its reason, which is never sent)."""
        self._rejected(exc)
        return self._unauthorized()

    def _unauthorized(self) -> Any:
        from memory_adapter.agentcore.app import unauthorized_response  # Starlette: the [agentcore] extra

        return unauthorized_response(bearer=self.settings.auth_mode is IdentitySource.JWT)

    @property
    def recall_deadline_s(self) -> float:
        """The backstop of :meth:`recall`: derived from the one recall deadline (``memory_adapter.recall_deadline``)."""
        return recall_backstop_s(self.settings.recall_timeout_s)

    async def recall(self, turn: MemoryTurn | None, query: str) -> Recollection:
        """The turn's memories for ``query`` (formatted by the memory: ``.text``); never raises (degrades)."""
        from memory_adapter.adapter import Recollection

        if turn is None:
            return Recollection("", 0, False)
        if turn.memory_unavailable:
            return Recollection("", 0, True, "unavailable")
        timeout_s = self.recall_deadline_s
        try:
            return await asyncio.wait_for(self.memory.recall_for_turn(turn.caller, query), timeout_s)
        except TimeoutError:
            self.log.warning("recall exceeded its %.2f s deadline; answering without memory", timeout_s)
        except Exception:
            self.log.exception("recall failed; answering without memory")
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
            self.log.exception("could not schedule the retain of this turn")
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


def start_memory(memory: object) -> None:
    """At start-up: let a memory that can (``HindsightRuntimeAdapter.start``) replay what an earlier process spooled,
    in the background, instead of waiting for the first turn."""
    start: Callable[[], None] | None = getattr(memory, "start", None)
    if start is not None:
        start()


def _default_memory(settings: AgentMemorySettings, metrics: MetricsSink | None) -> TurnMemory:
    from memory_adapter.adapter import HindsightRuntimeAdapter

    return HindsightRuntimeAdapter(settings.agent_name, settings=settings.memory, metrics=metrics)

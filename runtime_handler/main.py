"""The reference agent as an ``AgentCoreMemory`` agent: its model, tools, working memory and metrics (the story of a
turn is in ``turn.py``); identity, recall, retain, the body guard and the lifespan are the memory wiring's
(:class:`memory_adapter.agentcore.AgentCoreMemory`), exactly what an agent you bring gets.

``POST /invocations`` answers ``{"output", "session_id", "memory": {"recalled", "degraded"}}``, or server-sent events
when the payload has ``"stream": true``. Failures answer small JSON bodies ``{"error", "code"}``: 400 for a bad
payload or session header (the wiring's rule), 401 for any identity failure (the reason is logged, never sent), 502
when the model fails. ``GET /ping``
reports ``HealthyBusy`` while a turn's retain is still on its way to Hindsight (an AgentCore async task), so the
session is not reclaimed before its memory is safe: delivered, or durably spooled (deployed: queued in SQS).
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp
from starlette.responses import JSONResponse

from memory_adapter.agentcore.answers import INTERNAL, MODEL_UNAVAILABLE
from memory_adapter.agentcore.credentials import AgentKey
from memory_adapter.agentcore.errors import PayloadError
from memory_adapter.agentcore.identity import TokenVerifier
from memory_adapter.agentcore.memory import AgentCoreMemory, MemoryTurn, TurnMemory
from memory_adapter.agentcore.payload import TurnRequest
from memory_adapter.agentcore.request import RequestFacts
from runtime_handler.errors import ModelError
from runtime_handler.model import BedrockModel, EchoModel, Model
from runtime_handler.observability import Observability, TurnMetrics
from runtime_handler.settings import ModelProvider, Settings
from runtime_handler.turn import TurnDeps, run_turn, stream_turn
from runtime_handler.working_memory import WorkingMemory

if TYPE_CHECKING:
    from memory_adapter.tools.memory_tools import ToolRunner

__all__ = ["Agent", "create_app"]
#: How long the memory gateway's URL read from SSM is reused.
GATEWAY_URL_MAX_AGE_S = 300


class Agent:
    """The model, its tools and the sessions' working memory, built once per process (one AgentCore session = one
    process); identity, recall and retain are the memory wiring's (``wiring``, an ``AgentCoreMemory``)."""

    def __init__(
        self,
        settings: Settings,
        *,
        wiring: AgentCoreMemory,
        model: Model,
        observability: Observability,
        tools: ToolRunner | None = None,
    ) -> None:
        self.settings = settings
        self.wiring = wiring
        self.obs = observability
        self.deps = TurnDeps(memory=wiring, model=model, working=WorkingMemory(settings.working_memory), tools=tools)

    async def invoke(self, payload: Any, turn: MemoryTurn | None, request: RequestFacts) -> Any:
        """One ``/invocations`` call of a caller the wiring verified; every failure becomes a deliberate answer.

        A bad payload raises :class:`~memory_adapter.agentcore.errors.PayloadError`, which the wiring answers 400
        (exactly as it does for an agent you bring)."""
        started = time.perf_counter()
        streaming = False
        try:
            ask = self.wiring.read_turn(payload)
            self.obs.count("Invocations")
            if ask.stream:
                streaming = True
                return self._stream(ask, request, turn, started)
            result = await run_turn(ask, request, turn, self.deps)
            self._record(result.recalled, result.degraded, started)
            return JSONResponse(result.body())
        except PayloadError:
            raise  # the wiring's 400 (and, through TurnMetrics, its BadRequests count)
        except ModelError as exc:
            self.obs.logger.error("model call failed", extra={"detail": str(exc)})
            self.obs.count("ModelErrors")
            return MODEL_UNAVAILABLE.response()
        except Exception:
            self.obs.logger.exception("unexpected failure in the invocation")
            self.obs.count("InternalErrors")
            return INTERNAL.response()
        finally:
            if not streaming:
                self.obs.flush()

    async def _stream(
        self, ask: TurnRequest, request: RequestFacts, turn: MemoryTurn | None, started: float
    ) -> AsyncIterator[dict[str, Any]]:
        try:
            async for event in stream_turn(ask, request, turn, self.deps):
                if event.get("type") == "done":
                    memory = event["memory"]
                    self._record(memory["recalled"], memory["degraded"], started)
                yield event
        except ModelError as exc:
            self.obs.logger.error("model call failed mid-stream", extra={"detail": str(exc)})
            self.obs.count("ModelErrors")
            yield MODEL_UNAVAILABLE.event()
        except Exception:
            self.obs.logger.exception("unexpected failure mid-stream")
            self.obs.count("InternalErrors")
            yield INTERNAL.event()
        finally:
            self.obs.flush()

    def _record(self, recalled: int, degraded: bool, started: float) -> None:
        self.obs.count("MemoriesRecalled", recalled)
        if degraded:
            self.obs.count("MemoryDegraded")
        self.obs.millis("TurnLatency", (time.perf_counter() - started) * 1000)
        self.obs.logger.info("turn answered", extra={"recalled": recalled, "degraded": degraded})


def _default_model(settings: Settings) -> Model:
    if settings.model_provider is ModelProvider.ECHO:
        return EchoModel()
    assert settings.model_id is not None
    return BedrockModel(settings.model_id, max_tokens=settings.model_max_tokens, max_tool_rounds=settings.tool_rounds)


def _gateway_tools(settings: Settings) -> ToolRunner | None:
    """The memory tools through the memory gateway with the caller's token (``MEMORY_TOOLS_GATEWAY_URL[_PARAMETER]``),
    else ``None``: the wiring's own (:attr:`AgentCoreMemory.tools`, the one place the in-process tools are built)."""
    if not settings.tools_via_gateway:
        return None
    from memory_adapter.tools.gateway_client import GatewayTools

    if settings.gateway_url is not None:
        return GatewayTools(settings.gateway_url, target=settings.gateway_target)
    name = settings.gateway_url_parameter
    assert name is not None

    def read_url() -> str:  # the stack's parameter, through the VPC's SSM endpoint; cached by Powertools
        from aws_lambda_powertools.utilities import parameters

        return str(parameters.get_parameter(name, max_age=GATEWAY_URL_MAX_AGE_S))

    return GatewayTools(read_url, target=settings.gateway_target)


def create_app(
    settings: Settings,
    *,
    memory: TurnMemory | None = None,
    model: Model | None = None,
    verifier: TokenVerifier | None = None,
    agent_key: AgentKey | None = None,
    observability: Observability | None = None,
    tools: ToolRunner | None = None,
) -> BedrockAgentCoreApp:
    """Build the app: an :class:`AgentCoreMemory` app (body guard, identity, ``/ping`` busy, lifespan) whose
    entrypoint is :meth:`Agent.invoke`. Every collaborator can be injected (tests); defaults come from ``settings``:
    the memory and its block format, and the memory tools, are the wiring's defaults (what an agent you bring gets),
    the tools through the gateway when it is configured, none with ``MEMORY_TOOLS=false``."""
    observability = observability or Observability()
    wiring = AgentCoreMemory(
        settings,
        memory=memory,
        metrics=observability.metrics,
        tools=tools if tools is not None else _gateway_tools(settings),
        verifier=verifier,
        agent_key=agent_key,
        hooks=TurnMetrics(observability, auth_source=settings.auth_mode.value),
        logger=observability.logger,
    )
    agent = Agent(
        settings,
        wiring=wiring,
        model=model if model is not None else _default_model(settings),
        observability=observability,
        tools=wiring.tools if settings.memory_tools or tools is not None else None,
    )
    app = wiring.create_app()
    wiring.entrypoint(agent.invoke)
    app.state.agent = agent
    return app


def app_from_env(env: Mapping[str, str] | None = None) -> BedrockAgentCoreApp:
    """The app configured from the process environment (raises SettingsError listing every problem)."""
    return create_app(Settings.from_env(os.environ if env is None else env))

"""Hindsight's HTTP-extension slot, used only to put the request guard (:mod:`hindsight_isolation.guard`) in front.

Loaded with ``HINDSIGHT_API_HTTP_EXTENSION=hindsight_isolation.http_extension:RequestGuardExtension`` (an environment
variable, like the other two slots: the stock image's command and ``hindsight-api`` stay as they are). The slot is
meant for extra routes; this extension adds none. It hands Hindsight an empty root router whose lifespan wraps the
application's middleware stack (REST, MCP and health alike) in the guard once the stack is built, before the server
takes its first request. Every worker process of ``--workers N`` loads the slot, so every one is guarded. The
tenant extension refuses to start unless this slot is configured, and the validator refuses any request the guard
did not label (:func:`hindsight_isolation.route.current` is ``None``), so a server without the guard serves nothing.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter
from hindsight_api.extensions.http import HttpExtension

from hindsight_isolation.bad_input import integer_query_parameters
from hindsight_isolation.guard import RequestGuard

__all__ = ["RequestGuardExtension", "install"]

logger = logging.getLogger("hindsight_isolation")


def install(app: Any) -> RequestGuard:
    """Wrap ``app``'s (Starlette) middleware stack in the guard; idempotent."""
    stack = app.middleware_stack
    if isinstance(stack, RequestGuard):
        return stack
    if stack is None:
        stack = app.build_middleware_stack()
    guard = RequestGuard(stack, integer_parameters=integer_query_parameters(app.openapi()))
    app.middleware_stack = guard
    logger.info(
        "hindsight_isolation: request guard in front of every route (integer query parameters: %s)",
        ", ".join(sorted(guard.integer_parameters)) or "none",
    )
    return guard


class RequestGuardExtension(HttpExtension):  # type: ignore[misc]  # hindsight_api is untyped here
    """Installs the request guard; takes no settings and adds no routes."""

    def __init__(self, config: dict[str, str]) -> None:
        super().__init__(config)
        if config:
            raise ValueError(
                "hindsight_isolation: the HTTP extension takes no settings; unknown: "
                + ", ".join("HINDSIGHT_API_HTTP_" + key.upper() for key in sorted(config))
            )

    def get_router(self, memory: Any) -> APIRouter:
        """Nothing under ``/ext``."""
        return APIRouter()

    def get_root_router(self, memory: Any) -> APIRouter:
        """No routes; its lifespan installs the guard (FastAPI merges a router's lifespan into the app's)."""
        return APIRouter(lifespan=_guarding)


@asynccontextmanager
async def _guarding(app: Any) -> AsyncIterator[None]:
    install(app)
    yield

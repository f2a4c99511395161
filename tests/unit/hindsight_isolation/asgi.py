"""ASGI helpers the request guard's tests share."""

from __future__ import annotations

from starlette.types import Receive


async def read_body(receive: Receive) -> bytes:
    """The whole request body, as the app behind the guard reads it."""
    body = b""
    while True:
        message = await receive()
        body += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return body

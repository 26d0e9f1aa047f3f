"""Request bodies over `MAX_BODY_BYTES` are refused (413), whether declared or streamed."""

from __future__ import annotations

import json

MAX_BODY_BYTES = 4 * 1024 * 1024


class BodyLimit:
    """ASGI middleware: 413 for a body over the limit, before the route reads it."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return await _too_large(send)
        seen = 0

        async def limited():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > MAX_BODY_BYTES:
                raise _TooLarge
            return message

        try:
            return await self.app(scope, limited, send)
        except _TooLarge:
            return await _too_large(send)


class _TooLarge(Exception):
    pass


async def _too_large(send) -> None:
    body = json.dumps({"detail": f"the request body is over {MAX_BODY_BYTES} bytes"}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})

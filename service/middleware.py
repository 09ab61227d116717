"""ASGI middleware: request body size limit (413) and optional bearer-token auth (401), both as problem+json."""

from __future__ import annotations

import hmac
import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.errors import PROBLEM_JSON

OPEN_PATHS = frozenset(
    {"/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/redoc", "/docs/oauth2-redirect"}
)


async def _send_problem(
    send: Send, status: int, title: str, detail: str, path: str, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    body = json.dumps(
        {"type": "about:blank", "title": title, "status": status, "detail": detail, "instance": path}
    )
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM_JSON.encode()),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body.encode()})


class _BodyTooLarge(Exception):
    pass


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _send_problem(send, 400, "Bad request", "Content-Length is not a number", path)
                    return
                if declared > self.max_bytes:
                    await _send_problem(
                        send,
                        413,
                        "Body too large",
                        f"body of {declared} bytes exceeds {self.max_bytes}",
                        path,
                    )
                    return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                await _send_problem(send, 413, "Body too large", f"body exceeds {self.max_bytes} bytes", path)


class BearerAuthMiddleware:
    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.token or scope.get("path", "") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        supplied = ""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                supplied = value.decode("latin-1")
        if not hmac.compare_digest(supplied.encode(), f"Bearer {self.token}".encode()):
            await _send_problem(
                send,
                401,
                "Unauthorized",
                "a valid 'Authorization: Bearer <token>' header is required",
                scope.get("path", ""),
                headers=((b"www-authenticate", b"Bearer"),),
            )
            return
        await self.app(scope, receive, send)

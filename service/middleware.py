"""ASGI middleware: request body size limit (413), read timeouts (408) and media type (415), and optional
bearer-token auth (401), all as problem+json."""

from __future__ import annotations

import asyncio
import hmac
import json
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.errors import PROBLEM_JSON
from service.telemetry import count_rejection
from solvers.linux_process import give_back_heap

RECEIVED_AT = (
    "trimtab_received_at"  # request state key: time.monotonic() when the request's first byte was seen
)
OPEN_PATHS = frozenset({"/healthz"})  # with a token set; readiness and metrics can be opened in the settings
# Bodies from this size on leave a heap worth giving back once their answer is sent (give_back_heap): after one at
# the units cap the service process kept 23 MiB more than before, 6 with the heap given back (29 Nov 2026).
LARGE_BODY_BYTES = 1 << 20


BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def _is_json(media_type: bytes) -> bool:
    """application/json or a structured +json type (RFC 6839), parameters (charset) aside, in any case."""
    essence = media_type.split(b";", 1)[0].strip().lower()
    return essence == b"application/json" or (
        essence.startswith(b"application/") and essence.endswith(b"+json")
    )


async def _send_problem(
    scope: Scope,
    send: Send,
    status: int,
    title: str,
    detail: str,
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    path = scope.get("path", "")
    count_rejection(scope, status)
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


class BodyLimitMiddleware:
    """415 for a body whose Content-Type is not JSON. 413 for bodies over `max_bytes`: at once when Content-Length
    says so, else (chunked bodies) as soon as the bytes read pass the limit; 503 when the bodies of all requests in flight would pass `max_buffered_bytes`; 408 when the body does not arrive within `timeout_s` or stalls for `idle_timeout_s`
    between chunks (a slow upload cannot hold a socket and a buffer forever). The body is read here, before the app
    sees it, because an exception raised from inside the app's `receive` would be turned into a 400 by FastAPI's body
    parser; the app then gets the buffered body replayed (it would buffer it anyway to parse the JSON)."""

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        timeout_s: float = 30.0,
        idle_timeout_s: float = 10.0,
        max_buffered_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self.app, self.max_bytes = app, max_bytes
        self.timeout_s, self.idle_timeout_s = timeout_s, idle_timeout_s
        # Bodies of all requests together, from their first byte until their answer: caps the service process's
        # memory however many large uploads arrive at once (503 + Retry-After beyond it). One event loop: no lock.
        self.max_buffered_bytes = max(max_buffered_bytes, max_bytes)
        self.buffered = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # When the request began (before its body): a plan's deadline counts from here (see RECEIVED_AT).
        scope.setdefault("state", {})[RECEIVED_AT] = time.monotonic()
        # The framing headers, in one pass over the request's headers.
        lengths: list[bytes] = []
        chunked = False
        media_type: bytes | None = None
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                lengths.append(value)
            elif name == b"transfer-encoding":
                chunked = True
            elif name == b"content-type":
                media_type = value
        if media_type is not None and not _is_json(media_type) and scope.get("method") in BODY_METHODS:
            # Seen (30 Nov 2026): a plan request sent as text/plain was planned (the route parses its own bytes),
            # while the splitter answered 422 "Input should be a valid dictionary" (FastAPI's reading): one rule
            # for every endpoint now, with the status HTTP has for it. No Content-Type at all still reads as JSON
            # (FastAPI's strict default would refuse it with 422; clients that send none kept working).
            await _send_problem(
                scope,
                send,
                415,
                "Unsupported media type",
                f"Content-Type {media_type.decode('latin-1')!r} is not JSON: send application/json",
            )
            return
        if chunked and lengths:
            # Seen (29 Nov 2026, eighth session): such a request waited for the body timeout (408 after 10 s; the
            # body was read as chunked). Two framings of one body are how requests are smuggled past a proxy that
            # reads the other one: refused at once, and the connection closed after the answer (RFC 9112, 6.3).
            await _send_problem(
                scope,
                send,
                400,
                "Bad request",
                "both Content-Length and Transfer-Encoding: send one of them",
                headers=((b"connection", b"close"),),
            )
            return
        for value in lengths:
            try:
                declared = int(value)
                if declared < 0:
                    raise ValueError(declared)
            except ValueError:
                await _send_problem(
                    scope, send, 400, "Bad request", "Content-Length is not a non-negative number"
                )
                return
            if declared > self.max_bytes:
                await _send_problem(
                    scope,
                    send,
                    413,
                    "Body too large",
                    f"body of {declared} bytes exceeds {self.max_bytes}",
                )
                return
        received = 0
        try:
            chunks: list[bytes] = []
            loop = asyncio.get_running_loop()
            ends = loop.time() + self.timeout_s
            # One timer for the whole read, moved to the next chunk's idle limit after each chunk (the same limits as
            # one timeout per chunk; most bodies are one chunk). A bare loop timer that cancels this task, not
            # asyncio.timeout_at: the same semantics (an expiry is told apart from any other cancellation) for half
            # its CPU (1.9 against 4.1 us a request, measured).
            task = asyncio.current_task()
            if task is None:  # (as asyncio.timeout_at requires too)
                raise RuntimeError("the body is read inside an asyncio task")
            cancelling = task.cancelling()
            expired = False

            def expire() -> None:
                nonlocal expired
                expired = True
                task.cancel()

            # The timer can only fire while this task waits in `receive()` below: its cancellation arrives there.
            timer = loop.call_at(min(ends, loop.time() + self.idle_timeout_s), expire)
            try:
                while True:
                    message = await receive()
                    if message["type"] != "http.request":  # the client went away: nothing to answer
                        return
                    chunk = message.get("body", b"")
                    received += len(chunk)
                    self.buffered += len(chunk)
                    if self.buffered > self.max_buffered_bytes or received > self.max_bytes:
                        break  # refused below, once the timer is off
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
                    timer.cancel()
                    timer = loop.call_at(min(ends, loop.time() + self.idle_timeout_s), expire)
            except asyncio.CancelledError:
                # Ours only when the timer fired and no one else cancelled the task meanwhile (the server's shutdown,
                # say): then theirs goes on, as with asyncio.timeout_at.
                if not expired or task.uncancel() > cancelling:
                    raise
                await _send_problem(
                    scope,
                    send,
                    408,
                    "Request timeout",
                    f"the body did not arrive within {self.timeout_s:g} s (or stalled for "
                    f"{self.idle_timeout_s:g} s)",
                    headers=((b"connection", b"close"),),
                )
                return
            finally:
                timer.cancel()
            if self.buffered > self.max_buffered_bytes:
                await _send_problem(
                    scope,
                    send,
                    503,
                    "Too many bodies in flight",
                    f"the service already holds {self.max_buffered_bytes} bytes of request bodies; retry",
                    headers=((b"retry-after", b"1"),),
                )
                return
            if received > self.max_bytes:
                await _send_problem(
                    scope, send, 413, "Body too large", f"body exceeds {self.max_bytes} bytes"
                )
                return
            body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            del chunks
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()  # after the body: wait for the disconnect, as the server would tell it

            await self.app(scope, replay, send)
            if received >= LARGE_BODY_BYTES:
                # The answer is sent: the large body's buffers go back to the system (in a thread: off the loop).
                body = b""
                await asyncio.get_running_loop().run_in_executor(None, give_back_heap)
        finally:
            self.buffered -= received


class BearerAuthMiddleware:
    def __init__(self, app: ASGIApp, token: str | None, open_paths: frozenset[str] = OPEN_PATHS) -> None:
        self.app, self.token, self.open_paths = app, token, open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.token or scope.get("path", "") in self.open_paths:
            await self.app(scope, receive, send)
            return
        supplied = ""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                supplied = value.decode("latin-1")
        scheme, _, credentials = supplied.partition(" ")
        # RFC 7235: the scheme is case-insensitive; the token is compared in constant time.
        if scheme.lower() != "bearer" or not hmac.compare_digest(credentials.encode(), self.token.encode()):
            await _send_problem(
                scope,
                send,
                401,
                "Unauthorized",
                "a valid 'Authorization: Bearer <token>' header is required",
                headers=((b"www-authenticate", b"Bearer"),),
            )
            return
        await self.app(scope, receive, send)

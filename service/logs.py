"""Structured JSON logs, one request id per request, and the per-request metrics (latency, body size).

Every log line is one JSON object on stderr (`ts`, `level`, `logger`, `msg`, `request_id` when inside a request,
plus the `extra` fields a call passes), so log shippers need no parsing rules. The request id is the caller's
`X-Request-ID` when it is a sane token (so an engine can follow its own ids through), else a fresh one; it is echoed
in the `X-Request-ID` response header of every answer, errors included, and stamped on every log line written while
the request runs. Stack traces go to the log, never into a response.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import random
import re
import sys
import time
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.telemetry import Metrics, app_metrics, endpoint_label

REQUEST_ID_HEADER = "X-Request-ID"
_REQUEST_ID_BYTES = REQUEST_ID_HEADER.lower().encode()
# A caller's id is kept only when it cannot smuggle anything into logs or headers.
_SANE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# The generator of request ids: a private one, so that a library (or a test framework) seeding the `random` module's
# global generator cannot make ids repeat (hypothesis seeds it for every example: the fuzz bench's access lines all
# carried one id). Seeded from os.urandom here and again in every forked child (solver workers), as the global one is.
_request_ids = random.Random()
if hasattr(os, "register_at_fork"):  # (POSIX)
    os.register_at_fork(after_in_child=_request_ids.seed)
_ACCESS_LOGGER = "trimtab.access"
QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})

request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "trimtab_request_id", default=None
)
log = logging.getLogger("trimtab")
access_log = logging.getLogger(_ACCESS_LOGGER)

# Attributes every LogRecord has; anything else on a record came from `extra=` and is written as a field.
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None) or request_id_var.get()
        if request_id:
            entry["request_id"] = request_id
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and key not in entry:
                entry[key] = value
        if record.exc_info:
            entry["exc_type"] = record.exc_info[0].__name__ if record.exc_info[0] else None
            entry["traceback"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class StderrHandler(logging.StreamHandler):
    """A stream handler that writes to whatever `sys.stderr` is when a record comes (test runners swap it)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JsonFormatter())

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _: Any) -> None:
        pass


def configure_json_logging(level: str = "info") -> None:
    """JSON lines on stderr for every logger (one handler on the root, added once however many apps are made), the
    `trimtab` loggers at `level`; other libraries keep the root's level (warning), so their chatter stays out."""
    root = logging.getLogger()
    if not any(isinstance(h.formatter, JsonFormatter) for h in root.handlers):
        root.addHandler(StderrHandler())
    logging.getLogger("trimtab").setLevel(level.upper())


def json_log_config(level: str = "info") -> dict[str, Any]:
    """A `logging.config.dictConfig` for uvicorn (`log_config=`): its startup and error lines as JSON too (the
    `trimtab` loggers reach the same root handler; `configure_json_logging` then finds it and adds none)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "handlers": {"stderr": {"()": f"{__name__}.StderrHandler"}},
        "root": {"handlers": ["stderr"], "level": "WARNING"},
        "loggers": {
            "uvicorn": {"level": level.upper()},
            "uvicorn.error": {"level": level.upper()},
            "trimtab": {"level": level.upper()},
        },
    }


def _request_headers(scope: Scope) -> tuple[str, int]:
    """The request's id (see the module docstring) and its declared body length (0 when not a number), from one pass
    over its headers."""
    request_id: str | None = None
    declared: int | None = None
    for name, value in scope.get("headers", ()):
        if name == _REQUEST_ID_BYTES and request_id is None:
            supplied = value.decode("latin-1")
            if _SANE_REQUEST_ID.match(supplied):
                request_id = supplied
        elif name == b"content-length" and declared is None and value.isdigit():
            declared = int(value)
    if request_id is None:
        # A random 128-bit id in uuid4().hex's format. Not a secret (it is echoed and logged), so Python's generator
        # (_request_ids) serves: 0.3 us where os.urandom's system call cost 8 us on this machine.
        request_id = f"{_request_ids.getrandbits(128):032x}"
    return request_id, declared or 0


class RequestContextMiddleware:
    """The outermost of the app's own middleware: gives each HTTP request its id, echoes it, observes latency per
    route and status and the body size, and writes one JSON access line. `metrics`: the app's (else read from the
    request's app on each request)."""

    def __init__(self, app: ASGIApp, metrics: Metrics | None = None) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id, declared = _request_headers(scope)
        token = request_id_var.set(request_id)
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        status = 500
        response_started = False
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
            return message

        async def send_with_id(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status, response_started = message["status"], True
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != _REQUEST_ID_BYTES]
                message = {**message, "headers": [*headers, (_REQUEST_ID_BYTES, request_id.encode())]}
            await send(message)

        try:
            await self.app(scope, counting_receive, send_with_id)
        except Exception as exc:
            # Starlette would answer through the app's Exception handler from its outermost middleware, past this
            # one, so the answer would lack the request id: answer here through that same handler instead.
            handler = getattr(scope.get("app"), "exception_handlers", {}).get(Exception)
            if response_started or handler is None:
                log.exception("unhandled error on %s", scope.get("path", ""))
                raise  # half sent (all the server can do is close the connection), or nobody to answer
            response = await handler(Request(scope), exc)
            await response(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            endpoint = endpoint_label(scope)
            size = max(received, declared)
            metrics = self.metrics if self.metrics is not None else app_metrics(scope)
            if metrics is not None:
                metrics.record_access(endpoint, scope.get("method", ""), status, elapsed, size)
            # Probes and scrapes arrive every few seconds from every replica's watchers: their successes at debug.
            quiet = status < 400 and scope.get("path", "") in QUIET_PATHS
            level = logging.DEBUG if quiet else logging.INFO
            if access_log.isEnabledFor(level):  # (the line's fields are built only when it is written)
                access_log.log(
                    level,
                    "%s %s %d",
                    scope.get("method", ""),
                    scope.get("path", ""),
                    status,
                    extra={
                        "method": scope.get("method", ""),
                        "path": scope.get("path", ""),
                        "status": status,
                        "duration_ms": round(elapsed * 1000.0, 3),
                        "request_bytes": size,
                    },
                )
            request_id_var.reset(token)

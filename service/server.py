"""Run the service under uvicorn with the options that keep it whole: `python -m service.server [--host H --port P]`.

- The HTTP protocol is uvicorn's httptools one (its C parser, llhttp; `ProblemHttpToolsProtocol`), or its h11 one
  with TRIMTAB_HTTP_PARSER=h11 (`ProblemH11Protocol`), and the event loop uvloop where installed (uvicorn's `auto`),
  as `uvicorn[standard]` runs. Either way, requests that uvicorn rejects before the app sees them (a Content-Length
  that is not a number, malformed request lines or headers) answer an RFC 9457 problem document like every other
  error, instead of uvicorn's 400 text/plain.
- Every request head (request line and headers) must arrive within `request_head_timeout_s` of the connection's
  opening or of its last answer: a partial head gets a 408 problem and the connection is closed, a silent
  connection is closed (uvicorn times out neither, so idle sockets piled up: slowloris). A head longer than
  MAX_HEAD_BYTES (64 KiB) is refused at once (431; h11 refuses one past 16 KiB, 400). Idle keep-alive connections
  close after `timeout_keep_alive`; the app itself bounds body reads (408) and every plan request (time_limit_s +
  deadline_slack_s).
- SIGTERM: uvicorn stops accepting, lets requests in flight finish (each is bounded by its deadline; at most
  `timeout_graceful_shutdown`), then the app's lifespan kills the solver workers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from http import HTTPStatus
from operator import itemgetter
from typing import Any

import httptools
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from service.settings import get_settings

IDLE_KEEP_ALIVE_S = 5
# A request head (request line and headers) longer than this is refused (431): trimtab's clients send a few hundred
# bytes; proxies allow 8-64 KiB (nginx 4 x 8 KiB, Node.js 16 KiB, Kestrel 32 KiB).
MAX_HEAD_BYTES = 64 * 1024
GRACEFUL_SHUTDOWN_S = 10


class _ProblemAnswers:
    """What both HTTP protocols add to uvicorn's (the parser's own parts are in each subclass): unparseable requests
    answered with problem+json (connection closed after), and the request-head timer (see the module docstring)."""

    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    cycle: Any
    _head_timer: asyncio.TimerHandle | None = None
    _head_timeout_s: float  # request_head_timeout_s, read when the connection is made

    def _head_pending(self) -> bool:
        """Whether bytes of a request head have arrived and not yet its end."""
        raise NotImplementedError

    # The protocol's own hooks, extended (the mixin comes first in each protocol's bases: super() is uvicorn's).
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._head_timeout_s = get_settings().request_head_timeout_s
        self._arm_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)  # type: ignore[misc]

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _arm_head_timer(self) -> None:
        # One timer per request head: armed when the connection opens and when an answer ends (a few us a request).
        self._cancel_head_timer()
        if not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self._head_timeout_s, self._head_timed_out)

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or (self.cycle is not None and not self.cycle.response_complete):
            return  # a request in flight: its body and its deadline have limits of their own
        if not self._head_pending():
            self.transport.close()  # nothing sent: closed as an idle keep-alive connection is
            return
        self._send_problem_and_close(
            408,
            "Request Timeout",
            f"the request head did not arrive whole within {self._head_timeout_s:g} s",
        )

    def send_400_response(self, msg: str) -> None:
        self._send_problem_and_close(400, "Bad request", f"unparseable HTTP request: {msg}")

    def _send_problem_and_close(self, status: int, title: str, detail: str) -> None:
        body = json.dumps(
            {"type": "about:blank", "title": title, "status": status, "detail": detail}
        ).encode()
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode()
            + b"content-type: application/problem+json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n"
            b"connection: close\r\n\r\n"
        )
        self.transport.write(head + body)
        self.transport.close()


class ProblemH11Protocol(_ProblemAnswers, H11Protocol):
    """uvicorn's h11 protocol (pure Python) with problem+json answers and the request-head timer
    (TRIMTAB_HTTP_PARSER=h11)."""

    def _head_pending(self) -> bool:
        buffered, _ = self.conn.trailing_data  # bytes received and not yet a whole head
        return bool(buffered)


class _UnparseableRequest(Exception):
    """A request head the parser accepted and HTTP does not (raised from a parser callback)."""


class ProblemHttpToolsProtocol(_ProblemAnswers, HttpToolsProtocol):
    """uvicorn's httptools protocol (llhttp, in C) with problem+json answers and the request-head timer: the default,
    the protocol `uvicorn --http auto` picks. Measured against h11 under the throughput benchmark's load (30 Nov
    2026, 3 rounds each, uvloop for both): the service process spent 0.57-0.63 ms of CPU a small plan instead of
    0.75-0.78 ms."""

    _head_open = False  # bytes of a request head received, not yet its end (llhttp's callbacks say)
    # The bytes of the open head counted so far: every chunk read while it stays open, except the one it began in
    # (where it starts in that chunk is not known; that chunk is at most what one read returns).
    _head_bytes = 0
    _head_began = False  # a head began in the chunk being parsed

    def on_message_begin(self) -> None:
        self._head_open, self._head_bytes, self._head_began = True, 0, True
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._head_open = False
        # RFC 9112, 3.2: a server MUST answer 400 to an HTTP/1.1 request without Host (h11 does; llhttp does not).
        # Raised out of the parser (it stops there; `data_received` answers), so no request cycle starts.
        if b"host" not in map(itemgetter(0), self.headers) and self.parser.get_http_version() == "1.1":
            raise _UnparseableRequest("an HTTP/1.1 request needs a Host header")
        super().on_headers_complete()

    def _head_pending(self) -> bool:
        return self._head_open

    def data_received(self, data: bytes) -> None:
        # uvicorn's, but the 400 names what llhttp found ("Content-Length can't be present with
        # Transfer-Encoding", "Invalid header value char", ...) instead of "Invalid HTTP request received."
        self._unset_keepalive_if_required()
        self._head_began = False
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        except httptools.HttpParserError as exc:
            # (a callback's own refusal comes wrapped: the parser raises HttpParserCallbackError from it)
            reason = exc.__context__ if isinstance(exc.__context__, _UnparseableRequest) else exc
            self.logger.warning("Invalid HTTP request received: %s", reason)
            self.send_400_response(str(reason) or "invalid HTTP request")
            return
        # h11 refuses a head that grows past 16 KiB unfinished; llhttp reads one for as long as it comes (90 MiB in
        # the 10 s of the head timer, measured, from one connection).
        if self._head_open and not self._head_began:
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._send_problem_and_close(
                    431,
                    "Request Header Fields Too Large",
                    f"the request head is longer than {MAX_HEAD_BYTES} bytes",
                )


def http_protocol(parser: str = "httptools") -> type[asyncio.Protocol]:
    """The protocol class of the `http_parser` setting."""
    return ProblemH11Protocol if parser == "h11" else ProblemHttpToolsProtocol


def uvicorn_options() -> dict[str, Any]:
    """The uvicorn options of a trimtab server (also for `uvicorn.run` callers and the CLI)."""
    return {
        "http": http_protocol(get_settings().http_parser),
        "timeout_keep_alive": IDLE_KEEP_ALIVE_S,
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_S,
    }


def run_server(host: str | None = None, port: int | None = None, workers: int | None = None) -> None:
    """Serve the app under uvicorn with these options and JSON logs (`python -m service.server`, `trimtab serve`)."""
    from service.logs import json_log_config

    settings = get_settings()
    uvicorn.run(
        "service.main:app",
        host=host or settings.host,
        port=port or settings.port,
        workers=workers or settings.workers,
        log_config=json_log_config(settings.log_level),
        access_log=False,  # service.logs writes one JSON line per request, with its request id
        **uvicorn_options(),
    )


def main(argv: list[str] | None = None) -> None:
    settings = get_settings()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default=settings.host)
    parser.add_argument("--port", type=int, default=settings.port)
    parser.add_argument("--workers", type=int, default=settings.workers)
    args = parser.parse_args(argv)
    run_server(args.host, args.port, args.workers)


if __name__ == "__main__":
    main()

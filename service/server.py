"""Run the service under uvicorn with the options that keep it whole: `python -m service.server [--host H --port P]`.

- `ProblemH11Protocol`: requests that uvicorn rejects before the app sees them (a Content-Length that is not a
  number, malformed request lines or headers) answer an RFC 9457 problem document like every other error, instead
  of uvicorn's 400 text/plain.
- Every request head (request line and headers) must arrive within `request_head_timeout_s` of the connection's
  opening or of its last answer: a partial head gets a 408 problem and the connection is closed, a silent
  connection is closed (uvicorn times out neither, so idle sockets piled up: slowloris). Idle keep-alive connections
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
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from service.settings import get_settings

IDLE_KEEP_ALIVE_S = 5
GRACEFUL_SHUTDOWN_S = 10


class ProblemH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, answering unparseable requests with problem+json (connection closed after), and closing
    connections that do not send a whole request head in time (see the module docstring)."""

    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timeout_s = get_settings().request_head_timeout_s
        self._arm_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

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
        buffered, _ = self.conn.trailing_data  # bytes received and not yet a whole head
        if not buffered:
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


def uvicorn_options() -> dict[str, Any]:
    """The uvicorn options of a trimtab server (also for `uvicorn.run` callers and the CLI)."""
    return {
        "http": ProblemH11Protocol,
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

"""Run the service under uvicorn with the options that keep it whole: `python -m service.server [--host H --port P]`.

- `ProblemH11Protocol`: requests that uvicorn rejects before the app sees them (a Content-Length that is not a
  number, malformed request lines or headers) answer an RFC 9457 problem document like every other error, instead
  of uvicorn's 400 text/plain.
- Idle keep-alive connections close after `timeout_keep_alive`; the app itself bounds body reads (408) and every
  plan request (time_limit_s + deadline_slack_s).
- SIGTERM: uvicorn stops accepting, lets requests in flight finish (each is bounded by its deadline; at most
  `timeout_graceful_shutdown`), then the app's lifespan kills the solver workers.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from service.settings import get_settings

IDLE_KEEP_ALIVE_S = 5
GRACEFUL_SHUTDOWN_S = 10


class ProblemH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, answering unparseable requests with problem+json (connection closed after)."""

    def send_400_response(self, msg: str) -> None:
        body = json.dumps(
            {
                "type": "about:blank",
                "title": "Bad request",
                "status": 400,
                "detail": f"unparseable HTTP request: {msg}",
            }
        ).encode()
        head = (
            b"HTTP/1.1 400 Bad Request\r\n"
            b"content-type: application/problem+json\r\n"
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

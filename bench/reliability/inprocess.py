"""CPU per small plan request inside the service process, without HTTP: the whole ASGI app driven on one event loop
as uvicorn drives it (middleware, validation, solver, validator, answer, metrics), on the throughput benchmark's
bodies (bench/reliability/throughput.py: 10 nodes x 100 units, budget 10). Beside it a hash of every answer (the
solver's clock `solve_ms` left out), so that a change meant to make a request cheaper can show it answers the same.

    python -m bench.reliability.inprocess [--algorithm flux] [--requests 2000] [--repeats 5] [--bare]
    python -m bench.reliability.inprocess --profile tottime   # cProfile of the same loop, top 40

Process CPU time per request, the best of the repeats (the machine is shared: the minimum is the least disturbed).
The throughput ratio itself is measured over HTTP by bench/reliability/throughput.py; this is the tool to find and
check where a small request's CPU goes.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import json
import os
import time
from collections.abc import Callable
from typing import Any

from bench.reliability.throughput import PLAN, snapshot

Receive = Callable[[], Any]


def drive(app: Any, bodies: list[bytes], answers: list[bytes] | None = None) -> Callable[[int], None]:
    """A function running n POSTs of the bodies (cycling) through the app on one event loop."""
    loop = asyncio.new_event_loop()

    async def one(body: bytes) -> None:
        sent = False
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.sleep(3600)  # the client never disconnects
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": PLAN,
            "raw_path": PLAN.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [
                (b"host", b"127.0.0.1"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 2),
            "app": app,
        }
        await app(scope, receive, send)
        if answers is not None:
            answers.append(b"".join(chunks))

    async def run(n: int) -> None:
        for i in range(n):
            await one(bodies[i % len(bodies)])

    return lambda n: loop.run_until_complete(run(n))


def answers_hash(answers: list[bytes]) -> str:
    """sha256 (8 hex digits) of the answers without the solver's clock."""
    digest = hashlib.sha256()
    for raw in answers:
        answer = json.loads(raw)
        if isinstance(answer, dict):
            answer.pop("solve_ms", None)
        digest.update(json.dumps(answer, sort_keys=True).encode())
    return digest.hexdigest()[:8]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--algorithm", default="flux")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--bodies", type=int, default=64)
    parser.add_argument("--bare", action="store_true", help="the bare FastAPI endpoint instead of trimtab")
    parser.add_argument(
        "--profile", metavar="SORT", help="cProfile the loop, sorted by SORT (tottime, cumulative)"
    )
    args = parser.parse_args()
    os.environ.setdefault("TRIMTAB_LOG_LEVEL", "warning")
    bodies = [snapshot(seed, {"name": args.algorithm}, None) for seed in range(args.bodies)]
    if args.bare:
        from bench.reliability.bare_app import app
    else:
        from service.main import create_app
        from solvers.compiled import warm_up

        app = create_app()
        warm_up()  # the compiled kernels, as the service's lifespan loads them
    answers: list[bytes] = []
    drive(app, bodies, answers)(len(bodies))  # warm-up: lazy imports, caches; and the answers hashed
    gc.freeze()  # as the service's lifespan does
    run = drive(app, bodies)
    run(200)
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        run(args.requests)
        profiler.disable()
        pstats.Stats(profiler).sort_stats(args.profile).print_stats(40)
        return
    per_request_us = []
    for _ in range(args.repeats):
        start = time.process_time()
        run(args.requests)
        per_request_us.append((time.process_time() - start) / args.requests * 1e6)
    print(
        f"{'bare' if args.bare else 'trimtab ' + args.algorithm}: in-process CPU {min(per_request_us):.1f} us/request "
        f"(best of {args.repeats}: {' '.join(f'{u:.0f}' for u in per_request_us)}); "
        f"answers hash {answers_hash(answers)} over {len(answers)} bodies; load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()

"""Small plan requests planned in the service process, on the event loop, under a watchdog.

Why inline: a small request (service.planning.is_small: a 10 x 100 flux snapshot, 0.8 ms of CPU from parse to
serialization) cost more CPU in the round trip to a worker process than in the plan itself (the body pickled and
piped, the answer piped back, two context switches: 0.58 ms in the service process plus 1.21 ms in the worker,
measured). Why on the event loop and not on a thread: the work is Python holding the GIL almost throughout, so a
thread would not let the loop serve anything meanwhile; the hop would only add a thread switch and GIL hand-overs.
The loop is blocked for the duration of one small plan, bounded by construction (the size caps and the algorithms'
move caps in service.planning) and measured in milliseconds at the caps.

Defence in depth (a bug, or a machine so loaded that the bound does not hold): the work runs under a wall-clock
alarm of INLINE_WATCHDOG_S (SIGALRM, main thread only). When it fires, the inline attempt is abandoned (its objects
are request-local) and the request goes to a worker process as every large request does, under the worker's hard
deadline: a runaway still costs one 503 and never a pinned event loop. Where signals cannot be used (not the main
thread, e.g. an app driven by a test client's portal thread, or no SIGALRM on the platform) nothing runs inline.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.errors import ProblemError
from service.middleware import RECEIVED_AT
from service.planning import PATH, PlanJob, may_be_small, plan_if_small
from service.pool import DeadlineExceeded, SolverPool, WorkerAnswer, WorkerDied
from service.settings import Settings
from service.telemetry import Metrics, record_plan_answer

log = logging.getLogger("trimtab")

# 50 ms: over 5x the slowest small request measured at the caps (8.8 ms CPU, bench/reliability/inline_worst.py) and
# 60x a typical one; far below any deadline (time_limit_s + 1 s), so an abandoned attempt leaves the worker all but
# all of its time.
INLINE_WATCHDOG_S = 0.05


class InlineOverrun(BaseException):
    """Raised by the alarm into the inline work (a BaseException: no `except Exception` of the plan code takes it)."""


_armed = False


def _on_alarm(signum: int, frame: object) -> None:
    if _armed:
        raise InlineOverrun


_installed = False


def available() -> bool:
    """Whether this thread can plan inline: the main thread (where signal handlers run) of a platform with SIGALRM.
    Installs the alarm handler on first use (uvicorn installs none for SIGALRM)."""
    global _installed
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return False
    if not _installed:
        signal.signal(signal.SIGALRM, _on_alarm)
        _installed = True
    return True


def plan_here(settings: Settings, job: PlanJob) -> WorkerAnswer | None:
    """The answer of a small request planned in this process, or None: inline plans are off, the body cannot
    hold a small request (service.planning.may_be_small, asked before the watchdog is armed), this thread
    cannot run the watchdog, or `plan_inline` gave up (not small, the body too large included, or the watchdog
    fired).

    Small requests stay here even while the loop is the bottleneck: sending some to idle workers then measured 5 %
    more plans a second but twice the p99 latency (56 ms against 25-28 ms, bare FastAPI 30 ms; 25 Nov, quiet
    machine)."""
    if not settings.inline_small_plans or not may_be_small(job.body) or not available():
        return None
    return plan_inline(settings, job)


def plan_inline(
    settings: Settings, job: PlanJob, watchdog_s: float = INLINE_WATCHDOG_S
) -> WorkerAnswer | None:
    """The answer of a small request planned here, or None: not small (see service.planning.plan_if_small), or the
    watchdog fired. Call only where `available()` is true."""
    global _armed
    try:
        try:
            _armed = True
            signal.setitimer(signal.ITIMER_REAL, watchdog_s)
            return plan_if_small(settings, job)
        finally:
            # Disarm first: an alarm landing after this line is a no-op; one landing before it raises here, inside
            # the outer try. The timer is one-shot, so nothing is left pending either way.
            _armed = False
            signal.setitimer(signal.ITIMER_REAL, 0.0)
    except InlineOverrun:
        return None


async def plan_in_worker(pool: SolverPool, settings: Settings, job: PlanJob) -> WorkerAnswer:
    """The answer of a plan request planned by a solver worker, under the hard deadline; ProblemError (503) when the
    pool is full, the deadline passes or the worker dies."""
    # Until the worker has parsed the body it does not know time_limit_s: the longest allowed limit bounds that part.
    provisional = job.started + settings.max_time_limit_s + settings.deadline_slack_s
    try:
        return await pool.run_isolated(job, provisional)
    except DeadlineExceeded as exc:
        raise ProblemError(
            503,
            "Deadline exceeded",
            f"{exc}: the request was stopped at time_limit_s + {settings.deadline_slack_s:g} s; send a longer "
            "time_limit_s or a smaller snapshot, or retry when the service is less busy",
            headers={"Retry-After": str(pool.retry_after_s)},
        ) from exc
    except WorkerDied as exc:
        log.error("solver worker died on %s: %s", PATH, exc)
        raise ProblemError(
            503,
            "Solver worker died",
            "the worker planning this request exited (it was replaced); retry",
            headers={"Retry-After": str(pool.retry_after_s)},
        ) from exc


class InlinePlans:
    """ASGI middleware, the innermost of the app's own (inside auth and the body limits): answers every plan request
    whose body has arrived whole (the body limit middleware reads it), before FastAPI's routing, its dependency
    solving and its request and response objects: a small one planned here (see `plan_here`; about 40 us of the
    ~0.5 ms a small plan costs in process), any other by a solver worker (`plan_in_worker`; 100 us of the service's
    ~0.45 ms per worker request). Anything else goes on to the app (with the body replayed), where the plan route
    does the same.

    The answer is the route's, byte for byte (status, body, headers in Starlette's order: the answer's own, then
    content-length and content-type; a problem through the app's own ProblemError handler), counted in the same
    metrics, and the request names its route for the access metrics as after routing."""

    def __init__(
        self, app: ASGIApp, settings: Settings, pool: SolverPool, route: Any, metrics: Metrics | None = None
    ) -> None:
        self.app, self.settings, self.pool, self.metrics = app, settings, pool, metrics
        self.route = route  # the plan route (its template labels the request's metrics, as after routing)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != PATH or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        message = await receive()
        if message["type"] != "http.request" or message.get("more_body", False):  # not whole: to the route
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return message
                return await receive()

            await self.app(scope, replay, send)
            return
        scope["route"] = self.route
        started = scope.get("state", {}).get(RECEIVED_AT, time.monotonic())
        job = PlanJob(message.get("body", b""), started)
        answer = plan_here(self.settings, job)
        planned_here = answer is not None
        if answer is None:
            try:
                answer = await plan_in_worker(self.pool, self.settings, job)
            except ProblemError as exc:
                handler = scope["app"].exception_handlers[ProblemError]
                response = await handler(Request(scope, receive, send), exc)
                await response(scope, receive, send)
                return
        record_plan_answer(scope, answer, inline=planned_here, metrics=self.metrics)
        headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers.items()]
        headers += [
            (b"content-length", str(len(answer.body)).encode("latin-1")),
            (b"content-type", answer.media_type.encode("latin-1")),
        ]
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        await send({"type": "http.response.body", "body": answer.body})

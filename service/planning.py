"""One plan request from body bytes to response bytes, as a worker process runs it (see service.pool).

Everything heavy happens here, off the event loop and under the request's deadline: JSON parsing, validation, the
cross-field checks, the solver, the statistics, the independent validator and the serialization. The deadline of a
request is `started + time_limit_s + deadline_slack_s` (1 s): the solver gets what is left of `time_limit_s` after the
parse, minus what the statistics, validator and serialization are estimated to need, so it hands its best plan over
early enough for the whole answer to make the deadline.
"""

from __future__ import annotations

import gc
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pydantic_core
from pydantic import TypeAdapter, ValidationError

from schemas.assignment import (
    AssignmentRequest,
    AssignmentRequestFields,
    UnitColumns,
    reference_errors,
    request_fields,
)
from schemas.common import Problem
from service.adapters import plan_answer, to_instance
from service.algorithms import REGISTRY
from service.errors import (
    PROBLEM_JSON,
    ProblemError,
    invalid_snapshot,
    problem_bytes,
    problem_of,
    validation_problem,
)
from service.pool import WorkerAnswer
from service.settings import Settings
from solvers.errors import UnsolvableRequest
from solvers.plan_check import check_plan

_Answer = TypeVar("_Answer", WorkerAnswer, WorkerAnswer | None)
log = logging.getLogger("trimtab")
PATH = "/v1/assignment/plan"

# What the statistics, the validator and the serialization cost after the solver, measured on this machine at the
# maximum sizes (bench/reliability/deadlines.py) with a 2x margin: seconds per unit, per unit load value and per node
# load value (nodes x windows: the node series, their variances and correlations are built twice, for the answer's
# statistics and by the independent validator). Measured 25 Nov 2026 at load 1-2: 10,000 nodes x 12,500 units x 400
# windows answered in 1.4-2.3 s (4M node values), 400 x 1,220 x 4,096 in 0.4-1.1 s (1.6M), 10,000 x 250,000 x 1 in
# 0.3-0.7 s. Without the node term the reserve was 1.0 s at the nodes cap and three algorithms overran the deadline.
POST_SOLVE_BASE_S = 0.05
POST_SOLVE_PER_UNIT_S = 5e-6
POST_SOLVE_PER_VALUE_S = 1e-7
POST_SOLVE_PER_NODE_VALUE_S = 5e-7
# The measured reserve is stretched by 1 / (the share of a core the worker got while parsing), at most 4x.
CORE_SHARE_MIN_WALL_S = 0.02
MIN_CORE_SHARE = 0.25
# Statistics + validator + serialization cost 1.1x to 1.9x the parse + checks of the same request in CPU time at the
# caps (1.1x for 1,220 units x 4,096 windows, 1.2x for 250,000 units all moved, 1.9x for 10,000 nodes x 400
# windows), and up to 2.4x in wall time at the nodes cap on a loaded machine (bench/reliability/deadlines.py); 3x
# leaves room for the answer's trip back through the service. The adapter costs about 0.25x.
POST_SOLVE_PER_PARSE = 3.0
ADAPT_PER_PARSE = 0.3


# Small requests are planned in the service process, on the event loop (service.inline), instead of in a worker
# process: for them the round trip to a worker (pickling, a pipe each way, two context switches, the worker's wake-up)
# cost more CPU than the plan itself. Small means bounded by construction: a body of at most INLINE_MAX_BODY_BYTES
# (its parse is bounded), at most INLINE_MAX_UNITS units, INLINE_MAX_NODES nodes and single loads (no series), and an
# algorithm of INLINE_ALGORITHMS: polynomial baselines with a hard move cap (4 x units + nodes) and no search that
# runs until time_limit_s. The caps are from measurement (bench/reliability/inline_worst.py, CPU of the whole
# request, parse to serialization, on adversarial snapshots at the caps: all units on one node, ties, no budget): at
# 128 units and 16 nodes the slowest is flux with every unit on one of 16 nodes, 7.3 to 8.8 ms (load 2); at 256
# units and 64 nodes it was 46 ms, too long to hold the event loop. A 10 x 100 flux request with a budget: 0.8 ms.
INLINE_MAX_BODY_BYTES = 32 * 1024
INLINE_MAX_UNITS = 128
INLINE_MAX_NODES = 16
INLINE_ALGORITHMS = frozenset({"flux", "largest-load-first", "round-robin", "random"})
_INLINE_NAMES = tuple(f'"{name}"'.encode() for name in sorted(INLINE_ALGORITHMS))


# A small body is validated into its fields' values (plain dicts, no model object per unit: a fifth of the
# validation's cost, and its freeing, less on a 10 x 100 snapshot), by exactly the models' rules.
_FIELDS = TypeAdapter(AssignmentRequestFields)


def is_small(request: dict[str, Any]) -> bool:
    """Whether a parsed request (its fields' values) is small enough to plan in the service process (see
    INLINE_MAX_BODY_BYTES; the body cap itself is checked before the parse, in plan_if_small)."""
    return (
        request["algorithm"].name in INLINE_ALGORITHMS
        and len(request["units"]) <= INLINE_MAX_UNITS
        and len(request["nodes"]) <= INLINE_MAX_NODES
        and _windows(request) == 1
    )


@dataclass(frozen=True)
class PlanJob:
    """What the service sends a worker: the raw body and when the request started (time.monotonic)."""

    body: bytes
    started: float


def post_solve_reserve_s(n_units: int, n_values: int, n_node_values: int) -> float:
    """Seconds to keep after the solver for the answer: n_values = units x windows, n_node_values = nodes x windows."""
    return (
        POST_SOLVE_BASE_S
        + POST_SOLVE_PER_UNIT_S * n_units
        + POST_SOLVE_PER_VALUE_S * n_values
        + POST_SOLVE_PER_NODE_VALUE_S * n_node_values
    )


def core_share(wall_s: float, cpu_s: float) -> float:
    """The share of a core this process got over a stretch of CPU-bound work (its CPU time over its wall time), in
    [MIN_CORE_SHARE, 1]; 1 for stretches too short to tell (under CORE_SHARE_MIN_WALL_S)."""
    if wall_s < CORE_SHARE_MIN_WALL_S:
        return 1.0
    return min(1.0, max(MIN_CORE_SHARE, cpu_s / wall_s))


def resolve_time_limit(requested: float | None, settings: Settings) -> float:
    if requested is None:
        return settings.default_time_limit_s
    if requested > settings.max_time_limit_s:
        raise invalid_snapshot([(("body", "time_limit_s"), f"must be at most {settings.max_time_limit_s} s")])
    return requested


def size_errors(request: dict[str, Any], settings: Settings) -> list[tuple[tuple[str | int, ...], str]]:
    """The service's size caps (tighter than the schema's when configured so), on the request's fields' values: each
    bounds a measured cost."""
    errors: list[tuple[tuple[str | int, ...], str]] = []
    n_nodes = len(request["nodes"])
    if len(request["units"]) > settings.max_units:
        errors.append((("body", "units"), f"at most {settings.max_units} units per request"))
    if n_nodes > settings.max_nodes:
        errors.append((("body", "nodes"), f"at most {settings.max_nodes} nodes per request"))
    windows = _windows(request)
    if windows > 1 and n_nodes * windows > settings.max_node_values:
        errors.append(
            (
                ("body", "nodes"),
                f"nodes x windows = {n_nodes} x {windows} exceeds the limit of {settings.max_node_values} "
                "node load values (the statistics keep one series per node)",
            )
        )
    return errors


def _windows(request: dict[str, Any]) -> int:
    first = request["units"][0]["load"]
    return len(first) if isinstance(first, list) else 1


# The phases of a plan request, in order, as the Server-Timing header names them: receive = upload and wait for a
# worker, parse, check, adapt, solve, answer = statistics, validator and serialization.
PHASES = ("receive", "parse", "check", "adapt", "solve", "answer")
_SERVER_TIMING = ", ".join(f"{phase};dur=%.1f" for phase in PHASES)


def server_timing(starts: list[float]) -> str:
    """W3C Server-Timing from the start of each of PHASES and the end of the last (time.monotonic()): where a
    request's time went, for callers and benchmarks. (One %-format of a fixed template: a third of the CPU of one
    f-string per phase.)"""
    return _SERVER_TIMING % tuple([1000.0 * (end - start) for start, end in itertools.pairwise(starts)])


def _problem(problem: Problem, headers: dict[str, str] | None = None) -> WorkerAnswer:
    return WorkerAnswer(problem.status, problem_bytes(problem), PROBLEM_JSON, headers or {})


def plan_task(settings: Settings, job: PlanJob, announce: Callable[[float], None]) -> WorkerAnswer:
    """The whole plan request, as a worker process runs it; never raises (a bug becomes a 500 problem without
    internals)."""
    return _guarded(settings, lambda: _plan(settings, job, _parse(job), announce))


def may_be_small(body: bytes) -> bool:
    """Whether a body may hold a small request, from its bytes alone: at most INLINE_MAX_BODY_BYTES (a larger one is
    not even scanned), and an inline algorithm's name in it as a JSON string. A body without one (a milp request)
    cannot be small and goes to a worker undecoded (a scan of a few us instead of the 30 us decode and the
    watchdog's set-up). Only a shortcut: a name spelled with escapes goes to the worker too, which answers the
    same. Searched from the end (the same answer as `in`): the request's fields come in the schema's order, the
    algorithm after the nodes and units, in the bodies of our clients and of the examples, and a search from the
    start read the whole units list first (2.9 us for a 10 x 100 body against 0.1)."""
    return len(body) <= INLINE_MAX_BODY_BYTES and any(body.rfind(name) >= 0 for name in _INLINE_NAMES)


def plan_if_small(settings: Settings, job: PlanJob) -> WorkerAnswer | None:
    """The whole plan request when it is small (see `is_small`), else None (the caller then sends the job to a worker
    process). A body over INLINE_MAX_BODY_BYTES is not even parsed; one that does not name an inline algorithm goes
    to the worker after the 30 us decode (callers ask `may_be_small` first, which spares that); one that does is
    answered here whatever else it holds, bad input included: the parse of a body this small is itself small.
    The same code as `plan_task` from the parse on, so both give the same answer (tests/test_service_inline.py)."""

    def small_plan() -> WorkerAnswer | None:
        if len(job.body) > INLINE_MAX_BODY_BYTES:  # not even parsed here
            return None
        parse_started = (time.monotonic(), time.process_time())
        # A valid body straight into its fields' values (no JSON data built on the way, no model objects: see
        # _FIELDS), which the validator reads too.
        try:
            fields = _FIELDS.validate_json(job.body)
        except ValidationError:
            fields = None
        if fields is not None:
            if not is_small(fields):
                return None
            return _plan(settings, job, _Parsed(fields, fields, parse_started), lambda d: None)
        # Anything else (broken JSON, a wrong field, another algorithm's body) as the worker parses it: the same
        # problem, named the same way, or None for a body the worker plans.
        raw = _decode(job.body)
        if isinstance(raw, WorkerAnswer):
            return raw
        algorithm = raw.get("algorithm") if isinstance(raw, dict) else None
        if not isinstance(algorithm, dict) or algorithm.get("name") not in INLINE_ALGORITHMS:
            return None
        parsed = _validate(raw, parse_started)
        if isinstance(parsed, _Parsed) and not is_small(parsed.fields):
            return None
        return _plan(settings, job, parsed, lambda deadline: None)

    return _guarded(settings, small_plan)


def _guarded(settings: Settings, plan: Callable[[], _Answer]) -> _Answer:
    """Run a plan request with its error handling.

    The cyclic garbage collector is off for the request: parsing 250,000 units creates as many model objects, and
    the collections their allocations trigger (each walking every object alive) cost more than the parse itself
    (3x measured at the unit cap). A request's objects hold no cycles to speak of and are freed by reference counting
    when it ends; the collector runs again between requests."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return plan()
    except ProblemError as exc:
        return _problem(problem_of(exc, PATH), exc.headers)
    except MemoryError:
        # The per-worker memory limit: the request needs more than a worker may use. Replace the worker.
        answer = _problem(
            Problem(
                title="Request too large",
                status=413,
                detail=f"planning this request needs more than the per-request memory limit of "
                f"{settings.worker_memory_mb} MiB; send fewer units, nodes or windows",
                instance=PATH,
            )
        )
        answer.recycle = True
        return answer
    except Exception:
        log.exception("unhandled error on %s", PATH)
        return _problem(
            Problem(
                title="Internal error",
                status=500,
                detail="The service failed on a valid request; this is a bug in trimtab.",
                instance=PATH,
            )
        )
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class _Parsed:
    # The request as JSON data, what the independent validator reads: the decoded body, or a small body's fields'
    # values (the values the client sent, as validated, the top-level defaults filled in, a node's or unit's field
    # left out as the body left it; the validator applies the defaults to a body that omits them).
    raw: Any
    # the request's fields' values (schemas.assignment.request_fields): what is planned
    fields: dict[str, Any]
    parse_started: tuple[float, float]  # (time.monotonic(), time.process_time()) when the parse began


def _parse(job: PlanJob) -> _Parsed | WorkerAnswer:
    """The body as JSON data and as the request model, or the 400/422 problem naming what is wrong."""
    parse_started = (time.monotonic(), time.process_time())
    raw = _decode(job.body)
    return raw if isinstance(raw, WorkerAnswer) else _validate(raw, parse_started)


def _decode(body: bytes) -> Any:
    """The body as JSON data, or the 400 problem (a WorkerAnswer)."""
    try:
        # pydantic's JSON parser (Rust): 30 us against json.loads' 50 us for a 10 x 100 snapshot. Only the keys go
        # through its string cache (a few dozen field names): caching the values too (ids, mostly unique) measured
        # 2 us slower on a 10 x 100 snapshot and 50 % slower on 100,000 units (55 against 37 ms); the same data.
        return pydantic_core.from_json(body, cache_strings="keys")
    except ValueError as exc:
        return _problem(
            validation_problem([{"type": "json_invalid", "loc": ("body",), "msg": str(exc)}], PATH)
        )


def _validate(raw: Any, parse_started: tuple[float, float]) -> _Parsed | WorkerAnswer:
    """The request model of JSON data, or the 422 problem naming each wrong field."""
    try:
        request = AssignmentRequest.model_validate(raw)
    except ValidationError as exc:
        fields = [
            {**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False, include_input=False)
        ]
        return _problem(validation_problem(fields, PATH))
    return _Parsed(raw, request_fields(request), parse_started)


def _plan(
    settings: Settings, job: PlanJob, parsed: _Parsed | WorkerAnswer, announce: Callable[[float], None]
) -> WorkerAnswer:
    if isinstance(parsed, WorkerAnswer):
        return parsed
    raw, request = parsed.raw, parsed.fields
    starts = [job.started, parsed.parse_started[0], time.monotonic()]  # where each of PHASES began
    columns = UnitColumns(request["units"])  # (listed once for the checks and the adapter)
    errors = reference_errors(request, columns) + size_errors(request, settings)
    if errors:
        raise invalid_snapshot(errors)
    time_limit = resolve_time_limit(request["time_limit_s"], settings)
    deadline = job.started + time_limit + settings.deadline_slack_s
    announce(deadline)
    params = request["algorithm"]
    spec = REGISTRY[params.name]
    windows = _windows(request)
    n_units, n_nodes = len(request["units"]), len(request["nodes"])
    n_values = n_units * windows
    # What the statistics, the validator and the serialization will take: the measured cost per unit and value on a
    # quiet machine, stretched by the share of a core this process got while parsing (at load 4 on 2 cores about
    # half: the answer then takes twice as long), or what parsing this very request took times POST_SOLVE_PER_PARSE
    # when that is more (the parse scales with the same units and values, and carries the machine's current load).
    parse_s = time.monotonic() - parsed.parse_started[0]
    reserve = max(
        post_solve_reserve_s(n_units, n_values, n_nodes * windows)
        / core_share(parse_s, time.process_time() - parsed.parse_started[1]),
        POST_SOLVE_PER_PARSE * parse_s,
    )
    # When that cannot fit before the deadline, say so now (422 naming time_limit_s) rather than burn the worker
    # until it is killed.
    now = time.monotonic()
    if now + ADAPT_PER_PARSE * parse_s + reserve > deadline:
        at_least = now + ADAPT_PER_PARSE * parse_s + reserve - job.started - settings.deadline_slack_s
        raise invalid_snapshot(
            [
                (
                    ("body", "time_limit_s"),
                    f"{time_limit:g} s is too short to plan {n_units} units x {windows} "
                    f"windows here (parse, statistics, validation and serialization alone need about "
                    f"{at_least:.1f} s on this service now): send time_limit_s of at least {at_least:.1f}, or a "
                    "smaller snapshot",
                )
            ]
        )
    starts.append(time.monotonic())  # adapt
    instance = to_instance(request, columns)
    # The validator reads the JSON data (`raw`); when that is the fields' values themselves (a small body, see
    # _Parsed) it reads their unit columns listed above too. Nothing else below reads the fields: freed here,
    # `parsed` with them.
    raw_columns = columns if raw is request else None
    del request, columns, parsed
    # The solver's budget: at most time_limit_s, and it ends `reserve` before the deadline so the statistics, the
    # validator and the serialization fit; never below a token amount (the solver still returns its first plan).
    solver_budget = max(0.001, min(time_limit, deadline - time.monotonic() - reserve))
    starts.append(time.monotonic())  # solve
    started = time.perf_counter()
    try:
        plan = spec.solve(instance, params, solver_budget)
    except UnsolvableRequest as exc:
        raise invalid_snapshot([(exc.loc, exc.msg)]) from exc
    solve_s = time.perf_counter() - started
    starts.append(time.monotonic())  # answer
    # Plain data: the validator checks exactly what is then serialized (one JSON pass, in Rust).
    answer = plan_answer(instance, plan, spec.name, round(solve_s * 1000.0, 3))
    if settings.validate_plans:
        problems = check_plan(raw, answer, raw_columns)
        if problems:
            log.error("plan of %s failed validation: %s", spec.name, problems[:5])
            raise ProblemError(500, "Plan failed validation", "; ".join(problems[:5]))
    body = pydantic_core.to_json(answer)
    starts.append(time.monotonic())  # (the end)
    return WorkerAnswer(
        200,
        body,
        "application/json",
        headers={"Server-Timing": server_timing(starts)},
        algorithm=spec.name,
        plan_status=answer["status"],
        solve_s=solve_s,
        load_distance_before=answer["before"]["load_distance"],
        load_distance_after=answer["after"]["load_distance"],
        migrations=answer["migrations"],
    )

"""POST /v1/assignment/plan and GET /v1/algorithms."""

from __future__ import annotations

import logging
import time

from fastapi import APIRouter, Request, Response

from schemas.assignment import PlanResponse
from schemas.catalog import AlgorithmCatalog, AlgorithmInfo
from service import inline
from service.algorithms import REGISTRY
from service.errors import PROBLEM_RESPONSES, ProblemError
from service.middleware import RECEIVED_AT
from service.planning import PlanJob
from service.pool import DeadlineExceeded, SolverPool, WorkerAnswer, WorkerDied
from service.settings import Settings
from service.telemetry import record_plan_answer

router = APIRouter(tags=["assignment"])
log = logging.getLogger("trimtab")


# The body is parsed in a worker process (service.planning), not by FastAPI on the event loop; the OpenAPI document
# still names its schema (service.main adds AssignmentRequest to the components).
REQUEST_BODY = {
    "requestBody": {
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AssignmentRequest"}}},
        "required": True,
    }
}


@router.post(
    "/v1/assignment/plan",
    response_model=PlanResponse,
    responses=PROBLEM_RESPONSES,
    summary="Plan a (re)assignment of units to nodes",
    openapi_extra=REQUEST_BODY,
)
async def plan_assignment(request: Request) -> Response:
    # The whole request counts against its deadline, the body upload included.
    started = request.scope.get("state", {}).get(RECEIVED_AT, time.monotonic())
    settings: Settings = request.app.state.settings
    body = await request.body()
    pool: SolverPool = request.app.state.pool
    job = PlanJob(body, started)
    # Small requests are planned in this process (service.inline: cheaper than the trip to a worker, under a
    # watchdog), by the InlinePlans middleware before routing; here when it did not see the request (an app without
    # it); the rest, and any small one the watchdog stopped, in a worker process under the hard deadline.
    tried = request.scope.get("state", {}).get(inline.INLINE_TRIED, False)
    answer = None if tried else inline.plan_here(settings, job)
    planned_here = answer is not None
    if answer is None:
        answer = await _plan_in_worker(request, pool, settings, job)
    record_plan_answer(request.scope, answer, inline=planned_here)
    return Response(answer.body, answer.status, answer.headers, media_type=answer.media_type)


async def _plan_in_worker(
    request: Request, pool: SolverPool, settings: Settings, job: PlanJob
) -> WorkerAnswer:
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
        log.error("solver worker died on %s: %s", request.url.path, exc)
        raise ProblemError(
            503,
            "Solver worker died",
            "the worker planning this request exited (it was replaced); retry",
            headers={"Retry-After": str(pool.retry_after_s)},
        ) from exc


@router.get("/v1/algorithms", response_model=AlgorithmCatalog, summary="What each algorithm does and needs")
def list_algorithms() -> AlgorithmCatalog:
    return AlgorithmCatalog(
        algorithms=[
            AlgorithmInfo(
                name=spec.name,
                summary=spec.summary,
                paper=spec.paper,
                needs=list(spec.needs),
                parameters=spec.params.model_json_schema(),
            )
            for spec in REGISTRY.values()
        ]
    )

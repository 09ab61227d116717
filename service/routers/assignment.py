"""POST /v1/assignment/plan and GET /v1/algorithms."""

from __future__ import annotations

import logging
import time

from fastapi import APIRouter, Request

from schemas.assignment import AssignmentRequest, PlanResponse, reference_errors
from schemas.catalog import AlgorithmCatalog, AlgorithmInfo
from service.adapters import to_instance, to_response
from service.algorithms import REGISTRY
from service.errors import PROBLEM_RESPONSES, ProblemError, invalid_snapshot
from service.settings import Settings
from solvers.errors import UnsolvableRequest
from solvers.plan_check import check_plan

router = APIRouter(tags=["assignment"])
log = logging.getLogger("trimtab")


def resolve_time_limit(requested: float | None, settings: Settings) -> float:
    if requested is None:
        return settings.default_time_limit_s
    if requested > settings.max_time_limit_s:
        raise invalid_snapshot([(("body", "time_limit_s"), f"must be at most {settings.max_time_limit_s} s")])
    return requested


@router.post(
    "/v1/assignment/plan",
    response_model=PlanResponse,
    responses=PROBLEM_RESPONSES,
    summary="Plan a (re)assignment of units to nodes",
)
async def plan_assignment(body: AssignmentRequest, request: Request) -> PlanResponse:
    settings: Settings = request.app.state.settings
    errors = reference_errors(body)
    if len(body.units) > settings.max_units:
        errors.append((("body", "units"), f"at most {settings.max_units} units per request"))
    if len(body.nodes) > settings.max_nodes:
        errors.append((("body", "nodes"), f"at most {settings.max_nodes} nodes per request"))
    if errors:
        raise invalid_snapshot(errors)
    time_limit = resolve_time_limit(body.time_limit_s, settings)
    spec = REGISTRY[body.algorithm.name]
    metrics = request.app.state.metrics

    def work() -> PlanResponse:
        instance = to_instance(body)
        started = time.perf_counter()
        try:
            plan = spec.solve(instance, body.algorithm, time_limit)
        except UnsolvableRequest as exc:
            raise invalid_snapshot([(exc.loc, exc.msg)]) from exc
        solve_s = time.perf_counter() - started
        metrics.solve_seconds.labels("assignment", spec.name).observe(solve_s)
        response = to_response(instance, plan, spec.name, round(solve_s * 1000.0, 3))
        if settings.validate_plans:
            problems = check_plan(
                body.model_dump(mode="json"), response.model_dump(mode="json", by_alias=True)
            )
            if problems:
                log.error("plan of %s failed validation: %s", spec.name, problems[:5])
                raise ProblemError(500, "Plan failed validation", "; ".join(problems[:5]))
        return response

    response = await request.app.state.pool.run(work)
    metrics.record_plan("assignment", spec.name, response)
    return response


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

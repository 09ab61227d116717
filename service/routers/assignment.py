"""POST /v1/assignment/plan and GET /v1/algorithms."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request, Response

from schemas.assignment import PlanResponse
from schemas.catalog import AlgorithmCatalog, AlgorithmInfo
from service import inline
from service.algorithms import REGISTRY
from service.errors import PROBLEM_RESPONSES
from service.middleware import RECEIVED_AT
from service.planning import PlanJob
from service.settings import Settings
from service.telemetry import record_plan_answer

router = APIRouter(tags=["assignment"])


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
    job = PlanJob(await request.body(), started)
    # The InlinePlans middleware answers plan requests before routing (service.inline); here the same steps when it
    # did not (an app without it): a small request planned in this process, the rest in a worker process under the
    # hard deadline.
    answer = inline.plan_here(settings, job)
    planned_here = answer is not None
    if answer is None:
        answer = await inline.plan_in_worker(request.app.state.pool, settings, job)
    record_plan_answer(request.scope, answer, inline=planned_here)
    return Response(answer.body, answer.status, answer.headers, media_type=answer.media_type)


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

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

router = APIRouter(tags=["operations"])


# Each probe answers HEAD as GET (RFC 9110, 9.3.2: the same status and headers; the server sends no body), for the
# health checks that send HEAD (HAProxy's `option httpchk HEAD`, uptime monitors). Out of the OpenAPI document (one
# operation a path, for the generated clients). Each GET route is registered before its HEAD route: a request of
# another method gets its 405 from the first route of the path, whose Allow header must name the documented GET.
# Probes answer on the event loop (`async def`): a plain `def` would send each one through the thread pool, a thread
# hop that cost more CPU than the answer (in process 380 -> 80 us of CPU a probe, measured).
@router.head("/healthz", include_in_schema=False)
@router.get("/healthz", summary="Liveness")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.head("/readyz", include_in_schema=False)
@router.get(
    "/readyz",
    summary="Readiness: the solver pool accepts work",
    responses={503: {"description": "The solver pool is saturated", "content": {"application/json": {}}}},
)
async def readyz(request: Request) -> JSONResponse:
    pool = request.app.state.pool
    ready = pool.in_flight < pool.capacity
    return JSONResponse(
        {"status": "ready" if ready else "saturated", "in_flight": pool.in_flight, "capacity": pool.capacity},
        status_code=200 if ready else 503,
    )


@router.head("/metrics", include_in_schema=False, response_class=PlainTextResponse)
@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=PlainTextResponse,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
def metrics(request: Request) -> Response:
    return Response(generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST)

"""The FastAPI application: `uvicorn service.main:app`."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic import BaseModel

from schemas.assignment import AssignmentRequest
from schemas.splitter import SplitterRequest
from service.errors import PROBLEM_RESPONSES, install_problem_handlers
from service.inline import InlinePlans
from service.logs import RequestContextMiddleware, configure_json_logging
from service.middleware import BearerAuthMiddleware, BodyLimitMiddleware
from service.planning import PATH as PLAN_PATH
from service.planning import plan_task
from service.pool import SolverPool
from service.routers import assignment, health, splitter
from service.settings import Settings, get_settings
from service.telemetry import Metrics, fastapi_telemetry
from solvers.compiled import warm_up as compile_kernels
from solvers.linux_process import give_back_file_pages


def operation_id(route: APIRoute) -> str:
    """Stable OpenAPI operation ids, tag + function name without a repeated tag (`assignment-plan_assignment`,
    `splitter-weights`), so generated clients get readable names (`api.splitter.splitter_weights`) that do not
    change with a path or a method."""
    if not route.tags:
        return route.name
    tag = str(route.tags[0])
    return f"{tag}-{route.name.removeprefix(f'{tag}_')}"


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    configure_json_logging(settings.log_level)
    pool = SolverPool(
        settings.pool_size,
        settings.queue_size,
        settings.retry_after_s,
        task=partial(plan_task, settings),
        memory_limit_bytes=settings.worker_memory_mb * 1024 * 1024,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # What is alive at start-up (modules, the app, numpy, OR-Tools...) lives as long as the process: out of the
        # collector's sight, its full collections walk only what requests allocate (3 % of a small inline plan's
        # CPU measured). Workers forked later inherit the frozen heap and freeze their own (service.pool).
        # The solvers' compiled kernels (numba: the MILP descent's, flux's, the statistics'), compiled or loaded
        # from their on-disk cache here, before any solver worker is forked: every worker inherits them and no
        # request's clock pays for a compile (0.4-0.8 s from the cache, 11-16 s without; `make` fills the cache at
        # install). Without them the numpy code runs.
        compile_kernels()
        gc.freeze()
        # The libraries' pages that start-up read (LLVM to load the kernels above, OR-Tools' pandas and pyarrow, the
        # imports' code) leave the process before the zygote is forked: what requests use faults back in.
        give_back_file_pages()
        pool.start()  # the workers' zygote, forked now: no request in flight (service.pool)
        yield
        pool.shutdown()

    app = FastAPI(
        title="trimtab",
        version="0.1.0",
        summary="Load-balancing planner for stream-processing engines",
        description="Stateless: post a statistics snapshot of a running job, get an allocation plan back.",
        lifespan=lifespan,
        generate_unique_id_function=operation_id,
        telemetry=fastapi_telemetry(settings.otel),
    )
    app.state.settings = settings
    app.state.pool = pool
    metrics = app.state.metrics = Metrics()
    metrics.watch_pool(lambda: pool.in_flight, pool.capacity)
    install_problem_handlers(app)
    plan_route = next(r for r in assignment.router.routes if isinstance(r, APIRoute) and r.path == PLAN_PATH)
    # added first = innermost: inside auth and the body limits
    app.add_middleware(InlinePlans, settings=settings, pool=pool, route=plan_route, metrics=metrics)
    app.add_middleware(BearerAuthMiddleware, token=settings.auth_token, open_paths=open_paths(settings))
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=settings.max_body_bytes,
        timeout_s=settings.body_timeout_s,
        idle_timeout_s=settings.body_idle_timeout_s,
        max_buffered_bytes=settings.max_buffered_body_bytes,
    )
    app.add_middleware(
        RequestContextMiddleware, metrics=metrics
    )  # added last = outermost: sees and times every answer
    app.include_router(health.router)
    app.include_router(assignment.router)
    app.include_router(splitter.router)
    document_request_bodies(app, [AssignmentRequest, SplitterRequest])
    return app


def open_paths(settings: Settings) -> frozenset[str]:
    """What answers without the token when one is set: liveness always, readiness and metrics when configured."""
    paths = {"/healthz"}
    if settings.open_readyz:
        paths.add("/readyz")
    if settings.open_metrics:
        paths.add("/metrics")
    return frozenset(paths)


def document_request_bodies(app: FastAPI, models: list[type[BaseModel]]) -> None:
    """Add request models that a route parses itself (off the event loop) to the OpenAPI components, rendered by
    FastAPI exactly as for a parsed body: the document is generated with one undocumented route per model, whose
    paths are then dropped."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        extra = []
        for model in models:

            async def takes(body: Any) -> None:
                return None

            takes.__annotations__ = {"body": model, "return": None}  # the model itself, not a postponed name
            extra.append(
                APIRoute(f"/__model__/{model.__name__}", takes, methods=["POST"], responses=PROBLEM_RESPONSES)
            )
        routes = app.router.routes
        app.router.routes = [*routes, *extra]
        try:
            document = generate()
        finally:
            app.router.routes = routes
        for route in extra:
            document["paths"].pop(route.path, None)
        return document

    app.openapi = openapi  # type: ignore[method-assign]


app = create_app()

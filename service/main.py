"""The FastAPI application: `uvicorn service.main:app`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.routing import APIRoute

from service.errors import install_problem_handlers
from service.logs import RequestContextMiddleware, configure_json_logging
from service.middleware import BearerAuthMiddleware, BodyLimitMiddleware
from service.pool import SolverPool
from service.routers import assignment, health, splitter
from service.settings import Settings, get_settings
from service.telemetry import Metrics


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
    pool = SolverPool(settings.pool_size, settings.queue_size, settings.retry_after_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        pool.shutdown()

    app = FastAPI(
        title="trimtab",
        version="0.1.0",
        summary="Load-balancing planner for stream-processing engines",
        description="Stateless: post a statistics snapshot of a running job, get an allocation plan back.",
        lifespan=lifespan,
        generate_unique_id_function=operation_id,
    )
    app.state.settings = settings
    app.state.pool = pool
    app.state.metrics = Metrics()
    app.state.metrics.watch_pool(lambda: pool.in_flight, pool.capacity)
    install_problem_handlers(app)
    app.add_middleware(BearerAuthMiddleware, token=settings.auth_token)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(RequestContextMiddleware)  # added last = outermost: sees and times every answer
    app.include_router(health.router)
    app.include_router(assignment.router)
    app.include_router(splitter.router)
    return app


app = create_app()

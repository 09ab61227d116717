"""The FastAPI application: `uvicorn service.main:app`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from service.errors import install_problem_handlers
from service.middleware import BearerAuthMiddleware, BodyLimitMiddleware
from service.pool import SolverPool
from service.routers import assignment, health, splitter
from service.settings import Settings, get_settings
from service.telemetry import Metrics


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
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
    )
    app.state.settings = settings
    app.state.pool = pool
    app.state.metrics = Metrics()
    install_problem_handlers(app)
    app.add_middleware(BearerAuthMiddleware, token=settings.auth_token)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.include_router(health.router)
    app.include_router(assignment.router)
    app.include_router(splitter.router)
    return app


app = create_app()

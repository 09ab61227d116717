"""POST /v1/splitter/weights: splitter weights for one ordered data-parallel region (Schneider et al.)."""

from __future__ import annotations

import time

import numpy as np
from fastapi import APIRouter, Request, Response

from schemas.splitter import (
    MODEL_VERSION,
    ModelConnection,
    SplitterModel,
    SplitterRequest,
    SplitterResponse,
    request_errors,
)
from service.errors import PROBLEM_RESPONSES, invalid_snapshot
from solvers.errors import UnsolvableRequest
from solvers.splitter import SplitterInput, SplitterMemory, update_weights
from solvers.splitter.model import ConnectionMemory

router = APIRouter(tags=["splitter"])
ALGORITHM = "blocking-rate-minimax"


def to_memory(model: SplitterModel) -> SplitterMemory:
    return SplitterMemory(
        resolution=model.resolution,
        observed_at=model.observed_at,
        calls=model.calls,
        connections={
            c.id: ConnectionMemory(
                counter=c.cumulative_blocking_s,
                w=np.asarray(c.w, dtype=np.int64),
                rate=np.asarray(c.rate, dtype=np.float64),
                n=np.asarray(c.n, dtype=np.int64),
                seen=np.asarray(c.seen, dtype=np.int64),
                var=np.zeros(len(c.w)) if c.var is None else np.asarray(c.var, dtype=np.float64),
                weight=c.weight,
                previous_weight=c.previous_weight,
                changed_at=float("-inf") if c.changed_at is None else c.changed_at,
                expected_rate=c.expected_rate,
                decay_scale=c.decay_scale,
                held_until=float("-inf") if c.held_until is None else c.held_until,
            )
            for c in model.connections
        },
    )


def to_model(memory: SplitterMemory) -> SplitterModel:
    # model_construct: the values come from the solver, which keeps them within the bounds the schema states.
    return SplitterModel.model_construct(
        version=MODEL_VERSION,
        resolution=memory.resolution,
        observed_at=memory.observed_at,
        calls=memory.calls,
        connections=[
            ModelConnection.model_construct(
                id=cid,
                cumulative_blocking_s=c.counter,
                w=c.w.tolist(),
                rate=c.rate.tolist(),
                n=c.n.tolist(),
                seen=c.seen.tolist(),
                var=c.var.tolist(),
                weight=c.weight,
                previous_weight=c.previous_weight,
                changed_at=None if c.changed_at == float("-inf") else c.changed_at,
                expected_rate=c.expected_rate,
                decay_scale=c.decay_scale,
                held_until=None if c.held_until == float("-inf") else c.held_until,
            )
            for cid, c in memory.connections.items()
        ],
    )


@router.post(
    "/v1/splitter/weights",
    response_model=SplitterResponse,
    responses=PROBLEM_RESPONSES,
    summary="Weights for a splitter of an ordered parallel region, from per-connection blocking time",
)
async def splitter_weights(body: SplitterRequest, request: Request) -> Response:
    errors = request_errors(body)
    if errors:
        raise invalid_snapshot(errors)
    metrics = request.app.state.metrics

    def work() -> Response:
        started = time.perf_counter()
        ids = tuple(c.id for c in body.connections)
        solver_input = SplitterInput(
            ids=ids,
            weights=np.fromiter((c.weight for c in body.connections), dtype=np.int64),
            counters=np.fromiter((c.cumulative_blocking_s for c in body.connections), dtype=np.float64),
            observed_at=body.observed_at,
            resolution=body.resolution,
            max_change=body.max_change,
            exploration_decay=body.exploration_decay,
            clustering=body.clustering,
            steady=body.steady_weights,
        )
        try:
            result = update_weights(solver_input, None if body.model is None else to_memory(body.model))
        except UnsolvableRequest as exc:
            raise invalid_snapshot([(exc.loc, exc.msg)]) from exc
        if body.model is not None and body.model.version != MODEL_VERSION:
            result.notes.append(f"model version {body.model.version} migrated to {MODEL_VERSION}")
        solve_s = time.perf_counter() - started
        metrics.solve_seconds.labels("splitter", ALGORITHM).observe(solve_s)
        answer = SplitterResponse.model_construct(
            weights=dict(zip(ids, result.weights.tolist(), strict=True)),
            model=to_model(result.memory),
            clusters=[[ids[j] for j in members] for members in result.clusters],
            predicted_max_blocking_rate=result.predicted_max_blocking_rate,
            solve_ms=round(solve_s * 1000.0, 3),
            notes=result.notes,
        )
        # Serialised here, off the event loop; returning a Response also spares FastAPI a second validation of the
        # whole model (response_model above still documents the schema).
        return Response(answer.model_dump_json(), media_type="application/json")

    response = await request.app.state.pool.run(work)
    metrics.record_plan("splitter", ALGORITHM, "optimal")  # the splitter's weights are exact (Fox)
    return response

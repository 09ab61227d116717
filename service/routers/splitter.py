"""POST /v1/splitter/weights: splitter weights for one ordered data-parallel region (Schneider et al.)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json, to_json

from schemas.splitter import (
    MODEL_VERSION,
    SplitterModel,
    SplitterRequest,
    SplitterResponse,
    request_errors,
)
from service.errors import PROBLEM_RESPONSES, invalid_snapshot
from solvers.errors import UnsolvableRequest
from solvers.splitter import SplitterInput, SplitterMemory, update_weights
from solvers.splitter.model import NEVER, ConnectionMemory

router = APIRouter(tags=["splitter"])
ALGORITHM = "blocking-rate-minimax"

# The route parses its body itself (`parse_body`); the OpenAPI document still names the schema (service.main adds
# SplitterRequest to the components), exactly as FastAPI documents a parsed body.
REQUEST_BODY = {
    "requestBody": {
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SplitterRequest"}}},
        "required": True,
    }
}
# A call whose grid (connections x (resolution + 1)) is at most this runs on the event loop: the work holds the GIL
# throughout, so a thread only adds a hop (0.2-0.3 ms of a 5 ms call with 64 connections, measured interleaved with
# bench.splitter.speed --baseline). Measured with full models (32 points a connection, 200 calls): 256 connections at
# resolution 1,000 solve in 4.8 ms p50, 8.0 ms at most, so the loop is never held longer than a small plan holds it.
# Larger calls go to a thread, where the interpreter's switch interval keeps the loop answering.
INLINE_GRID_CELLS = 262_144
# What FastAPI validates a parsed body with (python mode, from_attributes), for the exact same errors.
REQUEST_ADAPTER = TypeAdapter(SplitterRequest)


async def parse_body(request: Request) -> SplitterRequest:
    """The body as FastAPI would parse it for a `body: SplitterRequest` parameter, at about half the cost.

    A valid JSON body is validated straight from its bytes (pydantic's JSON parser; FastAPI runs `json.loads` and
    then validates the Python objects, twice the work on a 64-connection model). Anything else, and any body that
    fast path rejects, takes FastAPI's own steps (same parser, same validation, same error locations and messages),
    so every rejection and every edge of the JSON grammar (NaN, a BOM, UTF-16, lone surrogates) answers exactly as a
    declared body parameter does. The media type is the middleware's business (service.middleware: a Content-Type
    that is not JSON gets 415 before any route; none at all reads as JSON, where FastAPI's strict default says 422),
    so every body that arrives here is JSON by its headers."""
    try:
        raw = await request.body()
    except HTTPException:
        raise
    except Exception as exc:
        raise HTTPException(status_code=400, detail="There was an error parsing the body") from exc
    value: Any
    if not raw:
        raise RequestValidationError(
            [{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}]
        )
    try:
        return SplitterRequest.model_validate_json(raw)
    except ValidationError:
        pass  # say it the way FastAPI does (below)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise RequestValidationError(
            [
                {
                    "type": "json_invalid",
                    "loc": ("body", exc.pos),
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": exc.msg},
                }
            ],
            body=exc.doc,
        ) from exc
    except Exception as exc:
        # JSON that Python will not read (an integer of more than 4,300 digits, nesting past the recursion
        # limit): unparseable, said with the position pydantic's parser gives, as the assignment endpoint says
        # it (not a 400 with an empty errors list).
        try:
            from_json(raw)
            message = str(exc)
        except Exception as positioned:
            message = str(positioned)
        raise RequestValidationError(
            [{"type": "json_invalid", "loc": ("body",), "msg": message, "input": {}}]
        ) from exc
    try:
        return REQUEST_ADAPTER.validate_python(value, from_attributes=True)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        ) from exc


def to_memory(model: SplitterModel) -> SplitterMemory:
    """The solver's memory of a model: each column of all connections' points read once into one array (their
    per-connection arrays are views into it), not one small array per connection and column."""
    connections = model.connections
    sizes = [len(c.w) for c in connections]
    total = sum(sizes)

    def column(values: Iterator[Iterable[float]], dtype: type) -> np.ndarray:
        return np.fromiter(itertools.chain.from_iterable(values), dtype=dtype, count=total)

    w = column((c.w for c in connections), np.int64)
    rate = column((c.rate for c in connections), np.float64)
    n = column((c.n for c in connections), np.int64)
    seen = column((c.seen for c in connections), np.int64)
    var = column((c.var if c.var is not None else [0.0] * len(c.w) for c in connections), np.float64)
    memory: dict[str, ConnectionMemory] = {}
    end = 0
    for c, size in zip(connections, sizes, strict=True):
        start, end = end, end + size
        memory[c.id] = ConnectionMemory(
            counter=c.cumulative_blocking_s,
            w=w[start:end],
            rate=rate[start:end],
            n=n[start:end],
            seen=seen[start:end],
            var=var[start:end],
            weight=c.weight,
            previous_weight=c.previous_weight,
            changed_at=NEVER if c.changed_at is None else c.changed_at,
            expected_rate=c.expected_rate,
            decay_scale=c.decay_scale,
            held_until=NEVER if c.held_until is None else c.held_until,
            sent=-1.0 if c.tuples_sent is None else float(c.tuples_sent),
            taken=-1.0 if c.tuples_taken is None else float(c.tuples_taken),
        )
    return SplitterMemory(model.resolution, model.observed_at, model.calls, memory, model.reference_rate)


def model_fields(memory: SplitterMemory) -> dict[str, Any]:
    """The response's `model` as plain data, field for field in SplitterModel's order (its JSON is what
    `SplitterModel.model_dump_json` writes; tests/test_splitter_api.py checks it). No model objects: the values come
    from the solver, which keeps them within the bounds the schema states, and building 64 validated-or-constructed
    ModelConnection objects only to dump them cost more than the dump."""
    return {
        "version": MODEL_VERSION,
        "resolution": memory.resolution,
        "observed_at": memory.observed_at,
        "calls": memory.calls,
        "connections": [
            {
                "id": cid,
                "cumulative_blocking_s": c.counter,
                "w": c.w.tolist(),
                "rate": c.rate.tolist(),
                "n": c.n.tolist(),
                "seen": c.seen.tolist(),
                "var": c.var.tolist(),
                "weight": c.weight,
                "previous_weight": c.previous_weight,
                "changed_at": None if c.changed_at == NEVER else c.changed_at,
                "expected_rate": c.expected_rate,
                "decay_scale": c.decay_scale,
                "held_until": None if c.held_until == NEVER else c.held_until,
                "tuples_sent": None if c.sent < 0 else int(c.sent),
                "tuples_taken": None if c.taken < 0 else int(c.taken),
            }
            for cid, c in memory.connections.items()
        ],
        "reference_rate": memory.reference_rate,
    }


def response_json(answer: dict[str, Any]) -> bytes:
    """JSON of a SplitterResponse given as plain data in its field order: the same serializer (pydantic-core) and
    settings (infinities and NaN as null) as SplitterResponse.model_dump_json."""
    return to_json(answer, inf_nan_mode="null")


@router.post(
    "/v1/splitter/weights",
    response_model=SplitterResponse,
    responses=PROBLEM_RESPONSES,
    summary="Weights for a splitter of an ordered parallel region, from per-connection blocking time",
    openapi_extra=REQUEST_BODY,
)
async def splitter_weights(request: Request) -> Response:
    body = await parse_body(request)
    errors = request_errors(body)
    if errors:
        raise invalid_snapshot(errors)
    metrics = request.app.state.metrics

    def work() -> Response:
        started = time.perf_counter()
        ids = tuple(c.id for c in body.connections)
        sent = body.connections[0].tuples_sent is not None  # every connection or none (request_errors)
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
            sent=np.fromiter((c.tuples_sent or 0 for c in body.connections), dtype=np.float64)
            if sent
            else None,
            in_flight=np.fromiter((c.tuples_in_flight or 0 for c in body.connections), dtype=np.float64)
            if sent
            else None,
        )
        try:
            result = update_weights(solver_input, None if body.model is None else to_memory(body.model))
        except UnsolvableRequest as exc:
            raise invalid_snapshot([(exc.loc, exc.msg)]) from exc
        if body.model is not None and body.model.version != MODEL_VERSION:
            result.notes.append(f"model version {body.model.version} migrated to {MODEL_VERSION}")
        solve_s = time.perf_counter() - started
        metrics.solve_seconds.labels("splitter", ALGORITHM).observe(solve_s)
        answer = {  # SplitterResponse, field for field
            "weights": dict(zip(ids, result.weights.tolist(), strict=True)),
            "model": model_fields(result.memory),
            "clusters": [[ids[j] for j in members] for members in result.clusters],
            "predicted_max_blocking_rate": result.predicted_max_blocking_rate,
            "solve_ms": round(solve_s * 1000.0, 3),
            "notes": result.notes,
        }
        # Serialised here, once, off the event loop; returning a Response also spares FastAPI a second validation of
        # the whole model (response_model above still documents the schema).
        return Response(response_json(answer), media_type="application/json")

    if len(body.connections) * (body.resolution + 1) <= INLINE_GRID_CELLS:
        response = work()
    else:
        response = await request.app.state.pool.run(work)
    metrics.record_plan("splitter", ALGORITHM, "optimal")  # the splitter's weights are exact (Fox)
    return response

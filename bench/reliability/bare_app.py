"""The baseline of the throughput ratio: a bare FastAPI endpoint that parses the same snapshot model (on the event
loop, as FastAPI does) and answers a same-shaped assignment (every unit where it is). No middleware, no workers,
no solver, no statistics, no validator: what any FastAPI service pays per request.

    uvicorn bench.reliability.bare_app:app
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from schemas.assignment import AssignmentRequest

app = FastAPI()


@app.post("/v1/assignment/plan")
async def plan(body: AssignmentRequest) -> dict[str, Any]:
    first = body.nodes[0].id
    return {
        "status": "unchanged",
        "algorithm": body.algorithm.name,
        "assignment": {u.id: u.node or first for u in body.units},
        "moves": [],
        "migrations": 0,
    }

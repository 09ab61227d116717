"""Hypothesis strategies for random /v1/assignment/plan snapshots, and the solver pipeline of the service without HTTP
(schema -> instance -> algorithm -> response), so properties can run many examples quickly."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from schemas.assignment import AssignmentRequest, reference_errors
from service.adapters import to_instance, to_response
from service.algorithms import REGISTRY

Body = dict[str, Any]

# Algorithms that plan from one mean load per unit (no series, no traffic): the ones a plain snapshot can feed.
MEAN_LOAD_ALGORITHMS = [
    name
    for name, spec in REGISTRY.items()
    if not any("series" in need or "traffic" in need or "operator" in need for need in spec.needs)
]


@st.composite
def snapshots(
    draw: st.DrawFn,
    max_nodes: int = 6,
    max_units: int = 20,
    unplaced: bool = True,
    budgets: bool = True,
) -> Body:
    """A valid snapshot: heterogeneous capacities, some draining nodes (never all), some pinned units (never on a
    draining node nor over capacity), units without a node (initial placement), and a random budget."""
    n_nodes = draw(st.integers(2, max_nodes))
    capacities = draw(
        st.lists(st.sampled_from([50.0, 100.0, 100.0, 150.0, 200.0]), min_size=n_nodes, max_size=n_nodes)
    )
    draining = draw(st.lists(st.booleans(), min_size=n_nodes, max_size=n_nodes).filter(lambda d: not all(d)))
    nodes = [{"id": f"n{i}", "capacity": capacities[i], "draining": draining[i]} for i in range(n_nodes)]
    n_units = draw(st.integers(1, max_units))
    units = []
    pinned_load = [0.0] * n_nodes
    for k in range(n_units):
        node = draw(st.integers(-1 if unplaced else 0, n_nodes - 1))
        load = draw(st.floats(0.0, 30.0, allow_nan=False).map(lambda x: round(x, 3)))
        pinned = (
            node >= 0
            and not draining[node]
            and pinned_load[node] + load <= capacities[node]
            and draw(st.integers(0, 6)) == 0
        )
        if pinned:
            pinned_load[node] += load
        units.append(
            {
                "id": f"u{k}",
                "node": f"n{node}" if node >= 0 else None,
                "load": load,
                "state_size": draw(st.sampled_from([0.0, 1.0, 2.0, 5.0, 10.0])),
                "pinned": pinned,
            }
        )
    # Units without a node must fit somewhere: scale their loads so that all of them together fit into the room of
    # any staying node (a request whose new units fit nowhere is unsatisfiable: see test_validation).
    room = min(
        capacities[i] - math.fsum(u["load"] for u in units if u["node"] == f"n{i}")
        for i in range(n_nodes)
        if not draining[i]
    )
    new = [u for u in units if u["node"] is None]
    new_load = math.fsum(u["load"] for u in new)
    if new_load > 0 and new_load > room:
        scale = max(0.0, room) / new_load * 0.999
        for unit in new:
            unit["load"] = math.floor(unit["load"] * scale * 1000) / 1000
    budget: dict[str, Any] = {}
    if budgets:
        budget = {
            "max_migrations": draw(st.none() | st.integers(0, 6)),
            "max_migration_cost": draw(st.none() | st.sampled_from([0.0, 3.0, 10.0, 30.0])),
        }
    body = {"nodes": nodes, "units": units, "budget": budget}
    assert reference_errors(AssignmentRequest.model_validate(body)) == [], body
    return body


def solve(body: Body, time_limit_s: float = 1.0) -> Body:
    """What POST /v1/assignment/plan computes, minus HTTP and the pool: the plan as a wire dict."""
    request = AssignmentRequest.model_validate(body)
    assert reference_errors(request) == []
    spec = REGISTRY[request.algorithm.name]
    instance = to_instance(request)
    plan = spec.solve(instance, request.algorithm, time_limit_s)
    return to_response(instance, plan, spec.name, 0.0).model_dump(mode="json", by_alias=True)

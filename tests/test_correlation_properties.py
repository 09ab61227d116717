"""Hypothesis properties of the correlation solvers: every plan valid, budget and pins kept, incremental series exact."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.assignment import AssignmentRequest, reference_errors
from service.adapters import to_instance, to_response
from solvers.correlation import solve_global, solve_pairwise
from solvers.correlation.stats import LoadState
from solvers.errors import UnsolvableRequest
from solvers.instance import UNPLACED
from solvers.metrics import node_series
from solvers.plan_check import check_plan

VARIANTS = ("one-way", "two-way", "selective-exchange", "improved-two-way", "improved-selective-exchange")


@st.composite
def snapshots(draw: st.DrawFn) -> dict[str, Any]:
    n_nodes = draw(st.integers(2, 6))
    windows = draw(st.integers(2, 8))
    n_units = draw(st.integers(1, 24))
    draining = [draw(st.booleans()) if i > 0 else False for i in range(n_nodes)]
    nodes = [
        {
            "id": f"n{i}",
            "capacity": draw(st.sampled_from([50.0, 100.0, 100.0, 200.0])),
            "draining": draining[i],
        }
        for i in range(n_nodes)
    ]
    units = []
    for k in range(n_units):
        node = draw(st.one_of(st.none(), st.integers(0, n_nodes - 1)))
        shape = draw(st.sampled_from(["wave", "constant", "random"]))
        base = draw(st.floats(0.0, 30.0))
        if shape == "constant":
            load = [base] * windows
        elif shape == "wave":
            phase = draw(st.integers(0, windows - 1))
            load = [base * (1.6 if (w + phase) % windows < windows / 2 else 0.4) for w in range(windows)]
        else:
            load = draw(st.lists(st.floats(0.0, 40.0), min_size=windows, max_size=windows))
        pinned = node is not None and not draining[node] and draw(st.integers(0, 5)) == 0
        units.append(
            {
                "id": f"u{k}",
                "node": None if node is None else f"n{node}",
                "load": load,
                "state_size": draw(st.floats(0.0, 10.0)),
                "pinned": pinned,
            }
        )
    budget = draw(
        st.sampled_from(
            [
                {},
                {"max_migrations": 0},
                {"max_migrations": 1},
                {"max_migrations": 4},
                {"max_migration_cost": 12.0},
            ]
        )
    )
    return {"nodes": nodes, "units": units, "budget": budget}


def _plan(body: dict[str, Any], algorithm: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    body = {**body, "algorithm": algorithm}
    request = AssignmentRequest.model_validate(body)
    if reference_errors(request):
        return None
    instance = to_instance(request)
    try:
        if algorithm["name"] == "correlation-global":
            plan = solve_global(instance)
        else:
            plan = solve_pairwise(instance, variant=algorithm["variant"])
    except UnsolvableRequest as exc:
        # The only refusal: units with no node that fit nowhere under the cap.
        assert "do not fit" in exc.msg
        return None
    response = to_response(instance, plan, algorithm["name"], 0.0)
    return request.model_dump(mode="json"), response.model_dump(mode="json", by_alias=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    snapshots(),
    st.sampled_from(
        [{"name": "correlation-global"}] + [{"name": "correlation-pairwise", "variant": v} for v in VARIANTS]
    ),
)
def test_every_plan_passes_the_validator(body: dict[str, Any], algorithm: dict[str, Any]) -> None:
    result = _plan(body, algorithm)
    if result is None:
        return
    request, plan = result
    assert check_plan(request, plan) == [], (algorithm, plan)
    # Explicitly: pinned units stay, the budget holds, nothing lands on a draining node.
    budget = request["budget"]
    if budget.get("max_migrations") is not None:
        assert plan["migrations"] <= budget["max_migrations"]
    if budget.get("max_migration_cost") is not None:
        assert plan["migration_cost"] <= budget["max_migration_cost"] + 1e-9
    draining = {n["id"] for n in request["nodes"] if n["draining"]}
    for unit in request["units"]:
        if unit["pinned"]:
            assert plan["assignment"][unit["id"]] == unit["node"]
        if plan["assignment"][unit["id"]] != unit["node"]:
            assert plan["assignment"][unit["id"]] not in draining


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 6),
    st.integers(2, 10),
    st.integers(1, 30),
    st.integers(0, 2**31 - 1),
)
def test_incremental_node_series_and_rho_match_a_recomputation(
    n_nodes: int, windows: int, n_units: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    series = rng.uniform(0.0, 10.0, (n_units, windows))
    series[rng.random(n_units) < 0.2] = 5.0  # some constant series
    body = {
        "nodes": [{"id": f"n{i}"} for i in range(n_nodes)],
        "units": [
            {"id": f"u{k}", "node": f"n{rng.integers(n_nodes)}", "load": series[k].tolist()}
            for k in range(n_units)
        ],
    }
    instance = to_instance(AssignmentRequest.model_validate(body))
    state = LoadState(instance, instance.current)
    for _ in range(3 * n_units):
        unit = int(rng.integers(n_units))
        state.move(unit, int(rng.integers(-1, n_nodes)))  # -1: taken off every node
    assignment = state.assignment
    expected = node_series(instance.series, assignment, n_nodes)
    np.testing.assert_allclose(state.node_series, expected, atol=1e-9)
    np.testing.assert_allclose(state.node_load, expected.mean(axis=1), atol=1e-9)
    assert state.migrations == int(instance.migration_mask(assignment).sum())
    # rho(o, N): correlation of o with N's series without o, 0 when either is constant.
    units = np.arange(n_units)
    nodes = np.arange(n_nodes)
    rho = state.rho(units, nodes)
    for o in range(n_units):
        for j in range(n_nodes):
            rest = expected[j] - (series[o] if assignment[o] == j else 0.0)
            a, b = series[o] - series[o].mean(), rest - rest.mean()
            if np.ptp(series[o]) < 1e-9 or np.ptp(rest) < 1e-9:
                want = 0.0
            else:
                want = float(a @ b / np.sqrt((a @ a) * (b @ b)))
            assert abs(rho[o, j] - want) < 1e-6, (o, j, rho[o, j], want)
    assert UNPLACED == -1

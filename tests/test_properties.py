"""Hypothesis properties on random snapshots, for every algorithm of the registry that plans from mean loads.

Every plan passes the independent validator; and, checked here directly as well (so a validator bug cannot hide a
solver bug): the budget holds, draining nodes never receive, pinned units never move, no unit is lost. For the MILP:
more budget never gives a worse plan, and scale-in empties the draining nodes when the budget allows.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.plan_check import check_plan
from tests.conftest import make_snapshot
from tests.snapshots import MEAN_LOAD_ALGORITHMS, Body, snapshots, solve

# Modest and reproducible: the whole file stays well under a minute on 2 busy cores.
PROPERTY_SETTINGS = settings(
    max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
# The MILP spends its whole time limit when it cannot prove the optimum: budget pairs get fewer examples.
MILP_PAIR_SETTINGS = settings(
    max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
# CP-SAT works on utilizations scaled to 1e-4 points; a proven optimum may be off by a few rounding steps.
DISTANCE_TOL = 5e-3


def test_the_mean_load_algorithms_include_the_foundation() -> None:
    assert {"milp", "flux", "largest-load-first", "round-robin", "random"} <= set(MEAN_LOAD_ALGORITHMS)


def assert_plan_invariants(body: Body, plan: dict[str, Any]) -> None:
    assert check_plan(body, plan) == []
    units = {u["id"]: u for u in body["units"]}
    draining = {n["id"] for n in body["nodes"] if n.get("draining")}
    assert set(plan["assignment"]) == set(units)
    moved = [u for u, node in plan["assignment"].items() if node != units[u]["node"]]
    migrated = [u for u in moved if units[u]["node"] is not None]
    for unit_id in moved:
        assert not units[unit_id].get("pinned"), f"pinned {unit_id} moved"
        assert plan["assignment"][unit_id] not in draining, f"{unit_id} moved onto a draining node"
    budget = body.get("budget") or {}
    if budget.get("max_migrations") is not None:
        assert len(migrated) <= budget["max_migrations"]
    if budget.get("max_migration_cost") is not None:
        cost = math.fsum(units[u]["state_size"] for u in migrated)
        assert cost <= budget["max_migration_cost"] * (1 + 1e-9) + 1e-9
    assert plan["status"] in ("optimal", "feasible", "unchanged")
    assert (plan["status"] == "unchanged") == (not moved), (plan["status"], moved)


@pytest.mark.parametrize("algorithm", MEAN_LOAD_ALGORITHMS)
@PROPERTY_SETTINGS
@given(body=snapshots())
def test_every_plan_is_valid(algorithm: str, body: Body) -> None:
    body = {**body, "algorithm": {"name": algorithm}}
    assert_plan_invariants(body, solve(body, time_limit_s=0.5))


@MILP_PAIR_SETTINGS
@given(
    body=snapshots(max_nodes=5, max_units=12, unplaced=False, budgets=False),
    small=st.integers(0, 3),
    extra=st.integers(1, 4),
)
def test_milp_more_migrations_never_give_a_worse_plan(body: Body, small: int, extra: int) -> None:
    distances = []
    for k in (small, small + extra):
        request = {**copy.deepcopy(body), "budget": {"max_migrations": k}}
        plan = solve(request, time_limit_s=0.5)
        assert_plan_invariants(request, plan)
        distances.append(plan["after"]["load_distance"])
    assert distances[1] <= distances[0] + DISTANCE_TOL, distances


@MILP_PAIR_SETTINGS
@given(
    body=snapshots(max_nodes=5, max_units=12, unplaced=False, budgets=False),
    cost=st.sampled_from([0.0, 2.0, 5.0]),
    more=st.sampled_from([1.0, 5.0, 20.0]),
)
def test_milp_more_migration_cost_never_gives_a_worse_plan(body: Body, cost: float, more: float) -> None:
    distances = []
    for limit in (cost, cost + more):
        request = {**copy.deepcopy(body), "budget": {"max_migration_cost": limit}}
        plan = solve(request, time_limit_s=0.5)
        assert_plan_invariants(request, plan)
        distances.append(plan["after"]["load_distance"])
    assert distances[1] <= distances[0] + DISTANCE_TOL, distances


@st.composite
def scale_in_snapshots(draw: st.DrawFn) -> tuple[Body, int]:
    """Staying nodes equally utilized, one draining node whose units fill them back to a perfect balance: the only
    plans with load distance 0 empty the draining node, so the optimum must. Returns the snapshot and the number of
    units on the draining node (the budget that allows the drain)."""
    ratios = draw(st.lists(st.sampled_from([1, 2]), min_size=2, max_size=4))  # capacity 100 x ratio
    per_ratio = draw(st.integers(1, 2))  # draining units each staying node of ratio 1 must take
    piece = draw(st.sampled_from([2.0, 3.5, 5.0]))  # load of each draining unit
    base = draw(st.sampled_from([20.0, 30.0, 45.0]))  # utilization of the staying nodes before
    nodes = [{"id": f"s{i}", "capacity": 100.0 * r} for i, r in enumerate(ratios)]
    nodes.append({"id": "drain", "capacity": 100.0, "draining": True})
    units: list[dict[str, Any]] = []
    for i, r in enumerate(ratios):
        total = base * r
        cuts = sorted(draw(st.lists(st.floats(0.1, 0.9), min_size=2, max_size=4)))
        parts = [b - a for a, b in zip([0.0, *cuts], [*cuts, 1.0], strict=True)]
        units += [
            {"id": f"s{i}-{j}", "node": f"s{i}", "load": total * p, "state_size": 1.0}
            for j, p in enumerate(parts)
        ]
    n_drain = per_ratio * sum(ratios)
    units += [{"id": f"d{j}", "node": "drain", "load": piece, "state_size": 1.0} for j in range(n_drain)]
    return {"nodes": nodes, "units": units}, n_drain


@PROPERTY_SETTINGS
@given(case=scale_in_snapshots(), spare=st.integers(0, 3), as_cost=st.booleans())
def test_milp_scale_in_empties_draining_nodes_when_the_budget_allows(
    case: tuple[Body, int], spare: int, as_cost: bool
) -> None:
    body, n_drain = case
    allowed = n_drain + spare
    body["budget"] = {"max_migration_cost": float(allowed)} if as_cost else {"max_migrations": allowed}
    plan = solve(body, time_limit_s=5.0)
    assert_plan_invariants(body, plan)
    assert not [u for u, n in plan["assignment"].items() if n == "drain"], plan["moves"]
    assert "drain" in plan["scaling"]["remove_nodes"]
    assert plan["after"]["load_distance"] <= DISTANCE_TOL


@pytest.mark.parametrize("factor", [1e-4, 1e3, 1e5])
def test_milp_quality_does_not_depend_on_the_unit_of_load(factor: float) -> None:
    """Multiplying every load by a factor multiplies every utilization, and the load distance, by it: the optimal
    assignment is the same, so the MILP must find a plan as good (relative to the scale) as at factor 1."""
    body = make_snapshot(budget={"max_migrations": 3})
    reference = solve(body, time_limit_s=5.0)
    scaled = copy.deepcopy(body)
    for unit in scaled["units"]:
        unit["load"] *= factor
    plan = solve(scaled, time_limit_s=5.0)
    assert_plan_invariants(scaled, plan)
    assert plan["after"]["load_distance"] / factor <= reference["after"]["load_distance"] + DISTANCE_TOL
    assert plan["status"] == reference["status"]

"""The MILP is optimal: on tiny instances its load distance equals the optimum found by enumerating every assignment
under the same constraints (budget, pinned units, draining nodes never receiving, the utilization cap on receivers),
and its status and lower bound agree with that optimum."""

from __future__ import annotations

import itertools
import random
from typing import Any

import numpy as np
import pytest

from schemas.assignment import AssignmentRequest
from service.adapters import to_instance
from solvers.instance import AssignmentInstance
from solvers.milp import solve_milp

# CP-SAT solves on utilizations scaled to 1e-4 points (solvers/milp/cpsat.py); its proof holds up to that rounding.
TOL = 5e-3


def brute_force_optimum(instance: AssignmentInstance) -> tuple[float, float]:
    """(optimal load distance, load distance of the current assignment) over all assignments the MILP may choose."""
    n, u = instance.n_nodes, instance.n_units
    grid = np.array(list(itertools.product(range(n), repeat=u)), dtype=np.int64)  # (n^u, u)
    current = instance.current
    moved = grid != current
    ok = ~(moved & instance.pinned).any(axis=1)
    ok &= ~(moved & instance.draining[grid]).any(axis=1)
    if instance.max_migrations is not None:
        ok &= moved.sum(axis=1) <= instance.max_migrations
    if instance.max_migration_cost is not None:
        ok &= (moved * instance.state_size).sum(axis=1) <= instance.max_migration_cost * (1 + 1e-12)
    load = np.zeros((len(grid), n))
    np.add.at(load, (np.arange(len(grid))[:, None], grid), instance.load)
    util = 100.0 * load / instance.capacity
    receives = np.zeros((len(grid), n), dtype=bool)
    rows, cols = np.nonzero(moved)
    receives[rows, grid[rows, cols]] = True
    ok &= ~(receives & (util > instance.utilization_cap())).any(axis=1)
    distance = np.abs(util[:, instance.active] - instance.mean_utilization).max(axis=1)
    assert ok.any()  # the current assignment is always allowed
    return float(distance[ok].min()), instance.load_distance(current)


def tiny_snapshot(
    seed: int, budget: dict[str, Any], draining: bool, pinned: bool, hetero: bool
) -> dict[str, Any]:
    """3 nodes x 6 units, skewed: most load on n0."""
    rng = random.Random(seed)
    capacities = [100.0, 150.0, 100.0] if hetero else [100.0, 100.0, 100.0]
    nodes = [{"id": f"n{i}", "capacity": capacities[i], "draining": draining and i == 2} for i in range(3)]
    homes = [0, 0, 0, 1, 1, 2] if seed % 2 else [0, 0, 1, 0, 2, 0]
    units = [
        {
            "id": f"u{k}",
            "node": f"n{home}",
            "load": round(rng.uniform(2.0, 25.0), 2),
            "state_size": float(rng.randint(1, 4)),
            "pinned": pinned and k == 0,
        }
        for k, home in enumerate(homes)
    ]
    return {"nodes": nodes, "units": units, "budget": budget}


def _cases() -> list[Any]:
    cases = []
    budgets = (
        ("k1", {"max_migrations": 1}),
        ("k2", {"max_migrations": 2}),
        ("k3", {"max_migrations": 3}),
        ("c4", {"max_migration_cost": 4.0}),
    )
    for seed in range(4):
        for name, budget in budgets:
            for draining, pinned, hetero in (
                (False, False, False),
                (True, True, seed % 2 == 1),
                (False, True, True),
            ):
                case_id = (
                    f"s{seed}-{name}-{'d' if draining else ''}{'p' if pinned else ''}{'h' if hetero else ''}"
                )
                cases.append(pytest.param(seed, budget, draining, pinned, hetero, id=case_id))
    return cases


@pytest.mark.parametrize(("seed", "budget", "draining", "pinned", "hetero"), _cases())
def test_milp_matches_brute_force(
    seed: int, budget: dict[str, Any], draining: bool, pinned: bool, hetero: bool
) -> None:
    body = tiny_snapshot(seed, budget, draining, pinned, hetero)
    instance = to_instance(AssignmentRequest.model_validate(body))
    optimum, current = brute_force_optimum(instance)
    plan = solve_milp(instance, time_limit_s=2.0)
    distance = instance.load_distance(plan.assignment)
    assert instance.within_budget(plan.assignment)
    assert distance >= optimum - 1e-9, (
        "the MILP beat the enumeration: it broke a constraint the enumeration keeps"
    )
    assert distance <= optimum + TOL, (distance, optimum)
    assert plan.lower_bound is not None and plan.lower_bound <= optimum + TOL
    changed = bool((plan.assignment != instance.current).any())
    if changed:
        # 3 x 6 is solved as the full model, so CP-SAT proves it: 'feasible' here would be a missed proof.
        assert plan.status == "optimal", (plan.status, plan.notes)
    else:
        assert plan.status == "unchanged"
        assert current <= optimum + TOL, "kept the current assignment though a better one fits the budget"


def test_brute_force_itself_sees_budgets_and_draining() -> None:
    """The reference must be able to fail: with no budget it finds a better optimum than with one move."""
    body = tiny_snapshot(0, {"max_migrations": 1}, draining=True, pinned=False, hetero=False)
    one_move, _ = brute_force_optimum(to_instance(AssignmentRequest.model_validate(body)))
    body["budget"] = {}
    free, current = brute_force_optimum(to_instance(AssignmentRequest.model_validate(body)))
    assert free < one_move < current


def test_highs_backend_runs_next_to_cp_sat() -> None:
    body = tiny_snapshot(0, {"max_migrations": 2}, draining=False, pinned=False, hetero=False)
    instance = to_instance(AssignmentRequest.model_validate(body))
    optimum, _ = brute_force_optimum(instance)
    plan = solve_milp(instance, backend="highs", time_limit_s=10.0)
    assert instance.load_distance(plan.assignment) <= optimum + TOL


def test_milp_proves_the_optimum_with_a_draining_node() -> None:
    body = tiny_snapshot(0, {"max_migrations": 2}, draining=True, pinned=True, hetero=False)
    instance = to_instance(AssignmentRequest.model_validate(body))
    optimum, _ = brute_force_optimum(instance)
    plan = solve_milp(instance, time_limit_s=2.0)
    assert instance.load_distance(plan.assignment) <= optimum + TOL
    assert plan.status == "optimal", plan.notes

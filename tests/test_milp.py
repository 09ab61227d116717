"""The MILP (Madsen et al. 4.3.1) beyond brute force: heterogeneity, vector load, scale-in, budgets, backends."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bench.milp_instances import madsen_cluster, to_request
from solvers.baselines import flux, largest_load_first
from solvers.instance import UNPLACED, AssignmentInstance
from solvers.milp import local_search, solve_milp
from solvers.milp import solve as milp_solve
from solvers.milp.bounds import load_distance_lower_bound
from solvers.milp.local_search import LocalSearch
from solvers.plan_check import check_plan


def instance(
    loads: list[float],
    current: list[int],
    capacity: list[float],
    draining: list[bool] | None = None,
    pinned: list[bool] | None = None,
    state: list[float] | None = None,
    max_migrations: int | None = None,
    max_migration_cost: float | None = None,
    usage: list[list[float]] | None = None,
    resource_capacity: list[list[float]] | None = None,
) -> AssignmentInstance:
    n, u = len(capacity), len(loads)
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=np.array(capacity, dtype=float),
        draining=np.array(draining or [False] * n),
        unit_ids=tuple(f"u{k}" for k in range(u)),
        current=np.array(current, dtype=np.int64),
        series=np.array(loads, dtype=float)[:, None],
        state_size=np.array(state or [1.0] * u),
        pinned=np.array(pinned or [False] * u),
        resource_names=("mem",) if usage else (),
        resource_usage=np.array(usage, dtype=float) if usage else np.zeros((u, 0)),
        resource_capacity=np.array(resource_capacity, dtype=float) if resource_capacity else np.zeros((n, 0)),
        max_migrations=max_migrations,
        max_migration_cost=max_migration_cost,
    )


def budget_spent_at_random(inst: AssignmentInstance, rng: np.random.Generator) -> np.ndarray:
    """A plan from the current one: each movable unit, in random order, to a random staying node while the budget
    allows (a spent budget, the search's hardest start)."""
    plan = inst.current.copy()
    staying = np.flatnonzero(inst.active)
    for unit in rng.permutation(np.flatnonzero(inst.movable)).tolist():
        trial = plan.copy()
        trial[unit] = int(rng.choice(staying))
        if inst.within_budget(trial):
            plan = trial
    return plan


def test_heterogeneous_nodes_balance_utilization_not_load() -> None:
    # A node of capacity 200 should carry twice the load of a node of capacity 100.
    inst = instance([10.0] * 6, [0, 0, 0, 0, 0, 0], [100.0, 200.0])
    plan = solve_milp(inst, time_limit_s=1.0)
    node_load = inst.node_load(plan.assignment)
    assert node_load.tolist() == [20.0, 40.0]
    assert inst.load_distance(plan.assignment) == pytest.approx(0.0)
    assert plan.status == "optimal"


def test_further_resources_are_capped_on_receiving_nodes() -> None:
    # Balancing load alone would move a unit to n1, but n1 has no memory left for any of them.
    inst = instance(
        [10.0, 10.0, 10.0, 10.0],
        [0, 0, 0, 1],
        [100.0, 100.0],
        usage=[[5.0], [5.0], [5.0], [9.0]],
        resource_capacity=[[100.0], [10.0]],
    )
    plan = solve_milp(inst, time_limit_s=1.0)
    # No receiving node ends above its memory: either nothing moves, or n1's 9 leaves and two 5s take its place
    # (10 of 10, load balanced: the search after a stalled full model finds that exchange).
    usage = np.bincount(plan.assignment, weights=[5.0, 5.0, 5.0, 9.0], minlength=2)
    assert usage[1] <= 10.0
    assert plan.assignment.tolist() in ([0, 0, 0, 1], [1, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 0])
    assert inst.load_distance(plan.assignment) <= inst.load_distance(inst.current)


def test_scale_in_moves_nothing_onto_draining_and_empties_them_when_budget_allows() -> None:
    inst = madsen_cluster(10, 100, max_migrations=40, seed=3, draining=2)
    plan = solve_milp(inst, time_limit_s=1.0)
    drained = np.flatnonzero(inst.draining)
    arrived = (plan.assignment != inst.current) & np.isin(plan.assignment, drained)
    assert not arrived.any(), "Lemma 1: no key group migrates from A to B"
    assert not np.isin(plan.assignment, drained).any(), (
        "20 units on draining nodes, budget 40: all must leave"
    )


def test_scale_in_with_a_small_budget_keeps_every_move_useful() -> None:
    inst = madsen_cluster(10, 100, max_migrations=5, seed=3, draining=2)
    plan = solve_milp(inst, time_limit_s=1.0)
    assert int(inst.migration_mask(plan.assignment).sum()) <= 5
    assert inst.load_distance(plan.assignment) < inst.load_distance(inst.current)


def test_pinned_units_never_move() -> None:
    inst = instance([30.0, 30.0, 1.0], [0, 0, 1], [100.0, 100.0], pinned=[True, True, False])
    plan = solve_milp(inst, time_limit_s=1.0)
    assert plan.assignment[:2].tolist() == [0, 0]


def test_cost_budget_is_respected_and_cheap_moves_preferred() -> None:
    # Two equally good moves; only the cheap one fits the cost budget.
    inst = instance(
        [10.0, 10.0, 10.0, 10.0],
        [0, 0, 0, 1],
        [100.0, 100.0],
        state=[100.0, 1.0, 100.0, 1.0],
        max_migration_cost=5.0,
    )
    plan = solve_milp(inst, time_limit_s=1.0)
    moved = np.flatnonzero(inst.migration_mask(plan.assignment))
    assert moved.tolist() == [1]
    assert inst.load_distance(plan.assignment) == pytest.approx(0.0)


def test_initial_placement_places_every_unit_for_free() -> None:
    inst = instance([5.0, 4.0, 3.0, 3.0, 2.0, 1.0], [UNPLACED] * 6, [100.0, 100.0], max_migrations=0)
    plan = solve_milp(inst, time_limit_s=1.0)
    assert (plan.assignment >= 0).all()
    assert inst.load_distance(plan.assignment) == pytest.approx(0.0)  # 9 and 9


@pytest.mark.parametrize("seed", range(3))
def test_never_worse_than_the_baselines_and_bound_is_valid(seed: int) -> None:
    inst = madsen_cluster(20, 400, max_migrations=10, seed=seed)
    plan = solve_milp(inst, time_limit_s=0.5)
    d = inst.load_distance(plan.assignment)
    assert d <= inst.load_distance(flux(inst).assignment) + 1e-9
    assert d <= inst.load_distance(largest_load_first(inst).assignment) + 1e-9
    assert plan.lower_bound is not None and plan.lower_bound <= d + 1e-9
    assert load_distance_lower_bound(inst) <= d + 1e-9


def test_counting_bound_proves_a_hand_computed_optimum() -> None:
    # Node 0 is 6 points over, node 1 is 6 under; units of 4: one move leaves 2 points, and nothing better exists.
    inst = instance([4.0] * 5 + [3.0] * 3, [0, 0, 0, 0, 0, 1, 1, 1], [100.0, 100.0], max_migrations=1)
    # loads: n0 = 20, n1 = 9, mean 14.5 -> d 5.5; moving a 4 gives 16 / 13 -> d 1.5
    plan = solve_milp(inst, time_limit_s=1.0)
    assert inst.load_distance(plan.assignment) == pytest.approx(1.5)
    assert plan.status == "optimal"
    assert plan.lower_bound == pytest.approx(1.5)


@pytest.mark.parametrize("backend", ["cp-sat", "highs"])
def test_both_backends_through_the_service(client: TestClient, backend: str) -> None:
    inst = madsen_cluster(6, 60, max_migrations=6, seed=1)
    body = to_request(inst, {"name": "milp", "backend": backend}, 2.0)
    response = client.post("/v1/assignment/plan", json=body)
    assert response.status_code == 200, response.text
    plan = response.json()
    assert check_plan(body, plan) == []
    assert plan["after"]["load_distance"] <= plan["before"]["load_distance"]
    assert plan["migrations"] <= 6


def test_a_highs_child_slow_to_start_does_not_carry_the_call_past_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh-clone CI run (2 Dec) answered 503 "Deadline exceeded" on 6 x 60 with backend highs and time_limit_s 2:
    the HiGHS child (a new interpreter) was given the solver's deadline plus 5 s, so a child slow to import ran
    past the service's hard deadline (time_limit_s + 1 s). Here every child takes 4 s to start: the call still ends
    within its limit (plus the service's slack), with the heuristic plan."""
    slow_python = tmp_path / "slow_python"
    slow_python.write_text(f'#!/bin/sh\nsleep 4\nexec "{sys.executable}" "$@"\n')
    slow_python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(slow_python))
    inst = madsen_cluster(6, 60, max_migrations=6, seed=1)
    started = time.perf_counter()
    plan = solve_milp(inst, backend="highs", time_limit_s=2.0)
    assert time.perf_counter() - started < 2.0 + 1.0
    assert inst.load_distance(plan.assignment) < inst.load_distance(inst.current)
    assert int(inst.migration_mask(plan.assignment).sum()) <= 6


def test_a_node_resource_no_unit_uses_is_no_error() -> None:
    """Issue 9: a capped resource that no unit uses made CP-SAT's scaled coefficients 1e306 (TypeError, a 500)."""
    inst = instance(
        [10.0, 7.0, 5.0, 3.0, 1.0, 2.0],
        [0, 0, 0, 0, 1, 2],
        [100.0, 100.0, 100.0],
        usage=[[0.0]] * 6,
        resource_capacity=[[10.0], [10.0], [10.0]],
        max_migrations=2,
    )
    plan = solve_milp(inst, time_limit_s=1.0)
    assert inst.load_distance(plan.assignment) < inst.load_distance(inst.current)
    assert plan.status == "optimal"


def test_a_tie_between_nodes_does_not_hang() -> None:
    """Issue 9: 6 nodes, units of load 14 and 1 on n0 and 3 on n2, no budget: Flux traded a unit back and forth on
    a floating-point tie forever, and the MILP polished Flux. The MILP's own starts and steps are capped."""
    inst = instance([14.0, 1.0, 3.0], [0, 0, 2], [100.0] * 6)
    plan = solve_milp(inst, time_limit_s=1.0)
    assert inst.load_distance(plan.assignment) <= inst.load_distance(inst.current)
    assert plan.lower_bound is not None and plan.lower_bound <= inst.load_distance(plan.assignment) + 1e-9


def test_a_hot_unit_bound_proves_the_plan_at_once() -> None:
    """Issue 10: one key group larger than a node's fair share; the plan that leaves it alone on a node is optimal,
    and the hot-unit bound says so without a solver call (instead of reporting 'feasible' after the whole limit)."""
    loads = [300.0] + [1.0] * 60
    inst = instance(loads, [0] * 31 + [1] * 30, [100.0, 100.0, 100.0, 100.0], max_migrations=40)
    plan = solve_milp(inst, time_limit_s=5.0)
    assert plan.status == "optimal", plan.notes
    assert any("no solver call" in note for note in plan.notes)
    hot = 300.0 - inst.mean_utilization
    assert inst.load_distance(plan.assignment) == pytest.approx(hot)


def test_a_cost_budget_is_spent_on_cheap_state_per_load() -> None:
    """The covering bound prices the excess in state: two overloaded nodes, one with cheap units; a budget that
    covers only the cheap ones gives a bound above zero that a plan meets."""
    inst = instance(
        [10.0, 10.0, 10.0, 10.0, 0.0, 0.0],
        [0, 0, 1, 1, 2, 2],
        [100.0, 100.0, 100.0],
        state=[1.0, 1.0, 50.0, 50.0, 1.0, 1.0],
        max_migration_cost=2.0,
    )
    bound = load_distance_lower_bound(inst)
    assert bound > 0.0
    plan = solve_milp(inst, time_limit_s=2.0)
    assert inst.within_budget(plan.assignment)
    assert inst.load_distance(plan.assignment) >= bound - 1e-9
    assert plan.status == "optimal"


def test_without_a_budget_what_fits_leaves_a_draining_node_beside_a_unit_that_fits_nowhere() -> None:
    """Found by hypothesis on a fresh clone (30 Nov 2026): a unit of 1e6 that fits on no staying node (cap 100 %)
    beside a unit of load 0 on the draining node. The search took the instance as it is and left both there;
    largest-load-first moves the second. Now the search starts with the largest home, as few as fit nowhere, and
    the rest placed; a unit stays home only where the load distance needs it (a load of 0 never does)."""
    inst = instance([1.0, 0.0, 1e6], [0, 1, 1], [100.0, 100.0], draining=[False, True])
    plan = solve_milp(inst, time_limit_s=0.5)
    assert plan.assignment.tolist() == [0, 0, 1]
    assert inst.draining[plan.assignment].sum() <= inst.draining[largest_load_first(inst).assignment].sum()
    assert any("starts with the 1 largest home" in note for note in plan.notes)


def test_the_drained_problems_bisection_makes_no_placement_past_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found in review (30 Nov 2026): each bisection step is one placement of every leaving unit, and at 10,000
    nodes x 250,000 units (half draining, the staying nodes full) 18 of them took 7.7 s of a 1 s limit. Past its
    deadline the bisection makes no placement beyond the first try, and the search takes the instance as it is;
    without a deadline it bisects to the largest unit that fits nowhere, and the search starts from that plan (on the
    snapshot itself: not every unit fits, so any may stay; its original plan is the current one)."""
    inst = instance([1.0, 0.0, 2.0, 1e6], [0, 1, 1, 1], [100.0, 100.0], draining=[False, True])
    placements: list[int] = []
    placed_start = milp_solve.baselines.placed_start

    def counted(problem: AssignmentInstance, make_room: bool = False) -> np.ndarray:
        placements.append(int((problem.current == -1).sum()))
        return placed_start(problem, make_room)

    monkeypatch.setattr(milp_solve.baselines, "placed_start", counted)
    problem, _, _ = milp_solve.search_problem(inst, deadline=0.0)
    assert problem is inst and placements == [3, 0]  # the first try (all leave, 1e6 fits nowhere), then as is
    placements.clear()
    problem, original, start = milp_solve.search_problem(inst)
    # then (no placement anew: the staying node's room, 99, cannot hold 1e6) 1e6 kept home: the others leave
    assert problem is inst and placements[:2] == [3, 2]
    assert start.tolist() == [0, 0, 0, 1] and original.tolist() == inst.current.tolist()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    loads=st.lists(st.sampled_from([1.0, 3.0, 14.0, 0.45, 7.0, 0.0, 1e-9, 1e6]), min_size=1, max_size=14),
    n_nodes=st.integers(2, 6),
    homes=st.lists(st.integers(0, 5), min_size=14, max_size=14),
    budget=st.sampled_from([None, 0, 1, 3, 50]),
    draining=st.booleans(),
)
# a budget that cannot bind (one movable unit, one migration): the draining node is emptied, as without a budget
@example(loads=[1.0], n_nodes=4, homes=[3] + [0] * 13, budget=1, draining=True)
def test_terminates_with_a_valid_plan_on_tie_heavy_loads(
    loads: list[float], n_nodes: int, homes: list[int], budget: int | None, draining: bool
) -> None:
    """Every loop of the MILP ends (strict progress or a cap) on integer, tied, tiny and huge loads, within its time
    limit (with slack for a loaded machine), and the plan keeps every rule."""
    current = [h % n_nodes for h in homes[: len(loads)]]
    inst = instance(
        loads,
        current,
        [100.0] * n_nodes,
        draining=[draining and i == n_nodes - 1 for i in range(n_nodes)],
        max_migrations=budget,
    )
    started = time.perf_counter()
    plan = solve_milp(inst, time_limit_s=0.5)
    assert time.perf_counter() - started < 0.5 + 2.0
    assert inst.within_budget(plan.assignment)
    arrived = (plan.assignment != inst.current) & inst.draining[plan.assignment]
    assert not arrived.any()
    d = inst.load_distance(plan.assignment)
    if not inst.budget_binds and bool((inst.movable & inst.draining[inst.current]).any()):
        # Without a budget, or with one that cannot bind (since 2 Dec: a fresh-random draw, one unit of 1.0 on the
        # draining node of 4 and a budget of 1, drained it at 0.67 points where keeping it home is 0.33), every unit
        # leaves the draining node (CONTRACT.md: as the budget allows), whatever that
        # costs in balance (a unit of 1e6 on it: 200,000 points before, 800,000 after): no more units left there
        # than the baseline leaves, and no worse than its plan where it leaves as many (it may keep home a unit
        # that fits only once the others make room: 333,339 points against the drain's 666,659).
        other = largest_load_first(inst).assignment
        left, left_by_baseline = inst.draining[plan.assignment].sum(), inst.draining[other].sum()
        assert left <= left_by_baseline
        if left == left_by_baseline:
            assert d <= inst.load_distance(other) + 1e-9 * max(1.0, d)
    else:
        assert d <= inst.load_distance(inst.current) + 1e-9
    assert plan.lower_bound is not None and plan.lower_bound <= d + 1e-9


def test_a_cost_budget_far_above_tiny_state_sizes_is_no_integer_overflow() -> None:
    """Found by the fuzz test (500): a budget of 5 over a state size of 1e-100 gave CP-SAT a room of 1e100."""
    from schemas.assignment import AssignmentRequest
    from service.adapters import to_instance, to_response
    from solvers.plan_check import check_plan

    body = {
        "nodes": [{"id": "n0", "capacity": 1.0}, {"id": "n1", "capacity": 50.5}],
        "units": [
            {"id": "u0", "load": [1e6, 1e15, 0.1, 16.0], "node": "n0"},
            {"id": "u1", "load": [20.0, 0.1, 79.2, 21.0], "node": "n1", "pinned": True},
            {"id": "u2", "load": [92.2, 0.33, 43.8, 19.0], "node": "n0"},
            {"id": "u3", "load": [9.0, 1e-9, 93.7, 1e12], "node": "n0", "pinned": True},
            {"id": "u4", "load": [3.0, 0.1, 2.0, 2.0], "node": "n0", "pinned": True, "state_size": 1e6},
            {"id": "u5", "load": [0.1, 14.0, 0.33, 54.3], "state_size": 1e-9},
            {"id": "u6", "load": [0.1, 10.0, 15.0, 67.9], "node": "n1", "state_size": 1.9e-100},
            {"id": "u7", "load": [24.0, 1.0, 20.0, 1e12]},
        ],
        "budget": {"max_migration_cost": 5.0},
    }
    request = AssignmentRequest.model_validate(body)
    instance = to_instance(request)
    plan = solve_milp(instance, time_limit_s=0.5)
    response = to_response(instance, plan, "milp", 1.0)
    assert check_plan(request.model_dump(mode="json"), response.model_dump(mode="json", by_alias=True)) == []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    loads=st.lists(st.sampled_from([1.0, 2.0, 3.0, 14.0, 0.45, 7.0, 0.0, 1e-9]), min_size=2, max_size=16),
    n_nodes=st.integers(2, 6),
    homes=st.lists(st.integers(0, 5), min_size=16, max_size=16),
    states=st.lists(st.sampled_from([1.0, 0.5, 4.0, 10.0]), min_size=16, max_size=16),
    budget=st.sampled_from([("count", 1), ("count", 3), ("cost", 2.0), ("cost", 9.5)]),
    draining=st.booleans(),
    pins=st.lists(st.booleans(), min_size=16, max_size=16),
    seed=st.integers(0, 2**16),
)
def test_descent_and_perturbations_inside_a_spent_budget_keep_every_rule(
    loads: list[float],
    n_nodes: int,
    homes: list[int],
    states: list[float],
    budget: tuple[str, float],
    draining: bool,
    pins: list[bool],
    seed: int,
) -> None:
    """From a random plan that spends the budget, perturbations (migrations sent home) and descents never break the
    count or cost budget, never move a pinned unit, never put a unit on a draining node other than its home, and a
    descent never raises the load distance d (it may trade the tie-break du + dl for fewer nodes at d)."""
    u = len(loads)
    kind, amount = budget
    inst = instance(
        loads,
        [h % n_nodes for h in homes[:u]],
        [100.0] * n_nodes,
        draining=[draining and i == n_nodes - 1 for i in range(n_nodes)],
        pinned=pins[:u],
        state=states[:u],
        max_migrations=int(amount) if kind == "count" else None,
        max_migration_cost=amount if kind == "cost" else None,
    )
    rng = np.random.default_rng(seed)
    search = LocalSearch(inst, budget_spent_at_random(inst, rng), inst.current)
    for _ in range(4):
        before = search.key()[0]
        search.descend(time.perf_counter() + 5.0, 10_000)
        assert search.key()[0] <= before
        assert inst.within_budget(search.assignment)
        assert (search.assignment[inst.pinned] == inst.current[inst.pinned]).all()
        moved = search.assignment != inst.current
        assert not (moved & inst.draining[search.assignment]).any()
        assert abs(search.distance() - inst.load_distance(search.assignment)) < 1e-6
        migrated = np.flatnonzero(search.migrated_mask())
        if len(migrated):
            search = LocalSearch(inst, search.assignment, inst.current)
            search.send_home(rng.choice(migrated, size=max(1, len(migrated) // 2), replace=False))
            assert inst.within_budget(search.assignment)


def test_ejection_chains_and_twins_keep_every_rule_and_lower_the_worst_node() -> None:
    """Every ejection chain and every cheaper-twin replacement the search proposes (on random small clusters with
    a spent count or cost budget, draining nodes, pins, integer and tied loads) stays within the budget, moves no
    pinned unit, puts no unit on a draining node but its home, and leaves every node it touches below the worst
    node's deviation; and both kinds do occur (the generator reaches the cases)."""
    rng = np.random.default_rng(7)
    found = twins = 0
    for _ in range(400):
        n, u = int(rng.integers(3, 7)), int(rng.integers(6, 18))
        cost = bool(rng.integers(2))
        inst = instance(
            rng.choice([1.0, 2.0, 3.0, 5.0, 0.5], size=u).tolist(),
            rng.integers(0, n, size=u).tolist(),
            [100.0] * n,
            draining=[bool(rng.random() < 0.2) and i == n - 1 for i in range(n)],
            pinned=(rng.random(u) < 0.2).tolist(),
            state=rng.choice([1.0, 2.0, 0.5], size=u).tolist(),
            max_migrations=None if cost else int(rng.integers(1, 5)),
            max_migration_cost=float(rng.choice([1.0, 2.5, 4.0])) if cost else None,
        )
        plan = budget_spent_at_random(inst, rng)
        search = LocalSearch(inst, plan, inst.current)
        deviation = search.util[search.active_nodes] - search.mean
        position = int(np.argmax(np.abs(deviation)))
        d = float(abs(deviation[position]))
        node = int(search.active_nodes[position])
        over = bool(deviation[position] > 0)
        chains = search._chain_candidates(node, over, d)
        replaced = search._twin_candidates(*search._moves(node, over), d)
        found, twins = found + len(chains), twins + len(replaced)
        for _, steps in chains + replaced:
            assert len(steps) in (2, 3) and len({unit for unit, _ in steps}) == len(steps)
            after = LocalSearch(inst, plan, inst.current)
            after.apply(steps)
            assert inst.within_budget(after.assignment)
            assert (after.assignment[inst.pinned] == inst.current[inst.pinned]).all()
            moved = after.assignment != inst.current
            assert not (moved & inst.draining[after.assignment]).any()
            touched = {int(plan[unit]) for unit, _ in steps} | {dest for _, dest in steps}
            util = inst.utilization(after.assignment)
            for t in touched:
                if inst.active[t]:
                    assert abs(util[t] - inst.mean_utilization) < d - 1e-9
    assert found > 0 and twins > 0


def test_funded_moves_leave_a_spent_cost_budget_optimum() -> None:
    """The shape of flights-year 40n cost 2 % at 1.343 (docs/milp.md, milp10), in small: the cost budget is spent,
    every improving move off the worst node is blocked by it, and no single refund, compound step, swap, chain or
    twin improves the plan (the descent without funded moves takes no step). Several funds paid at once do: the
    descent then lowers the load distance from 4.25 to 1.25 points, within the budget."""
    inst = instance(
        [5.0, 4.0, 3.0, 5.0, 1.0, 4.0, 4.0, 4.0, 1.0, 4.0],
        [1, 1, 3, 1, 2, 1, 2, 2, 2, 1],
        [100.0] * 4,
        state=[0.5, 1.0, 0.5, 2.0, 0.5, 1.0, 0.5, 0.5, 0.5, 1.0],
        max_migration_cost=2.5,
    )
    plan = np.array([3, 1, 0, 1, 2, 0, 2, 2, 0, 1], dtype=np.int64)
    assert inst.within_budget(plan)
    with patch.object(local_search, "FUNDS", 0):
        stuck = LocalSearch(inst, plan, inst.current)
        assert not stuck.step()
    search = LocalSearch(inst, plan, inst.current)
    assert search.key()[0] == pytest.approx(4.25)
    search.descend(time.perf_counter() + 10, 100)
    assert search.key()[0] == pytest.approx(1.25)
    assert inst.within_budget(search.assignment)


@pytest.mark.parametrize("magnitude", [1.0, 1e-9, 1e12])
def test_funded_moves_keep_every_rule_and_lower_the_worst_node(magnitude: float) -> None:
    """Every funded move the search proposes (random small clusters with a spent cost budget, some with a count
    budget too, draining nodes, pins, mixed capacities, integer and tied loads, tiny and huge values) stays within
    the budget, moves no pinned unit, puts no unit on a draining node but its home, moves each unit once, keeps
    every node that gains within the cap and leaves every staying node it touches below the worst node's deviation
    (exactly: the plan after it); and such steps do occur."""
    rng = np.random.default_rng(13)
    found = 0
    for _ in range(500):
        n, u = int(rng.integers(3, 8)), int(rng.integers(6, 20))
        inst = instance(
            (rng.choice([1.0, 2.0, 3.0, 5.0, 4.0, 0.5], size=u) * magnitude).tolist(),
            rng.integers(0, n, size=u).tolist(),
            (rng.choice([100.0, 100.0, 200.0], size=n) * magnitude).tolist(),
            draining=[bool(rng.random() < 0.2) and i == n - 1 for i in range(n)],
            pinned=(rng.random(u) < 0.1).tolist(),
            state=rng.choice([1.0, 2.0, 3.0, 0.5], size=u).tolist(),
            max_migrations=int(rng.integers(2, 6)) if rng.random() < 0.3 else None,
            max_migration_cost=float(rng.choice([2.5, 4.0, 6.0])),
        )
        plan = budget_spent_at_random(inst, rng)
        with patch.object(local_search, "FUNDS", 0):  # to a local optimum of the other kinds of step
            start = LocalSearch(inst, plan, inst.current)
            start.descend(time.perf_counter() + 10, 200)
        plan = start.assignment
        search = LocalSearch(inst, plan, inst.current)
        deviation = search.util[search.active_nodes] - search.mean
        position = int(np.argmax(np.abs(deviation)))
        d = float(abs(deviation[position]))
        node = int(search.active_nodes[position])
        units, dests = search._moves(node, bool(deviation[position] > 0))
        sources = search.assignment[units]
        worst, ok = search.evaluate(
            [sources, dests],
            [-search.share[units] / search.capacity[sources], search.share[units] / search.capacity[dests]],
            distinct=True,
        )
        improving = np.flatnonzero(ok & (worst < d - 1e-9) & (sources != dests))
        fits = search.within_budget(*search.budget_delta(units[improving], dests[improving]))
        blocked = improving[~fits]
        candidates = search._funded_candidates(d, units[blocked], dests[blocked], worst[blocked])
        found += len(candidates)
        for value, steps in candidates:
            assert len({unit for unit, _ in steps}) == len(steps) >= 2
            after = LocalSearch(inst, plan, inst.current)
            after.apply(steps)
            assert inst.within_budget(after.assignment)
            assert (after.assignment[inst.pinned] == inst.current[inst.pinned]).all()
            moved = after.assignment != inst.current
            assert not (moved & inst.draining[after.assignment]).any()
            util = inst.utilization(after.assignment)
            touched = {int(plan[unit]) for unit, _ in steps} | {dest for _, dest in steps}
            for t in touched:
                if inst.active[t]:
                    assert abs(util[t] - inst.mean_utilization) < d - 1e-9
                if util[t] > search.util[t] + 1e-9:
                    assert util[t] <= search.cap * (1 + 1e-9)
            assert value < d
    assert found > 0


def test_the_band_repair_keeps_every_rule_and_never_pushes_a_node_out_of_the_band() -> None:
    """The band repair after a perturbation (LocalSearch.fill_band), on random small clusters with a spent count or
    cost budget, draining nodes, pins, mixed capacities and a resource cap: within the budget, no pinned unit moved,
    no unit on a draining node but its home, every receiving node within the utilization and resource caps, never
    more staying nodes outside the band than before, within its step cap; and it does land nodes."""
    rng = np.random.default_rng(11)
    landed = 0
    for _ in range(300):
        n, u = int(rng.integers(3, 8)), int(rng.integers(6, 24))
        cost = bool(rng.integers(2))
        inst = instance(
            rng.choice([1.0, 2.0, 3.0, 5.0, 0.5, 0.25], size=u).tolist(),
            rng.integers(0, n, size=u).tolist(),
            rng.choice([100.0, 200.0], size=n).tolist(),
            draining=[bool(rng.random() < 0.2) and i == n - 1 for i in range(n)],
            pinned=(rng.random(u) < 0.2).tolist(),
            state=rng.choice([1.0, 2.0, 0.5], size=u).tolist(),
            max_migrations=None if cost else int(rng.integers(1, 6)),
            max_migration_cost=float(rng.choice([1.0, 2.5, 4.0])) if cost else None,
            usage=rng.choice([0.0, 1.0, 3.0], size=(u, 1)).tolist(),
            resource_capacity=[[float(rng.choice([4.0, 8.0, np.inf]))] for _ in range(n)],
        )
        search = LocalSearch(inst, budget_spent_at_random(inst, rng), inst.current)
        migrated = np.flatnonzero(search.migrated_mask())
        if len(migrated):
            search.send_home(rng.choice(migrated, size=max(1, len(migrated) // 2), replace=False))
        before = search.assignment.copy()
        band = search.distance() * float(rng.uniform(0.2, 1.2))
        outside = int(np.sum(np.abs(search.util[search.active_nodes] - search.mean) > band))
        search.fill_band(band, rng, time.perf_counter() + 5.0, 4 * n)
        after = search.assignment
        assert inst.within_budget(after)
        assert (after[inst.pinned] == inst.current[inst.pinned]).all()
        assert not ((after != inst.current) & inst.draining[after]).any()
        util = inst.utilization(after)
        received = np.unique(after[after != before])
        assert (util[received] <= inst.utilization_cap() * (1 + 1e-9)).all()
        usage = np.bincount(after, weights=inst.resource_usage[:, 0], minlength=n)
        was = np.bincount(inst.current, weights=inst.resource_usage[:, 0], minlength=n)
        cap = np.maximum(inst.resource_capacity[:, 0], was)
        assert (usage[received] <= cap[received] + 1e-9).all()
        now = int(np.sum(np.abs(util[inst.active] - inst.mean_utilization) > band))
        assert now <= outside
        assert abs(search.distance() - inst.load_distance(after)) < 1e-6
        landed += outside - now
    assert landed > 0


def test_the_band_repair_lands_every_node_with_exact_fits() -> None:
    """Four nodes at +3, -3, +2 and -2 points with units of exactly those sizes and a budget of two moves: the band
    repair lands every node (the two moves that each land two nodes), where a move of a wrong size would leave the
    budget short."""
    loads = [3.0, 50.0, 47.0, 2.0, 50.0, 48.0]
    current = [0, 0, 1, 2, 2, 3]
    inst = instance(loads, current, [100.0] * 4, max_migrations=2)
    search = LocalSearch(inst, inst.current, inst.current)
    assert search.distance() == pytest.approx(3.0)
    search.fill_band(0.01, np.random.default_rng(0), time.perf_counter() + 5.0, 16)
    assert search.distance() == pytest.approx(0.0, abs=1e-9)
    assert search.used_moves == 2


def _throughput_snapshot(seed: int) -> AssignmentInstance:
    """A snapshot of the throughput bench (10 nodes x 100 units, budget 10): the full model has 900 booleans."""
    from bench.reliability.throughput import snapshot
    from schemas.assignment import AssignmentRequest
    from service.adapters import to_instance

    return to_instance(AssignmentRequest.model_validate_json(snapshot(seed, {"name": "milp"}, 0.2)))


def test_a_full_model_is_started_only_when_its_proof_can_fit_in_the_time_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 9: at time_limit_s 0.2 two CP-SAT slices too short for its presolve returned nothing (~40 ms of CPU)."""
    import solvers.milp.solve as milp_solve

    inst = _throughput_snapshot(41)  # no start meets the counting bound: the search goes on after the starts
    calls: list[int] = []
    real = milp_solve.solve_cpsat
    monkeypatch.setattr(
        milp_solve,
        "solve_cpsat",
        lambda model, *a, **k: calls.append(model.n_moves) or real(model, *a, **k),
    )
    short = solve_milp(inst, time_limit_s=0.2)
    assert not calls and any("needs about" in note for note in short.notes)
    longer = solve_milp(inst, time_limit_s=2.0)
    assert calls and calls[0] == 900
    assert inst.load_distance(longer.assignment) <= inst.load_distance(short.assignment) + 1e-9
    for plan in (short, longer):
        assert inst.within_budget(plan.assignment) and plan.lower_bound is not None
        assert plan.lower_bound <= inst.load_distance(plan.assignment) + 1e-9


def test_a_descent_stops_at_a_plan_proven_optimal() -> None:
    inst = _throughput_snapshot(0)
    free = LocalSearch(inst, inst.current, inst.current)
    assert free.descend(np.inf, 10_000) and free.key() < LocalSearch(inst, inst.current, inst.current).key()
    stopped = LocalSearch(inst, inst.current, inst.current)
    assert stopped.descend(np.inf, 10_000, proven=lambda d: True)
    assert (stopped.assignment == inst.current).all()


@pytest.mark.parametrize("seed", [0, 41, 59])
def test_a_coarse_bisection_refined_is_the_full_bisection(seed: int) -> None:
    from solvers.milp.bounds import BISECTION_PRECISION, lower_bound

    inst = _throughput_snapshot(seed)
    full = lower_bound(inst)
    coarse = lower_bound(inst, relative_precision=1e-3)
    assert (
        coarse.value <= full.threshold and full.value <= coarse.threshold
    )  # both brackets hold the same edge
    assert coarse.threshold - coarse.value <= 1e-3 * coarse.threshold + BISECTION_PRECISION
    refined = coarse.refined()
    assert abs(refined.value - full.value) <= 2 * BISECTION_PRECISION
    assert refined.value <= full.threshold


def _swaps_of_every_pair(search: LocalSearch, node: int, over: bool, d: float) -> list:
    """_swap_candidates as it was before its windows: every pair of the product evaluated (the reference)."""
    mine, theirs = search._swaps(node, over)
    if not len(mine) or not len(theirs):
        return []
    mine, theirs = np.repeat(mine, len(theirs)), np.tile(theirs, len(mine))
    other = search.assignment[theirs]
    net = search.share[mine] - search.share[theirs]
    here = np.full(len(mine), node, dtype=np.int64)
    worst, ok = search.evaluate(
        [here, other], [-net / search.capacity[node], net / search.capacity[other]], distinct=True
    )
    good = np.flatnonzero(ok & (worst < d - 1e-9))
    dn1, dc1 = search.budget_delta(mine[good], other[good])
    dn2, dc2 = search.budget_delta(theirs[good], here[good])
    good = good[search.within_budget(dn1 + dn2, dc1 + dc2)]
    best = good[np.argsort(worst[good], kind="stable")][:16]
    return [(float(worst[i]), [(int(mine[i]), int(other[i])), (int(theirs[i]), node)]) for i in best]


def test_swaps_inside_their_windows_are_the_swaps_of_every_pair() -> None:
    """The swap step evaluates only the pairs whose net load can land both nodes inside d (binary searches per
    partner unit): on random clusters (mixed capacities, draining nodes, cost budgets, tied and tiny loads) it
    finds exactly the swaps, in the same order, as evaluating every pair of the product."""
    compared = sum(_compare_swaps(seed) for seed in range(40))
    assert compared > 100  # the comparison ran on swaps (some clusters have none)


def _compare_swaps(seed: int) -> int:
    rng = np.random.default_rng(seed)
    n, u = int(rng.integers(3, 9)), int(rng.integers(8, 60))
    loads = rng.choice([1.0, 2.0, 3.0, 0.5, 7.0, 1e-9], size=u) * rng.uniform(0.5, 1.5, size=u).round(2)
    capacity = rng.choice([100.0, 200.0, 400.0], size=n) if seed % 2 else np.full(n, 100.0)
    inst = instance(
        loads.tolist(),
        rng.integers(0, n, size=u).tolist(),
        capacity.tolist(),
        draining=[seed % 3 == 0 and i == n - 1 for i in range(n)],
        state=rng.choice([1.0, 0.5, 4.0], size=u).tolist(),
        max_migrations=int(rng.integers(1, 6)) if seed % 4 else None,
        max_migration_cost=None if seed % 4 else 5.0,
    )
    search = LocalSearch(inst, budget_spent_at_random(inst, rng), inst.current)
    compared = 0
    for _ in range(30):
        deviation = search.util[search.active_nodes] - search.mean
        position = int(np.argmax(np.abs(deviation)))
        node, d = int(search.active_nodes[position]), float(abs(deviation[position]))
        over = bool(deviation[position] > 0)
        found, every = search._swap_candidates(node, over, d), _swaps_of_every_pair(search, node, over, d)
        # the same values in the same order; the same swaps except among ties at the cut (argpartition orders ties
        # as it likes, on either path)
        assert [worst for worst, _ in found] == [worst for worst, _ in every]
        if found:
            cut = found[-1][0]
            assert sorted(s for w, s in found if w < cut) == sorted(s for w, s in every if w < cut)
        compared += len(found)
        if not search.step():
            break
    return compared


def test_a_descent_stops_at_a_plan_an_earlier_descent_passed_through() -> None:
    """The descent is a function of the plan: a descent that reaches a plan an earlier one passed through stops
    there (it would end where the earlier one ended); a descent without the memory ends where the first did."""
    rng = np.random.default_rng(5)
    inst = instance(
        rng.uniform(0.1, 9.0, size=60).round(3).tolist(),
        (np.arange(60) % 6).tolist(),
        [100.0] * 6,
        max_migrations=8,
    )
    start = budget_spent_at_random(inst, rng)
    seen: set[int] = set()
    first = LocalSearch(inst, start, inst.current)
    assert first.descend(time.perf_counter() + 5.0, 10_000, seen=seen)
    steps_seen = len(seen)
    assert steps_seen >= 1
    again = LocalSearch(inst, start, inst.current)
    assert again.descend(time.perf_counter() + 5.0, 10_000, seen=seen)
    assert (again.assignment == start).all()  # stopped at once: the start was seen
    assert len(seen) == steps_seen
    plain = LocalSearch(inst, start, inst.current)
    plain.descend(time.perf_counter() + 5.0, 10_000)
    assert (plain.assignment == first.assignment).all()


def test_the_plan_hash_follows_every_move() -> None:
    """The plan's hash, updated move by move (single moves and many at once), is the hash of the plan computed
    from scratch, and plans that differ get different hashes."""
    rng = np.random.default_rng(11)
    inst = instance(rng.uniform(0.1, 9.0, size=80).tolist(), (np.arange(80) % 7).tolist(), [100.0] * 7)
    search = LocalSearch(inst, inst.current, inst.current)
    hashes = {search.plan_hash()}
    for _ in range(200):
        if rng.random() < 0.5:
            search.apply([(int(rng.integers(80)), int(rng.integers(7)))])
        else:
            units = rng.choice(80, size=5, replace=False)
            search.apply_distinct(units, rng.integers(0, 7, size=5))
        assert search.plan_hash() == LocalSearch(inst, search.assignment, inst.current).plan_hash()
        hashes.add(search.plan_hash())
    assert len(hashes) > 150  # random walks revisit few plans

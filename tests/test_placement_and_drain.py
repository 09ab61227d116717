"""Units without a node placed by the baselines and the MILP, and draining nodes emptied when no budget holds units
back (issues 9 and 10).

What was seen (29 Nov):
- every unit without a node (an initial placement), 40 nodes x 2,000 units at 50 %: `flux` and
  `largest-load-first` answered 487 points (400 x 20,000: 5,015). np.bincount of no placed unit returns int64 zeros
  even with float weights, and the placement's loads, added in place, were truncated: the least loaded node looked
  empty whatever it held;
- no budget, 4,000 nodes of which 2,000 draining hold all 100,000 units: milp at 2 s answered 29-55 points with
  53,000-72,000 units still on draining nodes (its starts move them one step at a time), where
  `largest-load-first` drains them all (0.26); at 100 x 2,500 it left 3 units on draining nodes, at 1,000 x 25,000
  54 (for 0.004 and 0.019 points);
- later (bench.milp_campaign seed 2038): 150 nodes, 42 draining, 1,500 units whose loads are a lattice of one
  quantum (0.79 points), no budget: milp left 17 units on draining nodes at 1 s (0.651 points, a plan that drains
  them all has the same distance) and 16 at 5 s (0.139: the lattice balances only with load left behind). The move
  model let units go back to their draining home and the packed start left what fitted nowhere in the band, where
  the contract asks every unit to leave a draining node that the budget allows to leave (without a budget: all)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.milp_campaign import snapshot
from solvers import baselines
from solvers.instance import UNPLACED, AssignmentInstance
from solvers.milp.solve import solve_milp


def _snapshot(n: int, u: int, draining: int = 0, placed: bool = True) -> AssignmentInstance:
    rng = np.random.default_rng(0)
    mask = np.zeros(n, dtype=bool)
    mask[:draining] = True
    current = rng.integers(0, max(1, draining), u) if placed else np.full(u, UNPLACED)
    loads = np.round(rng.uniform(0.01, 4.0, u), 3) * (n - draining) * 50 / u / 2
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=np.full(n, 100.0),
        draining=mask,
        unit_ids=tuple(f"u{k}" for k in range(u)),
        current=np.asarray(current, dtype=np.int64),
        series=loads[:, None],
        state_size=np.ones(u),
        pinned=np.zeros(u, dtype=bool),
    )


@pytest.mark.parametrize("baseline", [baselines.flux, baselines.largest_load_first])
def test_units_without_a_node_are_spread(baseline: object) -> None:
    instance = _snapshot(40, 2000, placed=False)
    plan = baseline(instance)  # type: ignore[operator]
    assert instance.load_distance(plan.assignment) < 0.5  # 487 points before


def test_node_loads_of_no_placed_unit_are_floats() -> None:
    instance = _snapshot(5, 10, placed=False)
    loads = baselines.placed_node_load(instance, instance.current)
    assert loads.dtype == np.float64 and not loads.any()
    with pytest.raises(TypeError):
        baselines.place_unplaced(instance, instance.current.copy(), np.zeros(5, dtype=np.int64))


@pytest.mark.parametrize(("n", "u"), [(100, 2500), (400, 10_000)])
def test_without_a_budget_milp_empties_the_draining_nodes(n: int, u: int) -> None:
    instance = _snapshot(n, u, draining=n // 2)
    plan = solve_milp(instance, time_limit_s=2.0)
    assert not instance.draining[plan.assignment].any()
    other = baselines.largest_load_first(instance).assignment
    assert instance.load_distance(plan.assignment) <= instance.load_distance(other)


@pytest.mark.parametrize("time_limit_s", [1.0, 5.0])
def test_without_a_budget_no_unit_stays_on_a_draining_node_on_a_lattice(time_limit_s: float) -> None:
    instance = snapshot(2038)
    assert instance.max_migrations is None and instance.max_migration_cost is None
    assert int(instance.draining.sum()) == 42 and not instance.pinned.any()
    plan = solve_milp(instance, time_limit_s=time_limit_s)
    assert not instance.draining[plan.assignment].any()
    # the drained optimum: the lattice's level above the mean on the staying nodes
    assert instance.load_distance(plan.assignment) == pytest.approx(0.6508, abs=1e-4)


def test_units_that_fit_on_no_staying_node_may_stay_on_their_draining_node() -> None:
    # Two staying nodes at 90 %, a draining node holding a unit of 50: it fits nowhere under the cap (100 %), so it
    # stays (as the baselines' drain leaves it), and the plan is no 422.
    instance = AssignmentInstance(
        node_ids=("a", "b", "d"),
        capacity=np.full(3, 100.0),
        draining=np.array([False, False, True]),
        unit_ids=("u0", "u1", "u2", "u3"),
        current=np.array([0, 1, 2, 2], dtype=np.int64),
        series=np.array([[90.0], [90.0], [50.0], [5.0]]),
        state_size=np.ones(4),
        pinned=np.zeros(4, dtype=bool),
    )
    plan = solve_milp(instance, time_limit_s=1.0)
    assert plan.assignment[2] == 2
    assert instance.utilization(plan.assignment)[:2].max() <= 100.0 + 1e-9


def test_the_validator_holds_an_initial_placement_to_the_solvers_cap() -> None:
    # Nothing on any node before: a node may end at 100 % or the mean utilization, not at 587 % (the plan above).
    from schemas.assignment import AssignmentRequest
    from service.adapters import plan_answer, to_instance
    from solvers.instance import Plan
    from solvers.plan_check import check_plan

    body = {
        "nodes": [{"id": f"n{i}"} for i in range(4)],
        "units": [{"id": f"u{k}", "load": 30.0} for k in range(8)],
    }
    instance = to_instance(AssignmentRequest.model_validate(body))
    spread = Plan(assignment=np.array([0, 1, 2, 3, 0, 1, 2, 3]), status="feasible")
    piled = Plan(assignment=np.array([0, 0, 0, 0, 1, 2, 3, 3]), status="feasible")  # n0 at 120 %: over 100 %
    assert check_plan(body, plan_answer(instance, spread, "flux", 0.0)) == []
    problems = check_plan(body, plan_answer(instance, piled, "flux", 0.0))
    assert any("n0" in p and "over 100.000%" in p for p in problems), problems


def _needs_room(budget: int) -> AssignmentInstance:
    """3 nodes of 100, n1 draining: n0 and n2 hold 44 each, a new unit of 57 fits on neither (101 %) until one 44
    moves onto the other (88 %): one migration. (Found against enumeration, 30 Nov: 422 "fits on no staying node;
    add capacity" where a plan of 11.5 points exists.)"""
    return AssignmentInstance(
        node_ids=("n0", "n1", "n2"),
        capacity=np.full(3, 100.0),
        draining=np.array([False, True, False]),
        unit_ids=tuple(f"u{k}" for k in range(5)),
        current=np.array([UNPLACED, 1, UNPLACED, 0, 2]),
        series=np.array([57.0, 1.0, 9.0, 44.0, 44.0])[:, None],
        state_size=np.ones(5),
        pinned=np.zeros(5, dtype=bool),
        max_migrations=budget,
    )


@pytest.mark.parametrize("solver", [baselines.flux, baselines.largest_load_first, solve_milp])
def test_a_unit_without_a_node_gets_one_where_a_migration_makes_room(solver: object) -> None:
    inst = _needs_room(budget=1)
    plan = solver(inst, 0.5)  # type: ignore[operator]
    assert inst.within_budget(plan.assignment)
    assert (plan.assignment >= 0).all() and inst.active[plan.assignment[0]]
    util = inst.utilization(plan.assignment)
    assert (util[inst.active] <= inst.utilization_cap() * (1 + 1e-12)).all()
    if solver is solve_milp:
        assert inst.load_distance(plan.assignment) == pytest.approx(11.5)  # the optimum (enumeration)


def test_room_is_made_only_within_the_budget() -> None:
    from solvers.errors import UnsolvableRequest

    with pytest.raises(UnsolvableRequest, match="u0"):
        baselines.placed_start(_needs_room(budget=0), make_room=True)
    with pytest.raises(UnsolvableRequest, match="u0"):
        baselines.placed_start(_needs_room(budget=1))  # (the default: no room made, as ALBIC and COLA start)
    start = baselines.placed_start(_needs_room(budget=1), make_room=True)
    assert int(((start != _needs_room(1).current) & (_needs_room(1).current >= 0)).sum()) == 1

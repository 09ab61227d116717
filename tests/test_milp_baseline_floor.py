"""milp is never worse than the service's own baselines, and does not stop far above its bound (issue 10).

What was seen (random snapshots of many kinds, none from the benches: bench.milp_campaign, 150 snapshots at
0.3 s): 150 nodes (capacities 1x/2x/4x, 14 draining), 6,000 Zipf units over 8 windows, 318 pinned, placed at random,
no budget. milp at 1 s answered 1.13 points where `largest-load-first` answers 0.86: the search's own
largest-load-first (`shave`) left the hot unit on the 4x node with the most pinned load (1.32 points) where no step
of the descent helps, and the baseline's plan was never a start. At 2 s milp stopped at 0.54 points, "within 0.22
points of the bound" (0.32): the residual gap, a thousandth of the current plan's distance (220 points here), let it
stop there.

Later (seeds 5000-5299 of the campaign): 150 nodes (16 draining), 750 units over 3 windows, two hot units each
larger than ten nodes, no budget. milp stopped after its first start at 1,045.946 points, within relative_gap
(0.1 %, a whole point here) of the bound 1,045.740, which flux and largest-load-first both reach: a plan within the
gap is final only once it is no worse than the baselines' own plans.

Later (seeds 8000-8199): 80 nodes of random capacities (30-400, 6 draining), 6,000 units over 3 windows at 97.6 %
mean utilization, no budget. milp answered 3.106 points at 1 s and at 5 s; largest-load-first 2.854, the bound. The
search solves the drained problem (the draining nodes' units without a node) and made its baseline starts there,
where largest-load-first places those units by another rule than its own drain: 3.436. The floor is the baselines'
plans for the snapshot asked."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest

from bench.milp_campaign import snapshot
from solvers.baselines import flux, largest_load_first
from solvers.instance import AssignmentInstance, Plan
from solvers.milp import solve
from solvers.milp.solve import floor_plan, search_problem, solve_milp


def test_the_snapshot_seen_is_the_one_described() -> None:
    inst = snapshot(66)
    assert (inst.n_nodes, inst.n_units, inst.series.shape[1]) == (150, 6000, 8)
    assert int(inst.draining.sum()) == 14 and int(inst.pinned.sum()) == 318
    assert inst.max_migrations is None and inst.max_migration_cost is None
    assert inst.load_distance(largest_load_first(inst).assignment) == pytest.approx(0.862, abs=1e-3)


@pytest.mark.parametrize("seed", [66, 146, 5203, 8149, 14536])
def test_milp_is_never_worse_than_a_baseline_within_the_budget(seed: int) -> None:
    inst = snapshot(seed)
    plan = solve_milp(inst, time_limit_s=1.0)
    assert inst.within_budget(plan.assignment)
    d = inst.load_distance(plan.assignment)
    left = int((inst.movable & inst.draining[plan.assignment]).sum())
    for baseline in (largest_load_first, flux):
        other = baseline(inst).assignment
        if inst.within_budget(other):
            # No more units left on draining nodes than the baseline leaves (none, in all four), and no worse than
            # its plan where it leaves as many: seed 5203's baselines keep a unit home that fits once every
            # movable unit is placed anew (1,045.7 points; the drain is 1,081.4, proven optimal).
            left_by_baseline = int((inst.movable & inst.draining[other]).sum())
            assert left <= left_by_baseline, baseline.__name__
            if left == left_by_baseline:
                assert d <= inst.load_distance(other) + 1e-9, baseline.__name__


def test_the_stop_near_the_bound_is_a_few_hundredths_of_a_point_at_most() -> None:
    # 220 points off balance before the plan: a thousandth of that (0.22 points) is no longer a reason to stop.
    inst = snapshot(66)
    assert inst.load_distance(inst.current) > 100
    plan = solve_milp(inst, time_limit_s=2.0)
    assert plan.lower_bound is not None
    d = inst.load_distance(plan.assignment)
    assert d - plan.lower_bound <= max(solve.RESIDUAL_GAP_MAX, 0.001 * d) + 1e-9


def test_a_baseline_that_fails_is_no_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # A baseline that raises (no room for a unit without a node) or answers over the budget leaves the other starts.
    from solvers.errors import UnsolvableRequest

    inst = snapshot(3)

    def refuses(instance: AssignmentInstance, time_limit_s: float | None = None) -> None:
        raise UnsolvableRequest(("body", "units"), "no room")

    monkeypatch.setattr(solve.baselines, "largest_load_first", refuses)
    plan = solve_milp(inst, time_limit_s=0.3)
    assert inst.within_budget(plan.assignment)


def _drain_snapshot() -> AssignmentInstance:
    return AssignmentInstance(
        node_ids=("a", "b", "c", "d"),
        capacity=np.full(4, 100.0),
        draining=np.array([True, False, False, False]),
        unit_ids=tuple(f"u{i}" for i in range(8)),
        current=np.array([0, 0, 0, 1, 1, 2, 3, 3]),
        series=np.array([[5.0], [7.0], [3.0], [4.0], [6.0], [2.0], [8.0], [1.0]]),
        state_size=np.ones(8),
        pinned=np.array([False, False, True, False, False, False, False, False]),
    )


def test_the_floor_is_the_baselines_plan_of_the_snapshot_asked() -> None:
    # Without a budget the search solves the drained problem; the floor is still the baseline's own plan (its drain).
    inst = _drain_snapshot()
    problem, _, _ = search_problem(inst)
    assert problem is not inst and (problem.current == -1).sum() == 2  # the pinned unit stays
    floor = floor_plan(inst, problem, largest_load_first, time.perf_counter() + 1)
    assert floor is not None
    assert (floor == largest_load_first(inst).assignment).all()
    assert floor[2] == 0  # pinned on the draining node: allowed in both problems


def test_a_baseline_plan_that_breaks_the_drain_rule_is_replaced_by_its_plan_of_the_drained_problem() -> None:
    # A baseline plan for the snapshot asked that leaves a movable unit on a draining node (its greedy found no room)
    # is not a plan of the problem searched: the same baseline's plan of the drained problem stands in.
    inst = _drain_snapshot()
    problem, _, _ = search_problem(inst)
    seen: list[bool] = []  # whether each call planned the snapshot asked

    def stays_on_draining(instance: AssignmentInstance, time_limit_s: float | None = None) -> Plan:
        seen.append(instance is not problem)
        if instance is not problem:
            return Plan(assignment=instance.current.copy(), status="unchanged")
        return largest_load_first(instance, time_limit_s)

    floor = floor_plan(inst, problem, stays_on_draining, time.perf_counter() + 1)
    assert seen == [True, False]
    assert floor is not None and (floor == largest_load_first(problem).assignment).all()
    assert not (problem.movable & problem.draining[floor]).any()
    # and a snapshot with a budget is its own search problem: one call
    seen.clear()
    budgeted = replace(inst, max_migrations=1)
    assert search_problem(budgeted)[0] is budgeted
    floor_plan(budgeted, budgeted, stays_on_draining, time.perf_counter() + 1)
    assert seen == [True]  # (its own plan, unchanged: within the budget)


def test_a_stop_within_the_gap_under_a_budget_is_no_worse_than_a_baseline() -> None:
    """Later (1 Dec): the throughput bench's snapshot 309 (10 x 100, at most 10 migrations) at time_limit_s 0.2.
    The flux start's plan (1.8102 points) was within relative_gap of the bound (1.8013), so the call stopped at once
    and skipped the baselines (a stop within FLOOR_CHECK_GAP, 0.02 points), while largest-load-first answers
    1.8028. Likewise bench.milp_campaign --family skew seed 11342 (16 x 128, 40 migrations): 0.0043 points worse."""
    import json

    from bench.reliability.throughput import snapshot as small_snapshot
    from schemas.assignment import AssignmentRequest
    from service.adapters import to_instance

    body = json.loads(small_snapshot(309, {"name": "milp"}, 0.2))
    inst = to_instance(AssignmentRequest.model_validate(body))
    plan = solve_milp(inst, time_limit_s=0.2)
    d = inst.load_distance(plan.assignment)
    for baseline in (flux, largest_load_first):
        other = baseline(inst).assignment
        assert inst.within_budget(other)
        assert d <= inst.load_distance(other) + 1e-9, baseline.__name__

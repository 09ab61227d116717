"""Hypothesis properties of the improved correlation placement against brute force on small instances:
the spread bound holds whenever some assignment meets it, no node peaks above 100 % whenever some assignment within
the bound avoids it; integer, tie-heavy, tiny and huge series; heterogeneous capacities; budgets and pins kept."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.correlation import solve_global, solve_pairwise
from solvers.errors import UnsolvableRequest
from solvers.instance import UNPLACED, AssignmentInstance
from solvers.integer_scaling import integer_step

TOL = 1e-7


@st.composite
def small_instances(draw: st.DrawFn) -> AssignmentInstance:
    n_nodes = draw(st.integers(2, 3))
    n_units = draw(st.integers(1, 7))
    windows = draw(st.integers(2, 6))
    scale = draw(st.sampled_from([1.0, 1.0, 1e-6, 1e6]))
    kind = draw(st.sampled_from(["integer", "ties", "float"]))
    if kind == "integer":
        rows = [
            draw(st.lists(st.integers(0, 60), min_size=windows, max_size=windows)) for _ in range(n_units)
        ]
    elif kind == "ties":
        base = draw(st.lists(st.sampled_from([0, 10, 20]), min_size=windows, max_size=windows))
        rows = [[v * draw(st.sampled_from([1, 1, 2])) for v in base] for _ in range(n_units)]
    else:
        rows = [
            draw(st.lists(st.floats(0.0, 60.0), min_size=windows, max_size=windows)) for _ in range(n_units)
        ]
    series = np.asarray(rows, dtype=np.float64) * scale
    capacity = np.array([draw(st.sampled_from([50.0, 100.0, 100.0, 150.0])) for _ in range(n_nodes)]) * scale
    current = np.array([draw(st.integers(-1, n_nodes - 1)) for _ in range(n_units)], dtype=np.int64)
    pinned = np.array([c >= 0 and draw(st.integers(0, 6)) == 0 for c in current.tolist()], dtype=bool)
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n_nodes)),
        capacity=capacity,
        draining=np.zeros(n_nodes, dtype=bool),
        unit_ids=tuple(f"u{k}" for k in range(n_units)),
        current=current,
        series=series,
        state_size=np.ones(n_units),
        pinned=pinned,
    )


def _all_assignments(inst: AssignmentInstance) -> np.ndarray:
    choices = [
        [int(inst.current[u])] if inst.pinned[u] else list(range(inst.n_nodes)) for u in range(inst.n_units)
    ]
    return np.array(list(itertools.product(*choices)), dtype=np.int64)


def _spread_and_overloaded(
    inst: AssignmentInstance, assignments: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Spread of mean utilization (points) and nodes above 100 % in some window, for each row of `assignments`."""
    n, k = inst.n_nodes, inst.series.shape[1]
    one_hot = np.zeros((len(assignments), n, inst.n_units))
    rows = np.arange(len(assignments))[:, None]
    one_hot[rows, assignments, np.arange(inst.n_units)[None, :]] = 1.0
    util = 100.0 * (one_hot @ inst.series) / inst.capacity[None, :, None]  # (A, n, k)
    mean = util.mean(axis=2)
    peak = util.max(axis=2) if k else np.zeros_like(mean)
    return mean.max(axis=1) - mean.min(axis=1), (peak > 100.0 + TOL).sum(axis=1)


def _within_utilization_cap(inst: AssignmentInstance, assignments: np.ndarray) -> np.ndarray:
    """Rows of `assignments` the validator accepts: no node that receives a unit ends above
    `inst.utilization_cap()` (the rule of `solvers.correlation.solve.cap_violations`, written out here)."""
    cap = inst.utilization_cap()
    load = inst.series.mean(axis=1)
    one_hot = assignments[:, None, :] == np.arange(inst.n_nodes)[None, :, None]  # (A, n, units)
    util = 100.0 * (one_hot * load[None, None, :]).sum(axis=2) / inst.capacity[None, :]
    receives = (one_hot & (assignments != inst.current[None, :])[:, None, :]).any(axis=2)
    return np.asarray(~(receives & (util > cap * (1 + 1e-9) + 1e-9)).any(axis=1))


def _check_against_brute_force(inst: AssignmentInstance, assignment: np.ndarray, max_spread: float) -> None:
    assert (assignment >= 0).all()
    assert (assignment[inst.pinned] == inst.current[inst.pinned]).all()
    # Only plans the validator accepts compete: with units without a node, the cap on receivers can rule out
    # every plan within the spread bound (random hypothesis found: caps 100/50, the only plan of spread 4.36
    # puts n1 at 136.9 % over the cap of 135.97 %; the solver's 6.08 is the best allowed).
    every = _all_assignments(inst)
    every = every[_within_utilization_cap(inst, every)]
    assert _within_utilization_cap(inst, assignment[None, :])[0]
    if not len(every):
        return
    spreads, overloaded = _spread_and_overloaded(inst, every)
    ours_spread, ours_over = _spread_and_overloaded(inst, assignment[None, :])
    slack = TOL * max(1.0, max_spread)
    if spreads.min() <= max_spread - slack:
        assert ours_spread[0] <= max_spread + slack, (ours_spread[0], spreads.min())
        within = spreads <= max_spread - slack
        if (overloaded[within] == 0).any():
            assert ours_over[0] == 0, (ours_over[0], ours_spread[0])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(), st.sampled_from([0.0, 5.0, 5.0, 20.0]))
def test_global_meets_the_spread_bound_whenever_some_assignment_does(
    inst: AssignmentInstance, max_spread: float
) -> None:
    try:
        plan = solve_global(inst, max_spread=max_spread)
    except UnsolvableRequest as exc:
        assert "do not fit" in exc.msg
        return
    _check_against_brute_force(inst, plan.assignment, max_spread)


def test_global_is_held_to_the_utilization_cap_not_to_a_plan_the_validator_refuses() -> None:
    """Found by random hypothesis: the only plan within max_spread 5 (spread 4.36) puts n1 at 136.9 %, over the
    cap of 135.97 % (n0's utilization before); the answer is the best plan under the cap (6.08)."""
    series = np.array(
        [
            [41.930004840338064, 55.21540227971283, 12.160907945728447],
            [0.006222389650540894, 37.202571937271635, 40.1126355805153],
            [33.53963861373812, 11.191140441205498, 0.7563237793890298],
            [30.006419214537395, 37.57154666676393, 20.1828954899843],
            [43.679381995422624, 39.44955933084954, 38.63133746759756],
            [23.51834809433164, 14.700119417991056, 5.383987140126994],
            [54.121016603295224, 48.16326161917148, 15.236290077275248],
        ]
    )
    inst = AssignmentInstance(
        node_ids=("n0", "n1"),
        capacity=np.array([100.0, 50.0]),
        draining=np.zeros(2, dtype=bool),
        unit_ids=tuple(f"u{k}" for k in range(7)),
        current=np.array([0, UNPLACED, 0, 0, 0, 0, 1]),
        series=series,
        state_size=np.ones(7),
        pinned=np.array([False] * 6 + [True]),
    )
    plan = solve_global(inst, max_spread=5.0)
    _check_against_brute_force(inst, plan.assignment, 5.0)
    spread, _ = _spread_and_overloaded(inst, plan.assignment[None, :])
    assert abs(float(spread[0]) - 6.0776721) < 1e-6


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(), st.sampled_from([0.0, 5.0, 20.0]))
def test_pairwise_without_budget_meets_the_spread_bound_whenever_some_assignment_does(
    inst: AssignmentInstance, max_spread: float
) -> None:
    try:
        plan = solve_pairwise(inst, max_spread=max_spread)
    except UnsolvableRequest as exc:
        assert "do not fit" in exc.msg
        return
    _check_against_brute_force(inst, plan.assignment, max_spread)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(), st.integers(0, 3), st.sampled_from([5.0, 0.0]))
def test_pairwise_repair_keeps_the_budget_and_never_worsens_the_spread_violation(
    inst: AssignmentInstance, budget: int, max_spread: float
) -> None:
    from dataclasses import replace

    inst = replace(inst, current=np.where(inst.current < 0, 0, inst.current), max_migrations=budget)
    try:
        paper = solve_pairwise(inst, max_spread=None)
        improved = solve_pairwise(inst, max_spread=max_spread)
    except UnsolvableRequest:
        return
    assert int(inst.migration_mask(improved.assignment).sum()) <= budget
    spreads, _ = _spread_and_overloaded(inst, np.stack([paper.assignment, improved.assignment]))
    violation = np.maximum(spreads - max_spread, 0.0)
    # The repair starts from the paper's plan and takes only strictly improving steps: a plan that met the bound
    # still meets it (utilization points are scale-free, so the tolerance is absolute).
    if violation[0] <= 1e-6:
        assert violation[1] <= 1e-6
    assert math.isfinite(float(spreads[1]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(2, 8),
    st.integers(1, 40),
    st.integers(2, 12),
    st.integers(0, 2**31 - 1),
    st.sampled_from([0.0, 1.0, 5.0]),
)
def test_repair_terminates_by_progress_not_by_its_cap_on_integer_tie_heavy_loads(
    n_nodes: int, n_units: int, windows: int, seed: int, max_spread: float
) -> None:
    from solvers.correlation.global_placement import global_assignment, repair_steps_cap

    rng = np.random.default_rng(seed)
    values = np.array([0.0, 1.0, 1.0, 2.0, 5.0, 10.0, 50.0])
    pattern = rng.choice(values, (3, windows))  # few distinct series: many exact ties
    series = pattern[rng.integers(0, 3, n_units)] * rng.choice([1.0, 1.0, 2.0], (n_units, 1))
    inst = AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n_nodes)),
        capacity=rng.choice([1.0, 10.0, 100.0, 100.0], n_nodes),
        draining=np.zeros(n_nodes, dtype=bool),
        unit_ids=tuple(f"u{k}" for k in range(n_units)),
        current=rng.integers(0, n_nodes, n_units),
        series=series,
        state_size=np.ones(n_units),
        pinned=rng.random(n_units) < 0.1,
    )
    assignment, timed_out, result = global_assignment(inst, max_spread=max_spread)
    assert result is not None and not timed_out
    assert not result.stopped_by_cap
    assert result.steps < repair_steps_cap(inst)
    assert (assignment >= 0).all()
    assert (assignment[inst.pinned] == inst.current[inst.pinned]).all()
    # Never worse than the paper's plan it started from, lexicographically.
    before, after = result.before, result.after
    assert after.violation <= before.violation + 1e-9
    if after.violation >= before.violation - 1e-9:
        assert after.overloaded <= before.overloaded


def _global_avoids_the_overload(
    capacity: list[float], current: list[int], pinned: list[bool], series: np.ndarray
) -> None:
    """solve_global at max_spread 5 meets the brute force's spread and leaves no node above 100 % in any window."""
    n_nodes, n_units = len(capacity), len(current)
    inst = AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n_nodes)),
        capacity=np.array(capacity),
        draining=np.zeros(n_nodes, dtype=bool),
        unit_ids=tuple(f"u{k}" for k in range(n_units)),
        current=np.array(current),
        series=series,
        state_size=np.ones(n_units),
        pinned=np.array(pinned),
    )
    plan = solve_global(inst, max_spread=5.0)
    _check_against_brute_force(inst, plan.assignment, 5.0)
    _, overloaded = _spread_and_overloaded(inst, plan.assignment[None, :])
    assert overloaded[0] == 0


def test_global_fills_a_node_to_exactly_100_percent_when_that_avoids_an_overload() -> None:
    """Found by hypothesis on a fresh clone (29 Nov 2026, eighth session): two pinned units fill n0 to exactly 100 %
    in the last window. The exact repair's model tightened every window's limit by the worst rounding, so it called
    n0 overloaded whatever the plan and found none without overload; the plan kept n2 at 100.7 %. Brute force finds
    two plans within max_spread (4.8) and no node above 100 %."""
    last = [42.0, 50.0, 52.0, 3.0, 46.0, 60.0, 58.0]
    fourth = [0.0, 0.0, 0.0, 1.0, 8.0, 47.0, 30.0]
    series = np.array([[0.0, 0.0, 0.0, a, b] for a, b in zip(fourth, last, strict=True)])
    pinned = [True, False, False, False, False, False, True]
    _global_avoids_the_overload([100.0, 100.0, 150.0], [0, 0, 0, 0, -1, -1, 0], pinned, series)


def test_global_fills_a_node_of_capacity_150_to_exactly_100_percent_when_that_avoids_an_overload() -> None:
    """Found by hypothesis in the full suite (29 Nov 2026, ninth session), after the fix above: capacities of 150,
    and n0's plan without overload holds 52 + 58 + 40 = 150 in the last window. In utilization units the terms round
    (40 / 150 and 110 / 150 of 10^6), and the limit tightened by their errors called that window overloaded; the plan
    kept n0 at 102.7 %. The exact model now counts windows in the loads' own step (here 1), where 150 <= 150."""
    series = np.array(
        [[0.0, 0.0, 0.0, 0.0, 0.0, last] for last in (52.0, 58.0, 1.0, 1.0, 43.0)]
        + [[0.0, 0.0, 0.0, 0.0, 48.0, 40.0], [0.0, 0.0, 14.0, 28.0, 7.0, 60.0]]
    )
    pinned = [True, True, True, False, False, False, False]
    _global_avoids_the_overload([150.0, 150.0], [0, 0, 1, 0, -1, -1, -1], pinned, series)


def test_global_fills_a_node_to_exactly_100_percent_whatever_the_smallest_load() -> None:
    """Found by hypothesis right after the fix above (29 Nov 2026, ninth session): the same kind of instance with 13
    the smallest load. The loads' step was found as a fraction of the smallest (13/1 .. 13/12), so integer loads with
    no such step fell back to the rounded utilization terms, and n1 stayed at 100.7 % where brute force fills n0 to
    exactly 150 within the spread (3.56). `integer_step` also tries the loads as integers."""
    series = np.array(
        [[0.0, 0.0, 0.0, 0.0, 0.0, 23.0], [0.0, 0.0, 13.0, 23.0, 0.0, 52.0]]
        + [[0.0, 0.0, 0.0, 0.0, 0.0, last] for last in (58.0, 23.0, 52.0)]
        + [[0.0, 0.0, 0.0, 0.0, 13.0, 18.0], [0.0, 0.0, 0.0, 0.0, 13.0, 52.0]]
    )
    pinned = [True, True, True, False, False, False, False]
    _global_avoids_the_overload([150.0, 150.0], [0, 0, 1, 0, -1, -1, -1], pinned, series)


def test_integer_step_finds_integer_and_decimal_steps_and_none_for_reals() -> None:
    assert integer_step(np.array([13.0, 52.0, 150.0])) == 1.0  # common_step's fractions of 13 miss it
    assert integer_step(np.array([13e-6, 52e-6, 150e-6])) == 1e-6
    assert integer_step(np.array([26e6, 52e6, 150e6])) == 2e6
    assert integer_step(np.array([0.25, 0.5, 0.75])) == 0.25
    assert integer_step(np.array([0.1, np.pi])) is None
    assert integer_step(np.array([0.0, 0.0])) is None
    assert integer_step(np.array([1e300, 3.0])) is None


@st.composite
def integer_instances(draw: st.DrawFn) -> AssignmentInstance:
    """Small instances with integer loads (record counts, the common case), where a plan's spread can be exactly
    max_spread; a migration budget of 0-3."""
    n_nodes = draw(st.integers(2, 3))
    n_units = draw(st.integers(1, 7))
    windows = draw(st.integers(2, 6))
    step = draw(st.sampled_from([1.0, 1.0, 0.5, 1e-6, 1e6]))
    rows = [draw(st.lists(st.integers(0, 30), min_size=windows, max_size=windows)) for _ in range(n_units)]
    capacity = [draw(st.sampled_from([50.0, 100.0, 100.0, 150.0])) for _ in range(n_nodes)]
    current = np.array([draw(st.integers(0, n_nodes - 1)) for _ in range(n_units)], dtype=np.int64)
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n_nodes)),
        capacity=np.array(capacity) * step,
        draining=np.zeros(n_nodes, dtype=bool),
        unit_ids=tuple(f"u{k}" for k in range(n_units)),
        current=current,
        series=np.asarray(rows, dtype=np.float64) * step,
        state_size=np.ones(n_units),
        pinned=np.array([draw(st.integers(0, 6)) == 0 for _ in range(n_units)], dtype=bool),
        max_migrations=draw(st.integers(0, 3)),
    )


def _meets_the_bound_whenever_a_plan_within_the_budget_does(
    inst: AssignmentInstance, assignment: np.ndarray, max_spread: float
) -> None:
    """Brute force over the plans within the budget and the validator's cap, the bound included (a plan at exactly
    max_spread meets it)."""
    assert int(inst.migration_mask(assignment).sum()) <= (inst.max_migrations or 0)
    every = _all_assignments(inst)
    every = every[(every != inst.current[None, :]).sum(axis=1) <= (inst.max_migrations or 0)]
    every = every[_within_utilization_cap(inst, every)]
    spreads, _ = _spread_and_overloaded(inst, every)
    ours, _ = _spread_and_overloaded(inst, assignment[None, :])
    if spreads.min() <= max_spread + 1e-9:
        assert ours[0] <= max_spread + 1e-9, (ours[0], spreads.min())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(integer_instances(), st.sampled_from([0.0, 5.0, 5.0, 10.0]))
def test_pairwise_with_a_budget_meets_the_spread_bound_exactly_whenever_some_plan_does(
    inst: AssignmentInstance, max_spread: float
) -> None:
    try:
        plan = solve_pairwise(inst, max_spread=max_spread)
    except UnsolvableRequest as exc:
        assert "do not fit" in exc.msg
        return
    _meets_the_bound_whenever_a_plan_within_the_budget_does(inst, plan.assignment, max_spread)


def test_pairwise_repair_reaches_a_plan_exactly_at_max_spread() -> None:
    """Found by a random search (2 Dec 2026, after a fresh-random hypothesis run saw the repaired plan 15 points over
    max_spread where the paper's plan met it): the only plans within the budget of 3 that meet max_spread 5 have a
    spread of exactly 5 points. The local search stalls at 7; the exact step's model tightened the bound by its
    rounding error, so that plan was outside it. Integer loads now get an exact model of the means."""
    series = np.array([[19.0, 13.0, 6.0], [19.0, 4.0, 23.0], [24.0, 23.0, 18.0], [6.0, 3.0, 16.0]])
    inst = AssignmentInstance(
        node_ids=("n0", "n1"),
        capacity=np.array([50.0, 100.0]),
        draining=np.zeros(2, dtype=bool),
        unit_ids=tuple(f"u{k}" for k in range(4)),
        current=np.array([1, 0, 1, 0]),
        series=series,
        state_size=np.ones(4),
        pinned=np.zeros(4, dtype=bool),
        max_migrations=3,
    )
    plan = solve_pairwise(inst, max_spread=5.0)
    _meets_the_bound_whenever_a_plan_within_the_budget_does(inst, plan.assignment, 5.0)
    spread, _ = _spread_and_overloaded(inst, plan.assignment[None, :])
    assert float(spread[0]) == pytest.approx(5.0)


def test_the_improved_pairwise_is_never_worse_than_the_papers_plan_under_a_cost_budget() -> None:
    """Found by a random search (2 Dec 2026): with 4 windows the improved variant places by load, so its repair
    started from another plan than the paper's; under a cost budget (where the exact step does not run) it stalled
    at a spread of 22.1 points, while the paper's plan meets max_spread 5 at 4.46. The paper's plan is now repaired
    too and the better kept."""
    series = np.array(
        [
            [31.62860156, 32.58943473, 9.57641838, 54.36001905],
            [41.8377059, 5.60562064, 29.72125535, 5.35517745],
            [35.83630598, 41.54652175, 42.34978084, 49.81684555],
            [15.68602108, 41.69638637, 29.1321859, 24.08289242],
        ]
    )
    inst = AssignmentInstance(
        node_ids=("n0", "n1"),
        capacity=np.array([50.0, 100.0]),
        draining=np.zeros(2, dtype=bool),
        unit_ids=tuple(f"u{k}" for k in range(4)),
        current=np.array([0, 0, 0, 1]),
        series=series,
        state_size=np.array([1.0, 5.0, 1.0, 2.0]),
        pinned=np.zeros(4, dtype=bool),
        max_migration_cost=6.0,
    )
    paper = solve_pairwise(inst, max_spread=None)
    improved = solve_pairwise(inst, max_spread=5.0)
    spreads, _ = _spread_and_overloaded(inst, np.stack([paper.assignment, improved.assignment]))
    assert spreads[0] <= 5.0
    assert spreads[1] <= 5.0
    assert inst.within_budget(improved.assignment)

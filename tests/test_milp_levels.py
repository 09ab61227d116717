"""Loads that are record counts: the distances a plan can have form a lattice (bounds.utilization_steps,
bounds.deviation_levels_below), and the band repair aims below the next level of it (solve.py,
`_Rounds._fill_band_width`) instead of at 0.95-1.15 times the plan's distance, which on a coarse lattice asks for no
better plan (issue 10: the busiest day of NYC flights, 40 nodes, 30 migrations, stuck at 2.239 on every call while
1.741, the bound, is reachable)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from solvers.instance import AssignmentInstance
from solvers.milp import solve
from solvers.milp.bounds import (
    LEVEL_SLACK,
    MAX_LATTICE_CAPACITIES,
    deviation_level_at_least,
    deviation_levels_below,
    lattice_bound,
    utilization_steps,
)
from solvers.milp.local_search import LocalSearch

steps_strategy = st.lists(
    st.one_of(
        st.integers(1, 40).map(float),  # integer steps: ties with the mean and with d are common
        st.floats(0.05, 40.0, allow_nan=False, allow_infinity=False),
    ),
    min_size=1,
    max_size=3,
)


def _brute_levels(d: float, mean: float, steps: list[float], count: int) -> list[float]:
    found: set[float] = set()
    for s in steps:
        for k in range(math.ceil((mean + d) / s) + 3):
            value = abs(k * s - mean)
            if value < d - LEVEL_SLACK:
                found.add(round(value, 12))
    return sorted(found, reverse=True)[:count]


@settings(max_examples=300, deadline=None)
# Seen 30 Nov 2026 (a newcomer's `make test`): three levels asked where the mean is near 0, so every level comes from
# above the mean, and only two candidates below the highest were looked at (1.249999 was missed).
@example(steps=[0.25], mean=1e-06, d=2.0, count=3)
@given(
    steps=steps_strategy,
    mean=st.one_of(st.integers(0, 150).map(float), st.floats(0.0, 150.0)),
    d=st.one_of(st.integers(0, 120).map(float), st.floats(0.0, 120.0)),
    count=st.integers(1, 3),
)
def test_the_levels_below_d_are_the_lattice_values_a_full_enumeration_finds(
    steps: list[float], mean: float, d: float, count: int
) -> None:
    got = deviation_levels_below(d, mean, np.array(steps), count)
    assert got == pytest.approx(_brute_levels(d, mean, steps, count), abs=1e-9)
    assert all(level < d - LEVEL_SLACK for level in got)


def test_huge_and_tiny_steps_give_levels_without_enumerating() -> None:
    # a step of 1e-9 points: about 1e11 lattice points below d, still eight looked at
    levels = deviation_levels_below(50.0, 50.0, np.array([1e-9]), 2)
    assert (
        len(levels) == 2 and levels[0] < 50.0 - LEVEL_SLACK and levels[0] - levels[1] == pytest.approx(1e-9)
    )
    assert deviation_levels_below(1e-7, 50.0, np.array([1e-9]), 2) == []  # nothing below d - LEVEL_SLACK
    assert deviation_levels_below(5.0, 50.0, np.array([1e15]), 2) == []  # 0 and 1e15: neither within 5
    assert deviation_levels_below(60.0, 50.0, np.array([1e15]), 2) == [50.0]  # k = 0


def _instance(
    loads: np.ndarray, capacity: np.ndarray, current: np.ndarray, budget: int
) -> AssignmentInstance:
    n, u = len(capacity), len(loads)
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=capacity.astype(np.float64),
        draining=np.zeros(n, dtype=bool),
        unit_ids=tuple(f"u{k}" for k in range(u)),
        current=current.astype(np.int64),
        series=loads.astype(np.float64)[:, None],
        state_size=np.ones(u),
        pinned=np.zeros(u, dtype=bool),
        max_migrations=budget,
    )


def test_utilization_steps_of_counts_and_of_real_loads() -> None:
    rng = np.random.default_rng(0)
    current = rng.integers(0, 4, size=60)
    counts = rng.integers(1, 9, size=60) * 3.0  # multiples of 3 (the common step, not 1)
    steps = utilization_steps(_instance(counts, np.full(4, 200.0), current, 5))
    assert steps is not None and steps.tolist() == pytest.approx([100.0 * 3.0 / 200.0])
    mixed = utilization_steps(_instance(counts, np.array([100.0, 200.0, 100.0, 400.0]), current, 5))
    assert mixed is not None and sorted(mixed.tolist()) == pytest.approx([0.75, 1.5, 3.0])
    assert utilization_steps(_instance(rng.lognormal(size=60), np.full(4, 100.0), current, 5)) is None
    many = np.arange(1, MAX_LATTICE_CAPACITIES + 2) * 10.0  # one distinct capacity too many: no lattice
    assert utilization_steps(_instance(counts, many, rng.integers(0, len(many), 60), 5)) is None


def _rounds(inst: AssignmentInstance, seed: int) -> tuple[solve._Rounds, LocalSearch]:
    start = LocalSearch(inst, inst.current, inst.current)
    start.descend(time.perf_counter() + 30, solve.DESCENT_STEPS)
    best = solve._Best(start, "current plan")
    return solve._Rounds(inst, best, inst.current, 0.0, time.perf_counter() + 60, 0.0, seed, "cp-sat"), start


def test_on_a_coarse_lattice_every_band_asks_for_a_better_plan() -> None:
    rng = np.random.default_rng(1)  # units of 1-3 on nodes of 20: one unit of load is 5 points
    inst = _instance(rng.integers(1, 4, size=60).astype(float), np.full(10, 20.0), rng.integers(0, 10, 60), 4)
    rounds, start = _rounds(inst, 0)
    d, mean = start.key()[0], start.mean
    levels = deviation_levels_below(d, mean, utilization_steps(inst), 2)  # type: ignore[arg-type]
    assert levels and levels[0] < solve.FILL_BAND[0] * d  # coarse: 0.95 d is above the next level
    assert rounds._coarse_levels(start) == levels
    for _ in range(200):
        band = rounds._fill_band_width(start, levels, rng)
        assert levels[-1] <= band <= levels[0] < d


def test_real_loads_draw_the_band_as_before() -> None:
    rng = np.random.default_rng(2)
    inst = _instance(rng.lognormal(size=200), np.full(10, 100.0), rng.integers(0, 3, 200), 6)
    rounds, start = _rounds(inst, 0)
    d = start.key()[0]
    ours, theirs = np.random.default_rng(7), np.random.default_rng(7)
    assert rounds._coarse_levels(start) == []
    for _ in range(50):
        assert rounds._fill_band_width(start, [], ours) == d * theirs.uniform(*solve.FILL_BAND)


def test_the_busiest_day_of_flights_reaches_its_bound_within_a_thousand_perturbations() -> None:
    """The issue's first instance (bench.milp_skew "flights-day 40n K30"): 1,024 key groups of 1-9 departures, one
    departure = 1.99 points, 40 nodes on contiguous ranges, 30 migrations. The bound 1.741 (every node at 25 or 26
    departures) is reachable with 29 migrations; with the band at 0.95-1.15 d no call reached it (0 of 40 at 1 s,
    0 of 24 within 1,000 perturbations), with the band below the next level 20 of 20 within 1,000."""
    bench_skew = pytest.importorskip("bench.milp_skew")
    inst = bench_skew.family()["flights-day 40n K30"]()
    for seed in (0, 1):
        rounds, _ = _rounds(inst, seed)
        rng = np.random.default_rng(seed)
        for _ in range(1000):
            rounds._perturbation_round(rng)
            if rounds.best.key[0] <= 1.7413:
                break
        assert inst.within_budget(rounds.best.search.assignment)
        assert rounds.best.key[0] == pytest.approx(1.741293532, abs=1e-6)


@settings(max_examples=300, deadline=None)
@given(
    steps=steps_strategy,
    mean=st.one_of(st.integers(0, 150).map(float), st.floats(0.0, 150.0)),
    b=st.one_of(st.integers(0, 120).map(float), st.floats(0.0, 120.0)),
)
def test_a_bound_raised_to_the_lattice_stays_below_every_reachable_distance(
    steps: list[float], mean: float, b: float
) -> None:
    """Every distance a plan can have is a lattice deviation; those below b are ruled out by the bound, so the
    raised bound must lie at or below the smallest one at or above b (and never below b)."""
    lattice = [abs(k * s - mean) for s in steps for k in range(math.ceil((mean + b) / s) + 3)]
    raised = lattice_bound(b, mean, np.array(steps))
    assert raised >= b
    reachable = [v for v in lattice if v >= b]
    if reachable:
        assert raised <= min(reachable)  # valid
    near = [v for v in lattice if v >= b - LEVEL_SLACK]  # within float noise of b counts as reachable
    if near:
        assert raised >= min(near) - 1e-6  # and raised to that level, less its slack
        level = deviation_level_at_least(b - LEVEL_SLACK, mean, np.array(steps))
        assert level == pytest.approx(min(near), abs=1e-9)


def test_real_loads_keep_their_bound() -> None:
    assert lattice_bound(1.5, 50.0, None) == 1.5
    assert lattice_bound(1.5, 50.0, np.zeros(0)) == 1.5


def test_a_cost_budget_on_the_busiest_day_is_proven_optimal_by_the_lattice() -> None:
    """Busiest day, 40 nodes, a cost budget of 2 % of all state: the counting and covering bound is 11.04 and the
    plan 11.69; no distance lies between 10.20 and 11.69 on this lattice, so the plan is optimal (main searched the
    whole second for it and answered `feasible`)."""
    bench_skew = pytest.importorskip("bench.milp_skew")
    counts = bench_skew.flight_key_counts("day")
    keys = sorted(counts)
    loads = bench_skew.key_group_loads(keys, np.array([counts[k] for k in keys], dtype=np.float64), 1024)
    inst = bench_skew.skew_cluster(loads, 40, None, 0.02)
    plan = solve.solve_milp(inst, time_limit_s=1.0, seed=0)
    assert inst.within_budget(plan.assignment)
    assert plan.status == "optimal"
    assert plan.lower_bound == pytest.approx(inst.load_distance(plan.assignment), abs=1e-6)


@pytest.mark.parametrize("step", [5e-324, 1e-310, 1e-300, 1e-20, 1e15, float("inf"), float("nan"), 0.0, -1.0])
def test_steps_too_fine_or_not_steps_give_no_levels_and_no_error(step: float) -> None:
    """A valid request may have loads of 5e-324 (a denormal step): the lattice index would overflow; such a lattice
    is finer than a float tells apart, so it is no lattice."""
    levels = deviation_levels_below(10.0, 50.0, np.array([step]), 2)
    raised = lattice_bound(1.0, 50.0, np.array([step]))
    assert all(level < 10.0 for level in levels) and raised >= 1.0
    if not (step > 0.0 and math.isfinite(step)) or 60.0 / step > 2.0**52:
        assert levels == [] and raised == 1.0


def test_an_instance_of_denormal_loads_plans_without_error() -> None:
    rng = np.random.default_rng(3)
    loads = rng.integers(1, 4, size=40) * 5e-324
    inst = _instance(loads, np.full(5, 100.0), rng.integers(0, 2, size=40), 3)
    plan = solve.solve_milp(inst, time_limit_s=0.3, seed=0)
    assert inst.within_budget(plan.assignment)


@pytest.mark.parametrize("coarse", [True, False])
def test_a_coarse_lattice_sends_home_a_larger_share(coarse: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    if coarse:  # units of 1-3 on nodes of 20 (5 points a unit of load)
        inst = _instance(
            rng.integers(1, 4, size=60).astype(float), np.full(10, 20.0), rng.integers(0, 10, 60), 8
        )
    else:
        inst = _instance(rng.lognormal(size=200), np.full(10, 100.0), rng.integers(0, 3, 200), 8)
    rounds, _ = _rounds(inst, 0)
    shares: list[float] = []
    send_home = LocalSearch.send_home

    def recorded(self: LocalSearch, units: np.ndarray) -> None:
        shares.append(len(units) / int(self.migrated_mask().sum()))
        send_home(self, units)

    monkeypatch.setattr(LocalSearch, "send_home", recorded)
    coarse_rounds = (
        0  # (a plan at the lattice's lowest levels is no longer coarse: the count, not every round)
    )
    for _ in range(60):
        current = rounds.best.search if rounds.current is None else rounds.current
        levels = rounds._coarse_levels(current)
        coarse_rounds += int(bool(levels))
        expected = solve.PERTURBATION_SHARE_COARSE if levels else solve.PERTURBATION_SHARE
        before = len(shares)
        rounds._perturbation_round(rng)
        if len(shares) > before:  # (a share of n migrations, rounded: within half a unit of the range)
            n = round(len(current.migrated_mask().nonzero()[0]))
            assert expected[0] - 0.5 / n - 1e-9 <= shares[-1] <= expected[1] + 0.5 / n + 1e-9
    assert shares
    assert coarse_rounds > 0 if coarse else coarse_rounds == 0

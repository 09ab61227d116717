"""milp is never worse than the service's own baselines, and does not stop far above its bound (issue 10).

What was seen (random snapshots of many kinds, none from the benches: a campaign of 150 at 0.3 s): 150 nodes
(capacities 1x/2x/4x, 14 draining), 6,000 Zipf units over 8 windows, 318 pinned, placed at random, no budget. milp
at 1 s answered 1.13 points where `largest-load-first` answers 0.86: the search's own largest-load-first (`shave`)
left the hot unit on the 4x node with the most pinned load (1.32 points) where no step of the descent helps, and the
baseline's plan was never a start. At 2 s milp stopped at 0.54 points, "within 0.22 points of the bound" (0.32): the
residual gap, a thousandth of the current plan's distance (220 points here), let it stop there."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.baselines import flux, largest_load_first
from solvers.instance import AssignmentInstance
from solvers.milp import solve
from solvers.milp.solve import solve_milp


def _snapshot(seed: int) -> AssignmentInstance:
    """A random snapshot of many kinds (the campaign's generator): node counts 2-150, Zipf, lognormal, integer,
    tied, hot and sparse loads, equal, mixed and random capacities, contiguous, random and skewed placements, units
    without a node, draining nodes, pinned units, count and cost budgets, 1-8 windows."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([2, 3, 4, 5, 8, 12, 20, 40, 80, 150]))
    u = min(6000, int(max(1, n * rng.choice([1, 2, 3, 5, 10, 30, 100]))))
    kind = rng.choice(["lognormal", "zipf", "ints", "ties", "hot", "zeros", "uniform"])
    if kind == "lognormal":
        load = rng.lognormal(0, rng.uniform(0.3, 2.5), u)
    elif kind == "zipf":
        load = np.asarray(1.0 / np.arange(1, u + 1) ** rng.uniform(0.5, 1.5), dtype=np.float64)
        rng.shuffle(load)
    elif kind == "ints":
        load = rng.integers(0, 6, u).astype(float)
    elif kind == "ties":
        load = np.full(u, rng.choice([1.0, 0.45, 3.0]))
    elif kind == "hot":
        load = rng.uniform(0.5, 1.5, u)
        load[rng.integers(u)] *= u / max(1, n) * rng.uniform(0.5, 3)
    elif kind == "zeros":
        load = rng.uniform(0, 1, u) * (rng.random(u) < 0.3)
    else:
        load = rng.uniform(0.1, 2, u)
    capacities = rng.choice(["same", "mixed", "random"])
    if capacities == "same":
        cap = np.full(n, 100.0)
    elif capacities == "mixed":
        cap = np.array([100.0 * [1, 2, 4][i % 3] for i in range(n)])
    else:
        cap = rng.uniform(30, 400, n).round(1)
    utilization = rng.choice([0.2, 0.5, 0.8, 0.95])
    if load.sum() > 0:
        load = load / load.sum() * cap.sum() * utilization
    if rng.random() < 0.3:
        load = np.round(load)
    placement = rng.choice(["contiguous", "random", "skewed"])
    if placement == "contiguous":
        current = (np.arange(u) * n // u).astype(np.int64)
    elif placement == "random":
        current = rng.integers(0, n, u).astype(np.int64)
    else:
        current = np.minimum(rng.geometric(0.3, u) - 1, n - 1).astype(np.int64)
    if rng.random() < 0.1:
        current[rng.random(u) < 0.1] = -1
    draining = np.zeros(n, dtype=bool)
    if n > 2 and rng.random() < 0.3:
        draining[rng.choice(n, max(1, int(n * rng.uniform(0.05, 0.3))), replace=False)] = True
    if draining.all():
        draining[0] = False
    pinned = rng.random(u) < rng.choice([0, 0, 0.05, 0.3])
    state = load * rng.lognormal(0, 1, u) + (rng.random() < 0.5)
    count = cost = None
    budget = rng.choice(["none", "count", "cost", "both"])
    if budget in ("count", "both"):
        count = int(rng.choice([0, 1, 2, max(1, n // 4), n, 3 * n, u]))
    if budget in ("cost", "both"):
        cost = float(state.sum() * rng.choice([0.0, 0.005, 0.02, 0.1]))
    windows = int(rng.choice([1, 1, 1, 3, 8]))
    series = load[:, None] * rng.uniform(0.5, 1.5, (u, windows)) if windows > 1 else load[:, None]
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=cap,
        draining=draining,
        unit_ids=tuple(f"u{i}" for i in range(u)),
        current=current,
        series=series,
        state_size=state,
        pinned=pinned,
        max_migrations=count,
        max_migration_cost=cost,
    )


def test_the_snapshot_seen_is_the_one_described() -> None:
    inst = _snapshot(66)
    assert (inst.n_nodes, inst.n_units, inst.series.shape[1]) == (150, 6000, 8)
    assert int(inst.draining.sum()) == 14 and int(inst.pinned.sum()) == 318
    assert inst.max_migrations is None and inst.max_migration_cost is None
    assert inst.load_distance(largest_load_first(inst).assignment) == pytest.approx(0.862, abs=1e-3)


@pytest.mark.parametrize("seed", [66, 146])
def test_milp_is_never_worse_than_a_baseline_within_the_budget(seed: int) -> None:
    inst = _snapshot(seed)
    plan = solve_milp(inst, time_limit_s=1.0)
    assert inst.within_budget(plan.assignment)
    d = inst.load_distance(plan.assignment)
    for baseline in (largest_load_first, flux):
        other = baseline(inst).assignment
        if inst.within_budget(other):
            assert d <= inst.load_distance(other) + 1e-9, baseline.__name__


def test_the_stop_near_the_bound_is_a_few_hundredths_of_a_point_at_most() -> None:
    # 220 points off balance before the plan: a thousandth of that (0.22 points) is no longer a reason to stop.
    inst = _snapshot(66)
    assert inst.load_distance(inst.current) > 100
    plan = solve_milp(inst, time_limit_s=2.0)
    assert plan.lower_bound is not None
    d = inst.load_distance(plan.assignment)
    assert d - plan.lower_bound <= max(solve.RESIDUAL_GAP_MAX, 0.001 * d) + 1e-9


def test_a_baseline_that_fails_is_no_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # A baseline that raises (no room for a unit without a node) or answers over the budget leaves the other starts.
    from solvers.errors import UnsolvableRequest

    inst = _snapshot(3)

    def refuses(instance: AssignmentInstance, time_limit_s: float | None = None) -> None:
        raise UnsolvableRequest(("body", "units"), "no room")

    monkeypatch.setattr(solve.baselines, "largest_load_first", refuses)
    plan = solve_milp(inst, time_limit_s=0.3)
    assert inst.within_budget(plan.assignment)

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
gap is final only once it is no worse than the baselines' own plans."""

from __future__ import annotations

import pytest

from bench.milp_campaign import snapshot
from solvers.baselines import flux, largest_load_first
from solvers.instance import AssignmentInstance
from solvers.milp import solve
from solvers.milp.solve import solve_milp


def test_the_snapshot_seen_is_the_one_described() -> None:
    inst = snapshot(66)
    assert (inst.n_nodes, inst.n_units, inst.series.shape[1]) == (150, 6000, 8)
    assert int(inst.draining.sum()) == 14 and int(inst.pinned.sum()) == 318
    assert inst.max_migrations is None and inst.max_migration_cost is None
    assert inst.load_distance(largest_load_first(inst).assignment) == pytest.approx(0.862, abs=1e-3)


@pytest.mark.parametrize("seed", [66, 146, 5203])
def test_milp_is_never_worse_than_a_baseline_within_the_budget(seed: int) -> None:
    inst = snapshot(seed)
    plan = solve_milp(inst, time_limit_s=1.0)
    assert inst.within_budget(plan.assignment)
    d = inst.load_distance(plan.assignment)
    for baseline in (largest_load_first, flux):
        other = baseline(inst).assignment
        if inst.within_budget(other):
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

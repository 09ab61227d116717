"""The repacked start (solvers.milp.starts.repacked_plan): every movable unit placed anew, largest first, where the
budget does not bind (issue 10: the plan at 1 s near the best on snapshots of every kind).

What was seen (bench.milp_campaign --family skew, 29 Nov, third session): seed 9164, 16 nodes (1x/2x) x 1,024 key
groups of NYC flight data, no budget: milp answered 0.03-0.08 points at 1 s and 0.016 at 5 s, where every start
repaired the current placement step by step; seed 9198, 16 nodes (one draining) x 1,024 key groups, 111 pinned,
no budget: 0.31 at 1 s, 0.185 at 5 s. The repack, re-partitioned by pairs and descended: 0.006 and 0.173."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings

from solvers.instance import AssignmentInstance
from solvers.milp import local_search
from solvers.milp.local_search import LocalSearch
from solvers.milp.solve import search_problem, solve_milp
from solvers.milp.starts import _relabel, repack_fits, repacked_plan
from tests.test_milp_pair_balance import _snapshots


# 9164: below what 5 s found before (0.0163); 9198: the target against the 5 s plan (0.185: within 0.05
# points), which 1 s missed (0.31) before
@pytest.mark.parametrize(("seed", "at_most"), [(9164, 0.0163), (9198, 0.235)])
def test_number_partitioning_at_scale_at_one_second_beats_what_five_seconds_found(
    seed: int, at_most: float
) -> None:
    campaign = pytest.importorskip("bench.milp_campaign")
    instance = campaign.skew_snapshot(seed, campaign.skew_data())
    assert repack_fits(search_problem(instance)[0])
    plan = solve_milp(instance, time_limit_s=1.0)
    assert instance.within_budget(plan.assignment)
    assert instance.load_distance(plan.assignment) <= at_most


@settings(max_examples=300, deadline=None)
@given(_snapshots())
def test_a_repacked_plan_keeps_every_rule(instance: AssignmentInstance) -> None:
    problem, _, start = search_problem(instance)
    plan = repacked_plan(problem, start)
    if plan is None:
        return
    assert problem.within_budget(plan)
    fixed = ~problem.movable
    assert np.array_equal(plan[fixed], start[fixed])  # what cannot move stays where the start has it
    assert problem.active[plan[problem.movable]].all()  # every movable unit on a staying node
    util = problem.utilization(plan)
    receivers = np.unique(plan[problem.movable])
    assert (util[receivers] <= problem.utilization_cap() * (1 + 1e-9)).all()
    if repack_fits(problem):  # a budget that covers every movable unit never refuses the plan
        assert problem.within_budget(plan)


@settings(max_examples=200, deadline=None)
@given(_snapshots())
def test_the_compiled_placement_is_the_numpy_one(instance: AssignmentInstance) -> None:
    # kernels.least_after against the numpy fallback (before warm_up): the same plan, bit for bit
    from unittest import mock

    from solvers.milp import local_search

    local_search.warm_up()
    problem, _, start = search_problem(instance)
    compiled = repacked_plan(problem, start)
    with mock.patch.object(local_search, "kernels_ready", return_value=False):
        fallback = repacked_plan(problem, start)
    assert (compiled is None) == (fallback is None)
    if compiled is not None and fallback is not None:
        assert np.array_equal(compiled, fallback)


@settings(max_examples=300, deadline=None)
@given(_snapshots())
def test_the_relabelling_permutes_interchangeable_nodes_and_keeps_more_units_home(
    instance: AssignmentInstance,
) -> None:
    problem, _, start = search_problem(instance)
    rng = np.random.default_rng(len(start))
    placed = start.copy()
    staying = np.flatnonzero(problem.active)
    movable = np.flatnonzero(problem.movable)
    placed[movable] = rng.choice(staying, size=len(movable))
    relabelled = placed.copy()
    _relabel(problem, relabelled, ~problem.movable)
    assert np.array_equal(relabelled[~problem.movable], placed[~problem.movable])
    # the same node loads, each moved whole to a node of the same capacity: the same utilizations per capacity
    before, after = problem.utilization(placed), problem.utilization(relabelled)
    for capacity in np.unique(problem.capacity):
        nodes = problem.capacity == capacity
        assert np.allclose(np.sort(before[nodes]), np.sort(after[nodes]), rtol=1e-12, atol=0.0)
    # no fewer units (no less state, under a cost budget) where they are now
    weight = problem.state_size if problem.max_migration_cost is not None else np.ones(problem.n_units)
    kept = lambda plan: float(weight[plan == problem.current].sum())  # noqa: E731
    assert kept(relabelled) >= kept(placed) - 1e-9 * max(1.0, float(weight.sum()))


def _skewed_without_budget(n_nodes: int, n_units: int, seed: int = 1) -> AssignmentInstance:
    """Units of two sizes piled on the first nodes (a geometric placement), no budget: the repairs of the current
    placement cannot reach balance within a second at this scale."""
    rng = np.random.default_rng(seed)
    load = rng.uniform(0.5, 1.5, n_units) * np.where(rng.random(n_units) < 0.5, 1, 3)
    capacity = np.array([(100.0, 200.0)[i % 2] for i in range(n_nodes)])
    load = load / load.sum() * capacity.sum() * 0.6
    current = np.minimum(rng.geometric(10.0 / n_nodes, n_units) - 1, n_nodes - 1).astype(np.int64)
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n_nodes)),
        capacity=capacity,
        draining=np.zeros(n_nodes, dtype=bool),
        unit_ids=tuple(f"u{i}" for i in range(n_units)),
        current=current,
        series=load[:, None],
        state_size=np.ones(n_units),
        pinned=np.zeros(n_units, dtype=bool),
    )


def test_without_a_budget_at_scale_the_repack_gets_its_turn_in_time() -> None:
    # 1,000 nodes (1x/2x) x 20,000 units piled on the first nodes, no budget: 372 points at 0.5 s and 32 at 1 s
    # with the repack after a flux start of 40 % of the time (its descent and the packed start used the time);
    # after a flux start of an ordinary share, 0.46 at 0.5 s.
    instance = _skewed_without_budget(1000, 20_000)
    plan = solve_milp(instance, time_limit_s=1.0)
    assert instance.load_distance(plan.assignment) <= 1.0


def test_pair_balance_checks_its_deadline_between_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    # On 2,000 nodes one node's partners (4,096 splits each) took 0.5 s past a repacked start's 50 ms slice: the
    # deadline was checked once per node. On a clock that passes the deadline during the first pair, no second
    # pair is tried (before: every partner of the first node, 199 here).
    instance = _skewed_without_budget(200, 1_000)
    problem, _, start = search_problem(instance)
    search = LocalSearch(problem, problem.current, start)
    search.kernels = None  # the numpy code (the compiled scan: the test below)
    clock = SimpleNamespace(perf_counter=lambda: 0.0)
    monkeypatch.setattr(local_search, "time", clock)
    pairs: list[tuple[int, int]] = []
    best_split = LocalSearch._best_split

    def first_pair_ends_the_slice(self: LocalSearch, x: int, y: int, *rest: object) -> object:
        pairs.append((x, y))
        clock.perf_counter = lambda: 1.0
        return best_split(self, x, y, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(LocalSearch, "_best_split", first_pair_ends_the_slice)
    search.pair_balance(0.5)
    assert len(pairs) == 1


def test_the_compiled_pair_scan_checks_its_deadline_between_calls_of_bounded_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The compiled scan goes through a node's partners in one call: on 2,000 nodes that would be 0.1-0.2 s of
    # splits. A call stops after PAIR_WORK splits (the pairs it has begun), and the deadline is checked between
    # calls: on a clock that passes the deadline during the first call, no second call is made.
    local_search.warm_up()
    instance = _skewed_without_budget(200, 1_000)
    problem, _, start = search_problem(instance)
    search = LocalSearch(problem, problem.current, start)
    assert search.kernels is not None
    clock = SimpleNamespace(perf_counter=lambda: 0.0)
    monkeypatch.setattr(local_search, "time", clock)
    calls: list[object] = []
    scan_pairs = search.kernels.scan_pairs

    def first_call_ends_the_slice(*args: object) -> tuple[int, bool, np.ndarray, np.ndarray]:
        clock.perf_counter = lambda: 1.0
        calls.append(args[2])
        return scan_pairs(*args)  # type: ignore[no-any-return]

    search.kernels = SimpleNamespace(**vars(search.kernels))
    search.kernels.scan_pairs = first_call_ends_the_slice
    search.pair_balance(0.5)
    assert len(calls) == 1
    # A call of the work of one pair scans one pair, whatever it finds (the bound on a call's work).
    order = search.active_nodes[np.argsort(-np.abs(search.util[search.active_nodes] - search.mean))]
    for first in range(1, 40):
        position, found, _, _ = scan_pairs(
            int(order[0]), order, first, local_search.PAIR_UNITS, local_search.TOLERANCE, search.assignment,
            search.movable, search.share, search.capacity, search.util, search.mean, float(search.cap_limit),
            *search._budget_args(), 1,
        )  # fmt: skip
        assert position == (first if found else first + 1)

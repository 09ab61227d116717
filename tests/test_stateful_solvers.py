"""Solver-level properties of ELB, CLB and universal hashing (Guo & Zhou), on numpy instances."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers.instance import AssignmentInstance
from solvers.metrics import node_series
from solvers.stateful.clb import clb, clb_partition, covariance_matrix, cross_covariance
from solvers.stateful.elb import elb, elb_parallelism
from solvers.stateful.universal_hash import universal_hash


def make_instance(
    series: np.ndarray,
    current: np.ndarray,
    n_nodes: int,
    capacity: float | None = None,
    state_size: np.ndarray | None = None,
    pinned: np.ndarray | None = None,
    draining: np.ndarray | None = None,
    max_migrations: int | None = None,
    max_migration_cost: float | None = None,
) -> AssignmentInstance:
    series = np.atleast_2d(np.asarray(series, dtype=np.float64))
    n_units = series.shape[0]
    # By default the capacity never binds: the cap of the contract is not what these tests are about.
    cap = capacity if capacity is not None else 10.0 * float(series.sum(axis=0).max() + 1.0)
    return AssignmentInstance(
        node_ids=tuple(f"o{j}" for j in range(n_nodes)),
        capacity=np.full(n_nodes, cap),
        draining=np.zeros(n_nodes, dtype=bool) if draining is None else draining,
        unit_ids=tuple(f"s{i}" for i in range(n_units)),
        current=np.asarray(current, dtype=np.int64),
        series=series,
        state_size=series[:, -1] / 10.0 if state_size is None else state_size,
        pinned=np.zeros(n_units, dtype=bool) if pinned is None else pinned,
        max_migrations=max_migrations,
        max_migration_cost=max_migration_cost,
    )


# ------------------------------------------------------------------------------------------------------------- ELB


@st.composite
def elb_cases(draw: st.DrawFn) -> tuple[AssignmentInstance, float, float, int]:
    """Instances inside the paper's assumption with the range reachable by construction: every substream load
    <= (u - v)/2 and <= (mean - v)/pi (so what overloaded instances keep cannot starve an underloaded one)."""
    n = draw(st.integers(1, 6))
    pi = draw(st.integers(1, 6))
    p = draw(st.integers(2 * pi * pi + 2, 2 * pi * pi + 40))
    loads = np.array(draw(st.lists(st.floats(0.5, 1.0), min_size=p, max_size=p)))
    current = np.array(draw(st.lists(st.integers(0, n - 1), min_size=p, max_size=p)))
    w = float(loads.sum())
    mean = w / pi
    half_width = pi * float(loads.max()) * 1.001
    lower, upper = mean - half_width, mean + half_width
    if lower <= 0:
        lower, upper = mean * 0.001, 2 * mean - mean * 0.001
    inst = make_instance(loads[:, None], current, n)
    return inst, lower, upper, pi


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elb_cases())
def test_paper_elb_moves_only_from_overloaded_to_underloaded_and_lands_in_range(
    case: tuple[AssignmentInstance, float, float, int],
) -> None:
    inst, lower, upper, pi = case
    y = inst.series[:, -1]
    reachable = float(y.max()) <= min((upper - lower) / 2, (y.sum() / pi - lower) / pi) + 1e-12
    plan = elb(inst, lower=lower, upper=upper, variant="paper")
    n = inst.n_nodes
    total = n + len(plan.added_nodes)
    before = np.bincount(inst.current, weights=y, minlength=n)
    after = np.bincount(plan.assignment, weights=y, minlength=total)
    mean = y.sum() / elb_parallelism(float(y.sum()), lower, upper)
    removed = set(plan.removed_nodes)
    moved = np.flatnonzero(plan.assignment != inst.current)
    for unit in moved:
        origin, dest = int(inst.current[unit]), int(plan.assignment[unit])
        assert origin in removed or before[origin] > mean, "a move left an instance that was not overloaded"
        assert dest >= n or before[dest] <= mean + 1e-9, "a move landed on an instance that was overloaded"
        assert dest not in removed
    staying = [j for j in range(total) if j not in removed]
    assert len(staying) == pi == len({int(j) for j in plan.assignment})
    if reachable:
        tol = 1e-9 * max(1.0, upper)
        assert all(lower - tol <= after[j] <= upper + tol for j in staying), (after, lower, upper)


def test_elb_scales_out_with_empty_new_instances_and_in_by_removing_least_loaded() -> None:
    loads = np.ones((48, 1))  # every substream <= (u - v)/2, the paper's assumption
    out = elb(make_instance(loads, np.zeros(48, dtype=int), 2), lower=9.0, upper=11.0, variant="paper")
    assert len(out.added_nodes) == 3  # w = 48, pi = ceil(96 / 20) = 5
    assert len(set(out.assignment.tolist())) == 5
    current = np.array([0] * 20 + [1] * 20 + [2] * 4 + [3] * 4)
    shrink = elb(
        make_instance(loads, current, 4), lower=20.0, upper=30.0, variant="paper"
    )  # pi = ceil(96/50) = 2
    assert set(shrink.removed_nodes) == {2, 3}
    assert not np.isin(shrink.assignment, [2, 3]).any()


def test_elb_on_an_idle_window_changes_nothing() -> None:
    plan = elb(make_instance(np.zeros((6, 3)), np.array([0, 0, 1, 1, 2, 2]), 3), tolerance=0.1)
    assert plan.status == "unchanged" and not plan.added_nodes and not plan.removed_nodes


def test_elb_keeps_pinned_and_budget_and_never_fills_draining() -> None:
    rng = np.random.default_rng(3)
    loads = rng.uniform(0.5, 1.0, size=(40, 1))
    current = np.array([0] * 25 + [1] * 10 + [2] * 5)
    pinned = np.zeros(40, dtype=bool)
    pinned[:3] = True
    draining = np.array([False, False, True])
    inst = make_instance(loads, current, 3, pinned=pinned, draining=draining, max_migrations=7)
    plan = elb(inst, tolerance=0.05)
    moved = plan.assignment != inst.current
    assert moved.sum() <= 7
    assert not moved[pinned].any()
    assert not (moved & (plan.assignment == 2)).any()


# ------------------------------------------------------------------------------------------------------------- CLB


@settings(max_examples=100, deadline=None)
@given(
    p=st.integers(2, 25),
    windows=st.integers(2, 12),
    data=st.data(),
    threshold=st.floats(0.0, 0.99),
)
def test_clb_gives_exactly_n_nonempty_subsets(
    p: int, windows: int, data: st.DataObject, threshold: float
) -> None:
    n = data.draw(st.integers(1, p))
    values = data.draw(st.lists(st.floats(0.0, 1e4), min_size=p * windows, max_size=p * windows))
    series = np.array(values).reshape(p, windows)
    labels = clb_partition(series, n, threshold)
    assert sorted(set(labels.tolist())) == list(range(n))


def test_clb_partition_handles_constant_series() -> None:
    labels = clb_partition(np.ones((6, 5)), 4)
    assert len(set(labels.tolist())) == 4


@settings(max_examples=200, deadline=None)
@given(
    p=st.integers(1, 12),
    windows=st.integers(1, 10),
    data=st.data(),
)
def test_eq5_cross_covariance_identity(p: int, windows: int, data: st.DataObject) -> None:
    """var(X) - sum_k var(N_k) = 2 sum over unordered cross pairs of cov(X_i, X_j)  (Guo & Zhou, Eq. (5))."""
    values = data.draw(st.lists(st.floats(-1e3, 1e3), min_size=p * windows, max_size=p * windows))
    labels = np.array(data.draw(st.lists(st.integers(0, 3), min_size=p, max_size=p)))
    series = np.array(values).reshape(p, windows)
    total_var = float(series.sum(axis=0).var())
    per_subset = sum(float(series[labels == k].sum(axis=0).var()) for k in set(labels.tolist()))
    rhs = cross_covariance(covariance_matrix(series), labels)
    scale = max(1.0, float((series**2).sum()))
    assert abs((total_var - per_subset) - rhs) <= 1e-9 * scale


@settings(max_examples=100, deadline=None)
@given(p=st.integers(1, 10), windows=st.integers(1, 8), n=st.integers(1, 4), data=st.data())
def test_eq3_eq4_decomposition_of_summed_imbalance(p: int, windows: int, n: int, data: st.DataObject) -> None:
    """Eq. (3) and (4) combined: sum_j var(L_j) = (m/n) (sum_i var(N_i) + sum_i eta_i^2) - sum_j mean_j^2.

    This is why the paper's CLB (which minimizes sum_i var(N_i) only) does not balance the mean loads: the eta term
    is left out of its objective."""
    values = data.draw(st.lists(st.floats(0.0, 1e3), min_size=p * windows, max_size=p * windows))
    series = np.array(values).reshape(p, windows)
    labels = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=p, max_size=p)))
    loads = node_series(series, labels, n)  # (n, m)
    lhs = float(loads.var(axis=0).sum())
    eta = loads.mean(axis=1)
    window_mean = loads.mean(axis=0)
    rhs = windows / n * (float(loads.var(axis=1).sum()) + float((eta**2).sum())) - float(
        (window_mean**2).sum()
    )
    assert abs(lhs - rhs) <= 1e-9 * max(1.0, float((loads**2).sum()))


def test_paper_clb_moves_nothing_when_the_current_assignment_is_its_partition() -> None:
    rng = np.random.default_rng(7)
    series = rng.poisson(100.0, size=(30, 24)).astype(float)
    labels = clb_partition(series, 5)
    nodes = rng.permutation(5)
    inst = make_instance(series, nodes[labels], 5)
    plan = clb(inst, variant="paper")
    assert plan.status == "unchanged"
    assert (plan.assignment == inst.current).all()


def test_paper_clb_mapping_moves_the_least_state_among_all_subset_permutations() -> None:
    rng = np.random.default_rng(11)
    series = rng.poisson(50.0, size=(20, 12)).astype(float)
    current = rng.integers(0, 4, size=20)
    state = rng.uniform(1.0, 10.0, size=20)
    inst = make_instance(series, current, 4, state_size=state)
    plan = clb(inst, variant="paper")
    labels = clb_partition(series, 4)
    best = min(
        float(state[np.array(perm)[labels] != current].sum()) for perm in itertools.permutations(range(4))
    )
    assert float(state[plan.assignment != current].sum()) == pytest.approx(best)


def test_clb_keeps_the_budget() -> None:
    rng = np.random.default_rng(5)
    series = rng.poisson(80.0, size=(40, 10)).astype(float)
    inst = make_instance(series, np.zeros(40, dtype=int), 4, max_migration_cost=20.0)
    for variant in ("paper", "improved"):
        plan = clb(inst, variant=variant)  # type: ignore[arg-type]
        assert float(inst.state_size[plan.assignment != inst.current].sum()) <= 20.0 + 1e-9


# ------------------------------------------------------------------------------------------------- universal hash


def test_universal_hash_is_seeded_and_independent_of_unit_order() -> None:
    series = np.ones((50, 1))
    inst = make_instance(series, np.zeros(50, dtype=int), 7)
    a = universal_hash(inst, seed=1).assignment
    assert (universal_hash(inst, seed=1).assignment == a).all()
    assert (universal_hash(inst, seed=2).assignment != a).any()
    order = np.arange(50)[::-1]
    shuffled = AssignmentInstance(
        node_ids=inst.node_ids,
        capacity=inst.capacity,
        draining=inst.draining,
        unit_ids=tuple(inst.unit_ids[i] for i in order),
        current=inst.current[order],
        series=inst.series[order],
        state_size=inst.state_size[order],
        pinned=inst.pinned[order],
    )
    assert (universal_hash(shuffled, seed=1).assignment == a[order]).all()
    assert len(set(a.tolist())) > 1


# ------------------------------------------------------------------------------------------------------------- PKG


def test_pkg_uses_only_the_two_choices_conserves_tuples_and_balances() -> None:
    from solvers.stateful.pkg import pkg_route, two_choices

    rng = np.random.default_rng(9)
    probabilities = 1.0 / np.arange(1, 41)
    batches = rng.poisson(50.0 * probabilities / probabilities.sum() * 40, size=(60, 40))
    routed = pkg_route(batches, batches_per_window=20, n=6, seed=1)
    choices = two_choices(40, 6, seed=1)
    assert (choices[:, 0] != choices[:, 1]).all()
    used = routed.key_split.sum(axis=0) > 0  # (K, n)
    for key in range(40):
        assert set(np.flatnonzero(used[key]).tolist()) <= set(choices[key].tolist())
    windows = batches.reshape(3, 20, 40).sum(axis=1)
    assert np.allclose(routed.key_split.sum(axis=2), windows)
    assert ((routed.moved_share >= 0) & (routed.moved_share <= 0.5)).all()  # the minority of two parts
    # Power of two choices: far better balanced than hashing each key to its first choice alone.
    single = np.zeros((3, 6))
    for w in range(3):
        np.add.at(single[w], choices[:, 0], windows[w])
    assert routed.window_loads.var(axis=1).mean() < single.var(axis=1).mean()
    alone = pkg_route(batches, batches_per_window=20, n=1)
    assert (alone.moved_share == 0).all()

"""The descent's faster evaluations (issue 9: the milp worker's CPU per small request) give the very numbers of the
general ones, bit for bit: two legs evaluated leg by leg against `evaluate`'s role-order sums, the roles stacked in
one array against a numpy call per role, the one-call replacements of numpy's wrappers, and a move priced on
Python scalars against `budget_delta`. (Whole answers, plans and bounds are compared against an older tree by
`python -m bench.milp_answers_hash`.)"""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from solvers import integer_scaling
from solvers.instance import AssignmentInstance
from solvers.milp import local_search
from solvers.milp.local_search import LocalSearch, _lower_quartile

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def searches(draw: st.DrawFn) -> LocalSearch:
    """A search state on 2-8 nodes (some draining, mixed capacities) with tie-heavy or real loads, some migrated."""
    n = draw(st.integers(2, 8))
    u = draw(st.integers(2, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    loads = rng.integers(0, 5, size=u).astype(float) if draw(st.booleans()) else rng.uniform(0, 3, size=u)
    draining = rng.random(n) < 0.3
    draining[0] = False
    instance = AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=rng.choice([1.0, 3.0, 100.0], size=n),
        draining=draining,
        unit_ids=tuple(f"u{k}" for k in range(u)),
        current=rng.integers(0, n, size=u).astype(np.int64),
        series=loads[:, None],
        state_size=rng.integers(0, 9, size=u).astype(float),
        pinned=np.zeros(u, dtype=bool),
        max_migrations=draw(st.none() | st.integers(0, 5)),
        max_migration_cost=draw(st.none() | st.floats(0.0, 20.0)),
    )
    moved = rng.integers(0, n, size=u).astype(np.int64)
    plan = np.where(rng.random(u) < 0.3, moved, instance.current)
    return LocalSearch(instance, plan, instance.current)


def _legs(search: LocalSearch, count: int, seed: int) -> tuple[np.ndarray, ...]:
    """`count` random pairs of moves, each with distinct nodes (as a step's move and its refund have)."""
    rng = np.random.default_rng(seed)
    n, u = search.inst.n_nodes, search.inst.n_units
    src_a, src_b = rng.integers(0, n, size=count), rng.integers(0, n, size=count)
    dst_a = (src_a + rng.integers(1, n, size=count)) % n
    dst_b = (src_b + rng.integers(1, n, size=count)) % n
    return src_a, dst_a, rng.integers(0, u, size=count), src_b, dst_b, rng.integers(0, u, size=count)


@SETTINGS
@given(search=searches(), count=st.integers(0, 40), seed=st.integers(0, 1000))
def test_two_legs_evaluate_as_the_general_role_order_sum(search: LocalSearch, count: int, seed: int) -> None:
    src_a, dst_a, a, src_b, dst_b, b = _legs(search, count, seed)
    share, capacity = search.share, search.capacity
    general = search.evaluate(
        [src_a, dst_a, src_b, dst_b],
        [
            -share[a] / capacity[src_a],
            share[a] / capacity[dst_a],
            -share[b] / capacity[src_b],
            share[b] / capacity[dst_b],
        ],
    )
    legs = search._evaluate_legs((src_a, dst_a, share[a]), (src_b, dst_b, share[b]))
    assert np.array_equal(general[0], legs[0]) and np.array_equal(general[1], legs[1])


@SETTINGS
@given(search=searches(), count=st.integers(0, 40), seed=st.integers(0, 1000))
def test_stacked_roles_evaluate_as_one_call_per_role(search: LocalSearch, count: int, seed: int) -> None:
    src, dst, units, *_ = _legs(search, count, seed)
    deltas = [-search.share[units] / search.capacity[src], search.share[units] / search.capacity[dst]]
    worst, ok = np.zeros(count), np.ones(count, dtype=bool)  # the per-role loop the stacked form replaced
    for node, net in zip([src, dst], deltas, strict=True):
        after = search.util[node] + net
        worst = np.maximum(worst, np.where(search.staying[node], np.abs(after - search.mean), 0.0))
        ok &= (net <= 1e-12) | (after <= search.cap * (1 + 1e-12))
    stacked = search.evaluate([src, dst], deltas, distinct=True)
    assert np.array_equal(worst, stacked[0]) and np.array_equal(ok, stacked[1])


@SETTINGS
@given(search=searches(), seed=st.integers(0, 1000))
def test_a_move_priced_on_scalars_as_budget_delta(search: LocalSearch, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(5):
        unit, dest = int(rng.integers(0, search.inst.n_units)), int(rng.integers(0, search.inst.n_nodes))
        delta_n, delta_c = search.budget_delta(np.array([unit]), np.array([dest]))
        moves, cost = search.used_moves + int(delta_n[0]), search.used_cost + float(delta_c[0])
        search.apply([(unit, dest)])
        assert search.used_moves == moves
        if search.costed:  # without a cost budget the cost is not tracked (nothing reads it)
            assert search.used_cost == cost
        assert search.used_moves == int(search.migrated_mask().sum())


def test_one_call_helpers_equal_numpy() -> None:
    values = np.array([3, 3, 1, 7, 7, 7, 2], dtype=np.int64)
    for times in (0, 1, 5):
        assert np.array_equal(local_search._tile(values, times), np.tile(values, times))
    mask = values > 2
    assert np.array_equal(local_search._indices(mask), np.flatnonzero(mask))
    assert local_search._first_of_runs(values).tolist() == [0, 2, 3, 6]


def test_common_step_of_denormal_and_huge_loads_is_none_without_numpy_warnings() -> None:
    """Seen in the fuzz run (bench.reliability.fuzz): loads of 5e-324 beside 3.0 overflowed the sample test's
    divisions, and numpy's RuntimeWarnings reached the service's standard error. Such loads have no step."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert integer_scaling.common_step(np.array([5e-324, 1e-300, 3.0])) is None
        assert integer_scaling.common_step(np.array([1e-300, 1e300])) is None
        assert integer_scaling.common_step(np.array([2.0, 4.0, 6.0])) == 2.0


@settings(max_examples=300, deadline=None)
@given(
    loads=st.lists(
        st.sampled_from([0.0, 0.5, 1.5, 2.25, 3.0, 1e-300, 5e-324, 2.5e-323, 3e-323, 1e300, 7.0, 0.1, 0.3])
        | st.floats(0.0, 1e6, allow_nan=False, allow_infinity=False)
        | st.integers(0, 50).map(lambda k: k * 0.125),
        min_size=1,
        max_size=40,
    )
)
def test_common_step_with_its_scalar_precheck_is_common_step_without(loads: list[float]) -> None:
    values = np.array(loads)
    fast = integer_scaling.common_step(values)
    original = integer_scaling._first_values_fail_every_step
    try:
        integer_scaling._first_values_fail_every_step = lambda values, smallest: False
        slow = integer_scaling.common_step(values)
    finally:
        integer_scaling._first_values_fail_every_step = original
    assert fast == slow


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from([0.0, -0.0, 1.0, 1.0, 2.5, -3.0]), st.floats(-1e12, 1e12, allow_nan=False)),
        min_size=2,
        max_size=200,
    )
)
@example([0.0, -0.0, 1.0, 1.0, 0.0, -0.0, 0.0])  # a sort put -0.0 where numpy's partition put 0.0 (2 Dec)
def test_lower_quartile_is_numpys_to_the_bit(values: list[float]) -> None:
    """The band repair's cheaper quartile (cost budgets) picks the same moves: np.quantile's value, bit for bit
    (the sign of a zero included)."""
    array = np.asarray(values)
    assert _lower_quartile(array).hex() == float(np.quantile(array, 0.25)).hex()

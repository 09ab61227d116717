"""The blocking-rate model: rates from counters, monotone functions, exploration, clustering (pure solver level)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.optimize import isotonic_regression
from scipy.spatial.distance import pdist

from solvers.splitter.clustering import cluster_connections, cut_tree_at, fitted_features, function_features
from solvers.splitter.functions import (
    _isotonic_rows,
    blocking_function,
    blocking_functions,
    blocking_functions_flat,
    fit_rows,
    select_rows,
    tabulate,
)
from solvers.splitter.model import (
    MAX_POINTS,
    ConnectionMemory,
    SplitterInput,
    SplitterMemory,
    _least_within,
    blocking_rates,
    rescale,
    update_weights,
)


def test_blocking_rate_is_counter_difference_over_time_and_a_decrease_is_a_reset() -> None:
    rates, reset = blocking_rates(np.array([10.0, 5.0]), np.array([12.0, 0.5]), 4.0)
    assert rates.tolist() == [0.5, 0.125]
    assert reset.tolist() == [False, True]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 100), st.floats(0, 10, allow_nan=False), st.integers(1, 4)),
        max_size=12,
        unique_by=lambda p: p[0],
    )
)
def test_functions_are_monotone_start_at_zero_and_pass_monotone_data(
    points: list[tuple[int, float, int]],
) -> None:
    w = np.asarray([p[0] for p in points], dtype=np.float64)
    rate = np.asarray([p[1] for p in points])
    count = np.asarray([p[2] for p in points], dtype=np.float64)
    values = blocking_function(w, rate, count, 100)
    assert values.shape == (101,) and values[0] == 0.0
    assert np.all(np.diff(values) >= -1e-12)
    order = np.argsort(w)
    if np.all(np.diff(rate[order]) >= 0):  # monotone data is kept exactly at its weights
        np.testing.assert_allclose(values[w.astype(int)], rate)


def test_function_interpolates_and_extrapolates_linearly() -> None:
    values = blocking_function(np.array([100.0, 200.0]), np.array([0.0, 0.5]), np.ones(2), 1000)
    assert values[50] == 0.0 and values[150] == 0.25
    assert values[400] == 1.5  # the last segment's slope continued
    # One point: the line through (0, 0).
    single = blocking_function(np.array([250.0]), np.array([0.5]), np.ones(1), 1000)
    assert single[500] == 1.0
    # Decreasing data is pooled (weighted) by the monotone regression.
    pooled = blocking_function(np.array([100.0, 200.0]), np.array([0.6, 0.2]), np.array([1.0, 3.0]), 1000)
    assert pooled[100] == pooled[200] == pytest.approx(0.3)


def run(ids: tuple[str, ...], weights: list[int], counters: list[float], at: float, memory=None, **kw):  # type: ignore[no-untyped-def]
    return update_weights(SplitterInput(ids, np.asarray(weights), np.asarray(counters), at, **kw), memory)


def test_blocking_moves_weight_away_and_prediction_is_reported() -> None:
    ids = ("a", "b", "c")
    first = run(ids, [334, 333, 333], [0.0, 0.0, 0.0], 0.0)
    assert first.weights.tolist() == [334, 333, 333]  # nothing known: nothing changes
    second = run(ids, [334, 333, 333], [0.9, 0.0, 0.1], 1.0, first.memory)
    assert second.weights[0] < 334 and second.weights.sum() == 1000
    assert second.predicted_max_blocking_rate >= 0.0
    assert second.memory.connections["a"].w.tolist() == [334]
    assert second.memory.connections["a"].rate.tolist() == [0.9]


def test_exploration_decays_points_above_the_current_weight_only() -> None:
    ids = ("a", "b")
    memory = run(ids, [500, 500], [0.0, 0.0], 0.0).memory
    memory = run(ids, [500, 500], [0.8, 0.0], 1.0, memory).memory  # point (500, 0.8) for a
    memory = run(ids, [100, 900], [0.8 + 0.2, 0.0], 2.0, memory, exploration_decay=0.5).memory
    a = memory.connections["a"]
    points = dict(zip(a.w.tolist(), a.rate.tolist(), strict=True))
    assert points[500] == 0.4  # above the current weight 100: halved
    assert points[100] == pytest.approx(0.2)  # at the current weight: untouched
    static = run(ids, [100, 900], [1.2, 0.0], 3.0, memory, exploration_decay=0.0).memory
    assert static.connections["a"].rate[static.connections["a"].w == 500][0] == pytest.approx(0.4)


def test_smoothing_is_a_running_mean_then_bounded_window() -> None:
    ids = ("a", "b")
    memory = run(ids, [500, 500], [0.0, 0.0], 0.0).memory
    counter = 0.0
    for k, rate in enumerate([0.4, 0.0, 0.2]):
        counter += rate
        memory = run(ids, [500, 500], [counter, 0.0], float(k + 1), memory, max_change=1).memory
    a = memory.connections["a"]
    assert a.n.tolist() == [3] and a.rate[0] == pytest.approx(0.2)


def test_model_follows_the_connections_and_drops_vanished_ones() -> None:
    memory = run(("a", "b"), [500, 500], [0.0, 0.0], 0.0).memory
    result = run(("a", "c"), [500, 500], [0.3, 5.0], 1.0, memory)
    assert set(result.memory.connections) == {"a", "c"}
    assert len(result.memory.connections["c"].w) == 0  # new: no rate yet (its counter had no baseline)
    assert any("gone" in note and "b" in note for note in result.notes)
    assert any("new connections" in note and "c" in note for note in result.notes)


def test_counter_reset_is_noted_and_does_not_produce_negative_rates() -> None:
    memory = run(("a", "b"), [500, 500], [10.0, 0.0], 0.0).memory
    result = run(("a", "b"), [500, 500], [0.5, 0.0], 2.0, memory)
    assert result.memory.connections["a"].rate.tolist() == [0.25]
    assert any("reset" in note for note in result.notes)


def test_rescale_merges_points_weighting_rates_and_variances_by_their_observations() -> None:
    # Red team: 3 points landing on 2 weights raised a ValueError (the variances were weighted by the merged, capped
    # counts: another length); merged points average rate and variance by the observations each point holds.
    connection = ConnectionMemory(
        counter=0.0,
        w=np.array([1, 2, 999]),
        rate=np.array([0.1, 0.4, 0.3]),
        n=np.array([1, 3, 1]),
        seen=np.array([1, 2, 2]),
        var=np.array([0.2, 0.6, 0.5]),
    )
    memory = SplitterMemory(1000, 0.0, 2, {"a": connection})
    rescale(memory, 10)
    assert memory.resolution == 10
    assert connection.w.tolist() == [1, 10]
    assert connection.rate.tolist() == pytest.approx([(0.1 * 1 + 0.4 * 3) / 4, 0.3])
    assert connection.var.tolist() == pytest.approx([(0.2 * 1 + 0.6 * 3) / 4, 0.5])
    assert connection.n.tolist() == [4, 1] and connection.seen.tolist() == [2, 2]


def test_points_per_connection_are_bounded() -> None:
    ids = ("a", "b")
    result = run(ids, [500, 500], [0.0, 0.0], 0.0)
    counter = 0.0
    for k in range(MAX_POINTS + 10):
        counter += 0.1
        w = 100 + k
        result = run(ids, [w, 1000 - w], [counter, 0.0], float(k + 1), result.memory)
    a = result.memory.connections["a"]
    assert len(a.w) == MAX_POINTS
    assert a.w.max() == 100 + MAX_POINTS + 9  # the newest points are kept


def test_max_change_bounds_every_move() -> None:
    ids = ("a", "b", "c")
    memory = run(ids, [334, 333, 333], [0.0] * 3, 0.0).memory
    result = run(ids, [334, 333, 333], [0.9, 0.0, 0.0], 1.0, memory, max_change=10)
    assert np.all(np.abs(result.weights - np.array([334, 333, 333])) <= 10)
    assert result.weights[0] == 324


def test_features_and_distance_follow_the_paper() -> None:
    grid = np.arange(1001, dtype=np.float64)
    knee_500 = np.where(grid >= 500, (grid - 499) * 1e-3, 0.0)
    features = function_features(np.vstack([knee_500, np.zeros(1001)]))
    assert features[0, 0] == np.log(500)  # knee: first weight with blocking (F above zero)
    assert features[1].tolist() == [
        np.log(1000),
        np.log(1e-6),
        np.log(1e-6),
    ]  # never blocks: knee R, floor delta


def test_clustering_never_mixes_well_separated_classes() -> None:
    grid = np.arange(1001, dtype=np.float64)
    rng = np.random.default_rng(1)
    functions, classes = [], []
    for cls, knee in enumerate([5, 40, 200]):
        for _ in range(8):
            k = knee * rng.uniform(0.9, 1.1)
            functions.append(np.where(grid >= k, (grid - k + 1) * 1e-3 * rng.uniform(0.9, 1.1), 0.0))
            classes.append(cls)
    stacked = np.vstack(functions)
    labels = cluster_connections(stacked, stacked.max(axis=1))
    for label in np.unique(labels):
        assert len({classes[j] for j in np.flatnonzero(labels == label)}) == 1
    assert len(np.unique(labels)) <= 6


def test_clustered_solve_shares_cluster_weight_evenly() -> None:
    ids = tuple(f"c{j}" for j in range(16))
    weights = [63] * 8 + [62] * 8
    memory = run(ids, weights, [0.0] * 16, 0.0).memory
    counters = [0.2] * 4 + [0.0] * 12  # four connections block heavily (0.8 of the interval together)
    result = run(ids, weights, counters, 1.0, memory, clustering="on")
    assert result.weights.sum() == 1000
    for members in result.clusters:
        shares = result.weights[members]
        assert shares.max() - shares.min() <= 1
    assert any(set(members) == {0, 1, 2, 3} for members in result.clusters)
    assert result.weights[:4].max() < result.weights[4:].min()


def test_connections_that_never_blocked_are_not_pooled_on_absence_of_evidence() -> None:
    grid = np.arange(1001, dtype=np.float64)
    functions = np.vstack([np.zeros(1001), np.zeros(1001), grid * 1e-3, grid * 1.1e-3])
    labels = cluster_connections(functions, functions.max(axis=1))
    assert labels[0] != labels[1]
    assert labels[2] == labels[3]
    # One point of 1e-8 s/s at weight 1, extrapolated to 1e-5 at R: no evidence, so no pooling either.
    faint = np.vstack([grid * 1e-8, grid * 1.05e-8])
    assert len(set(cluster_connections(faint, np.array([1e-8, 1.05e-8])).tolist())) == 2


def test_knee_survives_the_exploration_decay() -> None:
    # A connection that blocks from weight 2 and has rested at weight 0 for 150 calls (every point shrunk by 0.9 a
    # call, far below delta) keeps its knee; with a delta threshold it drifted right and met the 5x class's knee.
    grid = np.arange(1001, dtype=np.float64)
    blocks_from_2 = np.where(grid >= 2, 0.5, 0.0)
    features = function_features(np.vstack([blocks_from_2, blocks_from_2 * 0.9**150]))
    assert features[0, 0] == features[1, 0] == np.log(2)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(  # weights up to 200 > resolution 60 and repeated: pooled cluster data
            st.tuples(st.integers(1, 200), st.floats(0, 10, allow_nan=False), st.integers(1, 4)),
            max_size=8,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_vectorised_functions_equal_the_row_by_row_ones(rows: list[list[tuple[int, float, int]]]) -> None:
    points = [
        np.asarray([[p[0] for p in r], [p[1] for p in r], [p[2] for p in r]], dtype=np.float64).reshape(3, -1)
        for r in rows
    ]
    expected = np.vstack([blocking_function(w, rate, count, 60, pooled=True) for w, rate, count in points])
    np.testing.assert_allclose(blocking_functions(points, 60), expected, rtol=1e-12, atol=1e-12)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(  # zero rows, faint rows, weights beyond the resolution (pooled data), repeated weights
            st.tuples(
                st.integers(1, 200),
                st.sampled_from([0.0, 0.0, 1e-9, 1e-3, 0.5]) | st.floats(0, 10, allow_nan=False),
                st.integers(1, 4),
            ),
            max_size=8,
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from([1, 60, 150]),
)
def test_features_from_the_fit_are_the_tables(
    rows: list[list[tuple[int, float, int]]], resolution: int
) -> None:
    w = np.asarray([p[0] for r in rows for p in r], dtype=np.float64)
    rate = np.asarray([p[1] for r in rows for p in r], dtype=np.float64)
    count = np.asarray([p[2] for r in rows for p in r], dtype=np.float64)
    sizes = np.asarray([len(r) for r in rows])
    fit = fit_rows(w, rate, count, sizes, resolution)
    features = fitted_features(fit, resolution)
    table_features = function_features(tabulate(fit, resolution))
    if features is None:
        # The documented fallback: some F(knee) underflowed to 0, which takes rates of order 1e-308 (e.g. a single
        # point of 5e-324); the caller then reads the features off the table, which are finite.
        assert rate[rate > 0].min() < 1e-290, rows
        assert np.isfinite(table_features).all()
        return
    np.testing.assert_array_equal(features, table_features)  # bit for bit


def test_a_row_is_the_same_whatever_the_other_rows() -> None:
    # A pooled row built beside others (another stride) and a fitted row selected out of the connections' fit (for a
    # singleton cluster) are, bit for bit, the row built alone.
    own = blocking_functions_flat(
        np.asarray([3.0, 9.0, 20.0]),
        np.asarray([0.1, 0.05, 0.7]),
        np.asarray([3.0, 1.0, 2.0]),
        np.asarray([3]),
        100,
    )
    with_pool = blocking_functions_flat(
        np.asarray([3.0, 9.0, 20.0, 400.0, 250.0]),
        np.asarray([0.1, 0.05, 0.7, 0.3, 0.9]),
        np.asarray([3.0, 1.0, 2.0, 4.0, 1.0]),
        np.asarray([3, 2]),
        100,
    )
    np.testing.assert_array_equal(with_pool[0], own[0])
    fit = fit_rows(
        np.asarray([400.0, 250.0, 3.0, 9.0, 20.0]),
        np.asarray([0.3, 0.9, 0.1, 0.05, 0.7]),
        np.asarray([4.0, 1.0, 3.0, 1.0, 2.0]),
        np.asarray([2, 0, 3]),
        100,
    )
    np.testing.assert_array_equal(tabulate(select_rows(fit, np.asarray([2])), 100)[0], own[0])
    np.testing.assert_array_equal(
        tabulate(select_rows(fit, np.asarray([2, 0])), 100), tabulate(fit, 100)[[2, 0]]
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.sampled_from([0.0, 1e-9, 0.5, 1.0, 1e6]) | st.floats(0, 10), st.integers(1, 4)),
            min_size=1,
            max_size=140,  # a connection's own row (<= 33) and pooled cluster rows (up to hundreds)
        ),
        min_size=1,
        max_size=6,
    )
)
def test_batched_monotone_regression_equals_scipys(rows: list[list[tuple[float, int]]]) -> None:
    y = np.asarray([p[0] for r in rows for p in r])
    weight = np.asarray([p[1] for r in rows for p in r], dtype=np.float64)
    lengths = np.asarray([len(r) for r in rows])
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    expected = y.copy()
    for start, length in zip(starts.tolist(), lengths.tolist(), strict=True):
        part = slice(start, start + length)
        expected[part] = isotonic_regression(y[part], weights=weight[part], increasing=True).x
    batched = y.copy()
    _isotonic_rows(batched, weight, starts, lengths)
    np.testing.assert_allclose(batched, expected, rtol=1e-9, atol=1e-12)


@settings(max_examples=500, deadline=None)
@given(
    st.floats(0.0, 1e300, allow_nan=False, allow_infinity=False),
    st.floats(1e-300, 1e300, allow_nan=False, allow_infinity=False),
)
def test_least_within_noise_is_the_least_such_float(now: float, noise: float) -> None:
    # The steady gate compares the free optimum with this float instead of solving (minimax_at_least): every x
    # from it up, and none below it, has now - x <= noise.
    least = _least_within(now, noise)
    assert least is not None
    assert now - least <= noise
    assert not now - math.nextafter(least, -math.inf) <= noise


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 40), st.sampled_from([0.05, 0.3, math.log(2.0), 2.0]), st.integers(0, 2**32 - 1))
def test_tree_cut_is_fclusters(n: int, threshold: float, seed: int) -> None:
    # cut_tree_at replaces scipy's fcluster(criterion="distance") on complete linkage: the same partition, with
    # ties (features on a coarse grid) and merges exactly at the threshold.
    rng = np.random.default_rng(seed)
    features = np.round(rng.random((n, 3)) * rng.choice([0.5, 2.0, 5.0]), int(rng.integers(0, 3)))
    merges = linkage(pdist(features, metric="chebyshev"), method="complete")
    ours, theirs = cut_tree_at(merges, threshold), fcluster(merges, t=threshold, criterion="distance")
    assert (
        len(set(zip(ours.tolist(), theirs.tolist(), strict=True)))
        == len(set(ours.tolist()))
        == len(set(theirs.tolist()))
    )

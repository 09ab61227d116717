"""Fox's greedy is exact: the same optimum as brute force and as an independent bisection on the threshold."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers.splitter import fox
from solvers.splitter.fox import fox_minimax, minimax_at_least
from solvers.splitter.model import even_split

VECTORISED_DEFAULT = fox.VECTORISED_CELLS_PER_UNIT


@st.composite
def instances(
    draw: st.DrawFn, max_n: int = 4, max_r: int = 9
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    n = draw(st.integers(1, max_n))
    total = draw(st.integers(0, max_r))
    # Non-decreasing columns from non-negative increments; small integers make ties (the hard case) frequent.
    steps = draw(
        st.lists(st.lists(st.integers(0, 3), min_size=total, max_size=total), min_size=n, max_size=n)
    )
    start = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    values = np.asarray(
        [np.concatenate(([s], s + np.cumsum(row))) for s, row in zip(start, steps, strict=True)]
    )
    values = values.reshape(n, total + 1).astype(np.float64)
    lower = np.asarray(draw(st.lists(st.integers(0, total), min_size=n, max_size=n)))
    upper = np.asarray([draw(st.integers(int(lo), total)) for lo in lower])
    # Make the bounds feasible: shrink lower bounds until they fit, widen upper bounds until they reach the total.
    while lower.sum() > total:
        lower[int(np.argmax(lower))] -= 1
    while upper.sum() < total:
        upper[int(np.argmin(upper))] += 1
    return values, lower, upper, total


def brute_force(values: np.ndarray, lower: np.ndarray, upper: np.ndarray, total: int) -> float:
    best = np.inf
    for w in itertools.product(*(range(int(lo), int(hi) + 1) for lo, hi in zip(lower, upper, strict=True))):
        if sum(w) == total:
            best = min(best, max(values[j, wj] for j, wj in enumerate(w)))
    return float(best)


def bisection(values: np.ndarray, lower: np.ndarray, upper: np.ndarray, total: int) -> float:
    """Smallest threshold t among the table's values such that every column can stay at or below t within its bounds
    while the columns' largest such weights still add up to `total`."""
    candidates = np.unique(values)
    columns = np.arange(len(values))

    def feasible(t: float) -> bool:
        if np.any(values[columns, lower] > t):
            return False
        widest = np.asarray([np.flatnonzero(values[j, : upper[j] + 1] <= t).max() for j in columns])
        return int(widest.sum()) >= total

    lo, hi = 0, len(candidates) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if feasible(candidates[mid]):
            hi = mid
        else:
            lo = mid + 1
    return float(candidates[lo])


@settings(max_examples=300, deadline=None)
@given(instances())
def test_fox_matches_brute_force_and_bisection(
    instance: tuple[np.ndarray, np.ndarray, np.ndarray, int],
) -> None:
    values, lower, upper, total = instance
    weights, objective = fox_minimax(values, lower, upper, total, prefer=lower)
    assert int(weights.sum()) == total
    assert np.all(weights >= lower) and np.all(weights <= upper)
    assert objective == float(values[np.arange(len(values)), weights].max())
    assert objective == brute_force(values, lower, upper, total)
    assert objective == bisection(values, lower, upper, total)


@settings(max_examples=100, deadline=None)
@given(instances(max_n=12, max_r=60))
def test_fox_matches_bisection_on_larger_instances(
    instance: tuple[np.ndarray, np.ndarray, np.ndarray, int],
) -> None:
    values, lower, upper, total = instance
    _, objective = fox_minimax(values, lower, upper, total)
    assert objective == bisection(values, lower, upper, total)


def test_fox_keeps_the_current_weights_when_nothing_is_known() -> None:
    weights, objective = fox_minimax(
        np.zeros((3, 11)), np.zeros(3, int), np.full(3, 10), 10, prefer=np.array([7, 0, 3])
    )
    assert weights.tolist() == [7, 0, 3] and objective == 0.0


def test_fox_rejects_infeasible_bounds() -> None:
    import pytest

    with pytest.raises(ValueError, match="no allocation"):
        fox_minimax(np.zeros((2, 11)), np.zeros(2, int), np.array([3, 4]), 10)


@settings(max_examples=200, deadline=None)
@given(instances(max_n=6, max_r=40))
def test_even_split_is_the_most_even_within_bounds(
    instance: tuple[np.ndarray, np.ndarray, np.ndarray, int],
) -> None:
    _, lower, upper, total = instance
    shares = even_split(total, lower, upper)
    assert int(shares.sum()) == total and np.all(shares >= lower) and np.all(shares <= upper)
    # The most even split is the minimax one for F(w) = w: Fox agrees on the largest share.
    identity = np.broadcast_to(np.arange(total + 1, dtype=np.float64), (len(lower), total + 1))
    _, largest = fox_minimax(identity, lower, upper, total)
    assert shares.max() == largest


@settings(max_examples=300, deadline=None)
@given(instances(), st.data())
def test_vectorised_fox_is_the_heaps_exact_answer(
    instance: tuple[np.ndarray, np.ndarray, np.ndarray, int], data: st.DataObject
) -> None:
    # Same weights, not only the same optimum: the tie-breaking (current weights first, then even, then index)
    # is what keeps allocations steady, so both code paths must hand out the same units.
    values, lower, upper, total = instance
    prefer = np.asarray(
        data.draw(st.lists(st.integers(0, values.shape[1] - 1), min_size=len(values), max_size=len(values)))
    )
    assert_heap_equals_vectorised(values, lower, upper, total, prefer)


def assert_heap_equals_vectorised(
    values: np.ndarray, lower: np.ndarray, upper: np.ndarray, total: int, prefer: np.ndarray
) -> None:
    """Fox by the heap and by the vectorised path: the same weights and the same optimum."""
    try:
        fox.VECTORISED_CELLS_PER_UNIT = 0  # always the heap
        heap = fox_minimax(values, lower, upper, total, prefer=prefer)
        fox.VECTORISED_CELLS_PER_UNIT = 10**12  # always vectorised
        vectorised = fox_minimax(values, lower, upper, total, prefer=prefer)
    finally:
        fox.VECTORISED_CELLS_PER_UNIT = VECTORISED_DEFAULT
    assert heap[0].tolist() == vectorised[0].tolist()
    assert heap[1] == vectorised[1]


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 48),
    st.integers(1, 600),
    st.sampled_from([1e-300, 1e-9, 1.0, 1e6, 1e300]),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_vectorised_fox_on_wide_tables_is_the_heaps_answer(
    n: int, total: int, scale: float, bounded: bool, seed: int
) -> None:
    # Tables wide enough that the vectorised Fox brackets its level by a sample of columns (_level_counts): ties
    # (integer steps, long flat runs), tiny and huge values, tight and free bounds.
    rng = np.random.default_rng(seed)
    steps = rng.integers(0, 3, size=(n, total)) * (rng.random((n, total)) < rng.uniform(0.05, 1.0))
    values = np.concatenate((rng.integers(0, 3, size=(n, 1)), steps), axis=1).cumsum(axis=1) * scale
    lower = np.zeros(n, dtype=np.int64)
    upper = np.full(n, total, dtype=np.int64)
    if bounded:
        lower = rng.integers(0, total // n + 1, size=n)
        upper = np.maximum(lower + rng.integers(0, 2 * total // n + 2, size=n), lower)
        while upper.sum() < total:
            upper[int(np.argmin(upper))] += 1
        upper = np.minimum(upper, total)
    prefer = rng.integers(0, total + 1, size=n)
    assert_heap_equals_vectorised(values, lower, upper, total, prefer)


@settings(max_examples=300, deadline=None)
@given(instances(), st.data())
def test_minimax_at_least_is_the_optimum_compared(
    instance: tuple[np.ndarray, np.ndarray, np.ndarray, int], data: st.DataObject
) -> None:
    # The optimum compared with a threshold without solving: thresholds at, between and around the table's values.
    values, lower, upper, total = instance
    _, optimum = fox_minimax(values, lower, upper, total)
    cells = sorted({*values.ravel().tolist(), optimum})
    threshold = data.draw(
        st.sampled_from(
            [*cells, *(np.nextafter(c, np.inf) for c in cells), *(np.nextafter(c, -np.inf) for c in cells)]
        )
    )
    assert minimax_at_least(values, lower, upper, total, threshold) == (optimum >= threshold)

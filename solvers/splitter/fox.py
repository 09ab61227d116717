"""Fox's greedy for the discrete minimax separable resource allocation problem (Schneider et al., Section 5.2).

minimize max_j F_j(w_j)  subject to  sum_j w_j = R,  m_j <= w_j <= M_j,  w_j integer,
with every F_j non-decreasing. Start from w = m and hand out the remaining units one at a time, each to the column
whose next value F_j(w_j + 1) is smallest (Fox 1966). The interchange argument makes this exact for ANY choice among
equal smallest values, so ties are broken for stability, not for optimality: first a connection still below its
current weight (an allocation is not changed without evidence), then the connection with the fewest units (an even
split among equally good ones), then the lowest index. A heap makes it O(N + R log N).
"""

from __future__ import annotations

import heapq

import numpy as np

from solvers.instance import FloatArray, IntArray

# The vectorised variant touches every cell of the table once (a few ns each), the heap pays ~1.5 us per unit:
# vectorised when cells <= this x the units to hand out.
VECTORISED_CELLS_PER_UNIT = 300


def fox_minimax(
    values: FloatArray,
    lower: IntArray,
    upper: IntArray,
    total: int,
    prefer: IntArray | None = None,
) -> tuple[IntArray, float]:
    """Exact minimax allocation. `values[j, w]` = F_j(w) for w = 0..R (non-decreasing in w).

    Returns the weights and the optimal objective max_j F_j(w_j). Raises ValueError when the bounds admit no
    allocation (sum lower > total or sum upper < total).
    """
    n_columns, width = values.shape
    weights = np.asarray(lower, dtype=np.int64).copy()
    upper = np.minimum(np.asarray(upper, dtype=np.int64), width - 1)
    if np.any(weights < 0) or np.any(weights > upper):
        raise ValueError("every column needs 0 <= lower <= upper")
    remaining = total - int(weights.sum())
    if remaining < 0 or int(upper.sum()) < total:
        raise ValueError(f"bounds admit no allocation summing to {total}")
    preferred = np.zeros(n_columns, dtype=np.int64) if prefer is None else np.asarray(prefer, dtype=np.int64)

    if remaining == 0:
        return weights, _objective(values, weights)
    if n_columns * width <= VECTORISED_CELLS_PER_UNIT * remaining:
        weights = _fox_vectorised(values, weights, upper, remaining, preferred)
        return weights, _objective(values, weights)

    open_columns = np.flatnonzero(weights < upper)
    next_w = weights[open_columns] + 1
    heap = list(
        zip(
            values[open_columns, next_w].tolist(),
            (next_w > preferred[open_columns]).tolist(),
            next_w.tolist(),
            open_columns.tolist(),
            strict=True,
        )
    )
    heapq.heapify(heap)
    row_of = values  # values[j] is a row; indexing one element per step keeps the loop O(log N)
    upper_list = upper.tolist()
    preferred_list = preferred.tolist()
    w_list = weights.tolist()
    for _ in range(remaining):
        _, _, w, j = heapq.heappop(heap)
        w_list[j] = w
        if w < upper_list[j]:
            nxt = w + 1
            heapq.heappush(heap, (float(row_of[j, nxt]), nxt > preferred_list[j], nxt, j))
    weights = np.asarray(w_list, dtype=np.int64)
    return weights, _objective(values, weights)


def _objective(values: FloatArray, weights: IntArray) -> float:
    return float(values[np.arange(len(weights)), weights].max()) if len(weights) else 0.0


def _fox_vectorised(
    values: FloatArray, weights: IntArray, upper: IntArray, remaining: int, preferred: IntArray
) -> IntArray:
    """The heap's exact answer without a Python loop per unit. Each column's keys (F_j(w), w > preferred_j, w, j)
    increase with w, so the heap merges sorted lists and hands out the `remaining` smallest keys of all candidate
    cells (lower_j < w <= upper_j): every cell below the remaining-th smallest value, then the ties at that value
    in key order, which is a water level over w (first the cells w <= preferred_j, then the others; at the last
    level by column index)."""
    grid = np.arange(values.shape[1])
    candidate = (grid[None, :] > weights[:, None]) & (grid[None, :] <= upper[:, None])
    masked = np.where(candidate, values, np.inf)
    level = np.partition(masked.ravel(), remaining - 1)[remaining - 1]
    below = (masked < level).sum(axis=1)  # a prefix of each column's candidates (values are non-decreasing)
    weights = weights + below
    need = remaining - int(below.sum())
    # A finite level is a candidate's value, and non-candidates are +inf: equal to it means a candidate.
    ties = (
        (masked == level).sum(axis=1) if np.isfinite(level) else ((masked == level) & candidate).sum(axis=1)
    )
    first = np.clip(np.minimum(weights + ties, preferred) - weights, 0, ties)  # tie cells at w <= preferred_j
    for start, count in ((weights, first), (weights + first, ties - first)):
        taken = _water_level(start, count, need)
        weights = weights + taken
        need -= int(taken.sum())
        if need == 0:
            break
    return weights


def _water_level(start: IntArray, count: IntArray, need: int) -> IntArray:
    """Cells start_j + 1 .. start_j + count_j of each column taken in order of (w, j), the first `need` of them
    (all of them if fewer): how many per column."""
    if need <= 0:
        return np.zeros(len(start), dtype=np.int64)
    if int(count.sum()) <= need:
        return count.copy()
    lo, hi = int(start.min()), int((start + count).max())  # taken(lo) = 0 <= need < taken(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if int(np.clip(mid - start, 0, count).sum()) <= need:
            lo = mid
        else:
            hi = mid
    taken = np.clip(lo - start, 0, count)
    left = need - int(taken.sum())
    at_next = np.flatnonzero((start < hi) & (hi <= start + count))[:left]  # level hi, by column index
    taken[at_next] += 1
    return taken

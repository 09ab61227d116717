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
    objective = float(values[np.arange(n_columns), weights].max()) if n_columns else 0.0
    return weights, objective

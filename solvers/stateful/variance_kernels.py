"""CLB's local search steps (solvers/stateful/variance_search.py: `VarianceSearch._best_move` and `_best_swap`)
compiled with numba.

Why: a step evaluates every movable unit on every staying node (a move) or every pair of movable units (a swap),
and as numpy a move step of 1,000 units x 500 nodes made about twelve unit x node temporaries in blocks (10 ms a
step), a swap step a dozen unit x unit ones (28 ms); CLB on that snapshot (bench.reliability.deadlines, shape
dense) was cut by its 10 s limit after 879 steps of its two searches. Compiled, a step is one pass over the cells
without temporaries (a move step: and a second only over the units that hold a move within TIE of the best).

The same decisions as the numpy code, bit for bit (tests/test_variance_kernels.py checks them against it on ties,
integer, tiny and huge loads, pins, mixed capacities and both budgets):
- every change of F is computed by the same IEEE operations on the same operands in the same order (no fastmath);
- a move: a NaN anywhere among the allowed moves ends the search, as the numpy minimum does; among the moves within
  TIE of the best, the one moving the least state wins, ties to the first in (unit, node) order;
- a swap: the 64 best by (change of F, i, k), in that order (the budget and resources are then checked in Python,
  as before).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _change(sa: float, ga: float, qu: float, ru: float, sb: float, gb: float, n: int) -> float:
    """The change of F if a unit (|x|^2 = qu, x . mu = ru) moves from a column of scale sa (G there: ga) to one of
    scale sb (G there: gb), `VarianceSearch._move_delta`'s (-2 sa ga + sa^2 q + 2 sb g + sb^2 q) / n - (2 d r + d^2 q),
    d = (sb - sa) / n, in numpy's order of operations."""
    value = (((-2.0 * sa) * ga + (sa * sa) * qu) + (2.0 * sb) * gb + (sb * sb) * qu) / n
    d = (sb - sa) / n
    return value - ((2.0 * d) * ru + (d * d) * qu)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _allowed_changes(
    u: int,
    col: np.ndarray,
    scale: np.ndarray,
    g: np.ndarray,
    q: np.ndarray,
    r: np.ndarray,
    unit_load: np.ndarray,
    mean_load: np.ndarray,
    cap_load: np.ndarray,
    current: np.ndarray,
    nodes: np.ndarray,
    state_size: np.ndarray,
    budget: np.ndarray,
    out: np.ndarray,
) -> None:
    """out[c]: the change of F if unit u moves to column c, inf where it may not (its own column, over the capacity
    cap, over the budget: `VarianceSearch._step_deltas`)."""
    n = nodes.shape[0]
    moved_count, moved_cost, max_count, max_cost = budget[0], budget[1], budget[2], budget[3]
    a = col[u]
    placed = current[u] >= 0
    away = 1 if placed and nodes[a] != current[u] else 0
    for c in range(n):
        out[c] = np.inf
        if c == a or not mean_load[c] + unit_load[u] <= cap_load[c]:
            continue
        count = (1 if nodes[c] != current[u] else 0) - away if placed else 0
        if max_count >= 0 and not moved_count + count <= max_count:
            continue
        if not moved_cost + count * state_size[u] <= max_cost:
            continue
        out[c] = _change(scale[a], g[u, a], q[u], r[u], scale[c], g[u, c], n)


@njit(cache=True, nogil=True, error_model="numpy")
def best_move(
    movable: np.ndarray,
    col: np.ndarray,
    scale: np.ndarray,
    g: np.ndarray,
    q: np.ndarray,
    r: np.ndarray,
    unit_load: np.ndarray,
    mean_load: np.ndarray,
    cap_load: np.ndarray,
    current: np.ndarray,
    nodes: np.ndarray,
    state_size: np.ndarray,
    budget: np.ndarray,
    tol: float,
    tie: float,
) -> tuple[int, int]:
    """(unit, column) of the move that lowers F the most (see the module docstring), or (-1, -1) when none lowers it
    by more than tol. budget: [moved count, moved cost, max migrations (-1: none), max cost with its tolerance (inf:
    none)]."""
    n = nodes.shape[0]
    row = np.empty(n)
    row_min = np.empty(movable.shape[0])  # each unit's least change
    best = np.inf
    for i in range(movable.shape[0]):
        _allowed_changes(
            movable[i],
            col,
            scale,
            g,
            q,
            r,
            unit_load,
            mean_load,
            cap_load,
            current,
            nodes,
            state_size,
            budget,
            row,
        )
        low = np.inf
        for c in range(n):
            if np.isnan(row[c]):
                return -1, -1
            if row[c] < low:
                low = row[c]
        row_min[i] = low
        if low < best:
            best = low
    if not best < -tol:
        return -1, -1
    bound = best * (1 - tie)
    choice_unit, choice_col = -1, -1
    cheapest = np.inf
    for i in range(movable.shape[0]):
        u = movable[i]
        if not row_min[i] <= bound or not state_size[u] < cheapest:
            continue
        _allowed_changes(
            u, col, scale, g, q, r, unit_load, mean_load, cap_load, current, nodes, state_size, budget, row
        )
        for c in range(n):
            if row[c] <= bound:
                cheapest, choice_unit, choice_col = state_size[u], u, c
                break
    return choice_unit, choice_col


@njit(cache=True, nogil=True, error_model="numpy")
def move_changes(
    movable: np.ndarray,
    col: np.ndarray,
    scale: np.ndarray,
    g: np.ndarray,
    q: np.ndarray,
    r: np.ndarray,
    out: np.ndarray,
) -> None:
    """out[c, i]: the change of F if movable[i] moves to column c (`VarianceSearch._move_delta`, transposed), every
    column, its own included."""
    n = scale.shape[0]
    for i in range(movable.shape[0]):
        u = movable[i]
        a = col[u]
        for c in range(n):
            out[c, i] = _change(scale[a], g[u, a], q[u], r[u], scale[c], g[u, c], n)


@njit(cache=True, nogil=True, error_model="numpy")
def best_swaps(
    cols: np.ndarray,
    sa: np.ndarray,
    by_column: np.ndarray,
    product: np.ndarray,
    load: np.ndarray,
    mean_load: np.ndarray,
    cap_load: np.ndarray,
    n: int,
    tol: float,
    values: np.ndarray,
    cells: np.ndarray,
) -> int:
    """The swaps of movable units i and k (cell i * m + k) on different columns that lower F by more than tol and
    keep both columns under the capacity cap: the (at most len(values)) smallest by (change of F, cell), in that
    order, written to values and cells; returns how many. cols, sa, load, mean_load and cap_load are per movable
    unit (its column's scale, mean load and cap); by_column[c, i] is the change of F of i moving to column c."""
    m = cols.shape[0]
    size = values.shape[0]
    count = 0
    two_over_n = 2.0 / n
    for i in range(m):
        ci = cols[i]
        si = sa[i]
        for k in range(m):
            ck = cols[k]
            if ci == ck:
                continue
            sk = sa[k]
            d = (sk - si) / n
            # (single + single_back) + (2 d^2 - (2/n)(sa_i^2 + sa_k^2)) x_i . x_k, in numpy's order of operations
            coefficient = (2.0 * d) * d - two_over_n * (si * si + sk * sk)
            value = (by_column[ck, i] + by_column[ci, k]) + coefficient * product[i, k]
            if not value < -tol:
                continue
            exchange = load[k] - load[i]
            if not mean_load[i] + exchange <= cap_load[i] or not mean_load[k] - exchange <= cap_load[k]:
                continue
            if count == size and not value < values[size - 1]:
                continue  # (cells come in increasing order: a later one of an equal value ranks after)
            at = count if count < size else size - 1
            while at > 0 and value < values[at - 1]:
                values[at] = values[at - 1]
                cells[at] = cells[at - 1]
                at -= 1
            values[at] = value
            cells[at] = i * m + k
            if count < size:
                count += 1
    return count


def compile_all() -> None:
    """Compile the kernels for the types the search passes (or load them from the on-disk cache): one call each, so
    no call of a search compiles (tests/test_variance_kernels.py)."""
    i = np.array([0, 1], dtype=np.int64)
    f = np.array([1.0, 2.0])
    best_move(
        i,
        i,
        f,
        np.ones((2, 2)),
        f,
        f,
        f,
        f,
        f,
        i,
        i,
        f,
        np.array([0.0, 0.0, -1.0, np.inf]),
        1e-12,
        1e-9,
    )
    best_swaps(
        i, f, np.ones((2, 2)), np.ones((2, 2)), f, f, f, 2, 1e-12, np.empty(64), np.empty(64, dtype=np.int64)
    )
    move_changes(i, i, f, np.ones((2, 2)), f, f, np.empty((2, 2)))

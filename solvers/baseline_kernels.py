"""Flux's rounds compiled with numba, for plain instances (every unit placed, no draining node, no further resource).

Flux on a small snapshot (10 nodes x 100 units, a budget of 10) is a few hundred scalar steps; as numpy calls each
step costs its call's overhead, and as Python on lists (the path this replaces) it was still the largest single
part of a small plan request's CPU (74 of 475 us in process). Compiled, the same steps cost a few microseconds.

The kernels take the decisions of `baselines.flux`'s numpy code, bit for bit (tests/test_flux_kernel.py and
tests/test_small_paths.py check them against that code on ties, integer, tiny and huge loads, pins and both
budgets):
- every floating-point number is computed by the same IEEE operations on the same operands in the same order (no
  fastmath): the node sums are summed unit by unit as `AssignmentInstance.current_node_load` (np.bincount) sums
  them, and change move by move as there;
- the nodes are ordered by a stable sort of the negated utilizations (mergesort, as numpy's "stable"), the units of
  a node are taken in unit order, and the unit of least fit wins, ties to the lowest index (numpy's stable argsort
  of the fits, then the first the budget allows).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# What `flux_rounds` says when it returns: the search ended (no pair improved, the budget or the move cap is spent),
# or it ran its rounds and there may be more (the caller checks its deadline and calls again).
DONE = 0
MORE = 1


@njit(cache=True, nogil=True, error_model="numpy")
def flux_rounds(
    assignment: np.ndarray,
    current: np.ndarray,
    load: np.ndarray,
    capacity: np.ndarray,
    state_size: np.ndarray,
    pinned: np.ndarray,
    node_load: np.ndarray,
    counters: np.ndarray,
    cost: np.ndarray,
    max_moves: int,
    cost_limit: float,
    cap: np.ndarray,
    max_rounds: int,
) -> int:
    """Up to `max_rounds` rounds of flux on `assignment` and `node_load` (changed in place). `counters` holds
    [migrations so far, moves left under the hard cap], `cost` [migration cost so far]; max_moves < 0: no count
    budget; cost_limit: the cost budget with its tolerance (inf: none); cap[0]: no receiver may end above this
    utilization. DONE or MORE."""
    n_nodes = capacity.shape[0]
    n_units = load.shape[0]
    util = np.empty(n_nodes)
    limit = cap[0]
    count = np.zeros(n_nodes + 1, dtype=np.int64)
    units = np.empty(n_units, dtype=np.int64)
    for _ in range(max_rounds):
        if (max_moves >= 0 and counters[0] >= max_moves) or counters[1] <= 0:
            return DONE
        scale = 1.0
        for i in range(n_nodes):
            util[i] = 100.0 * node_load[i] / capacity[i]
            if abs(util[i]) > scale:
                scale = abs(util[i])
        tolerance = 1e-9 * scale
        order = np.argsort(-util, kind="mergesort")
        # The movable units of each node in unit order (a counting sort): a node's units at the start of the round
        # are its units when its pair comes, as the round's pairs are disjoint.
        count[:] = 0
        for u in range(n_units):
            if not pinned[u]:
                count[assignment[u] + 1] += 1
        for i in range(n_nodes):
            count[i + 1] += count[i]
        fill = count[:n_nodes].copy()
        for u in range(n_units):
            if not pinned[u]:
                units[fill[assignment[u]]] = u
                fill[assignment[u]] += 1
        moved = False
        for i in range(n_nodes // 2):
            hi, lo = order[i], order[n_nodes - 1 - i]
            gap = 100.0 * (node_load[hi] / capacity[hi] - node_load[lo] / capacity[lo])
            if gap <= tolerance:
                break
            per_load = 1.0 / capacity[hi] + 1.0 / capacity[lo]
            most = 2.0 * gap - tolerance
            best = -1
            best_fit = 0.0
            for k in range(count[hi], count[hi + 1]):
                u = units[k]
                shift = 100.0 * load[u] * per_load
                if (
                    shift > tolerance
                    and shift < most
                    and 100.0 * (node_load[lo] + load[u]) / capacity[lo] <= limit
                ):
                    fit = abs(gap - shift)
                    if (best < 0 or fit < best_fit) and not cost[0] + state_size[u] > cost_limit:
                        best, best_fit = u, fit
            if best < 0:
                continue
            node_load[hi] -= load[best]
            node_load[lo] += load[best]
            home = current[best]
            was_moved, now_moved = assignment[best] != home, lo != home
            if now_moved and not was_moved:
                counters[0] += 1
                cost[0] += state_size[best]
            elif was_moved and not now_moved:
                counters[0] -= 1
                cost[0] -= state_size[best]
            assignment[best] = lo
            moved = True
            counters[1] -= 1
            if (max_moves >= 0 and counters[0] >= max_moves) or counters[1] <= 0:
                return DONE
        if not moved:
            return DONE
    return MORE


@njit(cache=True, nogil=True, error_model="numpy")
def flux_start(
    current: np.ndarray, load: np.ndarray, capacity: np.ndarray, node_load: np.ndarray, cap: np.ndarray
) -> bool:
    """Each node's load (`node_load`, summed unit by unit as np.bincount does) and, unless cap[0] holds a cap
    already (not NaN), the utilization no receiver may exceed: 100 % or the current peak if higher, as
    `AssignmentInstance.utilization_cap` of a plain instance. False, and nothing to run, for a unit without a node
    (flux places those first, in the numpy code) and for numbers that could make an infinity or a NaN on the way (a negative or non-finite load, a capacity not above 0, loads whose utilization
    or shift overflows): the service never sends such (its schema caps every quantity), but the solvers take any
    arrays, and the numpy code orders NaNs its own way."""
    node_load[:] = 0.0
    total = 0.0
    for u in range(load.shape[0]):
        if current[u] < 0 or not load[u] >= 0.0:
            return False
        total += load[u]
        node_load[current[u]] += load[u]
    least = np.inf
    for i in range(capacity.shape[0]):
        if not capacity[i] > 0.0:
            return False
        least = min(least, capacity[i])
    if not np.isfinite(200.0 * total / least):  # the largest utilization, gap or shift there can be
        return False
    if np.isnan(cap[0]):
        peak = 100.0
        for i in range(capacity.shape[0]):
            util = 100.0 * node_load[i] / capacity[i]
            if util > peak:
                peak = util
        cap[0] = peak
    return True


def compile_all() -> None:
    """Compile the kernel for the types flux passes (or load it from the on-disk cache): one call on a two-node,
    two-unit plan. Flux passes exactly these types, so no later call compiles."""
    i = np.array([0, 0], dtype=np.int64)
    f = np.array([1.0, 2.0])
    b = np.array([True, True])
    node_load, cap = np.zeros(2), np.array([np.nan])
    flux_start(i, f, f, node_load, cap)
    flux_rounds(i.copy(), i, f, f, f, b, node_load, np.array([0, 8]), np.zeros(1), 5, np.inf, cap, 4)

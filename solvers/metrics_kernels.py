"""The statistics of single loads compiled with numba: the before and after numbers of every small plan.

Each answer computes two states' statistics; on a small snapshot (10 nodes x 100 units) as Python on lists (the
path this replaced) they cost 16-35 us of a request, most of it the interpreter, and more as numpy calls. Compiled,
the same steps cost about a microsecond each.

The same numbers as the numpy code of `metrics.cluster_stats`, bit for bit (tests/test_small_paths.py checks them on
ties, integer, tiny and huge loads, draining, unplaced, added and removed nodes):
- node sums unit by unit in unit order (as np.bincount), every other sum in numpy's pairwise order (`block_sum`, as
  metrics.pairwise_sum and np.add.reduce), every other operation element by element as there;
- maxima and minima keep the first of equal values, as Python's max and min.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers import metrics

# numpy's sum of one block, compiled from the text metrics.pairwise_sum uses. The kernel sums one block only: a
# recursive kernel cannot be cached (numba's on-disk cache of a self-recursive function crashed the process that
# loaded it, 30 Nov 2026), so statistics over more staying nodes than PAIRWISE_BLOCK are left to the numpy code.
block_sum = njit(cache=True, nogil=True, error_model="numpy")(metrics.block_sum)


@njit(cache=True, nogil=True, error_model="numpy")
def single_load_stats(
    where: np.ndarray, load: np.ndarray, capacity: np.ndarray, staying: np.ndarray, total_load: float
) -> tuple[float, float, float, float, int]:
    """(load distance, max utilization, min utilization, variance of the staying nodes' loads, nodes holding a unit)
    of the units on `where` (-1: on no node) over the nodes of `capacity`; parallelism -1 when no node or more
    than metrics.PAIRWISE_BLOCK nodes stay (left to the numpy code)."""
    n_all = capacity.shape[0]
    per_node = np.zeros(n_all)
    held = np.zeros(n_all, dtype=np.bool_)
    for u in range(where.shape[0]):
        node = where[u]
        if node >= 0:
            per_node[node] += load[u]
            held[node] = True
    n = 0
    for i in range(n_all):
        if staying[i]:
            n += 1
    if n == 0 or n > metrics.PAIRWISE_BLOCK:
        return 0.0, 0.0, 0.0, 0.0, -1
    stay_loads = np.empty(n)
    stay_capacity = np.empty(n)
    k = 0
    peak = low = top = 0.0
    for i in range(n_all):
        util = 100.0 * per_node[i] / capacity[i]
        if i == 0 or util > top:
            top = util
        if staying[i]:
            if k == 0 or util > peak:
                peak = util
            if k == 0 or util < low:
                low = util
            stay_loads[k] = per_node[i]
            stay_capacity[k] = capacity[i]
            k += 1
    mean_util = 100.0 * total_load / block_sum(stay_capacity, 0, n)
    mean_load = block_sum(stay_loads, 0, n) / n
    for i in range(n):
        stay_loads[i] = (stay_loads[i] - mean_load) * (stay_loads[i] - mean_load)
    variance = block_sum(stay_loads, 0, n) / n
    distance = abs(peak - mean_util)
    if abs(low - mean_util) > distance:
        distance = abs(low - mean_util)
    parallelism = 0
    for i in range(n_all):
        if held[i]:
            parallelism += 1
    return distance, top, low, variance, parallelism


@njit(cache=True, nogil=True, error_model="numpy")
def plan_stats(
    before: np.ndarray,
    after: np.ndarray,
    load: np.ndarray,
    capacity_before: np.ndarray,
    staying_before: np.ndarray,
    capacity_after: np.ndarray,
    staying_after: np.ndarray,
    total_load: float,
) -> tuple[tuple[float, float, float, float, int], tuple[float, float, float, float, int]]:
    """`single_load_stats` of the state before a plan and of the state after it, in one call: an answer needs both,
    and in a request each call of a kernel costs several times what the kernel computes (its dispatch and its code
    come cold between the request's Python steps: 20 us for the two calls measured in the service, 1.6 us in a
    loop)."""
    return (
        single_load_stats(before, load, capacity_before, staying_before, total_load),
        single_load_stats(after, load, capacity_after, staying_after, total_load),
    )


def compile_all() -> None:
    """Compile the kernels for the types the statistics pass (or load them from the on-disk cache)."""
    where, ones, staying = np.array([0, -1], dtype=np.int64), np.ones(2), np.ones(2, dtype=np.bool_)
    single_load_stats(where, ones, ones, staying, 2.0)
    plan_stats(where, where, ones, ones, staying, ones, staying, 2.0)

"""Statistics of a cluster state (one assignment): the before/after numbers of every plan.

Definitions (shared by every algorithm; see schemas.assignment.PlanStats):
- utilization = 100 x node load / capacity; load distance = max over staying nodes of |utilization - mean|, with
  mean = 100 x total load / staying capacity (Madsen et al.; equal to the plain mean once draining nodes are empty);
- imbalance = variance of staying node loads in the latest window, imbalance_total = summed over windows (Guo & Zhou);
- avg_load_correlation = mean Pearson correlation over pairs of staying node load series, mean_node_load_variance =
  mean variance of those series (Xing et al.). A constant series has no defined correlation: it counts as 0.
- collocation_factor = share of the traffic rate whose two units share a node; load_index = estimated system load in
  percent of the state before the plan, crossing traffic costing serialization_cost load units per unit of rate
  (Madsen et al., Section 5);
- min_mean_node_load_variance = var(X) / n^2, X the summed load series of the n staying nodes: by Xing et al.'s Theorem 1 no
  balanced placement has a smaller mean_node_load_variance (reached only when every node carries X / n).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from solvers.instance import AssignmentInstance, BoolArray, FloatArray, IntArray


@dataclass(frozen=True)
class ClusterStats:
    load_distance: float
    max_utilization: float
    min_utilization: float
    imbalance: float
    imbalance_total: float
    avg_load_correlation: float | None
    mean_node_load_variance: float | None
    parallelism: int
    min_mean_node_load_variance: float | None = None
    collocation_factor: float | None = None
    load_index: float | None = None


def cross_traffic(instance: AssignmentInstance, assignment: IntArray) -> float:
    """Traffic rate between units on different nodes (units without a node count as apart)."""
    src, dst = assignment[instance.traffic_src], assignment[instance.traffic_dst]
    apart = (src != dst) | (src < 0)
    return float(instance.traffic_rate[apart].sum())


def collocation_factor(instance: AssignmentInstance, assignment: IntArray) -> float | None:
    """Share of the traffic rate whose two ends share a node (the paper's collocation factor), in [0, 1]; None without
    traffic (no edge, or every rate 0)."""
    if not len(instance.traffic_rate):
        return None
    total = float(instance.traffic_rate.sum())
    if total <= 0.0:
        return None
    return 1.0 - cross_traffic(instance, assignment) / total


def load_index(instance: AssignmentInstance, assignment: IntArray) -> float | None:
    """Estimated system load of `assignment` in percent of the current one (the paper's load index, the current state
    being 100 %): each unit of traffic rate that stops (starts) crossing nodes saves (costs) serialization_cost load
    units; never below 0. None without a serialization cost or without load."""
    cost = instance.serialization_cost
    if cost is None:  # (most snapshots: asked first, no sum)
        return None
    total = float(instance.load.sum())
    if total <= 0.0:
        return None
    saved = cost * (cross_traffic(instance, instance.current) - cross_traffic(instance, assignment))
    return max(0.0, 100.0 * (total - saved) / total)


def node_series(series: FloatArray, assignment: IntArray, n_nodes: int) -> FloatArray:
    """Load series of each node (n_nodes, W): the sum of its units' series. Units not placed (index < 0) count
    nowhere. One bincount for single loads; otherwise the units grouped by node (one sort) and each group summed with
    one reduceat: no Python loop, and no sparse-matrix set-up (which cost more than the sums on small instances)."""
    placed = np.flatnonzero(assignment >= 0)
    where = assignment[placed]
    if series.shape[1] == 1:
        return np.bincount(where, weights=series[placed, 0], minlength=n_nodes).astype(np.float64)[:, None]
    totals = np.zeros((n_nodes, series.shape[1]), dtype=np.float64)
    if len(placed):
        order = np.argsort(where, kind="stable")
        nodes, starts = np.unique(where[order], return_index=True)
        totals[nodes] = np.add.reduceat(series[placed[order]], starts, axis=0)
    return totals


def average_correlation(rows: FloatArray) -> float:
    """Mean pairwise Pearson correlation of the rows; rows with zero variance correlate 0 with everything.

    Linear in rows x windows (no rows x rows matrix: 10,000 nodes would need 800 MB): with z_i the rows centered and
    scaled to unit length, the sum over pairs i < j of z_i . z_j is (|sum_i z_i|^2 - sum_i |z_i|^2) / 2."""
    n = rows.shape[0]
    if n < 2:
        return 0.0
    centered = rows - rows.mean(axis=1, keepdims=True)
    norms = np.sqrt((centered * centered).sum(axis=1))
    ok = norms > 1e-12 * np.maximum(1.0, np.abs(rows).max(axis=1))
    normalized = centered[ok] / norms[ok, None]
    column_sum = normalized.sum(axis=0)
    pairs_sum = (float(column_sum @ column_sum) - float((normalized * normalized).sum())) / 2.0
    return pairs_sum / (n * (n - 1) / 2.0)


def _variance(rows: FloatArray, axis: int) -> FloatArray:
    """rows.var(axis) by numpy's own steps (mean, deviations, mean square), without its Python wrapper (most of the
    cost on small arrays, where every plan's two cluster_stats calls are): the same numbers."""
    n = rows.shape[axis]
    deviation = rows - np.add.reduce(rows, axis=axis, keepdims=True) / n
    return np.asarray(np.add.reduce(deviation * deviation, axis=axis) / n, dtype=np.float64)


# Up to this many units, the small-instance paths run on Python lists (the answer, service.adapters, and the bound's
# test, solvers.milp.bounds) or compiled (the statistics of single loads, solvers/metrics_kernels.py; flux runs
# compiled at every size). On small instances numpy's per-call overhead is most of the cost; above it, each O(units)
# Python pass loses to numpy. Same numbers, bit for bit: sums are taken in numpy's own order (`pairwise_sum`),
# everything else is element-wise (tests/test_small_paths.py).
SMALL_UNITS = 512


# numpy's pairwise summation sums blocks of up to this many values with eight interleaved partial sums, and splits
# longer arrays in halves (a multiple of 8 first).
PAIRWISE_BLOCK = 128


def pairwise_sum(values: list[float], start: int = 0, count: int | None = None) -> float:
    """The float64 sum np.add.reduce computes, in its order (numpy's pairwise summation: eight interleaved partial
    sums over blocks of at most PAIRWISE_BLOCK values, halves above), so a Python sum matches numpy's to the last
    bit."""
    n = len(values) - start if count is None else count
    if n <= PAIRWISE_BLOCK:
        return block_sum(values, start, n)
    half = n // 2
    half -= half % 8
    return pairwise_sum(values, start, half) + pairwise_sum(values, start + half, n - half)


def block_sum(values: Any, start: int, count: int) -> float:
    """numpy's sum of `count` <= PAIRWISE_BLOCK values from `start` (a list or an array), in its order. Compiled
    as it is for the statistics' kernel (solvers/metrics_kernels.py): one text of the order for both."""
    if count < 8:
        total = 0.0
        for k in range(start, start + count):
            total += values[k]
        return total
    r0, r1, r2, r3 = values[start], values[start + 1], values[start + 2], values[start + 3]
    r4, r5, r6, r7 = values[start + 4], values[start + 5], values[start + 6], values[start + 7]
    end = start + count - count % 8
    k = start + 8
    while k < end:
        r0 += values[k]
        r1 += values[k + 1]
        r2 += values[k + 2]
        r3 += values[k + 3]
        r4 += values[k + 4]
        r5 += values[k + 5]
        r6 += values[k + 6]
        r7 += values[k + 7]
        k += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for k in range(end, start + count):
        total += values[k]
    return total


# The statistics of single loads compiled (solvers/metrics_kernels.py), once `warm_up` has loaded them in this
# process: the same numbers as the numpy code below, bit for bit (tests/test_small_paths.py); until then, or where
# numba cannot compile, the numpy code runs.
_kernels: ModuleType | None = None


def warm_up() -> bool:
    """Compile the statistics' kernel (or load it from numba's on-disk cache) in this process; True when it is
    ready (solvers.compiled.warm_up calls it with every other kernel)."""
    global _kernels
    if _kernels is None:
        from solvers.compiled import load_kernels

        _kernels = load_kernels("solvers.metrics_kernels", "the statistics run without their compiled kernel")
    return _kernels is not None


def _compiled_stats(
    instance: AssignmentInstance,
    assignment: IntArray,
    capacity: FloatArray,
    staying: BoolArray,
    kernels: ModuleType,
) -> ClusterStats | None:
    """`cluster_stats` of single loads by the compiled kernel, over the nodes of `capacity` (the instance's, then the
    added ones) of which `staying` stay; None when no node stays (numpy's path answers its nan there) or more than
    PAIRWISE_BLOCK do (numpy's path sums those)."""
    computed = kernels.single_load_stats(
        np.ascontiguousarray(assignment, dtype=np.int64),
        np.ascontiguousarray(instance.load, dtype=np.float64),
        np.ascontiguousarray(capacity, dtype=np.float64),
        np.ascontiguousarray(staying, dtype=np.bool_),
        instance.total_load,
    )
    return _kernel_stats(instance, assignment, computed)


def _kernel_stats(
    instance: AssignmentInstance, assignment: IntArray, computed: tuple[float, float, float, float, int]
) -> ClusterStats | None:
    """The ClusterStats of what `single_load_stats` computed for `assignment` (None: left to the numpy code)."""
    distance, peak, low, variance, parallelism = computed
    if parallelism < 0:
        return None
    return _cluster_stats(
        load_distance=distance,
        max_utilization=peak,
        min_utilization=low,
        imbalance=variance,
        imbalance_total=0.0 + variance,
        avg_load_correlation=None,
        mean_node_load_variance=None,
        parallelism=parallelism,
        min_mean_node_load_variance=None,
        collocation_factor=collocation_factor(instance, assignment),
        load_index=load_index(instance, assignment),
    )


def _cluster_stats(**fields: Any) -> ClusterStats:
    """A ClusterStats of every field by name, without the frozen dataclass's __init__ (one object.__setattr__ per
    field: a microsecond, on the path of every small plan's two statistics): the same object."""
    stats = object.__new__(ClusterStats)
    stats.__dict__.update(fields)
    return stats


def _nodes_of(
    instance: AssignmentInstance, added_capacity: FloatArray | None, removed: IntArray | None
) -> tuple[FloatArray, BoolArray]:
    """Each node's capacity and whether it stays: the instance's nodes, then the added ones (which stay); removed
    nodes do not."""
    if added_capacity is None or not len(added_capacity):
        capacity, staying = instance.capacity, instance.active
    else:
        extra = np.asarray(added_capacity, dtype=np.float64)
        capacity = np.concatenate([instance.capacity, extra])
        staying = np.concatenate([instance.active, np.ones(len(extra), dtype=bool)])
    if removed is not None and len(removed):
        staying = staying.copy()
        staying[np.asarray(removed)] = False
    return capacity, staying


def plan_stats(
    instance: AssignmentInstance,
    assignment: IntArray,
    added_capacity: FloatArray | None = None,
    removed: IntArray | None = None,
) -> tuple[ClusterStats, ClusterStats]:
    """`cluster_stats` of the state before the plan (`instance.current`) and of `assignment` (with its added and
    removed nodes): the same two objects, from one call of the compiled kernel for both where `cluster_stats` would
    compute each compiled (see metrics_kernels.plan_stats)."""
    if instance.series.shape[1] == 1 and instance.n_units <= SMALL_UNITS and _kernels is not None:
        capacity, staying = _nodes_of(instance, added_capacity, removed)
        current = instance.current
        computed_before, computed_after = _kernels.plan_stats(
            np.ascontiguousarray(current, dtype=np.int64),
            np.ascontiguousarray(assignment, dtype=np.int64),
            np.ascontiguousarray(instance.load, dtype=np.float64),
            np.ascontiguousarray(instance.capacity, dtype=np.float64),
            np.ascontiguousarray(instance.active, dtype=np.bool_),
            np.ascontiguousarray(capacity, dtype=np.float64),
            np.ascontiguousarray(staying, dtype=np.bool_),
            instance.total_load,
        )
        before = _kernel_stats(instance, current, computed_before)
        after = _kernel_stats(instance, assignment, computed_after)
        if before is not None and after is not None:
            return before, after
    return (
        cluster_stats(instance, instance.current),
        cluster_stats(instance, assignment, added_capacity, removed),
    )


def cluster_stats(
    instance: AssignmentInstance,
    assignment: IntArray,
    added_capacity: FloatArray | None = None,
    removed: IntArray | None = None,
) -> ClusterStats:
    """Statistics of `assignment` (units at -1 are not placed yet and count nowhere). Added nodes (indices >= n_nodes) stay; removed nodes do not.
    Reductions are called as ufunc methods: numpy's Python wrappers (np.max, .mean, .var) cost more than the sums
    on a small cluster; single loads of a small instance are computed compiled, once `warm_up` has loaded the
    kernel (see SMALL_UNITS)."""
    capacity, staying = _nodes_of(instance, added_capacity, removed)
    if instance.series.shape[1] == 1 and instance.n_units <= SMALL_UNITS and _kernels is not None:
        compiled = _compiled_stats(instance, assignment, capacity, staying, _kernels)
        if compiled is not None:
            return compiled
    n_all = len(capacity)
    per_node = node_series(instance.series, assignment, n_all)
    windows = per_node.shape[1]
    mean_load = per_node[:, 0] if windows == 1 else np.add.reduce(per_node, axis=1) / windows
    util = 100.0 * mean_load / capacity
    mean_util = 100.0 * float(np.add.reduce(instance.load)) / float(np.add.reduce(capacity[staying]))
    util_staying = util[staying]
    stay_series = per_node[staying]
    variance_per_window = _variance(stay_series, 0)
    has_series = windows >= 2
    return ClusterStats(
        load_distance=float(np.maximum.reduce(np.abs(util_staying - mean_util))),
        max_utilization=float(np.maximum.reduce(util)),
        min_utilization=float(np.minimum.reduce(util_staying)),
        imbalance=float(variance_per_window[-1]),
        imbalance_total=float(np.add.reduce(variance_per_window)),
        avg_load_correlation=average_correlation(stay_series) if has_series else None,
        mean_node_load_variance=float(np.add.reduce(_variance(stay_series, 1)) / len(stay_series))
        if has_series
        else None,
        parallelism=int(np.count_nonzero(np.bincount(assignment[assignment >= 0], minlength=n_all))),
        min_mean_node_load_variance=float(
            _variance(np.add.reduce(stay_series, axis=0), 0) / len(stay_series) ** 2
        )
        if has_series
        else None,
        collocation_factor=collocation_factor(instance, assignment),
        load_index=load_index(instance, assignment),
    )

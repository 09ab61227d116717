"""Blocking-rate functions F_j over weights 0..R (Schneider et al., Section 5.1).

From a connection's raw data points (weight, smoothed blocking rate, observation count), with (0, 0) assumed:
monotone (non-decreasing) regression weighted by the counts, then linear interpolation between the points and linear
extrapolation beyond the last one over the whole grid.

Extrapolation (deviation, issue 12): the paper continues the last segment. Two zero points then extrapolate a flat
zero to the whole range, and an unmeasured weight looks as good as a measured one (a 100x slow newcomer jumped from
weight 2 to 335). Beyond the highest observed weight we assume blocking keeps rising: the slope is the largest of the
last segment's, the ray through the origin and the last point (blocking proportional to weight), and MIN_SLOPE, a
tie-breaker far below any measurable rate that makes Fox prefer measured weights among equally good ones.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import isotonic_regression

from solvers.instance import FloatArray, IntArray

MIN_SLOPE = 1e-9  # blocking rate per weight unit beyond the evidence: 1e-6 s/s over 1000 units
# Rounds of pool-adjacent-violators on all rows before the min-max formula takes the rows still violating (see
# _isotonic_rows): six rounds pool the decreasing runs of learned data (the exploration decay leaves a falling tail
# above the current weight) and shrink the rows the O(k^2) formula sees.
POOLING_ROUNDS = 6


def _isotonic_rows(y: FloatArray, weight: FloatArray, starts: IntArray, lengths: IntArray) -> None:
    """Weighted non-decreasing regression of the rows y[starts[r] : starts[r] + lengths[r]], in place, all rows at
    once (weights are positive: observation counts).

    First up to POOLING_ROUNDS rounds of pool-adjacent-violators on every row together: a round pools every maximal
    run of adjacent blocks whose means do not increase into one block (a sequence of the algorithm's own pair pools,
    plus pools of equal neighbours, which are collinear pieces of the cumulative sum diagram's convex minorant: the
    answer is unchanged). Pooling equal neighbours too makes a spike followed by a flat run (one blocking interval
    above zeros, the common case) one round instead of one per block: the bench's rows settle in 4-6 rounds instead
    of 10-32. A row still violating after that (a run that rises and then drops cascades one block per round) goes,
    as its blocks, to the min-max formula: fit_i = max over a <= i of min over b >= i of the weighted mean of blocks
    a..b (Barlow et al. 1972), by pool-adjacent-violators in Python (_min_max_rows)."""
    total = int(lengths.sum())
    if total == 0:
        return
    index = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(total)  # row by row
    block_w: np.ndarray = weight[index].astype(np.float64)
    block_wy: np.ndarray = block_w * y[index]
    block_row = np.repeat(np.arange(len(starts)), lengths)
    label = np.arange(total)  # each point's block
    for _ in range(POOLING_ROUNDS):
        mean = block_wy / block_w
        same_row = block_row[:-1] == block_row[1:]
        if not ((mean[:-1] > mean[1:]) & same_row).any():
            y[index] = mean[label]
            return
        pool = (mean[:-1] >= mean[1:]) & same_row  # block k pools with block k + 1
        first = np.concatenate(([True], ~pool))
        new_block = np.cumsum(first) - 1
        block_w = np.bincount(new_block, weights=block_w)
        block_wy = np.bincount(new_block, weights=block_wy)
        block_row = block_row[first]
        label = new_block[label]
    mean = block_wy / block_w
    violating = np.unique(block_row[1:][(mean[:-1] > mean[1:]) & (block_row[:-1] == block_row[1:])])
    if len(violating):
        _min_max_rows(mean, block_w, block_row, violating)
    y[index] = mean[label]


def _min_max_rows(mean: FloatArray, weight: FloatArray, row: IntArray, rows: IntArray) -> None:
    """The min-max formula's fit on the blocks of `rows` (blocks in row order, `row[k]` each block's row), in place.

    Pool-adjacent-violators on each row's blocks in Python (O(k) per row; the rows here are few and short), each
    pooled block's mean taken from the row's cumulative sums as the formula takes it: fit_i = max over a <= i of min
    over b >= i of the mean of blocks a..b is attained at the pooled block a*..b* that holds i (Barlow et al. 1972),
    so the values are the formula's (bit for bit on the 83,000 blocks of the speed bench's calls that reach here and
    on bench.splitter.answers_hash's chains; equal to scipy's to 1e-9 in the tests)."""
    sizes = np.bincount(row, minlength=int(row.max()) + 1)
    lengths = sizes[rows]
    width = int(lengths.max())
    offsets = np.arange(width)
    valid = offsets[None, :] < lengths[:, None]
    index = np.where(valid, (np.cumsum(sizes) - sizes)[rows][:, None] + offsets[None, :], 0)
    w = np.where(valid, weight[index], 0.0)
    wy = w * np.where(valid, mean[index], 0.0)
    cw = np.zeros((len(rows), width + 1))
    cwy = np.zeros((len(rows), width + 1))
    np.cumsum(w, axis=1, out=cw[:, 1:])
    np.cumsum(wy, axis=1, out=cwy[:, 1:])
    fits: list[float] = []
    for cw_row, cwy_row, length in zip(cw.tolist(), cwy.tolist(), lengths.tolist(), strict=True):
        starts, means = [0], [cwy_row[1] / cw_row[1]]  # the pooled blocks so far: first block, mean
        for end in range(2, length + 1):
            start = end - 1
            value = (cwy_row[end] - cwy_row[start]) / (cw_row[end] - cw_row[start])
            while means and means[-1] > value:  # pool with the previous block while it violates
                means.pop()
                start = starts.pop()
                value = (cwy_row[end] - cwy_row[start]) / (cw_row[end] - cw_row[start])
            starts.append(start)
            means.append(value)
        starts.append(length)
        for k, value in enumerate(means):
            fits.extend([value] * (starts[k + 1] - starts[k]))
    mean[index[valid]] = fits


def blocking_function(
    w: FloatArray, rate: FloatArray, count: FloatArray, resolution: int, pooled: bool = False
) -> FloatArray:
    """F(0..resolution) from raw points at weights `w` (> 0, any order, may exceed resolution for pooled data).

    `pooled`: the points come from several connections and may share weights, so they are merged first (one
    connection's points never share a weight: the model keeps one point per weight)."""
    grid = np.arange(resolution + 1, dtype=np.float64)
    if len(w) == 0:
        return MIN_SLOPE * grid
    order = np.argsort(w, kind="stable")
    x = np.concatenate(([0.0], np.asarray(w, dtype=np.float64)[order]))
    y = np.concatenate(([0.0], np.asarray(rate, dtype=np.float64)[order]))
    sample_weight = np.concatenate(([1.0], np.asarray(count, dtype=np.float64)[order]))
    # Pooled cluster data may hold several points at one weight: merge them (weighted mean) so x is strictly
    # increasing for the interpolation.
    x_unique = np.unique(x) if pooled else x
    if len(x_unique) < len(x):
        group = np.searchsorted(x_unique, x)
        total_weight = np.bincount(group, weights=sample_weight)
        y = np.bincount(group, weights=y * sample_weight) / total_weight
        x, sample_weight = x_unique, total_weight
    if np.any(np.diff(y) < 0):
        y = isotonic_regression(y, weights=sample_weight, increasing=True).x
    values = np.interp(grid, x, y)
    beyond = grid > x[-1]
    if beyond.any():
        slope = _extrapolation_slope(x, y) if len(x) >= 2 else MIN_SLOPE
        values[beyond] = y[-1] + slope * (grid[beyond] - x[-1])
    return values


def _extrapolation_slope(x: FloatArray, y: FloatArray) -> float:
    """Slope beyond the last point (x[-1] > 0; x[0] = 0 is the origin): see the module docstring."""
    return max((y[-1] - y[-2]) / (x[-1] - x[-2]), y[-1] / x[-1], MIN_SLOPE)


def blocking_functions(points: list[FloatArray], resolution: int) -> FloatArray:
    """(len(points), resolution + 1) functions from each (3, k) array of (weights, rates, counts) columns.

    The same functions as `blocking_function(..., pooled=True)` row by row, in one vectorised pass: all rows are
    laid end to end on one axis, row j shifted by j x stride, so that a single np.interp evaluates every row (each
    row's grid points lie within its own stretch); beyond a row's last point the extrapolation is written instead
    (interp only evaluates the grid points up to each row's last point). Points sharing a weight within a row (pooled cluster data) are merged first. Only rows whose data
    decrease need the monotone regression (a Python call each)."""
    sizes = np.fromiter((p.shape[1] for p in points), dtype=np.int64, count=len(points))
    w, rate, count = np.concatenate([np.zeros((3, 0)), *points], axis=1)
    return blocking_functions_flat(w, rate, count, sizes, resolution)


class FittedRows(NamedTuple):
    """Every row's fitted points end to end: row j's points (its origin first) at key = j x stride + weight, sorted;
    `y` their monotone fit, `last[j]` the index of row j's last point, `slope[j]` its extrapolation slope."""

    key: FloatArray
    y: FloatArray
    last: IntArray
    slope: FloatArray
    stride: float


def fit_rows(
    w: FloatArray, rate: FloatArray, count: FloatArray, sizes: IntArray, resolution: int
) -> FittedRows:
    """The fitted points of `blocking_functions_flat` (row j's raw points are the next sizes[j]), before the table."""
    n = len(sizes)
    stacked = np.empty((3, n + len(w)))  # an origin per row first
    stacked[:, :n] = [[0.0], [0.0], [1.0]]
    stacked[0, n:], stacked[1, n:], stacked[2, n:] = w, rate, count
    row = np.concatenate((np.arange(n), np.repeat(np.arange(n), sizes)))
    stride = float(max(resolution, stacked[0].max()) + 2)
    key, group = np.unique(row * stride + stacked[0], return_inverse=True)  # sorted by row, then weight
    group = group.ravel()
    weight = np.asarray(np.bincount(group, weights=stacked[2]), dtype=np.float64)
    y = np.bincount(group, weights=stacked[1] * stacked[2]) / weight
    row = (key // stride).astype(np.int64)
    x = key - row * stride
    starts = np.searchsorted(row, np.arange(n))
    last = np.append(starts[1:], len(key)) - 1
    decreasing = np.flatnonzero((np.diff(y) < 0) & (row[1:] == row[:-1]))
    if len(decreasing):
        rows = np.unique(row[decreasing + 1])
        _isotonic_rows(y, weight, starts[rows], last[rows] - starts[rows] + 1)
    has_points = last > starts
    x_last, y_last = x[last], y[last]
    slope = np.full(n, MIN_SLOPE)
    with np.errstate(divide="ignore", invalid="ignore"):
        segment = (y_last - y[last - 1]) / (x_last - x[last - 1])
        ray = y_last / x_last
    slope[has_points] = np.maximum(np.maximum(segment, ray), MIN_SLOPE)[has_points]
    return FittedRows(key, y, last, slope, stride)


def select_rows(fit: FittedRows, rows: IntArray) -> FittedRows:
    """The fitted rows `rows` (in that order) as rows 0, 1, ...: the same functions, bit for bit (the keys move by
    whole strides, exact on integer weights)."""
    starts = np.concatenate(([0], fit.last[:-1] + 1))
    lengths = (fit.last - starts + 1)[rows]
    total = int(lengths.sum())
    index = np.repeat(starts[rows] - (np.cumsum(lengths) - lengths), lengths) + np.arange(total)
    shift = np.repeat(np.arange(len(rows)) - rows, lengths) * fit.stride
    return FittedRows(
        fit.key[index] + shift, fit.y[index], np.cumsum(lengths) - 1, fit.slope[rows], fit.stride
    )


def tabulate(fit: FittedRows, resolution: int) -> FloatArray:
    """F_j(0..resolution) of every fitted row."""
    n = len(fit.last)
    grid = np.arange(resolution + 1, dtype=np.float64)
    x_last, y_last = fit.key[fit.last] - np.arange(n) * fit.stride, fit.y[fit.last]
    # The extrapolation over the whole table in place (no temporaries), then the interpolation only where a row has
    # points (w <= its last point's weight): most of a table lies beyond its evidence.
    values = np.empty((n, resolution + 1))
    values[:] = grid
    values -= x_last[:, None]
    values *= fit.slope[:, None]
    values += y_last[:, None]
    inside = np.minimum(
        np.floor(x_last).astype(np.int64) + 1, resolution + 1
    )  # grid points w <= x_last per row
    rows = np.repeat(np.arange(n), inside)
    cells = np.arange(len(rows)) - np.repeat(np.cumsum(inside) - inside, inside)  # w within its row
    values[rows, cells] = np.interp(grid[cells] + fit.stride * rows, fit.key, fit.y)
    return values


def blocking_functions_flat(
    w: FloatArray, rate: FloatArray, count: FloatArray, sizes: IntArray, resolution: int
) -> FloatArray:
    """`blocking_functions` from the points of all rows end to end (row j's are the next sizes[j])."""
    if not sizes.any():
        grid = np.arange(resolution + 1, dtype=np.float64)
        return np.broadcast_to(MIN_SLOPE * grid, (len(sizes), resolution + 1)).copy()
    return tabulate(fit_rows(w, rate, count, sizes, resolution), resolution)

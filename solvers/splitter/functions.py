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

import numpy as np
from scipy.optimize import isotonic_regression

from solvers.instance import FloatArray

MIN_SLOPE = 1e-9  # blocking rate per weight unit beyond the evidence: 1e-6 s/s over 1000 units


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
        slope = max((y[-1] - y[-2]) / (x[-1] - x[-2]), y[-1] / x[-1], MIN_SLOPE) if len(x) >= 2 else MIN_SLOPE
        values[beyond] = y[-1] + slope * (grid[beyond] - x[-1])
    return values


def blocking_functions(points: list[FloatArray], resolution: int, pooled: bool = False) -> FloatArray:
    """(len(points), resolution + 1) functions from each (3, k) array of (weights, rates, counts) columns."""
    values = np.empty((len(points), resolution + 1))
    for j, (w, rate, count) in enumerate(points):
        values[j] = blocking_function(w, rate, count, resolution, pooled)
    return values

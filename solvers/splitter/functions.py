"""Blocking-rate functions F_j over weights 0..R (Schneider et al., Section 5.1).

From a connection's raw data points (weight, smoothed blocking rate, observation count), with (0, 0) assumed:
monotone (non-decreasing) regression weighted by the counts, then linear interpolation between the points and linear
extrapolation beyond the last one (with the slope of the last segment) over the whole grid.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression

from solvers.instance import FloatArray


def blocking_function(
    w: FloatArray, rate: FloatArray, count: FloatArray, resolution: int, pooled: bool = False
) -> FloatArray:
    """F(0..resolution) from raw points at weights `w` (> 0, any order, may exceed resolution for pooled data).

    `pooled`: the points come from several connections and may share weights, so they are merged first (one
    connection's points never share a weight: the model keeps one point per weight)."""
    grid = np.arange(resolution + 1, dtype=np.float64)
    if len(w) == 0:
        return np.zeros(resolution + 1)
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
        slope = (y[-1] - y[-2]) / (x[-1] - x[-2]) if len(x) >= 2 else 0.0
        values[beyond] = y[-1] + max(slope, 0.0) * (grid[beyond] - x[-1])
    return values

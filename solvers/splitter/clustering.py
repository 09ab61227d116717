"""Clustering of connections with similar blocking-rate functions (Schneider et al., Section 5.3).

Each function is summarised by its knee w_s (the service rate: the first weight with blocking), the blocking at the
knee F(w_s) and the blocking at full load F(R). The paper's distance

    max(|log(w_js / w_ks)|, alpha |log(F_j(w_js) / F_k(w_ks))|, alpha |log(F_j(R) / F_k(R))|),
    alpha = log R / |log(R delta)|,

is the Chebyshev distance between the feature vectors (log w_s, alpha log F(w_s), alpha log F(R)), so scipy's pdist
computes it without a Python loop. The knee is the first weight where F is above zero (the paper: "for i < w_s,
F_j(i) is 0"). delta is the blocking floor: the paper introduces a small value when forcing monotonicity; we clamp
rates to it so that the logarithms stay finite (a function that never blocks has knee R and F = delta).

Why the knee is not "the first weight above delta" (what we had first): the exploration decay (Section 5.4) shrinks
every point above a connection's current weight by 10% per call and never to zero. A 100x connection resting at
weight 0 keeps its knee at 1-2 under the paper's definition, but with a delta threshold its points sank below delta
one after another and its knee drifted right, to 13 and beyond after ~100 s, until it matched a 5x connection's
(measured in the Fig. 12 reproduction: that drift made the late mixed clusters).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist

from solvers.instance import FloatArray, IntArray
from solvers.splitter.functions import FittedRows

BLOCKING_FLOOR = 1e-6  # delta, seconds blocked per second
# Complete linkage cut at this distance: every two members of a cluster differ by less than a factor 2 in knee and
# (scaled) blocking. Classes that differ by 5x (Fig. 12) can never share a cluster.
CLUSTER_DISTANCE = math.log(2.0)


def function_features(values: FloatArray, delta: float = BLOCKING_FLOOR) -> FloatArray:
    """(N, 3) features of the functions values[j, 0..R]: log knee, alpha log F(knee), alpha log F(R)."""
    resolution = values.shape[1] - 1
    alpha = math.log(resolution) / abs(math.log(resolution * delta))
    blocking = values[:, 1:] > 0.0
    knee = np.where(blocking.any(axis=1), blocking.argmax(axis=1) + 1, resolution)
    at_knee = np.maximum(values[np.arange(len(values)), knee], delta)
    at_full = np.maximum(values[:, -1], delta)
    return np.column_stack((np.log(knee), alpha * np.log(at_knee), alpha * np.log(at_full)))


def fitted_features(fit: FittedRows, resolution: int, delta: float = BLOCKING_FLOOR) -> FloatArray | None:
    """`function_features(tabulate(fit, resolution))` without the table, from the fitted points: a row's fit is
    non-decreasing from its origin's 0, so F is 0 up to its last zero point x_z and positive from the next integer,
    the knee x_z + 1 (R when x_z >= R); F(knee) and F(R) by the table's own formulas (np.interp inside the points, the
    extrapolation line beyond). None when some F(knee) underflows to 0 (a fit of order 1e-308): the table decides."""
    n = len(fit.last)
    starts = np.concatenate(([0], fit.last[:-1] + 1))
    zeros = np.add.reduceat((fit.y == 0.0).astype(np.int64), starts)  # a prefix of each row (origin included)
    last_zero = starts + zeros - 1
    offset = np.arange(n) * fit.stride
    x_zero, x_last, y_last = fit.key[last_zero] - offset, fit.key[fit.last] - offset, fit.y[fit.last]

    def value_at(w: FloatArray) -> FloatArray:
        inside = w <= np.floor(x_last)
        return np.where(inside, np.interp(w + offset, fit.key, fit.y), ((w - x_last) * fit.slope) + y_last)

    blocking = x_zero < resolution
    knee = np.where(blocking, x_zero + 1.0, float(resolution))
    at_knee = value_at(knee)
    if np.any(blocking & (at_knee <= 0.0)):
        return None
    alpha = math.log(resolution) / abs(math.log(resolution * delta))
    at_full = value_at(np.full(n, float(resolution)))
    return np.column_stack(
        (np.log(knee), alpha * np.log(np.maximum(at_knee, delta)), alpha * np.log(np.maximum(at_full, delta)))
    )


def cluster_connections(
    values: FloatArray, max_point_rate: FloatArray, threshold: float = CLUSTER_DISTANCE
) -> IntArray:
    """`cluster_by_features` of the functions values[j, 0..R] (`function_features`)."""
    return cluster_by_features(function_features(values), max_point_rate, threshold)


def cluster_by_features(
    features: FloatArray, max_point_rate: FloatArray, threshold: float = CLUSTER_DISTANCE
) -> IntArray:
    """Cluster label (0-based, in order of first appearance) of each connection, by agglomerative clustering.

    `max_point_rate[j]`: the largest (smoothed, decayed) blocking rate among connection j's raw data points.

    Deviation: a connection none of whose data points exceeds delta (it has not blocked measurably at any weight it
    was tried at, or its blocking has decayed away) stays a cluster of its own. The paper's distance puts all such
    functions at distance ~0 (every feature clamped to delta), so they would pool on the mere absence of evidence and
    mix load classes (seen in the Fig. 12 reproduction); pooling them adds no data either. The test is on the
    points, not on F(R): the linear extrapolation multiplies a single point at weight 1 by up to R, which made
    1e-8 s/s of measured blocking look like evidence.
    """
    n = len(features)
    blocking = np.asarray(max_point_rate) > BLOCKING_FLOOR
    labels = np.arange(n, dtype=np.int64) + n  # singletons unless clustered below
    members = np.flatnonzero(blocking)
    if len(members) >= 2:
        distances = pdist(features[members], metric="chebyshev")
        labels[members] = cut_tree_at(linkage(distances, method="complete"), threshold)
    _, first_seen, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first_seen), dtype=np.int64)
    rank[np.argsort(first_seen, kind="stable")] = np.arange(len(first_seen))
    return rank[inverse.ravel()]


def cut_tree_at(merges: FloatArray, threshold: float) -> IntArray:
    """Flat clusters (labels 0, 1, ...) of a linkage matrix cut at `threshold`: what scipy's `fcluster(merges, threshold,
    criterion="distance")` returns up to the numbering (tested). A merge joins its two nodes' clusters when the
    largest merge distance in its subtree is at most the threshold. fcluster validates the matrix first (with
    array-API helpers), ~0.1 ms of a 64-connection call, 8x its cut; our matrix comes straight from `linkage`."""
    n = len(merges) + 1
    parent = list(range(2 * n - 1))
    height = [0.0] * (2 * n - 1)  # the largest merge distance in each node's subtree
    for i, (a, b, distance, _) in enumerate(merges.tolist()):
        a, b = int(a), int(b)
        height[n + i] = max(distance, height[a], height[b])
        if height[n + i] <= threshold:
            parent[a] = parent[b] = n + i
    labels = []
    for leaf in range(n):
        root = leaf
        while parent[root] != root:
            root = parent[root]
        while parent[leaf] != root:  # path compression
            parent[leaf], leaf = root, parent[leaf]
        labels.append(root)
    return np.unique(labels, return_inverse=True)[1].astype(np.int64)  # 0 .. clusters - 1

"""Clustering of connections with similar blocking-rate functions (Schneider et al., Section 5.3).

Each function is summarised by its knee w_s (the service rate: the first weight with blocking), the blocking at the
knee F(w_s) and the blocking at full load F(R). The paper's distance

    max(|log(w_js / w_ks)|, alpha |log(F_j(w_js) / F_k(w_ks))|, alpha |log(F_j(R) / F_k(R))|),
    alpha = log R / |log(R delta)|,

is the Chebyshev distance between the feature vectors (log w_s, alpha log F(w_s), alpha log F(R)), so scipy's pdist
computes it without a Python loop. delta is the blocking floor: the paper introduces a small value when forcing
monotonicity; we use it as the rate below which a connection counts as not blocking, and clamp rates to it so that
the logarithms stay finite (a function that never blocks has knee R and F = delta).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist

from solvers.instance import FloatArray, IntArray

BLOCKING_FLOOR = 1e-6  # delta, seconds blocked per second
# Complete linkage cut at this distance: every two members of a cluster differ by less than a factor 2 in knee and
# (scaled) blocking. Classes that differ by 5x (Fig. 12) can never share a cluster.
CLUSTER_DISTANCE = math.log(2.0)


def function_features(values: FloatArray, delta: float = BLOCKING_FLOOR) -> FloatArray:
    """(N, 3) features of the functions values[j, 0..R]: log knee, alpha log F(knee), alpha log F(R)."""
    resolution = values.shape[1] - 1
    alpha = math.log(resolution) / abs(math.log(resolution * delta))
    blocking = values[:, 1:] > delta
    knee = np.where(blocking.any(axis=1), blocking.argmax(axis=1) + 1, resolution)
    at_knee = np.maximum(values[np.arange(len(values)), knee], delta)
    at_full = np.maximum(values[:, -1], delta)
    return np.column_stack((np.log(knee), alpha * np.log(at_knee), alpha * np.log(at_full)))


def cluster_connections(values: FloatArray, threshold: float = CLUSTER_DISTANCE) -> IntArray:
    """Cluster label (0-based, in order of first appearance) of each connection, by agglomerative clustering."""
    n = len(values)
    if n == 1:
        return np.zeros(1, dtype=np.int64)
    distances = pdist(function_features(values), metric="chebyshev")
    labels = fcluster(linkage(distances, method="complete"), t=threshold, criterion="distance")
    _, first_seen = np.unique(labels, return_index=True)
    renumber = {int(labels[i]): k for k, i in enumerate(np.sort(first_seen))}
    return np.asarray([renumber[int(label)] for label in labels], dtype=np.int64)

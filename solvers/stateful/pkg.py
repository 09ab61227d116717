"""Partial key grouping (PKG, Nasir et al.), the paper's other baseline. PKG is a routing scheme, not a placement:
each key has two hash choices and every tuple goes to the one of the two that the sending source believes less loaded
(its local count of what it sent, as in Nasir et al.). It serves the replay harness, on the same stream as ELB/CLB.

The harness gives tuples in micro-batches (per batch, a count per key): a source sends one batch of a key to one
choice, deciding on its estimate at the start of the batch. With batches much shorter than a statistics window this is
per-tuple PKG up to the batch granularity (the estimate is at most one batch stale), and it keeps a 2-hour stream at
10,000 tuples/s (72 M tuples) affordable in numpy.

State accounting (our definition, the paper gives none): PKG splits a key's tuples, and so its state, over two
instances; a stateful operator with key grouping has to consolidate the partial states of a key on one instance, so
per window the state that moves is the part of each key's state that is not on the instance holding most of it. With a
key's state proportional to its tuples in the window (the paper's state = rate / 10), the moved share of a window is
sum_k (y_k - max_j c_kj) / sum_k y_k, where c_kj counts the tuples of key k sent to instance j.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.instance import FloatArray, IntArray
from solvers.stateful.universal_hash import universal_bucket


def two_choices(n_keys: int, n: int, seed: int) -> IntArray:
    """(n_keys, 2) distinct instances per key from two independent 2-universal hashes (one instance if n == 1)."""
    keys = list(range(n_keys))
    first = universal_bucket(keys, n, seed)
    if n == 1:
        return np.stack([first, first], axis=1)
    offset = universal_bucket(keys, n - 1, seed + 1) + 1  # 1..n-1: never the first choice
    return np.stack([first, (first + offset) % n], axis=1)


@dataclass(frozen=True)
class PkgReplay:
    window_loads: FloatArray  # (W, n) tuples each instance received per window
    key_split: FloatArray  # (W, K, n) tuples of each key per instance per window
    moved_share: FloatArray  # (W,) state consolidated per window / all state of the window


def pkg_route(
    batches: IntArray, batches_per_window: int, n: int, seed: int = 0, sources: int = 4
) -> PkgReplay:
    """Route `batches` (B, K) tuple counts with PKG over n instances; B must be a multiple of batches_per_window.

    Each key's tuples of a batch are shared among `sources` upstream instances (multinomially, seeded); each source
    keeps its own cumulative load estimate, as in Nasir et al."""
    n_batches, n_keys = batches.shape
    if n_batches % batches_per_window:
        raise ValueError("the number of batches must be a multiple of batches_per_window")
    rng = np.random.default_rng(seed)
    choices = two_choices(n_keys, n, seed)
    first, second = choices[:, 0], choices[:, 1]
    per_source = rng.multinomial(batches, np.full(sources, 1.0 / sources))  # (B, K, S)
    estimate = np.zeros((sources, n))
    windows = n_batches // batches_per_window
    key_split = np.zeros((windows, n_keys, n))
    keys = np.arange(n_keys)
    for b in range(n_batches):
        split = key_split[b // batches_per_window]
        for s in range(sources):
            counts = per_source[b, :, s]
            est = estimate[s]
            pick = np.where(est[first] <= est[second], first, second)
            est += np.bincount(pick, weights=counts, minlength=n)
            split[keys, pick] += counts
    per_key = key_split.sum(axis=2)  # (W, K)
    total = per_key.sum(axis=1)
    consolidated = (per_key - key_split.max(axis=2)).sum(axis=1)
    moved_share = np.divide(consolidated, total, out=np.zeros(windows), where=total > 0)
    return PkgReplay(window_loads=key_split.sum(axis=1), key_split=key_split, moved_share=moved_share)

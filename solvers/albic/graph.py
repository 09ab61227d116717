"""The communication graph of key groups: ALBIC's scores (Algorithm 2, step 1), balanced graph
partitioning (METIS through pymetis), union-find for ALBIC's sets (step 2)."""

from __future__ import annotations

import contextlib
import heapq
import logging
import math
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pymetis
import scipy.sparse as sp

from solvers.instance import AssignmentInstance, FloatArray, IntArray
from solvers.linux_process import flush_c_stdio

metis_log = logging.getLogger("trimtab.metis")

# METIS takes integer weights: float weights are scaled so that the largest becomes this (and at least 1 where > 0).
METIS_WEIGHT_SCALE = 1_000_000


def undirected_weights(instance: AssignmentInstance) -> sp.csr_matrix:
    """Symmetric (U, U) matrix: traffic between two units in both directions summed."""
    n = instance.n_units
    directed = sp.csr_matrix(
        (instance.traffic_rate, (instance.traffic_src, instance.traffic_dst)), shape=(n, n), dtype=np.float64
    )
    return (directed + directed.T).tocsr()


def qualifying_pairs(
    instance: AssignmentInstance, score_factor: float
) -> tuple[IntArray, IntArray, FloatArray]:
    """Step 1: pairs (g_k, g_j) with out(g_k, g_j) > avg(g_k) x sF, avg(g_k) = out(g_k) / the number of key groups of
    the operators downstream of g_k's operator.

    Where the paper is silent: the downstream operators of O are the operators of the units O's units send to (from
    the traffic; units without an operator form one operator); a pair qualifies when either direction qualifies and is
    returned once (i < j) with the traffic of both directions as its value (what collocating it saves)."""
    if not len(instance.traffic_rate):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    labels = [op if op is not None else "" for op in instance.operators] or [""] * instance.n_units
    _, op = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    op = op.astype(np.int64)
    n_ops = int(op.max()) + 1
    size = np.bincount(op, minlength=n_ops)
    src, dst, rate = instance.traffic_src, instance.traffic_dst, instance.traffic_rate
    links = np.unique(op[src] * n_ops + op[dst])
    downstream_groups = np.bincount(links // n_ops, weights=size[links % n_ops], minlength=n_ops)
    out = np.bincount(src, weights=rate, minlength=instance.n_units)
    avg = out / np.maximum(downstream_groups[op], 1.0)
    qualifies = rate > avg[src] * score_factor
    lo, hi = np.minimum(src, dst)[qualifies], np.maximum(src, dst)[qualifies]
    keys = np.unique(lo * instance.n_units + hi)
    if not len(keys):
        return keys, keys, np.zeros(0)
    first, second = keys // instance.n_units, keys % instance.n_units
    weights = undirected_weights(instance)
    value = np.asarray(weights[first, second]).ravel()
    return first.astype(np.int64), second.astype(np.int64), value


class UnionFind:
    """Disjoint sets over 0..n-1 (ALBIC's calcSets: pairs sharing a key group end in one set)."""

    def __init__(self, n: int) -> None:
        self.parent = np.arange(n)

    def find(self, x: int) -> int:
        root = x
        while self.parent[root] != root:
            root = int(self.parent[root])
        while self.parent[x] != root:  # path compression
            self.parent[x], x = root, int(self.parent[x])
        return root

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra
        return ra

    def sets(self) -> list[IntArray]:
        roots = np.array([self.find(i) for i in range(len(self.parent))], dtype=np.int64)
        order = np.argsort(roots, kind="stable")
        splits = np.flatnonzero(np.diff(roots[order])) + 1
        return [np.asarray(g, dtype=np.int64) for g in np.split(order, splits)]


def _integer_weights(values: FloatArray, minimum: int) -> list[int]:
    top = float(values.max()) if len(values) else 0.0
    if top <= 0.0:
        return [max(minimum, 1)] * len(values)
    scaled = np.ceil(values / top * METIS_WEIGHT_SCALE).astype(np.int64)
    return np.maximum(scaled, minimum).tolist()


# The file standard output goes to while METIS runs (see _metis_output_logged): one per process, made on first use,
# emptied after each call; a lock, as descriptor 1 is the process's.
_captured: list[Any] = []
_capture_lock = threading.Lock()


@contextlib.contextmanager
def _metis_output_logged() -> Iterator[None]:
    """Standard output (file descriptor 1) goes to a temporary file for the block, and what was written there is
    logged at debug level (`trimtab.metis`), one record per line.

    Why: METIS complains with C's printf ("***Cannot bisect a graph with 0 vertices!", "***You are trying to
    partition a graph into too many parts!") when target shares leave a part without vertices, which
    `partition_graph` then completes. On the service's standard output those lines sat among its JSON log lines (44 in
    10,000 fuzz cases). A file, not a pipe: nothing can block however much is written. Anything else the process
    writes to descriptor 1 meanwhile is logged the same way (a solver worker runs one request at a time). About 5 us
    a call (the file is made once per process)."""
    with _capture_lock:
        if not _captured or _captured[0][0] != os.getpid():  # (a forked child makes its own)
            # kept open for the life of the process (already unlinked: nothing to clean up)
            _captured[:] = [(os.getpid(), tempfile.TemporaryFile())]  # noqa: SIM115
        captured = _captured[0][1]
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            os.dup2(captured.fileno(), 1)
            try:
                yield
            finally:
                flush_c_stdio()  # (C's buffered output, written before descriptor 1 is restored)
                os.dup2(saved, 1)
        finally:
            os.close(saved)
        if os.fstat(captured.fileno()).st_size:
            captured.seek(0)
            text = captured.read().decode(errors="replace")
            captured.seek(0)
            captured.truncate()
            for line in text.splitlines():
                if line.strip():
                    metis_log.debug("METIS: %s", line.strip())


def partition_graph(
    members: IntArray,
    weights: sp.csr_matrix,
    vertex_weight: FloatArray,
    n_parts: int,
    target_share: FloatArray | None = None,
) -> list[IntArray]:
    """Balanced graph partitioning (METIS k-way, minimum weighted edge cut) of the subgraph on `members` into at most
    `n_parts` non-empty parts; `target_share` gives each part's share of the vertex weight (default equal).

    Always returns at least min(n_parts, len(members)) parts when n_parts >= 2, so callers that split again make
    strict progress: a METIS answer that leaves parts empty is completed by splitting the heaviest parts in halves."""
    n = len(members)
    if n_parts <= 1 or n <= 1:
        return [members]
    if n_parts >= n:
        return [members[i : i + 1] for i in range(n)]
    sub = weights[members][:, members].tocsr()
    sub.setdiag(0.0)
    sub.eliminate_zeros()
    adjacency_weights = _integer_weights(sub.data, 1) if sub.nnz else []
    shares = (
        None if target_share is None else (np.asarray(target_share) / float(np.sum(target_share))).tolist()
    )
    with _metis_output_logged():
        _, membership = pymetis.part_graph(
            n_parts,
            pymetis.CSRAdjacency(sub.indptr.tolist(), sub.indices.tolist()),
            vweights=_integer_weights(np.asarray(vertex_weight, dtype=np.float64), 1),
            eweights=adjacency_weights or None,
            tpwgts=shares,
        )
    label = np.asarray(membership, dtype=np.int64)
    # One stable sort groups the members by part (a mask per part is O(members x parts): seconds at 10,000 parts).
    order = np.argsort(label, kind="stable")
    sizes = np.bincount(label, minlength=n_parts)
    parts = [piece for piece in np.split(members[order], np.cumsum(sizes)[:-1]) if len(piece)]
    # METIS may leave a part empty (tiny or disconnected graphs): halve the largest parts until there are enough
    # (a heap of sizes: each split is O(log parts)).
    heap = [(-len(piece), i) for i, piece in enumerate(parts)]
    heapq.heapify(heap)
    while len(parts) < n_parts:
        _, largest = heapq.heappop(heap)
        piece = parts[largest]
        half = math.ceil(len(piece) / 2)
        parts[largest] = piece[:half]
        parts.append(piece[half:])
        heapq.heappush(heap, (-len(parts[largest]), largest))
        heapq.heappush(heap, (-len(parts[-1]), len(parts) - 1))
    return parts

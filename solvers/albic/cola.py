"""COLA (Khandekar et al., Middleware 2009) as Madsen et al. use it for comparison (Section 5.3): partition the whole
communication graph from scratch into balanced parts, ignoring the current placement.

What we do: METIS k-way on the key-group graph (vertex weight = load, edge weight = traffic both ways), one part per
staying node with target shares proportional to capacity. Parts are mapped onto nodes so that the most state stays
where it is (an assignment problem: part labels are arbitrary, so this only renames them; the partition itself never
looks at the current placement). If the load distance is above maxLD, the parts are split further (2k, 4k, ... parts)
and packed largest-first onto the least utilized node, COLA's simple balancing heuristic, until maxLD holds or every
key group is its own part. Pinned key groups stay on their node. COLA ignores the migration budget; when a request
has one, the from-scratch plan is cut down to it by reverting the moves that gain the least collocation
(solvers.albic.repair), and the notes say so.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from solvers.albic.graph import partition_graph, undirected_weights
from solvers.albic.repair import repair
from solvers.baselines import placed_start
from solvers.instance import AssignmentInstance, FloatArray, IntArray, Plan
from solvers.metrics import collocation_factor

# Above this many parts x staying nodes the dense overlap matrix and the Hungarian method (cubic) cost more than
# the partition itself (10,000 x 10,000: 800 MB and seconds), so parts are mapped greedily on the sparse overlap.
EXACT_MAPPING_CELLS = 2_000_000


def _map_parts(
    instance: AssignmentInstance, start: IntArray, parts: list[IntArray], staying: IntArray
) -> IntArray:
    """One part per staying node, maximizing the state (and, to break ties, the key groups) that stays put.

    Exact (linear_sum_assignment) up to EXACT_MAPPING_CELLS; beyond, greedy by overlap on the sparse overlap
    matrix (at least half the exact overlap), then the parts that overlap no free node take the free nodes in order."""
    keep = instance.state_size / max(float(instance.state_size.sum()), 1e-300) + 1.0 / (instance.n_units + 1)
    column = np.full(instance.n_nodes, -1, dtype=np.int64)
    column[staying] = np.arange(len(staying))
    part_of = np.repeat(np.arange(len(parts)), [len(members) for members in parts])
    members = np.concatenate(parts)
    on = column[start[members]]
    held = on >= 0
    overlap = sp.coo_matrix(
        (keep[members][held], (part_of[held], on[held])), shape=(len(parts), len(staying))
    ).tocsr()  # duplicates summed
    node_of_part = np.full(len(parts), -1, dtype=np.int64)  # a column of `staying` per part
    if len(parts) * len(staying) <= EXACT_MAPPING_CELLS:
        rows, cols = linear_sum_assignment(-overlap.toarray())
        node_of_part[rows] = cols
    else:
        entries = overlap.tocoo()
        node_taken = np.zeros(len(staying), dtype=bool)
        for k in np.argsort(-entries.data, kind="stable").tolist():
            p, c = int(entries.row[k]), int(entries.col[k])
            if node_of_part[p] < 0 and not node_taken[c]:
                node_of_part[p] = c
                node_taken[c] = True
        unmapped = np.flatnonzero(node_of_part < 0)  # at most as many parts as staying nodes
        node_of_part[unmapped] = np.flatnonzero(~node_taken)[: len(unmapped)]
    assignment = start.copy()
    mapped = node_of_part[part_of] >= 0
    assignment[members[mapped]] = staying[node_of_part[part_of[mapped]]]
    return assignment


def _pack(instance: AssignmentInstance, parts: list[IntArray], staying: IntArray) -> IntArray:
    """Largest part first onto the least utilized staying node (LPT)."""
    assignment = np.zeros(instance.n_units, dtype=np.int64)
    load = np.zeros(instance.n_nodes)
    part_load = [float(instance.load[p].sum()) for p in parts]
    for p in np.argsort(-np.asarray(part_load), kind="stable").tolist():
        node = staying[np.argmin((load[staying] + part_load[p]) / instance.capacity[staying])]
        assignment[parts[p]] = node
        load[node] += part_load[p]
    return assignment


def collocation_gain(weights: sp.csr_matrix, start: IntArray, assignment: IntArray) -> FloatArray:
    """Per key group: traffic to key groups on its new node minus traffic to those on its old node (in the plan)."""
    rows = np.repeat(np.arange(weights.shape[0]), np.diff(weights.indptr))
    cols = weights.indices
    to_new = (assignment[cols] == assignment[rows]) * weights.data
    to_old = (assignment[cols] == start[rows]) * weights.data
    return np.bincount(rows, weights=to_new - to_old, minlength=weights.shape[0]).astype(np.float64)


def solve_cola(
    instance: AssignmentInstance, max_load_distance: float = 10.0, time_limit_s: float = 2.0
) -> Plan:
    deadline = time.perf_counter() + time_limit_s
    start = placed_start(instance)
    staying = np.flatnonzero(instance.active)
    weights = undirected_weights(instance)
    everyone = np.arange(instance.n_units, dtype=np.int64)
    notes = []
    n_parts = len(staying)
    best: tuple[float, IntArray] | None = None
    while True:  # n_parts doubles up to the number of key groups: ends
        share = instance.capacity[staying] if n_parts == len(staying) else None
        parts = partition_graph(everyone, weights, instance.load, n_parts, share)
        if n_parts == len(staying):
            assignment = _map_parts(instance, start, parts, staying)
        else:
            assignment = _pack(instance, parts, staying)
        assignment[instance.pinned] = start[instance.pinned]
        distance = instance.load_distance(assignment)
        if best is None or distance < best[0]:
            best = (distance, assignment)
        notes.append(f"cola: {len(parts)} parts, load distance {distance:.3g}")
        if distance <= max_load_distance or n_parts >= instance.n_units or time.perf_counter() > deadline:
            break
        n_parts = min(2 * n_parts, instance.n_units)
    assignment = best[1]
    gain = collocation_gain(weights, start, assignment)
    repaired, reverted = repair(
        instance, start, assignment, np.arange(instance.n_units, dtype=np.int64), gain
    )
    if reverted:
        notes.append(
            f"cola: {reverted} key group moves reverted (least collocation gain first) to respect the budget and caps"
        )
    factor = collocation_factor(instance, repaired)
    notes.append("cola: collocation factor after " + ("n/a" if factor is None else f"{100 * factor:.1f} %"))
    changed = bool((repaired != instance.current).any())
    return Plan(assignment=repaired, status="feasible" if changed else "unchanged", notes=notes)

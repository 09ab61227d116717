"""Correlation-based load balancing (CLB), Guo & Zhou Algorithm 2: every m windows, split the substreams into n
subsets so that the cross covariance (covariance between substreams of different subsets) is large, then place the
subsets on the instances.

Why covariance: with N_k the load series of subset k and X the total series, Eq. (5) says
    var(X) - sum_k var(N_k) = sum over ordered pairs (i, j) in different subsets of cov(X_i, X_j),
and var(X) does not depend on the partition, so a large cross covariance means small per-instance load variance.

The listing in the text is garbled (lines 4-9 are interleaved, line 12 says "cov <= theta" while the prose twice says
">= theta", and the first prose definition of the split contradicts itself). Rebuilt from the prose and Eq. (3)-(5):
1. Sigma = [cov(X_i, X_j)] with cov = E[X_i X_j] - E[X_i] E[X_j] over the latest m windows (population covariance).
2. The partners of s_i are the substreams j != i of the same subset with corr(X_i, X_j) >= theta; the contribution
   omega_i = sum of cov(X_i, X_j) over its partners (what splitting them away from s_i adds to the cross covariance).
3. A run takes s_k with the largest omega, and moves its partners out of s_k's subset S_h into a new subset S_r
   (separating s_k from the substreams it rises and falls with). omega is updated for S_h and S_r (lines 13-18).
4. Runs repeat until there are n subsets.
Deviations, and why:
- theta is compared with the correlation coefficient, not the raw covariance: the paper gives 0 <= theta < 1, which is
  only meaningful for a normalized covariance. At theta = 0 (the default) both readings are the same rule.
- If no substream has a partner left (every within-subset correlation < theta), the run separates the most covarying
  pair of a subset instead, so that exactly n non-empty subsets always come out (the paper assumes this never happens).
- Mapping subsets to instances is not in the paper: it is the assignment problem that minimizes the state moved
  (`scipy.optimize.linear_sum_assignment`, ties broken by the number of units moved). Pinned units weigh so much there
  that their subset lands on their node when possible; a pinned unit still left elsewhere stays put.
- The contract's migration budget and capacity cap are kept by `settle` (moves are reverted); when the budget cuts the
  plan and what is left does not lower the summed imbalance, the current assignment is kept.
"""

from __future__ import annotations

import math
import time
from typing import Literal, NamedTuple

import numpy as np
from scipy.optimize import linear_sum_assignment

from solvers.errors import UnsolvableRequest
from solvers.instance import UNPLACED, AssignmentInstance, FloatArray, IntArray, Plan
from solvers.metrics import node_series
from solvers.stateful.settle import keep_pinned, revert_over_budget, revert_over_cap
from solvers.stateful.variance_search import VarianceSearch, row_blocks, summed_variance

MIN_WINDOWS = 2
# The paper's partition holds substreams x substreams matrices (covariance and partners: 9 bytes a pair).
# Measured: 5,000 substreams x 100 windows took 12 s before the first run and 800 MB peak, whatever the time limit;
# and (29 Nov 2026, seventh session) a 0.1 MiB body of 2,000 substreams x 2 windows peaked at 554 MiB in the
# service against its cap of 30 x body + 300 MiB = 303, about 30 MiB above the idle service. 1,000 substreams keep
# the partition at 9 MB (the paper's own experiments use 1,000). The paper variant refuses more (422 naming
# `units`); the improved variant then searches from the current placement only.
PAPER_MAX_SUBSTREAMS = 1_000
MAX_SUBSTREAMS = 5_000
# The search keeps a units x staying nodes matrix (G = X Z^T, variance_search.py) and works through its steps in
# blocks of that size at most; 500,000 cells are 4 MB (5,000 units x 100 nodes, 1,220 x 400). The same measurement:
# 5,000 substreams x 2,000 nodes took 544 MiB in the solver alone.
MAX_UNIT_NODE_CELLS = 500_000
ClbVariant = Literal["paper", "improved"]


def covariance_matrix(series: FloatArray) -> FloatArray:
    """Sigma = [E[X_i X_j] - E[X_i] E[X_j]] over the windows (rows are substreams)."""
    centered = series - series.mean(axis=1, keepdims=True)
    return np.asarray(centered @ centered.T / series.shape[1], dtype=np.float64)


def cross_covariance(cov: FloatArray, labels: IntArray) -> float:
    """Right-hand side of Eq. (5): sum of cov(X_i, X_j) over ordered pairs in different subsets (2x the unordered)."""
    return float(
        sum(
            np.where(labels[b, None] != labels[None, :], cov[b], 0.0).sum()
            for b in row_blocks(len(labels), len(labels))
        )
    )


def _partner_matrix(cov: FloatArray, std: FloatArray, varying: np.ndarray, threshold: float) -> np.ndarray:
    """partner_of[i, j]: corr(X_i, X_j) >= threshold, both series varying, i != j (row blocks: one p x p array)."""
    p = len(std)
    partner_of = np.zeros((p, p), dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for b in row_blocks(p, p):
            corr = cov[b] / np.outer(std[b], std)
            partner_of[b] = (corr >= threshold) & varying[b, None] & varying[None, :]
    np.fill_diagonal(partner_of, False)
    return partner_of


def _most_covarying_pair(cov: FloatArray, labels: IntArray) -> tuple[int, int]:
    """The pair (i, j), i != j, of one subset with the largest covariance (the first in row order on ties)."""
    p = len(labels)
    best, pair = -np.inf, (0, 0)
    for b in row_blocks(p, p):
        together = labels[b, None] == labels[None, :]
        rows = np.arange(b.stop - b.start)
        together[rows, rows + b.start] = False
        masked = np.where(together, cov[b], -np.inf)
        flat = int(np.argmax(masked))
        if masked.flat[flat] > best:
            best, pair = float(masked.flat[flat]), (b.start + flat // p, flat % p)
    return pair


def clb_partition(
    series: FloatArray,
    n_subsets: int,
    threshold: float = 0.0,
    deadline: float = math.inf,
    cov: FloatArray | None = None,
) -> IntArray:
    """Algorithm 2: labels 0..n_subsets-1, every one used (n_subsets <= number of substreams).

    Past `deadline` the runs stop and the subsets still missing are made by halving the largest subset (by index),
    so that the time limit bounds the work (each run costs O(p^2) when it has to separate a pair)."""
    p = series.shape[0]
    if not 1 <= n_subsets <= p:
        raise ValueError(f"need 1 <= n_subsets <= {p} substreams, got {n_subsets}")
    cov = covariance_matrix(series) if cov is None else cov
    std = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    varying = std > 1e-12 * np.maximum(1.0, np.abs(series).max(axis=1))
    partner_of = _partner_matrix(cov, std, varying, threshold)

    def weight(rows: IntArray | slice, cols: IntArray | slice) -> FloatArray:
        """The partners' covariances (0 for non-partners), made per block instead of kept as a third p x p
        matrix."""
        return np.where(partner_of[rows, cols], cov[rows, cols], 0.0)

    labels = np.zeros(p, dtype=np.int64)
    omega = np.concatenate([weight(b, slice(None)).sum(axis=1) for b in row_blocks(p, p)])
    for r in range(1, n_subsets):
        if time.perf_counter() > deadline:
            _halve_largest(labels, r, n_subsets)
            break
        k = int(np.argmax(omega))
        same = labels == labels[k]
        partners = np.flatnonzero(same & partner_of[k])
        if omega[k] <= 0.0 or not len(partners):
            # No partner anywhere: separate the most covarying pair of one subset (keeps n subsets coming).
            i, j = _most_covarying_pair(cov, labels)
            k, partners = i, np.array([j])
            same = labels == labels[k]
        stay = np.flatnonzero(same)
        stay = stay[~np.isin(stay, partners)]
        labels[partners] = r
        omega[stay] -= weight(*np.ix_(stay, partners)).sum(axis=1)
        omega[partners] = weight(*np.ix_(partners, partners)).sum(axis=1)
    return labels


def _halve_largest(labels: IntArray, first: int, n_subsets: int) -> None:
    """Labels first..n_subsets-1 by halving the largest subset each time (every subset keeps at least one)."""
    for r in range(first, n_subsets):
        counts = np.bincount(labels, minlength=r)
        members = np.flatnonzero(labels == int(np.argmax(counts)))
        labels[members[len(members) // 2 :]] = r


def map_subsets_to_nodes(instance: AssignmentInstance, labels: IntArray, nodes: IntArray) -> IntArray:
    """Subset -> node (indices into `nodes`) minimizing the state moved (assignment problem)."""
    n_subsets = int(labels.max()) + 1
    placed = instance.current >= 0
    # subsets x `nodes` only (a draining node never gets a subset): the matrices stay within the cells cap
    column_of = np.full(instance.n_nodes + 1, -1, dtype=np.int64)
    column_of[nodes] = np.arange(len(nodes))
    column = column_of[np.where(placed, instance.current, instance.n_nodes)]
    here = column >= 0
    stay_state = np.zeros((n_subsets, len(nodes)))
    stay_count = np.zeros((n_subsets, len(nodes)))
    np.add.at(stay_state, (labels[here], column[here]), instance.state_size[here])
    np.add.at(stay_count, (labels[here], column[here]), 1.0)
    pinned = placed & instance.pinned
    stay_pinned = np.zeros((n_subsets, len(nodes)))
    np.add.at(stay_pinned, (labels[here & pinned], column[here & pinned]), 1.0)
    state_total = np.bincount(labels[placed], weights=instance.state_size[placed], minlength=n_subsets)
    count_total = np.bincount(labels[placed], minlength=n_subsets).astype(np.float64)
    pinned_total = np.bincount(labels[pinned], minlength=n_subsets).astype(np.float64)
    scale = max(1.0, float(instance.state_size.sum()))
    # cost = pinned left behind x 4 scale (units + 1) + state moved + units moved x 1e-9 scale, made in place
    cost = np.subtract(pinned_total[:, None], stay_pinned, out=stay_pinned)
    cost *= 4.0 * scale * (instance.n_units + 1)
    cost += state_total[:, None]
    cost -= stay_state
    count_cost = np.subtract(count_total[:, None], stay_count, out=stay_count)
    count_cost *= scale * 1e-9
    cost += count_cost
    del stay_state, stay_count, count_cost
    rows, cols = linear_sum_assignment(cost)
    node_of_subset = np.empty(n_subsets, dtype=np.int64)
    node_of_subset[rows] = nodes[cols]
    return node_of_subset


def summed_imbalance(instance: AssignmentInstance, assignment: IntArray, windows: int) -> float:
    """hbar(F) over the latest `windows` windows: sum of the variances of the staying node loads."""
    per_node = node_series(instance.series[:, -windows:], assignment, instance.n_nodes)
    return float(per_node[instance.active].var(axis=0).sum())


def _check_request(instance: AssignmentInstance, m: int | None, variant: ClbVariant) -> int:
    limit = PAPER_MAX_SUBSTREAMS if variant == "paper" else MAX_SUBSTREAMS
    if instance.n_units > limit:
        raise UnsolvableRequest(
            ("body", "units"),
            f"CLB ({variant}) is limited to {limit} units per request"
            + (" (its partition keeps substreams x substreams matrices)" if variant == "paper" else ""),
        )
    staying = int(instance.active.sum())
    if instance.n_units * staying > MAX_UNIT_NODE_CELLS:
        raise UnsolvableRequest(
            ("body", "units"),
            f"CLB is limited to {MAX_UNIT_NODE_CELLS:,} units x staying nodes per request (its search keeps a "
            f"units x nodes matrix); got {instance.n_units:,} x {staying:,}",
        )
    windows = instance.series.shape[1] if m is None else m
    if instance.series.shape[1] < max(windows, MIN_WINDOWS):
        need = max(windows, MIN_WINDOWS)
        raise UnsolvableRequest(
            ("body", "units", 0, "load"),
            f"CLB needs load series of at least {need} windows (m={m}), got {instance.series.shape[1]}",
        )
    return windows


def _paper_plan(
    instance: AssignmentInstance, threshold: float, windows: int, deadline: float, notes: list[str]
) -> IntArray:
    """Algorithm 2 and the subset -> node mapping, settled for pinned units, the budget and the capacity cap."""
    series = instance.series[:, -windows:]
    nodes = np.flatnonzero(instance.active)
    n_subsets = min(len(nodes), instance.n_units)
    started = time.perf_counter()
    cov = covariance_matrix(series)
    labels = clb_partition(series, n_subsets, threshold, deadline, cov)
    if time.perf_counter() > deadline:
        notes.append(
            f"the time limit stopped the partition after {time.perf_counter() - started:.2f} s: the last subsets "
            "halve the largest ones"
        )
    notes.append(
        f"clb paper partition: {n_subsets} subsets from {instance.n_units} substreams over {windows} windows, "
        f"threshold {threshold:g}; cross covariance {cross_covariance(cov, labels):g}"
    )
    del cov  # (substreams x substreams: freed before the mapping's subsets x nodes matrices)
    node_of_subset = map_subsets_to_nodes(instance, labels, nodes)
    assignment = node_of_subset[labels]
    if kept := keep_pinned(instance, assignment):
        notes.append(f"{kept} pinned units stay on their node although their subset is placed elsewhere")
    if cut := revert_over_budget(instance, assignment):
        notes.append(f"the budget cuts {cut} moves of the paper's plan")
    if capped := revert_over_cap(instance, assignment):
        notes.append(
            f"{capped} moves reverted to keep receiving nodes under the capacity cap and resource capacities"
        )
    return assignment


def clb(
    instance: AssignmentInstance,
    threshold: float = 0.0,
    m: int | None = None,
    variant: ClbVariant = "improved",
    time_limit_s: float = 2.0,
) -> Plan:
    """CLB. `variant="paper"`: Algorithm 2 as rebuilt above (a budget-cut plan that does not lower the summed
    imbalance is dropped). `variant="improved"` (default): minimize the paper's objective sum_t var(L_t) over the m
    windows (loads scaled to the mean capacity), state moved second: local search (`variance_search`) from the
    current placement and from the paper's plan, the better one kept, and never a plan above the current
    placement's objective (then nothing moves, status `unchanged`)."""
    deadline = time.perf_counter() + time_limit_s
    windows = _check_request(instance, m, variant)
    notes: list[str] = []
    if variant == "paper":
        assignment = _paper_plan(instance, threshold, windows, deadline, notes)
        placed = instance.current != UNPLACED
        moved = instance.migration_mask(assignment)
        if (
            any("budget cuts" in note for note in notes)
            and placed.all()
            and summed_imbalance(instance, assignment, windows)
            >= summed_imbalance(instance, instance.current, windows)
        ):
            notes.append("what the budget leaves of the plan does not lower the imbalance: nothing moves")
            assignment = instance.current.copy()
        changed = bool(moved.any()) and bool((assignment != instance.current).any())
        return Plan(assignment=assignment, status="feasible" if changed else "unchanged", notes=notes)
    return _improved(instance, threshold, windows, deadline, notes)


class _Searched(NamedTuple):
    """What a search leaves (its matrices are freed before the next one starts: memory)."""

    assignment: IntArray
    objective: float
    stuck: list[int]


def _search_from(
    instance: AssignmentInstance, series: FloatArray, start: IntArray, deadline: float
) -> _Searched:
    search = VarianceSearch.start(instance, series, start)
    homeless = np.flatnonzero(search.col < 0)
    stuck = search.place_all(homeless[instance.movable[homeless] | (instance.current[homeless] == UNPLACED)])
    search.improve(deadline, max_steps=20 * instance.n_units + 100)
    return _Searched(search.assignment(), search.objective, stuck)


def _improved(
    instance: AssignmentInstance, threshold: float, windows: int, deadline: float, notes: list[str]
) -> Plan:
    series = instance.series[:, -windows:]
    start = time.perf_counter()
    share = (deadline - start) * 0.45
    candidates: list[tuple[str, _Searched]] = []
    from_current = instance.current.copy()
    candidates.append(("the current placement", _search_from(instance, series, from_current, start + share)))
    if instance.n_units <= PAPER_MAX_SUBSTREAMS and time.perf_counter() < deadline:
        paper_notes: list[str] = []
        paper = _paper_plan(instance, threshold, windows, start + 2 * share, paper_notes)
        candidates.append(("the paper's plan", _search_from(instance, series, paper, deadline)))
    else:
        notes.append(
            f"the paper's partition is not tried ({instance.n_units} substreams > {PAPER_MAX_SUBSTREAMS}, or "
            "no time left): local search from the current placement only"
        )

    def rank(item: tuple[str, _Searched]) -> tuple[int, float, float]:
        searched = item[1]
        state = float(instance.state_size[instance.migration_mask(searched.assignment)].sum())
        return len(searched.stuck), searched.objective, state

    label, best = min(candidates, key=rank)
    stuck = best.stuck
    homeless = [unit for unit in stuck if instance.current[unit] == UNPLACED]
    if homeless:
        unit = homeless[0]
        raise UnsolvableRequest(
            ("body", "units", unit, "load"),
            f"unit {instance.unit_ids[unit]!r} has no node and fits on no staying node under the capacity cap and "
            "the resource capacities",
        )
    assignment = best.assignment
    after = best.objective
    current_placed = bool((instance.current != UNPLACED).all()) and not bool(
        (instance.on_draining & instance.movable).any()
    )
    before = summed_variance(instance, series, instance.current)
    if current_placed and after >= before * (1 - 1e-12):
        assignment = instance.current.copy()
        after = before
        label = "the current placement (nothing lowers the objective)"
    if stuck:
        notes.append(f"{len(stuck)} units cannot leave a draining node (budget, capacity cap or resources)")
    notes.insert(
        0,
        f"clb (improved): objective sum_t var(L_t) over {windows} windows (loads scaled to the mean capacity): "
        f"before {before:.6g}, after {after:.6g}; best from {label}",
    )
    changed = bool((assignment != instance.current).any())
    return Plan(assignment=assignment, status="feasible" if changed else "unchanged", notes=notes)

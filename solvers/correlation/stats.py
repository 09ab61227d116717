"""Section 2.3 statistics of load series, on whole matrices, with node series kept incrementally.

Xing, Zdonik & Hwang define, for series of k samples, E S = mean, var S = E S^2 - (E S)^2 (population variance),
cov and the correlation coefficient rho. Everything here works on centered series: with c = s - E s,
cov(s, t) = c_s . c_t / k and rho(s, t) = c_s . c_t / (|c_s| |c_t|), so one matrix product gives every covariance.

rho(o, N) is the correlation of operator o with the sum of the series of all units on N *except o* (paper, 3.3.1).
With G = c_o . c_N (c_N the centered series of node N) and q_N = |c_N|^2, removing o from its own node gives
c_o . (c_N - c_o) = G - |c_o|^2 and |c_N - c_o|^2 = q_N - 2 G + |c_o|^2, so rho(o, N) for all candidates and nodes
is one product plus elementwise work. A constant series (zero variance, e.g. an empty node) has no defined
correlation: it counts as 0, the rule `solvers.metrics.average_correlation` uses too.

`LoadState` holds an assignment and the node series; `move` updates only the two rows it touches (O(k)), so no
candidate evaluation recomputes a node series from scratch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.instance import UNPLACED, AssignmentInstance, BoolArray, FloatArray, IntArray
from solvers.metrics import node_series

# Squared norms below this share of the scale count as zero variance (constant series).
_ZERO_VARIANCE = 1e-18


def correlation_matrix(rows: FloatArray) -> FloatArray:
    """Pearson correlation between every pair of rows; a constant row correlates 0 with everything (and itself)."""
    centered = rows - rows.mean(axis=1, keepdims=True)
    sq = np.einsum("ij,ij->i", centered, centered)
    scale = max(1.0, float(np.abs(rows).max(initial=0.0))) ** 2 * rows.shape[1]
    norms = np.sqrt(sq)
    ok = sq > _ZERO_VARIANCE * scale
    normalized = np.zeros_like(centered)
    normalized[ok] = centered[ok] / norms[ok, None]
    return np.asarray(normalized @ normalized.T, dtype=np.float64)


def constant_rows(series: FloatArray) -> BoolArray:
    """Rows whose series has zero variance (their correlation is undefined; we count it as 0)."""
    centered = series - series.mean(axis=1, keepdims=True)
    sq = np.einsum("ij,ij->i", centered, centered)
    scale = np.maximum(1.0, np.abs(series).max(axis=1)) ** 2 * series.shape[1]
    return np.asarray(sq <= _ZERO_VARIANCE * scale, dtype=np.bool_)


@dataclass
class _Snapshot:
    assignment: IntArray
    node_series: FloatArray
    node_centered: FloatArray
    node_sq: FloatArray
    node_load: FloatArray
    migrations: int
    migration_cost: float


class LoadState:
    """An assignment of units to nodes with each node's load series, centered series and mean load kept in step.

    Also counts the migrations (units placed before that sit elsewhere now) and their cost, so budget checks are O(1).
    """

    def __init__(self, instance: AssignmentInstance, assignment: IntArray) -> None:
        self.instance = instance
        series = instance.series
        self.series = series
        self.centered = series - series.mean(axis=1, keepdims=True)
        self.unit_sq = np.einsum("ij,ij->i", self.centered, self.centered)
        self.load = instance.load
        self.capacity = instance.capacity
        self.scale = max(1.0, float(series.sum(axis=0).max(initial=0.0))) ** 2 * series.shape[1]
        self.reassign(assignment)

    def reassign(self, assignment: IntArray) -> None:
        """Set a whole assignment at once and recompute the node series and counters (O(U k))."""
        instance = self.instance
        self.assignment = assignment.copy()
        self.node_series = node_series(self.series, self.assignment, instance.n_nodes)
        self.node_centered = self.node_series - self.node_series.mean(axis=1, keepdims=True)
        self.node_sq = np.einsum("ij,ij->i", self.node_centered, self.node_centered)
        self.node_load = self.node_series.mean(axis=1)
        moved = instance.migration_mask(self.assignment)
        self.migrations = int(moved.sum())
        self.migration_cost = float(instance.state_size[moved].sum())

    # ------------------------------------------------------------------ moves and budget

    def _refresh(self, node: int) -> None:
        row = self.node_centered[node]
        self.node_sq[node] = float(row @ row)

    def move(self, unit: int, to: int) -> None:
        """Put `unit` on node `to` (or UNPLACED), updating the two node series and the migration counters."""
        src = int(self.assignment[unit])
        if src == to:
            return
        if src >= 0:
            self.node_series[src] -= self.series[unit]
            self.node_centered[src] -= self.centered[unit]
            self.node_load[src] -= self.load[unit]
            self._refresh(src)
        if to >= 0:
            self.node_series[to] += self.series[unit]
            self.node_centered[to] += self.centered[unit]
            self.node_load[to] += self.load[unit]
            self._refresh(to)
        origin = int(self.instance.current[unit])
        if origin != UNPLACED:
            was, now = src != origin, to != origin
            if now and not was:
                self.migrations += 1
                self.migration_cost += float(self.instance.state_size[unit])
            elif was and not now:
                self.migrations -= 1
                self.migration_cost -= float(self.instance.state_size[unit])
        self.assignment[unit] = to

    def migrations_allowed(self, units: IntArray, to: int) -> BoolArray:
        """Whether moving each of `units` to `to` keeps the migration budget, each judged alone against what is left
        (a unit already away from its origin, or going back to it, costs nothing more)."""
        inst = self.instance
        origin = inst.current[units]
        free = (origin == UNPLACED) | (origin == to) | (self.assignment[units] != origin)
        ok = np.ones(len(units), dtype=bool)
        if inst.max_migrations is not None and self.migrations + 1 > inst.max_migrations:
            ok[:] = False
        if inst.max_migration_cost is not None:
            ok &= self.migration_cost + inst.state_size[units] <= inst.max_migration_cost * (1 + 1e-12)
        return np.asarray(free | ok, dtype=np.bool_)

    def within_budget(self) -> bool:
        inst = self.instance
        if inst.max_migrations is not None and self.migrations > inst.max_migrations:
            return False
        return not (
            inst.max_migration_cost is not None
            and self.migration_cost > inst.max_migration_cost * (1 + 1e-12)
        )

    def snapshot(self) -> _Snapshot:
        return _Snapshot(
            self.assignment.copy(),
            self.node_series.copy(),
            self.node_centered.copy(),
            self.node_sq.copy(),
            self.node_load.copy(),
            self.migrations,
            self.migration_cost,
        )

    def restore(self, snap: _Snapshot) -> None:
        self.assignment = snap.assignment.copy()
        self.node_series = snap.node_series.copy()
        self.node_centered = snap.node_centered.copy()
        self.node_sq = snap.node_sq.copy()
        self.node_load = snap.node_load.copy()
        self.migrations = snap.migrations
        self.migration_cost = snap.migration_cost

    # ------------------------------------------------------------------ statistics

    def utilization(self, nodes: IntArray | None = None) -> FloatArray:
        if nodes is None:
            return 100.0 * self.node_load / self.capacity
        return 100.0 * self.node_load[nodes] / self.capacity[nodes]

    def rho(self, units: IntArray, nodes: IntArray) -> FloatArray:
        """rho(o, N) for every unit o of `units` (rows) and node N of `nodes` (columns), o taken out of its own node."""
        gram = self.centered[units] @ self.node_centered[nodes].T
        unit_sq = self.unit_sq[units][:, None]
        own = self.assignment[units][:, None] == nodes[None, :]
        num = np.where(own, gram - unit_sq, gram)
        node_sq = np.where(
            own, self.node_sq[nodes][None, :] - 2.0 * gram + unit_sq, self.node_sq[nodes][None, :]
        )
        denom_sq = unit_sq * node_sq
        # A constant series on either side, or a node holding nothing but o: correlation undefined, counted as 0.
        ok = (unit_sq > _ZERO_VARIANCE * self.scale) & (node_sq > _ZERO_VARIANCE * self.scale)
        out = np.zeros_like(gram)
        np.divide(num, np.sqrt(np.where(ok, denom_sq, 1.0)), out=out, where=ok)
        return np.clip(out, -1.0, 1.0)

    def node_correlation(self, a: int, b: int) -> float:
        """Load correlation of nodes a and b (0 if either series is constant)."""
        qa, qb = self.node_sq[a], self.node_sq[b]
        if qa <= _ZERO_VARIANCE * self.scale or qb <= _ZERO_VARIANCE * self.scale:
            return 0.0
        return float(np.clip(self.node_centered[a] @ self.node_centered[b] / np.sqrt(qa * qb), -1.0, 1.0))

    def node_correlation_row(self, a: int, nodes: IntArray) -> FloatArray:
        """Correlation of node a with each of `nodes` (O(n k)); constant series correlate 0."""
        sq = self.node_sq[nodes]
        qa = self.node_sq[a]
        ok = (sq > _ZERO_VARIANCE * self.scale) & (qa > _ZERO_VARIANCE * self.scale)
        dots = self.node_centered[nodes] @ self.node_centered[a]
        out = np.zeros(len(nodes))
        np.divide(dots, np.sqrt(np.where(ok, sq * qa, 1.0)), out=out, where=ok)
        return np.clip(out, -1.0, 1.0)

    def node_correlations(self, nodes: IntArray) -> FloatArray:
        """Correlation matrix of the given nodes' load series (constant series correlate 0)."""
        centered = self.node_centered[nodes]
        sq = self.node_sq[nodes]
        ok = sq > _ZERO_VARIANCE * self.scale
        normalized = np.zeros_like(centered)
        normalized[ok] = centered[ok] / np.sqrt(sq[ok])[:, None]
        return np.clip(normalized @ normalized.T, -1.0, 1.0)

    def node_std(self, nodes: IntArray) -> FloatArray:
        """Standard deviation of each node's load series (population, as in the paper)."""
        k = self.series.shape[1]
        return np.sqrt(np.maximum(self.node_sq[nodes], 0.0) / k)

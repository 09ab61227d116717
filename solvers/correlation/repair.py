"""trimtab's repair after the paper's steps (the `improved` variant; not in Xing, Zdonik & Hwang).

The paper balances a node pair only when its utilization gap exceeds epsilon (10 points in Table 2) and never looks
at single windows, so its plans leave node means up to ~10 points apart and let correlated peaks push a node above
100 % although the average is far below. The repair is a local search over single moves and two-unit swaps that
minimizes, in this order (each compared with a tolerance):

1. the spread violation V = sum over staying node pairs of max(0, |m_i - m_j| - max_spread), m = mean utilization
   (points). V = 0 exactly when max m - min m <= max_spread; unlike the spread itself it also drops when one of two
   tied extreme nodes improves, so the search does not stall on ties;
2. the number of staying nodes whose utilization exceeds 100 % in some window;
3. the summed peak overflow sum_n max(0, max_t u_{n,t} - 100).

Peaks count only in the windows where the cluster as a whole stays within its capacity (sum of loads <= sum of the
staying nodes' capacities): in the others some node is above 100 % whatever the assignment, so no plan avoids it
and chasing it would only shuffle units (`RepairResult.unavoidable_windows` says how many there are).

Ties between equally good candidates go to the one that lowers the two nodes' summed load variance most, i.e. the
paper's correlation score weighted by the series' standard deviations: moving s from A to B changes
var A + var B by 2 (cov(B, s) - cov(A - s, s)) = 2 sigma_s (sigma_B rho(s, B) - sigma_{A-s} rho(s, A)) (Section 3.3.1),
so the repair keeps the correlation structure the paper's steps built.

Each iteration looks at the culprits (the nodes of largest and smallest mean while V > 0, else the most overloaded
node) and, against a bounded set of partner nodes, at every move out of the culprit, every move into it and every
swap. A step is taken only if it strictly improves (1)-(3) by more than the tolerance; the loop also stops after
`max_steps` steps or at the deadline. Every move respects pins, draining nodes (they receive nothing), the migration
budget (count and cost, swaps counted together) and the validator's cap on the receivers' mean utilization.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from solvers.correlation.exact import ExactParameters, exact_spread_repair
from solvers.correlation.pairwise import PairContext
from solvers.instance import FloatArray, IntArray

DEFAULT_MAX_SPREAD = 5.0  # points of mean utilization
PEAK_LIMIT = 100.0  # utilization (points) no node should exceed in any window
# Candidate series evaluated at once (candidates x windows floats): bounds memory per step (a few arrays of ~8 MB).
_CANDIDATE_CELLS = 1_000_000
_MAX_PARTNERS = 8


@dataclass(frozen=True)
class Penalty:
    violation: float  # V: summed pairwise spread excess (points)
    overloaded: int  # staying nodes above PEAK_LIMIT in some window
    overflow: float  # summed peak excess over PEAK_LIMIT (points)


@dataclass
class RepairResult:
    steps: int
    before: Penalty
    after: Penalty
    spread: float  # max - min mean utilization of the staying nodes after the repair
    stopped_by_cap: bool
    timed_out: bool
    unavoidable_windows: int  # windows whose total load exceeds the staying capacity (ignored for peaks)
    exact: bool  # the CP-SAT completion (solvers.correlation.exact) improved the local search's plan


def _pair_excess(diff: FloatArray, max_spread: float) -> FloatArray:
    return np.maximum(np.abs(diff) - max_spread, 0.0)


class _SpreadIndex:
    """Sum over all nodes j of max(0, |x - m_j| - S) for any x in O(log n), from the sorted means and prefix sums."""

    def __init__(self, means: FloatArray, max_spread: float) -> None:
        self.sorted = np.sort(means)
        self.prefix = np.concatenate([[0.0], np.cumsum(self.sorted)])
        self.total = float(self.prefix[-1])
        self.spread = max_spread

    def sum_excess(self, x: FloatArray) -> FloatArray:
        s = self.spread
        lo = np.searchsorted(self.sorted, x - s, side="left")  # m_j < x - S
        hi = np.searchsorted(self.sorted, x + s, side="right")  # m_j > x + S
        below = lo * (x - s) - self.prefix[lo]
        n = len(self.sorted)
        above = (self.total - self.prefix[hi]) - (n - hi) * (x + s)
        return np.asarray(below + above, dtype=np.float64)


class SpreadRepair:
    """The repair of one LoadState (through its PairContext). Build it, then `run()`."""

    def __init__(self, ctx: PairContext, max_spread: float, max_steps: int) -> None:
        self.ctx = ctx
        self.st = ctx.state
        self.max_spread = float(max_spread)
        self.max_steps = int(max_steps)
        self.nodes = ctx.staying
        self.pos = np.full(self.st.instance.n_nodes, -1, dtype=np.int64)
        self.pos[self.nodes] = np.arange(len(self.nodes))
        cap = self.st.capacity[self.nodes]
        self.inv_cap = 100.0 / cap  # load -> utilization points
        # Scale of the utilizations: tolerances are relative to it (loads may be 1e-6 or 1e12).
        total = float(self.st.node_load.sum())
        cluster = 100.0 * self.st.series.sum(axis=0) / float(cap.sum())
        # Windows where a node above 100 % is avoidable at all (see the module notes).
        self.windows = np.flatnonzero(cluster <= PEAK_LIMIT * (1 + 1e-12))
        self.unavoidable = int(len(cluster) - len(self.windows))
        self.tol = 1e-9 * max(1.0, 100.0 * total / float(cap.sum()), self.max_spread)

    # ------------------------------------------------------------------ evaluation

    def _node_stats(self) -> tuple[FloatArray, FloatArray]:
        """Mean and peak utilization of every staying node."""
        util_series = self.st.node_series[np.ix_(self.nodes, self.windows)] * self.inv_cap[:, None]
        return self.st.node_load[self.nodes] * self.inv_cap, util_series.max(axis=1, initial=0.0)

    def penalty(self) -> Penalty:
        mean, peak = self._node_stats()
        order = np.sort(mean)
        # V = sum_{i<j} max(0, m_j - m_i - S) over the sorted means, via the index (each pair counted twice).
        violation = float(_SpreadIndex(mean, self.max_spread).sum_excess(order).sum() / 2.0)
        over = peak > PEAK_LIMIT + self.tol
        return Penalty(violation, int(over.sum()), float(np.maximum(peak - PEAK_LIMIT, 0.0).sum()))

    def better(self, a: Penalty, b: Penalty) -> bool:
        """a strictly better than b, lexicographically with the tolerance."""
        if a.violation < b.violation - self.tol:
            return True
        if a.violation > b.violation + self.tol:
            return False
        if a.overloaded != b.overloaded:
            return a.overloaded < b.overloaded
        return a.overflow < b.overflow - self.tol

    # ------------------------------------------------------------------ candidates

    def _culprits(self, pen: Penalty, mean: FloatArray, peak: FloatArray) -> list[tuple[int, FloatArray]]:
        """(culprit position, partner ranking key: smaller first) pairs to examine this step."""
        found: list[tuple[int, FloatArray]] = []
        if pen.violation > self.tol:
            found += [(int(np.argmax(mean)), mean), (int(np.argmin(mean)), -mean)]
        over = np.flatnonzero(peak > PEAK_LIMIT + self.tol)
        if len(over):
            found.append((int(over[np.argmax(peak[over])]), peak))
        return found

    def _groups(self) -> tuple[IntArray, IntArray]:
        """Movable units on staying nodes sorted by node position, and each position's start in that order."""
        where = self.st.assignment
        units = np.flatnonzero(self.ctx.movable & (where >= 0))
        units = units[self.pos[where[units]] >= 0]
        at = self.pos[where[units]]
        order = np.argsort(at, kind="stable")
        starts = np.searchsorted(at[order], np.arange(len(self.nodes) + 1))
        return units[order], starts.astype(np.int64)

    def _best_for(
        self,
        c: int,
        rank: FloatArray,
        pen: Penalty,
        mean: FloatArray,
        peak: FloatArray,
        groups: tuple[IntArray, IntArray],
    ) -> tuple[Penalty, float, list[tuple[int, int]]] | None:
        """The best move or swap between culprit position c and its partners: (penalty, variance change, moves)."""
        st = self.st
        k = st.series.shape[1]
        node_c = int(self.nodes[c])
        units_sorted, starts = groups
        own = units_sorted[starts[c] : starts[c + 1]]
        sizes = np.diff(starts)
        order = np.argsort(rank, kind="stable")
        order = order[order != c][:_MAX_PARTNERS]
        # moves out (|own| per partner), moves in (|units_p|), swaps (|own| x |units_p|), within the cell budget
        cost = np.cumsum(len(own) + sizes[order] * (1 + len(own))) * k
        partners = order[: max(1, int(np.searchsorted(cost, _CANDIDATE_CELLS, side="right")))]
        if not len(partners):
            return None
        units_in = np.concatenate([units_sorted[starts[p] : starts[p + 1]] for p in partners.tolist()])
        pos_in = self.pos[st.assignment[units_in]]
        n_own, n_in, n_part = len(own), len(units_in), len(partners)
        none_out = np.full(n_in, -1, dtype=np.int64)
        none_in = np.full(n_own * n_part, -1, dtype=np.int64)
        # Candidates: (partner position, unit leaving c or -1, unit entering c or -1): moves out, moves in, swaps.
        part = np.concatenate([np.repeat(partners, n_own), pos_in, np.tile(pos_in, n_own)])
        out_u = np.concatenate([np.tile(own, n_part), none_out, np.repeat(own, n_in)]).astype(np.int64)
        in_u = np.concatenate([none_in, units_in, np.tile(units_in, n_own)]).astype(np.int64)
        if len(part) > _CANDIDATE_CELLS // max(k, 1):
            # One culprit with a huge unit set against one partner: keep the largest units' candidates only.
            keep = np.argsort(-(st.load[np.maximum(out_u, 0)] + st.load[np.maximum(in_u, 0)]))
            keep = np.sort(keep[: _CANDIDATE_CELLS // max(k, 1)])
            part, out_u, in_u = part[keep], out_u[keep], in_u[keep]
        ok = self._allowed(node_c, self.nodes[part], out_u, in_u)
        if not ok.any():
            return None
        part, out_u, in_u = part[ok], out_u[ok], in_u[ok]
        has_out, has_in = out_u >= 0, in_u >= 0
        # delta: change of the culprit's load series; the partner changes by -delta.
        delta = np.zeros((len(part), k))
        delta[has_in] += st.series[in_u[has_in]]
        delta[has_out] -= st.series[out_u[has_out]]
        node_p = self.nodes[part]
        c_series = st.node_series[node_c][None, :] + delta
        p_series = st.node_series[node_p] - delta
        c_mean = c_series.mean(axis=1) * self.inv_cap[c]
        p_mean = p_series.mean(axis=1) * self.inv_cap[part]
        c_peak = c_series[:, self.windows].max(axis=1, initial=0.0) * self.inv_cap[c]
        p_peak = p_series[:, self.windows].max(axis=1, initial=0.0) * self.inv_cap[part]
        # Validator cap: a node that receives a unit ends with mean utilization at most ctx.cap.
        cap = self.ctx.cap * (1 + 1e-12)
        # The receiver of a unit leaving the culprit is the partner; of a unit entering it, the culprit.
        ok = ~(has_out & (p_mean > cap)) & ~(has_in & (c_mean > cap))
        if not ok.any():
            return None
        # Spread violation after the change: only rows c and p change.
        index = _SpreadIndex(mean, self.max_spread)
        old_c, old_p = mean[c], mean[part]
        s = self.max_spread

        def others(x: FloatArray) -> FloatArray:
            # sum over j not in {c, p} of max(0, |x - m_j| - S)
            return index.sum_excess(x) - _pair_excess(x - old_c, s) - _pair_excess(x - old_p, s)

        violation = (
            pen.violation
            - index.sum_excess(np.array([old_c]))[0]  # row c (includes the pair c, p)
            - index.sum_excess(old_p)  # row p (includes the pair c, p again)
            + _pair_excess(old_c - old_p, s)  # the pair c, p was subtracted twice
            + others(c_mean)
            + others(p_mean)
            + _pair_excess(c_mean - p_mean, s)
        )
        over_before = (peak > PEAK_LIMIT + self.tol).astype(np.int64)
        overloaded = (
            pen.overloaded
            - over_before[c]
            - over_before[part]
            + (c_peak > PEAK_LIMIT + self.tol)
            + (p_peak > PEAK_LIMIT + self.tol)
        )
        excess = np.maximum(peak - PEAK_LIMIT, 0.0)
        overflow = (
            pen.overflow
            - excess[c]
            - excess[part]
            + np.maximum(c_peak - PEAK_LIMIT, 0.0)
            + np.maximum(p_peak - PEAK_LIMIT, 0.0)
        )
        # Variance change of the two nodes (k var = |centered|^2; the old ones are node_sq).
        c_centered = c_series - c_series.mean(axis=1, keepdims=True)
        p_centered = p_series - p_series.mean(axis=1, keepdims=True)
        var_change = (
            np.einsum("ij,ij->i", c_centered, c_centered)
            + np.einsum("ij,ij->i", p_centered, p_centered)
            - st.node_sq[node_c]
            - st.node_sq[node_p]
        ) / k
        violation = np.where(ok, violation, np.inf)
        best = self._lexmin(violation, overloaded, overflow, var_change)
        if best < 0:
            return None
        cand = Penalty(
            max(float(violation[best]), 0.0), int(overloaded[best]), max(float(overflow[best]), 0.0)
        )
        moves = []
        if out_u[best] >= 0:
            moves.append((int(out_u[best]), int(node_p[best])))
        if in_u[best] >= 0:
            moves.append((int(in_u[best]), node_c))
        return cand, float(var_change[best]), moves

    def _lexmin(
        self, violation: FloatArray, overloaded: IntArray, overflow: FloatArray, var_change: FloatArray
    ) -> int:
        finite = np.isfinite(violation)
        if not finite.any():
            return -1
        alive = finite & (violation <= violation[finite].min() + self.tol)
        alive &= overloaded == overloaded[alive].min()
        alive &= overflow <= overflow[alive].min() + self.tol
        rows = np.flatnonzero(alive)
        return int(rows[np.argmin(var_change[rows])])

    def _allowed(self, node_c: int, node_p: IntArray, out_u: IntArray, in_u: IntArray) -> np.ndarray:
        """Budget check of each candidate: the migrations it adds (both units of a swap together)."""
        st = self.st
        inst = st.instance
        if not inst.budgeted:
            return np.ones(len(node_p), dtype=bool)
        d_count = np.zeros(len(node_p))
        d_cost = np.zeros(len(node_p))
        for units, to in ((out_u, node_p), (in_u, np.full(len(node_p), node_c))):
            has = units >= 0
            u = np.maximum(units, 0)
            origin = inst.current[u]
            placed = origin >= 0
            now_away = placed & (to != origin)
            was_away = placed & (st.assignment[u] != origin)
            change = np.where(has, now_away.astype(np.int64) - was_away.astype(np.int64), 0)
            d_count += change
            d_cost += change * inst.state_size[u]
        ok = np.ones(len(node_p), dtype=bool)
        if inst.max_migrations is not None:
            ok &= st.migrations + d_count <= inst.max_migrations
        if inst.max_migration_cost is not None:
            ok &= st.migration_cost + d_cost <= inst.max_migration_cost * (1 + 1e-12)
        return ok

    # ------------------------------------------------------------------ loop

    def run(self) -> RepairResult:
        start = self.penalty()
        pen = start
        steps = 0
        stopped_by_cap = timed_out = False
        if len(self.nodes) >= 2:
            while True:
                if pen.violation <= self.tol and pen.overloaded == 0:
                    break
                if steps >= self.max_steps:
                    stopped_by_cap = True
                    break
                if self.ctx.out_of_time():
                    timed_out = True
                    break
                mean, peak = self._node_stats()
                groups = self._groups()
                best: tuple[Penalty, float, list[tuple[int, int]]] | None = None
                for c, rank in self._culprits(pen, mean, peak):
                    found = self._best_for(c, rank, pen, mean, peak, groups)
                    if found is None:
                        continue
                    if (
                        best is None
                        or self.better(found[0], best[0])
                        or (not self.better(best[0], found[0]) and found[1] < best[1])
                    ):
                        best = found
                if best is None or not self.better(best[0], pen):
                    break
                for unit, to in best[2]:
                    self.st.move(unit, to)
                steps += 1
                # Recompute exactly (the candidate's penalty was computed incrementally).
                pen = self.penalty()
        exact = False
        if not timed_out and len(self.nodes) >= 2 and (pen.violation > self.tol or pen.overloaded):
            exact, pen = self._exact(pen)
        mean, _ = self._node_stats()
        spread = float(mean.max() - mean.min()) if len(mean) else 0.0
        return RepairResult(steps, start, pen, spread, stopped_by_cap, timed_out, self.unavoidable, exact)

    def _exact(self, pen: Penalty) -> tuple[bool, Penalty]:
        """Small instances: ask CP-SAT for the bound with fewer overloaded nodes; keep it only if strictly better in
        floating point."""
        met = pen.violation <= self.tol
        params = ExactParameters(
            max_spread=self.max_spread,
            time_limit_s=self.ctx.deadline - time.perf_counter(),
            max_overloaded=pen.overloaded - 1 if met else len(self.nodes),
            windows=self.windows,
        )
        found = exact_spread_repair(self.st, self.nodes, self.ctx.cap, params)
        if found is None:
            return False, pen
        snap = self.st.snapshot()
        self.st.reassign(found)
        new = self.penalty()
        if self.better(new, pen) and self.st.within_budget():
            return True, new
        self.st.restore(snap)
        return False, pen

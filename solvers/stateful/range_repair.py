"""Repair of an ELB plan so that every instance ends inside its range [lo_j, hi_j], moving as little state as it can.

Not in the paper: Algorithm 1 only guarantees the range under y <= (u - v)/2 and more (docs/stateful.md); on real
snapshots its greedy ends outside the range although an assignment inside exists. Three tools, cheapest first:
1. `repair`: best-improvement local search on the total violation (utilization points outside the range, summed over
   the nodes), single moves then swaps. A step is taken only if it lowers the violation by more than a tolerance,
   so the search ends; among improving steps the one with the most violation removed per unit of state moved wins.
2. `undo_moves`: a moved unit goes back to its node whenever that raises no node's violation (less state moved).
3. `RangeModel` (CP-SAT, small instances): the least state moved subject to every instance inside its range, the
   capacity cap and the budget, hinted with the best heuristic plan. INFEASIBLE is a proof that the range cannot be
   reached on these instances; the heuristic's closest plan is kept then.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from solvers.instance import UNPLACED, BoolArray, FloatArray, IntArray
from solvers.integer_scaling import finite_scale
from solvers.stateful.cluster import Cluster

MAX_SWAP_ROWS = (
    200  # units of the worst node tried in a swap (the largest): bounds a swap round to 200 x units
)
CPSAT_MAX_VARIABLES = 6_000  # units x nodes of the model; beyond it the heuristic plan stands
SECOND_START_MAX_PAIRS = 20_000  # units x nodes up to which the repair also starts from the current placement
INTEGER_RANGE = 1e12


@dataclass(frozen=True)
class Ranges:
    lo: FloatArray  # (T,) lowest acceptable latest-window load per node (0 on leaving nodes)
    hi: FloatArray  # (T,) highest (0 on leaving nodes: they must end empty)
    eps: float  # absolute tolerance on loads

    def violation(
        self, load: FloatArray, capacity: FloatArray, nodes: IntArray | slice = slice(None)
    ) -> FloatArray:
        """Utilization points outside the range (0 inside), per node of `nodes`."""
        lo, hi = self.lo[nodes], self.hi[nodes]
        outside = np.maximum(load - hi - self.eps, 0.0) + np.maximum(lo - load - self.eps, 0.0)
        return np.asarray(100.0 * outside / capacity[nodes], dtype=np.float64)

    def outside(self, cluster: Cluster) -> IntArray:
        """Nodes outside their range (leaving nodes that still hold load count)."""
        return np.flatnonzero(self.violation(cluster.load, cluster.capacity) > 0.0)


def _tolerance(ranges: Ranges, cluster: Cluster) -> float:
    return 1e-9 * max(1.0, 100.0 * float(ranges.hi.max(initial=0.0)) / float(cluster.capacity.min()))


class _Unmovable:
    """The nodes for which no improving move exists, kept up to date step by step from what each step changed, so
    that `_best_move` passes over them instead of searching each again.

    Why: nodes whose units are all too large to land anywhere (hot keys above every range) stay at the top of the
    violation order, and every step searched them again in full: on 10,000 nodes x 5,000 units (3,620 hot units)
    45 blocks of up to units x nodes a step, 10 s for 1,212 steps (bench.reliability.deadlines, shape wide).

    Exact, so the steps are those of the full search: whether a pair (unit r, node c) is an improving, valid move
    depends only on the loads, means and resource usage of r's node and of c (changed only by a step that moves a
    unit off or onto them), on r's node itself (likewise), and on the budget used (a step that uses more budget only
    makes pairs invalid). After a step touching nodes T, a node without a move keeps none unless it is in T, or
    (above its range: its units to any node) one of its units can now go to a node of T, or (below it: any unit to
    it) a unit on a node of T can now come to it: two blocks for all such nodes at once. After a step that used less
    budget (a unit sent home) every node is searched in full again."""

    def __init__(self, n_nodes: int) -> None:
        self.none = np.zeros(n_nodes, dtype=np.bool_)  # no improving move (as of the last step recorded)
        # the units of each such node above its range (its keys: those nodes)
        self.units_of: dict[int, IntArray] = {}

    def forget(self, nodes: IntArray | list[int]) -> None:
        self.none[nodes] = False
        for node in np.asarray(nodes).tolist():
            self.units_of.pop(node, None)

    def record(
        self,
        cluster: Cluster,
        ranges: Ranges,
        candidates: IntArray,
        tol: float,
        touched: tuple[int, ...],
        loosened: bool,
        violation: FloatArray,
    ) -> None:
        """Update after a step that moved units off or onto the nodes `touched` (`loosened`: it used less budget);
        `violation`: the nodes' violation after it."""
        if loosened:
            self.forget(np.flatnonzero(self.none))
            return
        self.forget(list(touched))
        known = np.flatnonzero(self.none)
        if not len(known):
            return
        above = list(self.units_of)
        cols = np.array([node for node in touched if not cluster.leaving[node]], dtype=np.int64)
        if above and len(cols):
            rows = np.concatenate([self.units_of[node] for node in above])
            valid = _valid_moves(cluster, ranges, rows, cols, tol, violation)
            if valid is not None:
                self.forget(np.unique(cluster.assignment[rows[valid[0].any(axis=1)]]))
        below = known[~np.isin(known, np.array(above, dtype=np.int64))]
        if len(below):
            rows = candidates[np.isin(cluster.assignment[candidates], np.array(touched, dtype=np.int64))]
            valid = _valid_moves(cluster, ranges, rows, below, tol, violation)
            if valid is not None:
                self.forget(below[valid[0].any(axis=0)])


def _best_move(
    cluster: Cluster,
    ranges: Ranges,
    candidates: IntArray,
    tol: float,
    unmovable: _Unmovable | None = None,
    deadline: float = math.inf,
    violation: FloatArray | None = None,
) -> tuple[int, int] | None:
    """An improving single move for the worst node that has one (the most violation removed per state moved), or
    None.

    Only two kinds of move lower the violation: a unit leaving a node above its range, and a unit arriving on a node
    below it. Focusing on one node makes a round cost (its units x nodes) or (units x 1), not units x nodes. With
    `unmovable`, nodes known to have no move are passed over (see _Unmovable). None also once `deadline` has passed
    (checked before each node's search: one step may search thousands of nodes). `violation`: the nodes' violation
    now, when the caller has it."""
    if violation is None:
        violation = ranges.violation(cluster.load, cluster.capacity)
    receivable = np.flatnonzero(cluster.receivable)
    where = cluster.assignment[candidates]
    if unmovable is None:
        order = np.argsort(-violation, kind="stable")
        nodes: Iterator[int] = iter(order[: int(np.count_nonzero(violation > 0.0))].tolist())
    else:
        nodes = _worst_first(violation, unmovable.none)
    for node in nodes:
        if time.perf_counter() > deadline:
            return None
        above = bool(cluster.load[node] > ranges.hi[node])
        if above:
            rows = candidates[where == node]
            found = _move_block(cluster, ranges, rows, receivable, tol, violation)
        else:
            rows = candidates[where != node]
            found = _move_block(cluster, ranges, rows, np.array([node]), tol, violation)
        if found is not None:
            return found[1], found[2]
        if unmovable is not None:
            unmovable.none[node] = True
            if above:
                unmovable.units_of[node] = rows
    return None


def _worst_first(violation: FloatArray, passed_over: BoolArray) -> Iterator[int]:
    """The nodes outside their range and not `passed_over`, the most outside first, ties in node order (the order of
    a stable sort of the negated violations), found one at a time: a step usually needs the first only, and on
    10,000 nodes a sort of them all cost 0.4 ms a step (`nodes` of bench.reliability.deadlines)."""
    masked = np.where(passed_over | ~(violation > 0.0), -np.inf, violation)
    while True:
        node = int(np.argmax(masked))
        if not masked[node] > -np.inf:
            return
        yield node
        masked[node] = -np.inf


def _valid_moves(
    cluster: Cluster, ranges: Ranges, rows: IntArray, cols: IntArray, tol: float, violation: FloatArray
) -> tuple[BoolArray, FloatArray, FloatArray] | None:
    """Which moves of a unit of `rows` to a node of `cols` are improving and allowed (capacity cap, resources,
    budget), with their improvement and state cost; None when none is. `violation`: the nodes' violation now."""
    if not len(rows) or not len(cols):
        return None
    inst = cluster.instance
    src = cluster.assignment[rows]
    y = cluster.y[rows]
    gain_src = ranges.violation(cluster.load[src] - y, cluster.capacity, src) - violation[src]
    after = cluster.load[cols][None, :] + y[:, None]
    outside = np.maximum(after - ranges.hi[cols] - ranges.eps, 0.0) + np.maximum(
        ranges.lo[cols] - after - ranges.eps, 0.0
    )
    gain_dst = 100.0 * outside / cluster.capacity[cols] - violation[cols]
    improvement = -(gain_src[:, None] + gain_dst)
    valid = (improvement > tol) & (cols[None, :] != src[:, None])
    if not valid.any():
        return None
    valid &= cluster.mean[cols][None, :] + inst.load[rows][:, None] <= cluster.cap_load[cols][None, :]
    if cluster.usage.shape[1]:
        valid &= (
            cluster.usage[cols][None, :, :] + cluster.unit_usage[rows][:, None, :]
            <= cluster.room[cols][None, :, :]
        ).all(axis=2)
    current = inst.current[rows]
    placed = current != UNPLACED
    count = np.where(
        placed[:, None], (cols[None, :] != current[:, None]).astype(int) - (src != current)[:, None], 0
    )
    cost = count * inst.state_size[rows][:, None]
    if inst.max_migrations is not None:
        valid &= cluster.moved_count + count <= inst.max_migrations
    if inst.max_migration_cost is not None:
        valid &= cluster.moved_cost + cost <= inst.max_migration_cost * (1 + 1e-12)
    if not valid.any():
        return None
    return valid, improvement, cost


def _move_block(
    cluster: Cluster, ranges: Ranges, rows: IntArray, cols: IntArray, tol: float, violation: FloatArray
) -> tuple[float, int, int] | None:
    """The best improving move of a unit of `rows` to a node of `cols` (score, unit, node), or None."""
    found = _valid_moves(cluster, ranges, rows, cols, tol, violation)
    if found is None:
        return None
    valid, improvement, cost = found
    # (state sizes of 1e-300 make some scores inf: those steps tie, and argmax takes the first, still a valid step)
    with np.errstate(over="ignore"):
        score = np.where(
            valid, improvement / (np.maximum(cost, 0.0) + _state_unit(cluster.instance.state_size)), -np.inf
        )
    r, c = np.unravel_index(int(np.argmax(score)), score.shape)
    return float(score[r, c]), int(rows[r]), int(cols[c])


def _state_unit(state: FloatArray) -> float:
    """Added to a step's state cost before dividing by it: the mean state of a unit, so that a step that removes
    much violation for a little more state beats many tiny steps (fewer rounds), and free steps stay finite."""
    return max(float(state.mean()) if len(state) else 0.0, 1e-300)


def _best_swap(cluster: Cluster, ranges: Ranges, candidates: IntArray, tol: float) -> tuple[int, int] | None:
    """The improving swap of a unit of the worst node with a unit elsewhere, or None."""
    inst = cluster.instance
    violation = ranges.violation(cluster.load, cluster.capacity)
    violation[cluster.leaving] = -1.0  # a leaving node cannot take a unit in exchange
    s = int(np.argmax(violation))
    if violation[s] <= 0.0:
        return None
    where = cluster.assignment[candidates]
    mine = candidates[where == s]
    others = candidates[(where != s) & cluster.receivable[np.maximum(where, 0)] & (where != UNPLACED)]
    if not len(mine) or not len(others):
        return None
    mine = mine[np.argsort(-cluster.y[mine], kind="stable")[:MAX_SWAP_ROWS]]
    d = cluster.assignment[others]
    ya, yb = cluster.y[mine][:, None], cluster.y[others][None, :]
    new_s = cluster.load[s] - ya + yb
    new_d = cluster.load[d][None, :] - yb + ya
    cap = cluster.capacity

    def outside(load: FloatArray, nodes: IntArray | int) -> FloatArray:
        return np.asarray(
            100.0
            * (
                np.maximum(load - ranges.hi[nodes] - ranges.eps, 0.0)
                + np.maximum(ranges.lo[nodes] - load - ranges.eps, 0.0)
            )
            / cap[nodes]
        )

    improvement = violation[s] + violation[d][None, :] - outside(new_s, s) - outside(new_d, d[None, :])
    ma, mb = inst.load[mine][:, None], inst.load[others][None, :]
    valid = improvement > tol
    valid &= cluster.mean[s] - ma + mb <= cluster.cap_load[s]
    valid &= cluster.mean[d][None, :] - mb + ma <= cluster.cap_load[d][None, :]
    if not valid.any():
        return None
    # Budget and resources are checked on the best candidates in order (rare, and cheap per pair).
    state = inst.state_size
    # (as in _move_block: state sizes of 1e-300 make some scores inf, and those swaps tie; the fuzz bench printed the
    # overflow warning here)
    with np.errstate(over="ignore"):
        score = np.where(
            valid, improvement / (state[mine][:, None] + state[others][None, :] + _state_unit(state)), -np.inf
        )
    order = np.argsort(-score, axis=None, kind="stable")[:64]
    for flat in order:
        r, c = np.unravel_index(int(flat), score.shape)
        if not np.isfinite(score[r, c]):
            break
        a, b = int(mine[r]), int(others[c])
        node_b = int(cluster.assignment[b])
        da, ca = cluster.budget_delta(a, node_b)
        db, cb = cluster.budget_delta(b, s)
        if not cluster.affordable(da + db, ca + cb):
            continue
        if cluster.usage.shape[1]:
            exchange = cluster.unit_usage[a] - cluster.unit_usage[b]
            if (cluster.usage[s] - exchange > cluster.room[s]).any() or (
                cluster.usage[node_b] + exchange > cluster.room[node_b]
            ).any():
                continue
        return a, b
    return None


def repair(cluster: Cluster, ranges: Ranges, deadline: float, remember_unmovable: bool = True) -> int:
    """Local search on the range violation; returns the number of steps taken. Ends: every step lowers the total
    violation by more than `tol`, and the steps are capped. `remember_unmovable=False` searches every node in full
    at every step (the same steps, slower: kept as the reference of tests/test_range_repair.py)."""
    inst = cluster.instance
    candidates = np.flatnonzero(
        inst.movable & ((cluster.y > 0) | cluster.leaving[np.maximum(inst.current, 0)])
    )
    candidates = candidates[cluster.assignment[candidates] != UNPLACED]
    tol = _tolerance(ranges, cluster)
    unmovable = _Unmovable(len(cluster.capacity)) if remember_unmovable else None
    budgeted = inst.budgeted
    steps = 0
    # the nodes the last step touched, and whether it freed budget
    last: tuple[tuple[int, ...], bool] | None = None
    for steps in range(4 * inst.n_units + 100):
        if time.perf_counter() > deadline:
            return steps
        violation = ranges.violation(cluster.load, cluster.capacity)  # (once a step: read by each part below)
        if not (violation > 0.0).any():
            return steps
        if unmovable is not None and last is not None:
            unmovable.record(cluster, ranges, candidates, tol, *last, violation)
        used = (cluster.moved_count, cluster.moved_cost)
        move = _best_move(cluster, ranges, candidates, tol, unmovable, deadline, violation)
        if move is not None:
            touched = (int(cluster.assignment[move[0]]), move[1])
            cluster.move(*move)
        else:
            if time.perf_counter() > deadline:
                return steps
            swap = _best_swap(cluster, ranges, candidates, tol)
            if swap is None:
                return steps
            a, b = swap
            node_a, node_b = int(cluster.assignment[a]), int(cluster.assignment[b])
            cluster.lift(a)
            cluster.lift(b)
            cluster.place(a, node_b)
            cluster.place(b, node_a)
            touched = (node_a, node_b)
        # (without a budget, the budget used decides nothing)
        last = touched, budgeted and (cluster.moved_count < used[0] or cluster.moved_cost < used[1])
    return steps


def undo_moves(cluster: Cluster, ranges: Ranges) -> int:
    """Moved units go back to their node, largest state first, whenever no node's violation rises (scalar
    arithmetic: one check per moved unit)."""
    inst = cluster.instance
    moved = np.flatnonzero(
        (inst.current >= 0) & (cluster.assignment != inst.current) & (cluster.assignment >= 0)
    )
    tol = _tolerance(ranges, cluster)
    lo, hi, eps, capacity = ranges.lo.tolist(), ranges.hi.tolist(), ranges.eps, cluster.capacity.tolist()

    def outside(node: int, load: float) -> float:
        return 100.0 * (max(load - hi[node] - eps, 0.0) + max(lo[node] - load - eps, 0.0)) / capacity[node]

    undone = 0
    for unit in moved[np.argsort(-inst.state_size[moved], kind="stable")].tolist():
        a, b = int(cluster.assignment[unit]), int(inst.current[unit])
        if cluster.leaving[b] or not cluster.fits(unit, b):
            continue
        y = float(cluster.y[unit])
        la, lb = float(cluster.load[a]), float(cluster.load[b])
        if outside(a, la - y) <= outside(a, la) + tol and outside(b, lb + y) <= outside(b, lb) + tol:
            cluster.move(unit, b)
            undone += 1
    return undone


# --------------------------------------------------------------------------------------------------------- CP-SAT


@dataclass(frozen=True)
class RangeSolution:
    assignment: IntArray | None  # None: no plan found (see `proven_unreachable`)
    optimal: bool
    proven_unreachable: bool


class RangeModel:
    """Least state moved such that every open node ends inside [lo_j, hi_j] (CP-SAT).

    Instance: the cluster (loads, caps, budget) and the ranges. Variables: x[i, j] = unit i ends on open node j, for
    the units that may move (pinned and zero-load units on open nodes stay where the hint has them). Constraints: one
    node per unit; lo_j <= load_j <= hi_j; mean load <= the cap; the budget. Objective: state moved, then moves.
    Loads are scaled to integers with every bound tightened by the worst rounding, so a CP-SAT plan is inside the
    real range."""

    def __init__(self, cluster: Cluster, ranges: Ranges, hint: IntArray) -> None:
        self.cluster = cluster
        self.ranges = ranges
        self.hint = hint
        inst = cluster.instance
        self.nodes = np.flatnonzero(cluster.receivable)
        on_leaving = cluster.leaving[np.maximum(inst.current, 0)] & (inst.current >= 0)
        self.units = np.flatnonzero(
            inst.movable & ((cluster.y > 0) | on_leaving | (inst.current == UNPLACED))
        )

    @property
    def size(self) -> int:
        return len(self.units) * len(self.nodes)

    def solve(self, deadline: float, workers: int = 2) -> RangeSolution:
        cluster, ranges, inst = self.cluster, self.ranges, self.cluster.instance
        units, nodes = self.units, self.nodes
        var_mask = np.zeros(inst.n_units, dtype=bool)
        var_mask[units] = True
        fixed = np.flatnonzero(~var_mask)
        total = len(cluster.capacity)
        fixed_load = np.bincount(self.hint[fixed], weights=cluster.y[fixed], minlength=total)
        fixed_mean = np.bincount(self.hint[fixed], weights=inst.load[fixed], minlength=total)
        if (fixed_load[cluster.leaving] > ranges.eps).any():
            return RangeSolution(None, False, True)
        k = len(units)
        y = cluster.y[units]
        m = inst.load[units]
        # (finite scales, see solvers.integer_scaling)
        load_scale = finite_scale(
            INTEGER_RANGE, max(float(cluster.y.sum()), float(ranges.hi[nodes].max(initial=0.0)))
        )
        mean_scale = finite_scale(
            INTEGER_RANGE, max(float(inst.load.sum()), float(cluster.cap_load[nodes].max()))
        )
        y_int = np.rint(y * load_scale).astype(np.int64)
        m_int = np.rint(m * mean_scale).astype(np.int64)
        slack = 0.5 * k + 1

        cp = cp_model.CpModel()
        x: dict[tuple[int, int], cp_model.IntVar] = {}
        allowed = m[:, None] <= cluster.cap_load[nodes][None, :] - fixed_mean[nodes][None, :]
        for a in range(k):
            for b in np.flatnonzero(allowed[a]).tolist():
                x[a, b] = cp.new_bool_var("")
        for a in range(k):
            row = [x[a, b] for b in range(len(nodes)) if (a, b) in x]
            if not row:
                return RangeSolution(None, False, True)
            cp.add_exactly_one(row)
        for b, node in enumerate(nodes.tolist()):
            col = [(a, x[a, b]) for a in range(k) if (a, b) in x]
            vs = [v for _, v in col]
            load_expr = cp_model.LinearExpr.weighted_sum(vs, [int(y_int[a]) for a, _ in col])
            low = math.ceil((ranges.lo[node] - ranges.eps - fixed_load[node]) * load_scale + slack)
            high = math.floor((ranges.hi[node] + ranges.eps - fixed_load[node]) * load_scale - slack)
            cp.add(load_expr >= low)
            cp.add(load_expr <= high)
            mean_expr = cp_model.LinearExpr.weighted_sum(vs, [int(m_int[a]) for a, _ in col])
            cp.add(mean_expr <= math.floor((cluster.cap_load[node] - fixed_mean[node]) * mean_scale - slack))
        # migrations: a placed unit moves unless it ends on its current node
        current = inst.current[units]
        col_of = {int(node): b for b, node in enumerate(nodes.tolist())}
        stay = [x.get((a, col_of.get(int(current[a]), -1))) for a in range(k)]
        placed = current != UNPLACED
        state = inst.state_size[units]
        moved_terms = [(a, stay[a]) for a in range(k) if placed[a]]
        if inst.max_migrations is not None:
            forced = sum(1 for a, s in moved_terms if s is None)
            staying = [s for _, s in moved_terms if s is not None]
            cp.add(len(staying) - cp_model.LinearExpr.sum(staying) <= inst.max_migrations - forced)
        if inst.max_migration_cost is not None and moved_terms:
            cost_scale = finite_scale(1e9, max(float(state.sum()), inst.max_migration_cost))
            cost_int = np.ceil(state * cost_scale).astype(np.int64)
            forced_cost = sum(int(cost_int[a]) for a, s in moved_terms if s is None)
            pairs = [(s, int(cost_int[a])) for a, s in moved_terms if s is not None]
            room = math.floor(inst.max_migration_cost * cost_scale)
            expr = sum(c for _, c in pairs) - cp_model.LinearExpr.weighted_sum(
                [s for s, _ in pairs], [c for _, c in pairs]
            )
            cp.add(expr <= room - forced_cost)
        # objective: state moved (scaled to 1e6), then the number of moves
        weight = np.rint(state / max(float(state.sum()), 1e-300) * 1e6).astype(np.int64) * (k + 1) + 1
        stay_pairs = [(s, int(weight[a])) for a, s in moved_terms if s is not None]
        if stay_pairs:
            cp.maximize(
                cp_model.LinearExpr.weighted_sum([s for s, _ in stay_pairs], [w for _, w in stay_pairs])
            )
        for (a, b), var in x.items():
            cp.add_hint(var, int(self.hint[units[a]] == nodes[b]))

        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = max(0.005, deadline - time.perf_counter())
        solver.parameters.num_workers = workers
        solver.parameters.log_search_progress = False
        status = solver.solve(cp)
        if status == cp_model.INFEASIBLE:
            return RangeSolution(None, False, True)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return RangeSolution(None, False, False)
        assignment = self.hint.copy()
        for (a, b), var in x.items():
            if solver.value(var):
                assignment[units[a]] = nodes[b]
        return RangeSolution(assignment, status == cp_model.OPTIMAL, False)


def apply_assignment(cluster: Cluster, assignment: IntArray) -> None:
    """Make the cluster hold `assignment` (lift every unit that changes, then place it)."""
    changed = np.flatnonzero(cluster.assignment != assignment)
    for unit in changed.tolist():
        cluster.lift(unit)
    for unit in changed.tolist():
        cluster.place(unit, int(assignment[unit]))


def within(cluster: Cluster, ranges: Ranges, nodes: BoolArray) -> bool:
    return not bool((ranges.violation(cluster.load, cluster.capacity) > 0.0)[nodes].any())

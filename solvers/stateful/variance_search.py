"""Local search on CLB's own objective: the summed variance of instance loads over the windows,
F = sum_t var_j(Z_jt), Z_jt = load of staying node j in window t x (reference capacity / capacity_j).

With equal capacities Z is the load and F is the paper's hbar(F) = sum_t var(L_t) (Guo & Zhou, Section 4); scaling by
capacity makes a node of twice the capacity carry twice the load at the optimum (capacity-aware).

Exact move deltas without recomputing F: with G = X Z^T (units x nodes), q_i = |x_i|^2, r_i = x_i . mu (mu the
mean over nodes per window) and n staying nodes, moving unit i from a to b changes F by
    (1/n) (-2 s_a G_ia + s_a^2 q_i + 2 s_b G_ib + s_b^2 q_i) - (2 d r_i + d^2 q_i),   d = (s_b - s_a) / n,
and a swap of i (on a) with k (on b) by the two moves plus (2 d^2 - (2/n)(s_a^2 + s_b^2)) x_i . x_k.
After a move, G, Z, mu and r are updated in O(units x windows).

Every accepted step lowers F by more than a relative tolerance, and the steps are capped, so the search ends. Among
the steps that lower F the most (within 1e-9), the one moving the least state wins: state moved is the second
objective. Budget, pinned units, the capacity cap and resource capacities are kept on every step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from solvers.instance import UNPLACED, AssignmentInstance, BoolArray, FloatArray, IntArray
from solvers.stateful.settle import resource_arrays

# Swaps keep a movable x movable product: 8 MB at 1,000 units. With 2,000 (32 MB, and eight more such temporaries
# before the blocks below) a 0.1 MiB CLB body peaked at 554 MiB in the service (measured 29 Nov 2026; its cap is
# 30 x body + 300 MiB = 303).
MAX_SWAP_UNITS = 1_000
# A step's temporaries (unit x column, unit x unit) are made in row blocks of at most this many cells (256 KiB of
# float64 each), so the search's memory is its fixed matrices (G, the product) plus a few blocks, whatever the size.
# Measured (29 Nov 2026, seventh session) on the swap step at 1,000 units: 2^17 cells 16-20 MiB traced, 2^16 12-16,
# 2^15 10-14; steps no slower (blocks that stay in the cache: 4.5-5.0 ms a step at 1,000 x 40 x 120 windows against
# 4.8 before the blocks, 4.6-5.1 at 3,000 x 100 x 24 against 5.6).
BLOCK_CELLS = 1 << 15
TIE = 1e-9


def row_blocks(rows: int, width: int) -> list[slice]:
    """Slices of range(rows) whose blocks of `width` cells a row hold at most BLOCK_CELLS cells (one row at least)."""
    step = max(1, BLOCK_CELLS // max(1, width))
    return [slice(lo, min(rows, lo + step)) for lo in range(0, rows, step)]


@dataclass
class VarianceSearch:
    instance: AssignmentInstance
    series: FloatArray  # (U, W) the windows the objective is about
    nodes: IntArray  # staying node indices (columns)
    scale: FloatArray  # (n,) reference capacity / capacity
    col: IntArray  # (U,) column of each unit, -1 while not on a staying node
    z: FloatArray  # (n, W)
    g: FloatArray  # (U, n)
    q: FloatArray  # (U,)
    mu: FloatArray  # (W,)
    r: FloatArray  # (U,)
    mean_load: FloatArray  # (n,) mean load per column (capacity cap)
    cap_load: FloatArray  # (n,)
    usage: FloatArray  # (n, R)
    unit_usage: FloatArray  # (U, R)
    room: FloatArray  # (n, R)
    moved_count: int
    moved_cost: float
    product: FloatArray | None = None  # (m, m) x_i . x_k of the movable units, for swaps (computed once)

    @classmethod
    def start(cls, instance: AssignmentInstance, series: FloatArray, assignment: IntArray) -> VarianceSearch:
        nodes = np.flatnonzero(instance.active)
        capacity = instance.capacity[nodes]
        scale = float(capacity.mean()) / capacity
        col_of = np.full(instance.n_nodes + 1, -1, dtype=np.int64)
        col_of[nodes] = np.arange(len(nodes))
        col = col_of[np.where(assignment >= 0, assignment, instance.n_nodes)]
        on = col >= 0
        z = np.zeros((len(nodes), series.shape[1]))
        np.add.at(z, col[on], series[on])
        z *= scale[:, None]
        unit_usage, capacity_r = resource_arrays(instance)
        usage = np.zeros((len(nodes), unit_usage.shape[1]))
        np.add.at(usage, col[on], unit_usage[on])
        mu = z.mean(axis=0)
        placed = instance.current >= 0
        moved = placed & (assignment != instance.current)
        return cls(
            instance=instance,
            series=series,
            nodes=nodes,
            scale=scale,
            col=col,
            z=z,
            g=series @ z.T,
            q=(series * series).sum(axis=1),
            mu=mu,
            r=series @ mu,
            mean_load=np.bincount(col[on], weights=instance.load[on], minlength=len(nodes)).astype(
                np.float64
            ),
            cap_load=instance.utilization_cap() / 100.0 * capacity * (1 + 1e-12),
            usage=usage,
            unit_usage=unit_usage,
            room=capacity_r[nodes] * (1 + 1e-9) + 1e-9,
            moved_count=int(moved.sum()),
            moved_cost=float(instance.state_size[moved].sum()),
        )

    @property
    def objective(self) -> float:
        return float(self.z.var(axis=0).sum())

    def assignment(self) -> IntArray:
        out = np.where(self.col >= 0, self.nodes[np.maximum(self.col, 0)], UNPLACED)
        off = self.col < 0
        out[off] = self.instance.current[off]  # units not on a staying node stay where they are
        return out.astype(np.int64)

    # ------------------------------------------------------------------------------------------------ deltas

    def _insert_delta(self, units: IntArray) -> FloatArray:
        """(len(units), n): change of F if each unit (not on a staying node) is added to each column."""
        n = len(self.nodes)
        s = self.scale[None, :]
        g, q, r = self.g[units], self.q[units][:, None], self.r[units][:, None]
        return (2 * s * g + s * s * q) / n - (2 * (s / n) * r + (s / n) ** 2 * q)

    def _move_delta(self, units: IntArray) -> FloatArray:
        """(len(units), n): change of F if each unit (on a staying node) moves to each column."""
        n = len(self.nodes)
        a = self.col[units]
        sa = self.scale[a][:, None]
        sb = self.scale[None, :]
        g, q, r = self.g[units], self.q[units][:, None], self.r[units][:, None]
        ga = g[np.arange(len(units)), a][:, None]
        d = (sb - sa) / n
        return (-2 * sa * ga + sa * sa * q + 2 * sb * g + sb * sb * q) / n - (2 * d * r + d * d * q)

    def _feasible(self, units: IntArray) -> BoolArray:
        """(len(units), n): cap, resources and budget allow each unit to end on each column."""
        inst = self.instance
        ok = self.mean_load[None, :] + inst.load[units][:, None] <= self.cap_load[None, :]
        if self.usage.shape[1]:
            ok &= (self.usage[None, :, :] + self.unit_usage[units][:, None, :] <= self.room[None, :, :]).all(
                axis=2
            )
        count, cost = self._budget(units)
        if inst.max_migrations is not None:
            ok &= self.moved_count + count <= inst.max_migrations
        if inst.max_migration_cost is not None:
            ok &= self.moved_cost + cost <= inst.max_migration_cost * (1 + 1e-12)
        return np.asarray(ok)

    def _budget(self, units: IntArray) -> tuple[IntArray, FloatArray]:
        inst = self.instance
        current = inst.current[units]
        placed = current != UNPLACED
        here = self.assignment()[units]
        target = self.nodes[None, :]
        count = np.where(
            placed[:, None], (target != current[:, None]).astype(np.int64) - (here != current)[:, None], 0
        )
        return count, count * inst.state_size[units][:, None]

    # ------------------------------------------------------------------------------------------------- steps

    def _shift(self, unit: int, column: int, sign: float) -> None:
        """Add (sign 1) or remove (sign -1) the unit's series to a column, updating Z, G, mu and r."""
        n = len(self.nodes)
        x = self.series[unit]
        s = self.scale[column] * sign
        px = self.series @ x
        self.z[column] += s * x
        self.g[:, column] += s * px
        self.mu += s * x / n
        self.r += (s / n) * px
        self.mean_load[column] += sign * self.instance.load[unit]
        self.usage[column] += sign * self.unit_usage[unit]

    def move(self, unit: int, column: int) -> None:
        inst = self.instance
        current = int(inst.current[unit])
        before = self.assignment()[unit]
        if self.col[unit] >= 0:
            self._shift(unit, int(self.col[unit]), -1.0)
        self._shift(unit, column, 1.0)
        self.col[unit] = column
        if current != UNPLACED:
            change = int(self.nodes[column] != current) - int(before != current)
            self.moved_count += change
            self.moved_cost += change * float(inst.state_size[unit])

    def place_all(self, units: IntArray) -> list[int]:
        """Units not on a staying node (draining or unplaced), largest first, each where F rises least;
        returns those the cap, resources or budget leave where they are."""
        stuck = []
        for unit in units[np.argsort(-self.instance.load[units], kind="stable")]:
            one = np.array([unit])
            delta = np.where(self._feasible(one), self._insert_delta(one), np.inf)[0]
            if not np.isfinite(delta).any():
                stuck.append(int(unit))
                continue
            self.move(int(unit), int(np.argmin(delta)))
        return stuck

    def improve(self, deadline: float, max_steps: int) -> int:
        """Best-improvement moves, then swaps when no move helps; returns the steps taken."""
        inst = self.instance
        movable = np.flatnonzero(inst.movable & (self.col >= 0))
        if not len(movable) or len(self.nodes) < 2:
            return 0
        tol = 1e-12 * max(self.objective, 1e-300)
        try:
            for step in range(max_steps):
                if time.perf_counter() > deadline:
                    return step
                best_move = self._best_move(movable, tol)
                if best_move is not None:
                    self.move(*best_move)
                    continue
                swap = self._best_swap(movable, tol) if len(movable) <= MAX_SWAP_UNITS else None
                if swap is None:
                    return step
                i, k = swap
                a, b = int(self.col[i]), int(self.col[k])
                self.move(i, b)
                self.move(k, a)
            return max_steps
        finally:
            self.product = None  # (m x m: not kept beyond the search)

    def _step_deltas(self, units: IntArray) -> FloatArray:
        """(len(units), n): change of F of each allowed move, inf where not allowed or not a move."""
        delta = np.where(self._feasible(units), self._move_delta(units), np.inf)
        delta[np.arange(len(units)), self.col[units]] = np.inf
        return delta

    def _best_move(self, movable: IntArray, tol: float) -> tuple[int, int] | None:
        """(unit, column) of the move that lowers F the most (within TIE, the one moving the least state; then the
        first in unit order), or None when no move lowers F by more than tol. In row blocks: a second pass
        recomputes only the blocks that hold a move within TIE of the best. Compiled where it can be
        (solvers/stateful/variance_kernels.py: the same choice)."""
        if _kernels is not None and not self.usage.shape[1]:
            return self._best_move_compiled(movable, tol, _kernels)
        n = len(self.nodes)
        blocks = row_blocks(len(movable), n * max(1, self.usage.shape[1]))
        lowest: list[float] = []
        only: FloatArray | None = None
        for block in blocks:
            delta = self._step_deltas(movable[block])
            lowest.append(float(delta.min()))
            only = delta if len(blocks) == 1 else None
        best = float(np.min(lowest))  # (a NaN anywhere stops the search, as one matrix's min did)
        if not best < -tol:
            return None
        bound = best * (1 - TIE)
        state = self.instance.state_size
        choice, cheapest = None, np.inf
        for block, low in zip(blocks, lowest, strict=True):
            if low > bound:
                continue
            delta = only if only is not None else self._step_deltas(movable[block])
            cost = np.where(delta <= bound, state[movable[block]][:, None], np.inf)
            flat = int(np.argmin(cost))
            if cost.flat[flat] < cheapest:
                cheapest, choice = float(cost.flat[flat]), (int(movable[block][flat // n]), flat % n)
        return choice

    def _best_move_compiled(
        self, movable: IntArray, tol: float, kernels: ModuleType
    ) -> tuple[int, int] | None:
        inst = self.instance
        max_cost = inst.max_migration_cost
        budget = np.array(
            [
                self.moved_count,
                self.moved_cost,
                -1 if inst.max_migrations is None else inst.max_migrations,
                np.inf if max_cost is None else max_cost * (1 + 1e-12),
            ],
            dtype=np.float64,
        )
        unit, column = kernels.best_move(
            movable,
            self.col,
            self.scale,
            self.g,
            self.q,
            self.r,
            inst.load,
            self.mean_load,
            self.cap_load,
            inst.current,
            self.nodes,
            inst.state_size,
            budget,
            tol,
            TIE,
        )
        return None if unit < 0 else (int(unit), int(column))

    def _best_swap(self, movable: IntArray, tol: float) -> tuple[int, int] | None:
        """The first allowed swap among the 64 that lower F the most (ties in (i, k) order), or None. The
        (i, k) matrices are made in row blocks of i; compiled where it can be (solvers/stateful/variance_kernels.py:
        the same 64)."""
        n, m = len(self.nodes), len(movable)
        by_column = np.empty((n, m))  # [c, i] = change of F of i moving to column c (row gathers below: fast)
        if _kernels is not None:
            _kernels.move_changes(movable, self.col, self.scale, self.g, self.q, self.r, by_column)
        else:
            for block in row_blocks(m, n):
                by_column[:, block] = self._move_delta(movable[block]).T
        cols = self.col[movable]
        sa = self.scale[cols]
        if self.product is None:
            self.product = (
                self.series[movable] @ self.series[movable].T
            )  # fixed: the movable set never changes
        load = self.instance.load[movable]
        mean_load, cap_load = self.mean_load[cols], self.cap_load[cols]
        if _kernels is not None:  # the same 64 swaps in the same order, without the blocks' temporaries
            value, cell = np.empty(64), np.empty(64, dtype=np.int64)
            found = _kernels.best_swaps(
                cols, sa, by_column, self.product, load, mean_load, cap_load, n, tol, value, cell
            )
            return self._first_allowed_swap(movable, cell[:found])
        values: list[FloatArray] = []
        cells: list[IntArray] = []
        for block in row_blocks(m, m):
            single = by_column[cols, block].T  # [i, k]: i moving to k's column
            single_back = by_column[cols[block]]  # [i, k]: k moving to i's column
            d = (sa[None, :] - sa[block, None]) / n
            swap = single + single_back
            swap += (2 * d * d - (2.0 / n) * (sa[block, None] ** 2 + sa[None, :] ** 2)) * self.product[block]
            exchange = load[None, :] - load[block, None]  # k's load arrives on i's column
            ok = (cols[block, None] != cols[None, :]) & (swap < -tol)
            ok &= mean_load[block, None] + exchange <= cap_load[block, None]
            ok &= mean_load[None, :] - exchange <= cap_load[None, :]
            flat = np.flatnonzero(ok)
            if not len(flat):
                continue
            value = swap.ravel()[flat]
            first = _first_64(value, flat)
            values.append(value[first])
            cells.append(flat[first] + block.start * m)
        if not values:
            return None
        value, cell = np.concatenate(values), np.concatenate(cells)
        return self._first_allowed_swap(movable, cell[_first_64(value, cell)])

    def _first_allowed_swap(self, movable: IntArray, cells: IntArray) -> tuple[int, int] | None:
        """The first swap of `cells` (i * len(movable) + k, in order) that resources and the budget allow."""
        for cell in cells.tolist():
            i, k = divmod(cell, len(movable))
            ui, uk = int(movable[i]), int(movable[k])
            if self._swap_allowed(ui, uk):
                return ui, uk
        return None

    def _swap_allowed(self, i: int, k: int) -> bool:
        inst = self.instance
        a, b = int(self.col[i]), int(self.col[k])
        if self.usage.shape[1]:
            exchange = self.unit_usage[k] - self.unit_usage[i]
            if (self.usage[a] + exchange > self.room[a]).any() or (
                self.usage[b] - exchange > self.room[b]
            ).any():
                return False
        here = self.assignment()
        count, cost = 0, 0.0
        for unit, target in ((i, self.nodes[b]), (k, self.nodes[a])):
            current = int(inst.current[unit])
            if current != UNPLACED:
                change = int(target != current) - int(here[unit] != current)
                count += change
                cost += change * float(inst.state_size[unit])
        if inst.max_migrations is not None and self.moved_count + count > inst.max_migrations:
            return False
        return inst.max_migration_cost is None or self.moved_cost + cost <= inst.max_migration_cost * (
            1 + 1e-12
        )


# CLB's search steps compiled with numba (solvers/stateful/variance_kernels.py), once `warm_up` has loaded them in
# this process; until then, and where numba cannot compile, the numpy code above (the same choices).
_kernels: ModuleType | None = None


def warm_up() -> bool:
    """Load the compiled search steps in this process (idempotent); True when they are ready."""
    global _kernels
    if _kernels is None:
        from solvers.compiled import load_kernels

        _kernels = load_kernels(
            "solvers.stateful.variance_kernels", "clb's search runs without its compiled kernel"
        )
    return _kernels is not None


def _first_64(value: FloatArray, cell: IntArray) -> IntArray:
    """Indices of the 64 smallest values, ties by cell, in that order (a stable sort's first 64, without sorting
    them all: every value up to the 64th smallest is kept, ties at the edge included, then sorted)."""
    if len(value) > 64:
        edge = np.partition(value, 63)[63]
        within = np.flatnonzero(value <= edge)
        return within[np.lexsort((cell[within], value[within]))][:64]
    return np.lexsort((cell, value))


def summed_variance(instance: AssignmentInstance, series: FloatArray, assignment: IntArray) -> float:
    """F of an assignment (units not on a staying node count nowhere)."""
    return VarianceSearch.start(instance, series, assignment).objective

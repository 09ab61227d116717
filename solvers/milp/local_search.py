"""Budget-aware local search on the MILP objective: a descent whose steps work inside a spent budget, and a
perturbation that sends migrations home.

Every step starts at the node that sets the load distance d (the worst staying node) and is evaluated exactly on
the nodes it touches; it is taken only if every touched staying node ends below d - TOLERANCE, so the number of
nodes at the current d (or d itself) goes down with every step. Steps, vectorised:
- a move of one unit off the worst node to any staying node (or, when it is underloaded, of any unit onto it);
  a unit may always go back to its original node, a draining one included: that is a refund, not a migration;
- a swap of a unit of the worst node with a unit of any node on the other side of the mean (all of them, as many as
  fit in SWAP_ELEMENTS pairs, the most opposite first);
- a compound budget-neutral step: send one migrated unit home (refund) and make one of the best moves the budget
  did not allow;
- under a cost budget, a funded move: a budget-blocked move at the worst node paid for by several funds at once
  (refunds, or twin exchanges: a migration's route taken over by a cheaper unit of its home), chosen greedily,
  each only if every node the step touches so far stays below d;
- under a cost budget, an ejection chain: a move at the worst node that would push its partner past d, and a
  migrated unit (moving it again is free) that then leaves the partner (or fills it, when the worst node is under).
Moves come first, then compound steps, then swaps, then funded moves, then chains and twins.
The descent stops when no step helps, at `max_steps`, or at the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import ModuleType

import numpy as np

from solvers.baselines import BudgetTracker
from solvers.instance import AssignmentInstance, BoolArray, FloatArray, IntArray
from solvers.milp.bounds import log_ratio

TOLERANCE = 1e-9  # points: a step must lower every touched node below d by more than this
PLATEAU_HAIR = 1e-9  # relative: nodes this close to d count as at d (plateau_key)
SWAP_ELEMENTS = 40_000  # pairs evaluated per swap step
MIGRATION_NODES = 256  # nodes of migrated units tried as partners of compound steps
SHAVE_BATCH = 64  # largest-load-first moves made at once on large clusters (at most an eighth of the nodes)
NEAR_NODES = 64  # destinations (sources) of single moves: the least (most) utilized nodes, besides refunds
COMPOUND_MOVES = 48  # budget-blocked moves tried with every possible refund
COMPOUND_REFUNDS = 128  # refunds paired with the blocked moves besides those sharing a node with one of them
RESOURCE_TRIES = 16  # candidates checked against resource caps before giving up on a step
CHAIN_FIRST_LINKS = 256  # first links (the move at the worst node) of ejection chains tried, the best first
TWINS = 3  # cheaper units of a migration's home tried in its place (cost budgets), the closest in load first
TWIN_MIGRATIONS = 64  # migrations tried for a cheaper twin per step at most
FILL_NODES = 64  # destinations (under nodes) tried per step of the band repair: the least utilized
FILL_UNITS = 64  # units of a landing size tried per under node and step of the band repair
PAIR_UNITS = 12  # units of two nodes re-partitioned exactly by pair_balance (2^12 splits), the largest
PAIR_SPLITS = 20_000  # re-partitions of one pair_balance call at most
# splits one compiled scan of pairs evaluates at most (~1 ms) before the deadline is checked
PAIR_WORK = 1 << 16
SEEN_PLANS = 1_000_000  # plans remembered by the descents of one call at most (a 64-bit hash each: ~80 MB)
# units_on by the kernels' scan of the assignment (~1 ns a unit) up to this many units, the index beyond
UNITS_SCANNED = 65_536
CHAIN_SECOND_LINKS = 64  # migrated units tried as the second link of a chain that fills a node (at most)
# Funded moves (cost budgets): a budget-blocked move at the worst node paid for by several funds (refunds, or twin
# exchanges that keep a migration's route with a cheaper unit of its home), chosen greedily, exact on every node.
FUNDS = 8  # funds per step at most
# Distinct units of blocked moves tried per step (the cheapest first), each to its best destination and to the
# nodes of the FUND_NODES largest funds (where a fund's change can offset the move's).
FUNDED_UNITS = 16
FUND_NODES = 8
FUNDED_PAIRS = 64  # blocked moves tried per step at most


# The kernels' arguments for a node's change: share, capacity, utilizations, staying, all staying, mean, cap limit
EvaluationArgs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool, float, float]

# The compiled evaluation kernels (solvers/milp/kernels.py), once warm_up() has compiled or loaded them in this
# process; until then (and in the reference tests) the search runs the numpy code they replace, same decisions.
_kernels: ModuleType | None = None


def warm_up() -> bool:
    """Compile the descent's kernels (or load them from numba's on-disk cache) in this process, so that every
    later search in it, and in processes forked from it, uses them; True when they are ready. Call it once where
    no request's clock runs (the service process before it forks its solver workers): a compile takes 11-16 s on an
    empty cache and 0.4-0.8 s from the cache (measured on this 2-core machine), which is why a search never
    triggers it. Idempotent. When numba is missing or cannot compile or cache here (e.g. no writable cache
    directory: set NUMBA_CACHE_DIR), it warns and returns False, and searches run the numpy code (the same
    decisions, slower)."""
    global _kernels
    if _kernels is None:
        from solvers.compiled import load_kernels

        _kernels = load_kernels("solvers.milp.kernels", "the MILP descent runs without its compiled kernels")
    return _kernels is not None


def kernels_ready() -> bool:
    """Whether warm_up() has run in this process (searches then use the compiled kernels)."""
    return _kernels is not None


# The plan's hash (the descents' memory of plans): the sum, mod 2^64, of a mixed 64-bit key per (unit, node), so a
# move updates it in O(1) (hashing the whole assignment per step cost 0.3 ms at 100,000 units).
_MASK = (1 << 64) - 1
_MIX = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9)


def _placement_key(unit: int, node: int, n_nodes: int) -> int:
    """The mixed key of `unit` on `node` (Python integers; _placement_keys is the same over arrays)."""
    x = ((unit * (n_nodes + 1) + node + 1) * _MIX[0]) & _MASK
    x ^= x >> 29
    x = (x * _MIX[1]) & _MASK
    return x ^ (x >> 32)


def _placement_keys(units: IntArray, nodes: IntArray, n_nodes: int) -> int:
    """The sum, mod 2^64, of the keys of units on nodes (uint64 arithmetic wraps as the masks above do)."""
    keys = units.astype(np.uint64) * np.uint64(n_nodes + 1) + (nodes + 1).astype(np.uint64)
    x = keys * np.uint64(_MIX[0])
    x ^= x >> np.uint64(29)
    x *= np.uint64(_MIX[1])
    x ^= x >> np.uint64(32)
    return int(x.sum(dtype=np.uint64))


def _tile(values: IntArray, times: int) -> IntArray:
    """np.tile(values, times) for a 1-D array, in one C call (np.tile's Python wrapper costs more than the copy at
    the sizes of a step)."""
    return values[None, :].repeat(times, axis=0).ravel()


def _indices(mask: BoolArray) -> IntArray:
    """np.flatnonzero(mask) for a 1-D array, in one C call (np.flatnonzero's Python wrapper costs more than the
    scan at the sizes of a step)."""
    return mask.nonzero()[0]


def _first_of_runs(values: IntArray) -> IntArray:
    """Positions where a run of equal values starts (values grouped)."""
    return _indices(np.concatenate(([True], values[1:] != values[:-1])))


def _pairs(units: IntArray, nodes: IntArray) -> tuple[IntArray, IntArray]:
    """Every (unit, node) pair."""
    return units.repeat(len(nodes)), _tile(nodes, len(units))


def _ranges(starts: IntArray, counts: IntArray) -> IntArray:
    """The ranges starts[i] .. starts[i] + counts[i] - 1 end to end (counts >= 0), in a few C calls: each
    position's offset within its range is its index minus the number of positions before its range."""
    return np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))


def _lower_quartile(values: FloatArray) -> float:
    """np.quantile(values, 0.25) (its default, linear method; at least two values), to the bit, without its Python
    overhead (0.17 ms a call, the band repair's dearest line under cost budgets): the same index, weight and lerp,
    and the same partition (numpy 2's kth: 0, -1 and the two neighbours). Why not a sort: equal values such as 0.0
    and -0.0 may land in another order, and the lerp then returned -0.0 where numpy returned 0.0 (a fresh-random
    run of the bit-for-bit test, 2 Dec; the two compare equal, so no choice changed)."""
    virtual = (len(values) - 1) * 0.25
    below = int(virtual)
    weight = virtual - below
    ordered = np.partition(values, np.unique(np.array([0, -1, below, below + 1])))
    a, b = float(ordered[below]), float(ordered[below + 1])
    step = b - a
    return a + step * weight if weight < 0.5 else b - step * (1 - weight)


def _least(values: FloatArray, count: int) -> IntArray:
    """The positions of the `count` smallest of `values`, in order: _smallest(index, value, count) is
    index[_least(value[index], count)], the same calls on the same array."""
    if len(values) > count:
        positions = values.argpartition(count - 1)[:count]
        return positions[values[positions].argsort(kind="stable")]
    return values.argsort(kind="stable")


def efficiency_order(index: IntArray, gain: FloatArray, delta_c: FloatArray) -> IntArray:
    """The candidates `index` best first under a cost budget (LocalSearch._rank, kernels.rank_by_efficiency): by
    gain per unit of state spent, free steps (delta_c <= 0) first as infinitely efficient, then by gain, then in
    their order. A paid step whose quotient overflows (a gain of 1e23 points over a state of 5e-324) comes right
    after the free steps, ranked among its kind by the quotient scaled by 2^-1200 (exact powers of two, so the
    scaled quotients keep the true order; no float warning). Why: as inf it tied with the free steps, and numpy
    warned (the fuzz bench's run 15: a 500 under resource caps, where this numpy code runs; reproduced 2 Dec).
    Without such a quotient the order is the plain lexsort's, as before. Not bounds.log_ratio, which _pair_fit
    uses for the same overflow: this order must equal the kernel's bit for bit, and numba's log and numpy's may
    differ in the last bit, where the scaled quotient is one IEEE division in both."""
    cost, gains = delta_c[index], gain[index]
    paid = cost > 0
    with np.errstate(over="ignore"):
        efficiency = np.where(paid, gains / np.where(paid, cost, 1.0), np.inf)
    beyond = paid & np.isinf(efficiency)
    if not beyond.any():
        return index[np.lexsort((-gains, -efficiency))]
    kind = np.where(paid, np.where(beyond, 1, 2), 0)  # free, overflowing, finite
    value = np.where(paid, efficiency, 0.0)
    value[beyond] = (gains[beyond] * 2.0**-600) / (cost[beyond] * 2.0**600)
    return index[np.lexsort((-gains, -value, kind))]


def _fund_pairs(
    pairs: tuple[IntArray, IntArray, FloatArray, FloatArray, IntArray, IntArray, FloatArray],
    funds: tuple[IntArray, IntArray, FloatArray, FloatArray, IntArray, FloatArray, IntArray, IntArray],
    util: FloatArray,
    staying: BoolArray,
    mean: float,
    cap_limit: float,
    limit: float,
    max_funds: int,
) -> tuple[FloatArray, IntArray]:
    """The greedy of funded moves (the reference of kernels.fund_pairs, the same operations in the same order).

    Per pair (a blocked move: source, destination, the changes there, its unit, the count and cost it needs beyond
    the budget), the funds are taken in their order (the largest first) while the budget is short: a fund is
    taken when its unit and twin are not used by the step yet and both its nodes, with every change the step
    makes there so far, end inside `limit` (staying nodes) and within the cap (a node that gains). Returns each
    pair's worst deviation over the nodes it touches (inf: not funded) and the funds it takes (-1 padded)."""
    # Python lists (the same doubles and integers): element access on them costs a fraction of numpy's
    pair_src, pair_dst, pair_out, pair_in, pair_unit, need_n0, need_c0 = (part.tolist() for part in pairs)
    fund_x, fund_h, fund_out, fund_in, fund_n, fund_c, fund_unit, fund_twin = (
        part.tolist() for part in funds
    )
    util_of, staying_of = util.tolist(), staying.tolist()
    worst = np.full(len(pair_src), np.inf)
    chosen = np.full((len(pair_src), max_funds), -1, dtype=np.int64)
    for p in range(len(pair_src)):
        s, t = pair_src[p], pair_dst[p]
        total = {s: pair_out[p]}
        total[t] = total.get(t, 0.0) + pair_in[p]
        used = [pair_unit[p]]
        need_n, need_c = need_n0[p], need_c0[p]
        taken = 0
        for f in range(len(fund_x)):
            if (need_n <= 0 and need_c <= 0.0) or taken == max_funds:
                break
            unit, twin = fund_unit[f], fund_twin[f]
            if unit in used or (twin >= 0 and twin in used):
                continue
            a, b = fund_x[f], fund_h[f]
            ta, tb = total.get(a, 0.0) + fund_out[f], total.get(b, 0.0) + fund_in[f]
            after_a, after_b = util_of[a] + ta, util_of[b] + tb
            if staying_of[a] and not abs(after_a - mean) < limit:
                continue
            if staying_of[b] and not abs(after_b - mean) < limit:
                continue
            if not (ta <= 1e-12 or after_a <= cap_limit) or not (tb <= 1e-12 or after_b <= cap_limit):
                continue
            total[a], total[b] = ta, tb
            used.append(unit)
            if twin >= 0:
                used.append(twin)
            chosen[p, taken] = f
            taken += 1
            need_n -= fund_n[f]
            need_c -= fund_c[f]
        if taken and need_n <= 0 and need_c <= 0.0:
            value = 0.0
            for node, change in total.items():
                if staying_of[node]:
                    value = max(value, abs(util_of[node] + change - mean))
            worst[p] = value
    return worst, chosen


def _lowest(index: IntArray, value: FloatArray, count: int) -> IntArray:
    """The `count` entries of `index` with the smallest `value`, in order, ties in the order of `index`
    (kernels.least_of)."""
    return index[value[index].argsort(kind="stable")[:count]]


def _smallest(index: IntArray, value: FloatArray, count: int) -> IntArray:
    """The `count` entries of `index` with the smallest `value`, in order (argpartition first: index may be long)."""
    if len(index) > count:
        index = index[value[index].argpartition(count - 1)[:count]]
    return index[value[index].argsort(kind="stable")]


_SPLITS: dict[int, BoolArray] = {}


def _ordered_sum(values: FloatArray) -> float:
    """The sum of `values` added in their order from 0.0 (numpy's sum adds in pairs beyond 8 values)."""
    total = 0.0
    for value in values.tolist():
        total += value
    return total


def _split_sums(masks: BoolArray, values: FloatArray) -> FloatArray:
    """Per row of `masks`, the sum of the `values` it marks, added in their order from 0.0 (0.0 added where a value is
    not marked; a matrix product's order of additions is the BLAS library's)."""
    sums = np.zeros(len(masks))
    for j, value in enumerate(values.tolist()):
        sums += np.where(masks[:, j], value, 0.0)
    return sums


def _split_masks(n: int) -> BoolArray:
    """Every split of n units between two nodes, (2^n, n): True where the unit is on the second node (cached)."""
    if n not in _SPLITS:
        _SPLITS[n] = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(np.bool_)
    return _SPLITS[n]


class LocalSearch:
    """The mutable state of a plan under search: assignment, node utilizations, budget used."""

    def __init__(self, instance: AssignmentInstance, assignment: IntArray, original: IntArray) -> None:
        inst = instance
        self.inst = inst
        self.assignment = assignment.copy()
        self.original = original
        self.counts = np.asarray(
            inst.current >= 0, dtype=np.bool_
        )  # placing a unit for the first time is free
        self.state = np.where(self.counts, inst.state_size, 0.0)
        self.share = 100.0 * inst.load  # utilization points per unit of capacity
        self.capacity = inst.capacity
        self.util = np.bincount(self.assignment, weights=self.share, minlength=inst.n_nodes) / self.capacity
        self.mean = inst.mean_utilization
        self.cap = inst.utilization_cap()
        self.staying = inst.active
        self.all_staying = bool(inst.active.all())  # no draining node: no deviation to mask out
        self.active_nodes = _indices(inst.active)
        self.movable = inst.movable
        self.max_moves = inst.max_migrations if inst.max_migrations is not None else np.iinfo(np.int64).max
        self.max_cost = inst.max_migration_cost if inst.max_migration_cost is not None else np.inf
        self.costed = inst.max_migration_cost is not None  # a cost budget: the cost of steps matters
        moved = self.migrated_mask()
        self.used_moves = int(moved.sum())
        self.used_cost = float(self.state[moved].sum())
        # Ejection chains under cost budgets only: measured (interleaved A/B, 1 s, 8 seeds) they lower the distance
        # on cost budgets by 1-2 % and raise it on count budgets by 3-5 % (their evaluation costs steps there).
        self.chains = self.costed
        self.resources = BudgetTracker(inst)  # only its resource room is used; the budget is tracked here
        self.resources.track(self.assignment)
        self._plan_hash: int | None = None  # kept up to date once asked for (plan_hash): only the rounds ask
        self._indexed = False  # the index of units by node is built when units_on is first asked (not every
        # search asks: a perturbation's repair under the kernels never does)
        self.cap_limit = self.cap * (1 + 1e-12)  # the cap with its slack, as every cap test computes it
        self.cost_limit = self.max_cost * (1 + 1e-12)
        # The compiled kernels take exactly these dtypes (C-contiguous: anything else would compile anew)
        # (not under resource caps: the steps' candidates are then checked against them one by one)
        usable = _kernels is not None and not self.resources.has_resources
        self.kernels = _kernels if usable and self._kernel_arrays() else None
        self._evaluation: EvaluationArgs | None = None

    def _kernel_arrays(self) -> bool:
        """Make the per-plan arrays the kernels read C-contiguous (the same values); False when a dtype is not the
        one they are compiled for (then the numpy code runs)."""
        arrays = (
            "assignment",
            "original",
            "share",
            "capacity",
            "util",
            "staying",
            "movable",
            "counts",
            "state",
        )
        dtypes = (
            np.int64,
            np.int64,
            np.float64,
            np.float64,
            np.float64,
            np.bool_,
            np.bool_,
            np.bool_,
            np.float64,
        )
        for name, dtype in zip(arrays, dtypes, strict=True):
            value = getattr(self, name)
            if value.dtype != dtype or value.ndim != 1:
                return False
            setattr(self, name, np.ascontiguousarray(value))
        self.active_nodes = np.ascontiguousarray(self.active_nodes, dtype=np.int64)
        return True

    def _evaluation_args(self) -> EvaluationArgs:
        """The arguments of the kernels' evaluation of a node's change, in their order (fixed objects: the
        utilizations change in place)."""
        if self._evaluation is None:
            self._evaluation = self._make_evaluation_args()
        return self._evaluation

    def _make_evaluation_args(self) -> EvaluationArgs:
        return (
            self.share,
            self.capacity,
            self.util,
            self.staying,
            self.all_staying,
            float(self.mean),
            float(self.cap_limit),
        )

    def _budget_args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool, int, int, float, float]:
        """The arguments of the kernels' budget test, in their order."""
        return (
            self.counts,
            self.original,
            self.state,
            self.costed,
            self.used_moves,
            int(self.max_moves),
            float(self.used_cost),
            float(self.cost_limit),
        )

    def _index(self) -> None:
        """Movable units by node (sorted once) plus the units that arrived since: `units_on` in O(units there)."""
        self._indexed = True
        units = _indices(self.movable)
        self._by_node = units[self.assignment[units].argsort(kind="stable")]
        self._by_node_nodes = self.assignment[self._by_node]
        self._arrived: dict[int, list[int]] = {}
        self._arrivals = 0

    def units_on(self, node: int) -> IntArray:
        """The movable units on `node` now."""
        if not self._indexed:
            self._index()
        nodes = self._by_node_nodes
        units = self._by_node[int(nodes.searchsorted(node)) : int(nodes.searchsorted(node + 1))]
        extra = self._arrived.get(node)
        if not extra:
            return units[self.assignment[units] == node]
        # np.unique of the union, filtered: the same sorted distinct units, in fewer numpy calls (a step's scale)
        units = np.concatenate([units, np.asarray(extra, dtype=np.int64)])
        units = units[self.assignment[units] == node]
        units.sort()
        return units[np.concatenate(([True], units[1:] != units[:-1]))] if len(units) > 1 else units

    # -- bookkeeping -------------------------------------------------------------------------------------------
    def migrated_mask(self) -> BoolArray:
        return np.asarray(self.counts & (self.assignment != self.original), dtype=np.bool_)

    def budget_delta(self, units: IntArray, dest: IntArray) -> tuple[IntArray, FloatArray]:
        """Change of the migration count and cost if `units` went to `dest` (arrays broadcast together). Without a
        cost budget the cost change is zeros: nothing reads it then (within_budget, the rankings and Flux's fit use
        it only under a cost budget), and this runs several times per step."""
        counts = self.counts[units]
        original = self.original[units]
        before = counts & (self.assignment[units] != original)
        after = counts & (dest != original)
        delta_n = np.subtract(after, before, dtype=np.int64)
        if not self.costed:
            return delta_n, np.zeros(delta_n.shape)
        # where(after, state, 0) - where(before, state, 0), in two numpy calls: state times -1, 0 or 1 is the same
        # number, and + 0.0 turns the zeros' sign to +0.0 as that difference has it (states are finite)
        return delta_n, delta_n * self.state[units] + 0.0

    def within_budget(self, delta_n: IntArray, delta_c: FloatArray) -> BoolArray:
        if not self.costed:  # the cost clause is all True (an infinite budget)
            return np.asarray(self.used_moves + delta_n <= self.max_moves, dtype=np.bool_)
        return np.asarray(
            (self.used_moves + delta_n <= self.max_moves)
            & (self.used_cost + delta_c <= self.max_cost * (1 + 1e-12)),
            dtype=np.bool_,
        )

    def distance(self) -> float:
        return float(np.max(np.abs(self.util[self.active_nodes] - self.mean)))

    def state_key(self) -> tuple[bytes, bytes, int, float] | None:
        """Everything a descent from here depends on, to the bit (assignment, utilizations, budget used): two
        states with the same key descend through the same steps. None under resource caps (not part of it)."""
        if self.resources.has_resources:
            return None
        return self.assignment.tobytes(), self.util.tobytes(), self.used_moves, self.used_cost

    def key(self) -> tuple[float, float]:
        """(d, -(du + dl)): the MILP's lexicographic objective, rounded so float noise does not count as progress."""
        util = self.util if self.all_staying else self.util[self.active_nodes]
        high, low = float(util.max()) - self.mean, self.mean - float(util.min())
        d = max(high, low, 0.0)
        return round(d, 9), -round((d - high) + (d - low), 9)

    def plateau_key(self) -> tuple[float, int, float]:
        """key() with the number of staying nodes at the distance d between its two parts. Where loads are record
        counts (a lattice), many plans share d to the bit, and of two of them the one with fewer nodes at d is
        nearer a plan below d: each of those nodes must move for d to drop. The perturbations accept a trial by
        this key; the best plan is still the least by key() (docs/milp.md, "The twenty-ninth session"). On real
        loads two nodes rarely tie at d, and the key orders as key() does."""
        d, secondary = self.key()
        util = self.util if self.all_staying else self.util[self.active_nodes]
        # (utilizations are kept up to date move by move: a tie drifts by a few ulps, far inside this hair)
        at_d = int(np.count_nonzero(np.abs(util - self.mean) >= d - PLATEAU_HAIR * (1.0 + d)))
        return d, at_d, secondary

    def plan_hash(self) -> int:
        """A 64-bit hash of the assignment (see _placement_keys), computed once, then kept up to date move by move."""
        if self._plan_hash is None and self.kernels is not None:
            self._plan_hash = int(self.kernels.placement_keys(self.assignment, self.inst.n_nodes))
        if self._plan_hash is None:
            units = np.arange(len(self.assignment))
            self._plan_hash = _placement_keys(units, self.assignment, self.inst.n_nodes)
        return self._plan_hash

    def apply(self, steps: list[tuple[int, int]]) -> None:
        if self.kernels is not None:
            self._apply_compiled(steps)
            return
        for unit, dest in steps:
            # budget_delta of one move, on Python scalars (the same float operations, without the arrays)
            source, home = int(self.assignment[unit]), int(self.original[unit])
            counted = bool(self.counts[unit])
            before, after = counted and source != home, counted and dest != home
            self.used_moves += int(after) - int(before)
            if self.costed:
                state = float(self.state[unit])
                self.used_cost += (state if after else 0.0) - (state if before else 0.0)
            self.util[source] -= self.share[unit] / self.capacity[source]
            self.util[dest] += self.share[unit] / self.capacity[dest]
            if self._plan_hash is not None:
                n_nodes = self.inst.n_nodes
                self._plan_hash += _placement_key(unit, dest, n_nodes) - _placement_key(unit, source, n_nodes)
                self._plan_hash &= _MASK
            if self.resources.has_resources:
                self.resources.spend(unit, self.assignment, dest)  # moves the unit and its resource usage
            else:  # only the resource room of the tracker is used here (its budget counters are not read)
                self.assignment[unit] = dest
            if self._indexed:
                self._arrived.setdefault(dest, []).append(unit)
                self._arrivals += 1
        if self._indexed and self._arrivals > max(1024, len(self._by_node) // 4):
            self._index()

    def _apply_compiled(self, steps: list[tuple[int, int]]) -> None:
        """`apply` with the arrays updated by the kernels (no resource caps under them): the same numbers."""
        kernels = self.kernels
        assert kernels is not None
        assignment, util, share, capacity, counts, original = (
            self.assignment,
            self.util,
            self.share,
            self.capacity,
            self.counts,
            self.original,
        )
        for unit, dest in steps:
            source, before, after = kernels.move_unit(
                unit, dest, assignment, util, share, capacity, counts, original
            )
            self.used_moves += int(after) - int(before)
            if self.costed:
                state = float(self.state[unit])
                self.used_cost += (state if after else 0.0) - (state if before else 0.0)
            if self._plan_hash is not None:
                n_nodes = self.inst.n_nodes
                self._plan_hash += _placement_key(unit, dest, n_nodes) - _placement_key(unit, source, n_nodes)
                self._plan_hash &= _MASK
            if self._indexed:
                self._arrived.setdefault(dest, []).append(unit)
                self._arrivals += 1
        if self._indexed and self._arrivals > max(1024, len(self._by_node) // 4):
            self._index()

    def apply_distinct(
        self, units: IntArray, dests: IntArray, deltas: tuple[IntArray, FloatArray] | None = None
    ) -> None:
        """Many moves at once (distinct units; no resource caps: they are checked one move at a time); `deltas`:
        their budget_delta when the caller has it already."""
        delta_n, delta_c = self.budget_delta(units, dests) if deltas is None else deltas
        self.used_moves += int(delta_n.sum())
        self.used_cost += float(delta_c.sum())
        sources = self.assignment[units]
        np.add.at(self.util, sources, -self.share[units] / self.capacity[sources])
        np.add.at(self.util, dests, self.share[units] / self.capacity[dests])
        if self._plan_hash is not None:
            arrived = _placement_keys(units, dests, self.inst.n_nodes)
            left = _placement_keys(units, sources, self.inst.n_nodes)
            self._plan_hash = (self._plan_hash + arrived - left) & _MASK
        self.assignment[units] = dests
        if self._indexed:
            for unit, dest in zip(units.tolist(), dests.tolist(), strict=True):
                self._arrived.setdefault(dest, []).append(unit)
            self._arrivals += len(units)
            if self._arrivals > max(1024, len(self._by_node) // 4):
                self._index()

    # -- evaluation --------------------------------------------------------------------------------------------
    def evaluate(
        self, nodes: list[IntArray], deltas: list[FloatArray], distinct: bool = False
    ) -> tuple[FloatArray, BoolArray]:
        """Worst deviation over the touched staying nodes after simultaneous utilization changes (`deltas[k]` on
        `nodes[k]`; roles may coincide unless `distinct`), and whether every node that gains stays within the
        utilization cap."""
        if distinct:  # two roles, each its own change: a plain loop is cheapest
            return self._worst_ok(nodes, deltas)
        # Roles that may share a node: one array per quantity (roles x candidates), each role's node gets every
        # role's change that lands on it, summed in role order (a few numpy calls whatever the number of roles).
        role_nodes, own = np.stack(nodes), np.stack(deltas)
        total = np.zeros_like(own)
        for k in range(len(nodes)):
            total += own[k] * (role_nodes[k] == role_nodes)
        after = self.util[role_nodes] + total
        worst = np.max(
            np.where(self.staying[role_nodes], np.abs(after - self.mean), 0.0), axis=0, initial=0.0
        )
        ok = np.all((total <= 1e-12) | (after <= self.cap * (1 + 1e-12)), axis=0)
        return worst, ok

    def _worst_ok(self, nodes: list[IntArray], totals: list[FloatArray]) -> tuple[FloatArray, BoolArray]:
        """`evaluate` once each role's total change is known (`totals[k]` on `nodes[k]`): the largest deviation
        over the staying nodes among them (0 when there are none), and whether each node that gains stays within
        the cap. All roles in one array (a few numpy calls whatever their number; no mask when no node drains:
        this runs on every step, and at 10 nodes its cost is the calls)."""
        roles, count = len(nodes), len(nodes[0])
        node, total = np.concatenate(nodes), np.concatenate(totals)  # every role at once: roles x count
        after = self.util[node] + total
        deviation = np.abs(after - self.mean)
        if not self.all_staying:
            deviation = np.where(self.staying[node], deviation, 0.0)
        fits = (total <= 1e-12) | (after <= self.cap * (1 + 1e-12))
        worst: FloatArray = deviation.reshape(roles, count).max(axis=0)
        ok = np.asarray(fits.reshape(roles, count).all(axis=0), dtype=np.bool_)
        return worst, ok

    def _evaluate_legs(
        self, first: tuple[IntArray, IntArray, FloatArray], second: tuple[IntArray, IntArray, FloatArray]
    ) -> tuple[FloatArray, BoolArray]:
        """`evaluate` of two simultaneous moves per candidate, each leg (source, destination, the unit's share) with
        distinct nodes. A node of one leg then coincides with at most one node of the other, so each role's total is
        its own change plus at most one other: a sum of two, the very number `evaluate`'s role-order sum gives (its
        other terms are zeros), in far fewer numpy calls."""
        src_a, dst_a, share_a = first
        src_b, dst_b, share_b = second
        capacity = self.capacity
        out_a, in_a = -share_a / capacity[src_a], share_a / capacity[dst_a]
        out_b, in_b = -share_b / capacity[src_b], share_b / capacity[dst_b]
        zero = 0.0
        # the four coincidences, each compared once (equality is symmetric)
        src_src, dst_src, src_dst, dst_dst = src_b == src_a, dst_b == src_a, src_b == dst_a, dst_b == dst_a
        return self._worst_ok(
            [src_a, dst_a, src_b, dst_b],
            [
                out_a + np.where(src_src, out_b, np.where(dst_src, in_b, zero)),
                in_a + np.where(src_dst, out_b, np.where(dst_dst, in_b, zero)),
                out_b + np.where(src_src, out_a, np.where(src_dst, in_a, zero)),
                in_b + np.where(dst_src, out_a, np.where(dst_dst, in_a, zero)),
            ],
        )

    # -- steps -------------------------------------------------------------------------------------------------
    def _extreme_nodes(self, lowest: bool, exclude: int) -> IntArray:
        """The NEAR_NODES least (or most) utilized staying nodes other than `exclude`."""
        nodes = self.active_nodes[self.active_nodes != exclude]
        if len(nodes) > NEAR_NODES:
            # ties by index (a stable sort, not argpartition's choice): the kernels' far_moves takes the same
            key = self.util[nodes] if lowest else -self.util[nodes]
            nodes = nodes[np.argsort(key, kind="stable")[:NEAR_NODES]]
        return nodes

    def _migration_nodes(self, homes: bool) -> IntArray:
        """Staying nodes where migrated units sit now (or their original nodes): the partners of compound steps
        (a migration sent home frees room there, or on its home a smaller unit can leave instead)."""
        migrated = _indices(self.migrated_mask())
        # np.unique's sorted distinct nodes, through a mask over the nodes: O(nodes + migrations) without its hash
        # and sort (18 % of a descent step's time at 250 nodes x 2,048 key groups)
        touched = np.zeros(self.inst.n_nodes, dtype=np.bool_)
        touched[self.original[migrated] if homes else self.assignment[migrated]] = True
        nodes = _indices(touched & self.staying)
        if len(nodes) > MIGRATION_NODES:
            key = self.util[nodes] if not homes else -self.util[nodes]
            nodes = nodes[np.argsort(key, kind="stable")[:MIGRATION_NODES]]  # ties by index, as in far_moves
        return nodes

    def _moves(self, worst_node: int, over: bool) -> tuple[IntArray, IntArray]:
        """Candidate (unit, destination) pairs of single moves that involve the worst node: off it to the least
        utilized nodes, to nodes holding migrated units, or back to the unit's original node (a refund, a draining
        home included); or, when it is underloaded, onto it from the most utilized nodes, from the original nodes of
        migrated units, from draining nodes, back home, or any migrated unit (moving it again is free)."""
        movable = self.movable
        # At most NEAR_NODES staying nodes: the extreme nodes are all of them but the worst, and the nodes of
        # migrations add none (they are staying nodes too), so the union is that (the same sorted nodes).
        everywhere = len(self.active_nodes) <= NEAR_NODES
        if over:
            units = self.units_on(worst_node)
            if everywhere:
                dests = self.active_nodes[self.active_nodes != worst_node]
            else:
                # np.union1d's sorted distinct nodes less the worst, through a mask over the nodes (no sort)
                near = np.zeros(self.inst.n_nodes, dtype=np.bool_)
                near[self._extreme_nodes(True, worst_node)] = True
                near[self._migration_nodes(False)] = True
                near[worst_node] = False
                dests = _indices(near)
            home = self.original[units]
            back = self.counts[units] & (home != worst_node)
            pair_units, pair_dests = _pairs(units, dests)
            return np.concatenate([pair_units, units[back]]), np.concatenate([pair_dests, home[back]])
        if everywhere:  # every node but the worst is a source (the staying ones as extreme nodes)
            units = _indices(movable & (self.assignment != worst_node))
            return units, np.full(len(units), worst_node, dtype=np.int64)
        source = np.zeros(self.inst.n_nodes, dtype=bool)
        source[self._extreme_nodes(False, worst_node)] = True
        source[self._migration_nodes(True)] = True
        source[~self.staying] = True
        units = _indices(
            movable
            & (self.assignment != worst_node)
            & (source[self.assignment] | (self.counts & (self.original == worst_node)) | self.migrated_mask())
        )
        return units, np.full(len(units), worst_node, dtype=np.int64)

    def _swaps(self, worst_node: int, over: bool) -> tuple[IntArray, IntArray]:
        """The units of the worst node and the units elsewhere it may swap with (the most opposite nodes first; at
        most SWAP_ELEMENTS pairs)."""
        mine = self.units_on(worst_node)
        if not len(mine):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        util = self.util[self.active_nodes]
        side = util < self.util[worst_node] if over else util > self.util[worst_node]
        partners = self.active_nodes[side]
        partners = partners[np.argsort(self.util[partners] if over else -self.util[partners], kind="stable")]
        position = np.full(self.inst.n_nodes, len(partners), dtype=np.int64)
        position[partners] = np.arange(len(partners))
        theirs = _indices(self.movable & (position[self.assignment] < len(partners)))
        limit = max(1, SWAP_ELEMENTS // len(mine))
        if len(theirs) > limit:
            theirs = theirs[np.argsort(position[self.assignment[theirs]], kind="stable")[:limit]]
        return mine, theirs

    def step(self) -> bool:
        """Take the best improving step; False when there is none."""
        if self.kernels is not None:
            return self._step_compiled()
        deviation = (self.util if self.all_staying else self.util[self.active_nodes]) - self.mean
        position = int(np.abs(deviation).argmax())
        d = float(abs(deviation[position]))
        if d <= TOLERANCE:
            return False
        node = int(self.active_nodes[position])
        over = bool(deviation[position] > 0)
        assignment = self.assignment

        units, dests = self._moves(node, over)
        candidates: list[tuple[float, list[tuple[int, int]]]] = []
        blocked_units = blocked_dests = np.zeros(0, dtype=np.int64)
        every_blocked = (blocked_units, blocked_dests, np.zeros(0))
        if len(units):
            if self.kernels is not None:
                worst, improving, fits, improving_c = self.kernels.scan_moves(
                    units, dests, assignment, *self._evaluation_args(), d - TOLERANCE, *self._budget_args()
                )
            else:
                sources = assignment[units]
                scale = self.share[units]
                worst, ok = self.evaluate(
                    [sources, dests],
                    [-scale / self.capacity[sources], scale / self.capacity[dests]],
                    distinct=True,
                )
                # few moves improve: their budget change only
                improving = _indices(ok & (worst < d - TOLERANCE) & (sources != dests))
                improving_n, improving_c = self.budget_delta(units[improving], dests[improving])
                fits = self.within_budget(improving_n, improving_c)
            # the cost change by candidate: only the ranking under a cost budget reads it
            delta_c = np.zeros(0)
            if self.costed:
                delta_c = np.zeros(len(units))
                delta_c[improving] = improving_c
            allowed = improving[fits]
            top = self._rank(allowed, d - worst, delta_c)[:RESOURCE_TRIES]
            # Python numbers through tolist (one call per array, not one per element): the same values
            for w, unit, dest in zip(
                worst[top].tolist(), units[top].tolist(), dests[top].tolist(), strict=True
            ):
                candidates.append((w, [(unit, dest)]))
            blocked_all = improving[~fits]
            blocked = _smallest(blocked_all, worst, COMPOUND_MOVES)
            blocked_units, blocked_dests = units[blocked], dests[blocked]
            every_blocked = (units[blocked_all], dests[blocked_all], worst[blocked_all])
        if not candidates:
            candidates = self._blocked_candidates(node, over, d, blocked_units, blocked_dests, every_blocked)
        candidates.sort(key=lambda c: c[0])
        for _, steps in candidates[:RESOURCE_TRIES]:
            if self.resources.fits_steps(steps, assignment):
                self.apply(steps)
                return True
        return False

    def _step_compiled(self) -> bool:
        """`step` through the kernels: the same candidates, evaluations and selection, so the same step. Without
        resource caps (the kernels are off under them) the first candidate of the sorted list is the one taken,
        so only it is built: the candidate of least worst deviation among those the selection keeps."""
        kernels = self.kernels
        assert kernels is not None
        evaluation, budget = self._evaluation_args(), self._budget_args()
        if len(self.active_nodes) <= NEAR_NODES and len(self.assignment) <= UNITS_SCANNED:
            node, d, over, units, dests, worst, improving, fits, improving_c = kernels.near_step(
                self.active_nodes, self.movable, self.assignment, *evaluation, TOLERANCE, *budget
            )
            if d <= TOLERANCE:
                return False
            return self._take_step(node, d, over, units, dests, worst, improving, fits, improving_c)
        node, d, over = kernels.worst_node(self.util, self.active_nodes, float(self.mean))
        if d <= TOLERANCE:
            return False
        limit = d - TOLERANCE
        if len(self.active_nodes) <= NEAR_NODES:
            mine = self._mine(node) if over else self.assignment[:0]
            units, dests, worst, improving, fits, improving_c = kernels.scan_near_moves(
                node,
                over,
                mine,
                self.active_nodes,
                self.movable,
                self.assignment,
                *evaluation,
                limit,
                *budget,
            )
        else:
            units, dests = kernels.far_moves(
                node,
                over,
                self._mine(node) if over else self.assignment[:0],
                self.active_nodes,
                self.assignment,
                self.original,
                self.counts,
                self.movable,
                self.staying,
                self.util,
                NEAR_NODES,
                MIGRATION_NODES,
            )
            worst, improving, fits, improving_c = kernels.scan_moves(
                units, dests, self.assignment, *evaluation, limit, *budget
            )
        return self._take_step(node, d, over, units, dests, worst, improving, fits, improving_c)

    def _take_step(
        self,
        node: int,
        d: float,
        over: bool,
        units: IntArray,
        dests: IntArray,
        worst: FloatArray,
        improving: IntArray,
        fits: BoolArray,
        improving_c: FloatArray,
    ) -> bool:
        """The rest of _step_compiled once the single moves are scanned: the best allowed move, else the other
        kinds of step in `step`'s order."""
        kernels = self.kernels
        assert kernels is not None
        choice = -1 if self.costed else kernels.sure_move(d, worst, improving, fits, RESOURCE_TRIES)
        if choice >= 0:
            self.apply([(int(units[choice]), int(dests[choice]))])
            return True
        allowed = improving[fits]
        if len(allowed):
            if self.costed:
                delta_c = np.zeros(len(units))
                delta_c[improving] = improving_c
                top = kernels.rank_by_efficiency(allowed, d - worst, delta_c, RESOURCE_TRIES)
            else:  # _rank's _smallest by -gain, on the allowed moves' values only (the same array it reads)
                top = allowed[_least(-(d - worst[allowed]), RESOURCE_TRIES)]
            best = int(top[worst[top].argmin()])  # the candidates' stable sort by worst: its first
            self.apply([(int(units[best]), int(dests[best]))])
            return True
        blocked_all = improving[~fits]
        blocked = _smallest(blocked_all, worst, COMPOUND_MOVES)
        blocked_units, blocked_dests = units[blocked], dests[blocked]
        every_blocked = (units[blocked_all], dests[blocked_all], worst[blocked_all])
        candidates = self._blocked_candidates(node, over, d, blocked_units, blocked_dests, every_blocked)
        if not candidates:
            return False
        self.apply(min(candidates, key=lambda c: c[0])[1])  # the first of the stable sort by worst
        return True

    def _blocked_candidates(
        self,
        node: int,
        over: bool,
        d: float,
        blocked_units: IntArray,
        blocked_dests: IntArray,
        every_blocked: tuple[IntArray, IntArray, FloatArray],
    ) -> list[tuple[float, list[tuple[int, int]]]]:
        """When no single move improves within the budget: the first kind of step that has candidates, compound
        steps first (cheap to evaluate: few blocked moves x the migrations), then swaps, funded moves, chains and
        twins (`every_blocked`: every improving move the budget blocked, its unit, destination and worst node).
        Funded moves before chains and twins: measured (flights-year 40n cost 2 %, 200 perturbations, 30 seeds)
        mean 1.115 and 40 s of CPU before chains, 1.119 / 48 s before twins, 1.116 / 62 s after them, 1.131 / 37 s
        before swaps (main 1.166 / 23 s): a funded move found first spares the dearer chains and twins."""
        candidates = self._compound_candidates(blocked_units, blocked_dests, d)
        if not candidates:
            candidates = self._swap_candidates(node, over, d)
        if not candidates and self.chains and FUNDS:
            candidates = self._funded_candidates(d, *every_blocked)
        if not candidates and self.chains:
            candidates = self._chain_candidates(node, over, d)
        if not candidates and self.chains and TWINS:
            candidates = self._twin_candidates(blocked_units, blocked_dests, d)
        return candidates

    def _rank(self, index: IntArray, gain: FloatArray, delta_c: FloatArray) -> IntArray:
        """Candidates best first: by the worst node after the step; under a cost budget by gain per unit of state
        spent (refunds and free steps first), so the budget buys the most balance."""
        if self.inst.max_migration_cost is None:
            return _smallest(index, -gain, RESOURCE_TRIES)
        return efficiency_order(index, gain, delta_c)

    def shave(self, deadline: float, max_steps: int) -> None:
        """Largest-load-first as a start (Xing et al.'s LLF, budget-aware): units on draining nodes leave first,
        largest first, each to the least utilized staying node; then the most utilized node that can hands its
        largest unit that lowers the peak to the least utilized node. Every move lowers the sorted utilization
        vector, so it ends; `max_steps` and the deadline bound it too."""
        share, capacity = self.share, self.capacity
        draining = _indices(~self.staying)
        draining_left = len(draining) > 0  # until a round finds nothing to take off them
        batch = min(SHAVE_BATCH, len(self.active_nodes) // 8)
        for _ in range(max_steps):
            if time.perf_counter() > deadline:
                return
            if not draining_left and batch > 1 and self._shave_batch(batch):
                continue
            lo = int(self.active_nodes[np.argmin(self.util[self.active_nodes])])
            holding = draining if draining_left else draining[:0]
            tops = self._extreme_nodes(False, -1)
            order = np.concatenate([holding, tops[np.argsort(-self.util[tops], kind="stable")]])
            moved = False
            for hi in order.tolist():
                if hi == lo:
                    continue
                units = self.units_on(hi)
                units = units[np.argsort(-share[units], kind="stable")]
                after = self.util[lo] + share[units] / capacity[lo]
                peak = np.inf if not self.staying[hi] else self.util[hi] - TOLERANCE
                delta_n, delta_c = self.budget_delta(units, np.full(len(units), lo))
                ok = (after < peak) & (after <= self.cap * (1 + 1e-12)) & (share[units] > 0)
                ok &= self.within_budget(delta_n, delta_c)
                for unit in units[ok][:RESOURCE_TRIES].tolist():
                    if self.resources.fits(unit, lo):
                        self.apply([(unit, lo)])
                        moved = True
                        break
                if moved:
                    break
                if not self.staying[hi]:
                    continue
                draining_left = False  # reached a staying node: nothing more leaves the draining ones
            if not moved:
                return

    def _shave_batch(self, batch: int) -> bool:
        """Many largest-load-first moves at once on large clusters: the i-th most utilized of the `batch` top nodes
        hands its largest unit that lowers its peak to the i-th least utilized node (distinct nodes, so the moves
        are independent), the most utilized first while the budget lasts. False when none moves (resource caps are
        checked one move at a time: then the exact step runs)."""
        if self.resources.has_resources:
            return False
        share, capacity = self.share, self.capacity
        order = self.active_nodes[np.argsort(-self.util[self.active_nodes], kind="stable")]
        tops, lows = order[:batch], order[::-1][:batch]
        position = np.full(self.inst.n_nodes, -1, dtype=np.int64)
        position[tops] = np.arange(len(tops))
        units = _indices(self.movable & (position[self.assignment] >= 0))
        pos = position[self.assignment[units]]
        dest = lows[pos]
        after = self.util[dest] + share[units] / capacity[dest]
        ok = (after < self.util[self.assignment[units]] - TOLERANCE) & (after <= self.cap * (1 + 1e-12))
        ok &= share[units] > 0
        units, pos, dest = units[ok], pos[ok], dest[ok]
        if not len(units):
            return False
        pick = np.lexsort((-share[units], pos))
        units, pos, dest = units[pick], pos[pick], dest[pick]
        first = _first_of_runs(pos)  # the largest fitting unit of each top node
        units, dest = units[first], dest[first]
        delta_n, delta_c = self.budget_delta(units, dest)
        fits = self.within_budget(np.cumsum(delta_n), np.cumsum(delta_c))
        keep = int(np.argmin(fits)) if not fits.all() else len(fits)  # the longest prefix within the budget
        self.apply_distinct(units[:keep], dest[:keep])
        return keep > 0

    def pair(self, deadline: float, max_rounds: int = 64, target: float = 0.0) -> None:
        """Flux as a start (Madsen et al.'s description, budget-aware): in each round the i-th most utilized staying
        node hands the i-th least utilized one the unit that best halves their gap; rounds until no pair moves, the
        budget is spent, `max_rounds`, or the deadline (a tie can make a pair trade a unit back and forth: the cap
        ends it). Pairs whose nodes are both within `target` of the mean are left alone (aimed at the bound, the
        budget goes where it is needed). Rounds are vectorised (all pairs at once) unless resource caps need the
        one-move-at-a-time check."""
        for _ in range(max_rounds):
            if time.perf_counter() > deadline:
                return
            if self.resources.has_resources:
                moved = self._pair_round(deadline, target)
            else:
                moved = self._pair_round_at_once(target)
            if not moved:
                return

    def _pair_fit(
        self, gap: FloatArray, shift: FloatArray, delta_c: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """Flux's choice of a pair's unit, as np.lexsort keys (the last is the first, smallest first): the unit that
        best halves the gap; under a cost budget the most gap closed per unit of state spent (a best fit of large
        state would spend the budget on one pair). A free move or refund ranks -inf, first, in the units' order; a
        paid move whose quotient overflows (a gap over a state of 1e-320) right after them, ranked by the log of
        its quotient (as one -inf tie they went by the units' order, and a free move could come after it: the
        cheapest-first start had the same flaw, 80c0285). Finite quotients rank as before."""
        remaining = np.abs(gap - shift)
        zeros = np.zeros(len(remaining))
        if self.inst.max_migration_cost is None:
            return zeros, remaining
        closed = gap - remaining
        paid = delta_c > 0
        with np.errstate(over="ignore"):
            fit = np.where(paid, -closed / np.where(paid, delta_c, 1.0), -np.inf)
        beyond = paid & np.isinf(fit)
        if not beyond.any():
            return zeros, fit
        # (a closed gap <= 0 is no candidate: its log is never read)
        logs = -log_ratio(np.maximum(closed, 0.0), np.where(paid, delta_c, 1.0))
        return np.where(beyond, logs, np.where(paid, 0.0, -np.inf)), fit

    def _flux_pairs(self, target: float) -> tuple[IntArray, IntArray]:
        """The pairs of a Flux round, most apart first, up to the first that needs no move."""
        if self.all_staying:  # the staying nodes are 0..n-1: their order is the argsort itself
            order = (-self.util).argsort(kind="stable")
        else:
            order = self.active_nodes[(-self.util[self.active_nodes]).argsort(kind="stable")]
        half = len(order) // 2
        his, los = order[:half], order[::-1][:half]
        gap = self.util[his] - self.util[los]
        live = (gap > TOLERANCE) & (
            np.maximum(self.util[his] - self.mean, self.mean - self.util[los]) > target
        )
        end = int(live.argmin()) if not live.all() else half
        return his[:end], los[:end]

    def _pair_round_at_once(self, target: float) -> bool:
        """One Flux round, every pair at once (pairs have distinct nodes, so their moves are independent), the most
        apart pairs first while the budget lasts (checked move by move, in that order)."""
        his, los = self._flux_pairs(target)
        if not len(his):
            return False
        share, capacity = self.share, self.capacity
        position = np.full(self.inst.n_nodes, -1, dtype=np.int64)
        position[his] = np.arange(len(his))
        units = _indices(self.movable & (position[self.assignment] >= 0))
        pos = position[self.assignment[units]]
        hi, lo = his[pos], los[pos]
        util_lo, share_units, capacity_lo = self.util[lo], share[units], capacity[lo]  # each read once
        gap = self.util[hi] - util_lo
        shift = share_units * (1.0 / capacity[hi] + 1.0 / capacity_lo)
        after = util_lo + share_units / capacity_lo
        delta_n, delta_c = self.budget_delta(units, lo)
        ok = (shift > TOLERANCE) & (shift < 2.0 * gap - TOLERANCE) & (after <= self.cap * (1 + 1e-12))
        ok &= self.within_budget(delta_n, delta_c)
        fit = [key[ok] for key in self._pair_fit(gap, shift, delta_c)]
        units, pos, lo = units[ok], pos[ok], lo[ok]
        delta_n, delta_c = delta_n[ok], delta_c[ok]
        if not len(units):
            return False
        pick = np.lexsort((*fit, pos))
        first = pick[_first_of_runs(pos[pick])]  # best fit of each pair
        chosen = []
        moves, cost = self.used_moves, self.used_cost
        for k, dn, dc in zip(first.tolist(), delta_n[first].tolist(), delta_c[first].tolist(), strict=True):
            # most apart pairs first, each while the budget still allows its move
            if moves + dn <= self.max_moves and cost + dc <= self.max_cost * (1 + 1e-12):
                chosen.append(k)
                moves, cost = moves + dn, cost + dc
        self.apply_distinct(units[chosen], lo[chosen], (delta_n[chosen], delta_c[chosen]))
        return bool(chosen)

    def _pair_round(self, deadline: float, target: float) -> bool:
        """One Flux round, pair by pair (resource caps checked per move)."""
        share, capacity = self.share, self.capacity
        his, los = self._flux_pairs(target)
        units = _indices(self.movable & self.staying[self.assignment])
        units = units[np.argsort(self.assignment[units], kind="stable")]
        where = self.assignment[units]
        moved = False
        for i, (hi, lo) in enumerate(zip(his.tolist(), los.tolist(), strict=True)):
            if i % 64 == 63 and time.perf_counter() > deadline:
                return moved
            gap = self.util[hi] - self.util[lo]
            mine = units[np.searchsorted(where, hi, "left") : np.searchsorted(where, hi, "right")]
            mine = mine[self.assignment[mine] == hi]
            shift = share[mine] * (1.0 / capacity[hi] + 1.0 / capacity[lo])
            after = self.util[lo] + share[mine] / capacity[lo]
            delta_n, delta_c = self.budget_delta(mine, np.full(len(mine), lo))
            ok = (shift > TOLERANCE) & (shift < 2.0 * gap - TOLERANCE) & (after <= self.cap * (1 + 1e-12))
            ok &= self.within_budget(delta_n, delta_c)
            fit = [key[ok] for key in self._pair_fit(np.full(len(mine), gap), shift, delta_c)]
            for k in _indices(ok)[np.lexsort(fit)][:RESOURCE_TRIES]:
                if self.resources.fits(int(mine[k]), lo):
                    self.apply([(int(mine[k]), lo)])
                    moved = True
                    break
        return moved

    def _swap_candidates(self, node: int, over: bool, d: float) -> list[tuple[float, list[tuple[int, int]]]]:
        if self.kernels is not None:
            worst, mine, theirs, good = self.kernels.scan_swaps(
                node,
                over,
                self._mine(node),
                self.active_nodes,
                self.movable,
                self.assignment,
                *self._evaluation_args(),
                d - TOLERANCE,
                SWAP_ELEMENTS,
                *self._budget_args(),
            )
            best = _smallest(good, worst, RESOURCE_TRIES)
            other = self.assignment[theirs[best]]
            return [
                (w, [(a, b), (c, node)])
                for w, a, b, c in zip(
                    worst[best].tolist(),
                    mine[best].tolist(),
                    other.tolist(),
                    theirs[best].tolist(),
                    strict=True,
                )
            ]
        mine, theirs = self._swaps(node, over)
        if not len(mine) or not len(theirs):
            return []
        # Only a swap whose net load lands both nodes strictly inside d can improve: per partner node an interval of
        # net load, and with the worst node's units sorted by size, each unit elsewhere finds the window of them
        # in that interval by two binary searches (not every pair: on 40 nodes x 1,024 units 25,000 pairs a step, a
        # few hundred inside). The window is widened by a hair; the exact test below decides, on the pairs in the
        # order of the full product (mine-major), so ties break as if every pair were evaluated.
        share, capacity = self.share, self.capacity
        limit = d - TOLERANCE
        partner = self.assignment[theirs]
        deviation = self.util[node] - self.mean
        partner_deviation = self.util[partner] - self.mean
        lo = np.maximum(
            capacity[node] * (deviation - limit), capacity[partner] * (-limit - partner_deviation)
        )
        hi = np.minimum(capacity[node] * (deviation + limit), capacity[partner] * (limit - partner_deviation))
        hair = 1e-7 * (1.0 + np.maximum(np.abs(lo), np.abs(hi)))
        by_size = np.argsort(share[mine], kind="stable")
        sizes = share[mine][by_size]
        first = np.searchsorted(sizes, share[theirs] + lo - hair, side="left")
        counts = np.maximum(np.searchsorted(sizes, share[theirs] + hi + hair, side="right") - first, 0)
        total = int(counts.sum())
        if not total:
            return []
        j = np.repeat(np.arange(len(theirs)), counts)
        k = _ranges(first, counts)
        pair = np.sort(by_size[k] * len(theirs) + j)
        mine, theirs = mine[pair // len(theirs)], theirs[pair % len(theirs)]
        other = self.assignment[theirs]
        net = self.share[mine] - self.share[theirs]  # load points leaving `node`
        here = np.full(len(mine), node, dtype=np.int64)
        worst, ok = self.evaluate(
            [here, other], [-net / self.capacity[node], net / self.capacity[other]], distinct=True
        )
        good = _indices(ok & (worst < d - TOLERANCE))  # few swaps improve: the budget only for those
        dn1, dc1 = self.budget_delta(mine[good], other[good])
        dn2, dc2 = self.budget_delta(theirs[good], here[good])
        good = good[self.within_budget(dn1 + dn2, dc1 + dc2)]
        best = _smallest(good, worst, RESOURCE_TRIES)
        return [
            (w, [(a, b), (c, node)])
            for w, a, b, c in zip(
                worst[best].tolist(),
                mine[best].tolist(),
                other[best].tolist(),
                theirs[best].tolist(),
                strict=True,
            )
        ]

    def _compound_candidates(
        self, units: IntArray, dests: IntArray, d: float
    ) -> list[tuple[float, list[tuple[int, int]]]]:
        """A budget-blocked improving move made affordable by sending one migrated unit home.

        A refund whose nodes are not touched by the move ends them where it alone would: unless it alone leaves
        both below d it cannot be part of an improving step, so only those refunds (the COMPOUND_REFUNDS best of
        them) and the refunds that share a node with one of the moves are paired, exactly."""
        migrated = _indices(self.migrated_mask())
        if not len(units) or not len(migrated):
            return []
        if self.kernels is not None:
            return self._compound_compiled(units, dests, migrated, d)
        src_m, home_m = self.assignment[migrated], self.original[migrated]
        alone, fits = self.evaluate(
            [src_m, home_m],
            [-self.share[migrated] / self.capacity[src_m], self.share[migrated] / self.capacity[home_m]],
            distinct=True,
        )
        touched = np.zeros(self.inst.n_nodes, dtype=bool)
        touched[self.assignment[units]] = True
        touched[dests] = True
        overlapping = touched[src_m] | touched[home_m]
        good_alone = _indices(fits & (alone < d - TOLERANCE) & ~overlapping)
        if len(good_alone) > COMPOUND_REFUNDS:
            good_alone = good_alone[
                np.argpartition(alone[good_alone], COMPOUND_REFUNDS - 1)[:COMPOUND_REFUNDS]
            ]
        migrated = migrated[np.concatenate([good_alone, _indices(overlapping)])]
        if not len(migrated):
            return []
        v = units.repeat(len(migrated))
        to = dests.repeat(len(migrated))
        r = _tile(migrated, len(units))
        keep = v != r
        v, to, r = v[keep], to[keep], r[keep]
        src_v, src_r, home = self.assignment[v], self.assignment[r], self.original[r]
        # the move's nodes differ (it improves), and so do the refund's (a migrated unit is away from home)
        worst, ok = self._evaluate_legs((src_v, to, self.share[v]), (src_r, home, self.share[r]))
        good = _indices(ok & (worst < d - TOLERANCE))  # few improve: the budget only for those
        dn1, dc1 = self.budget_delta(v[good], to[good])
        dn2, dc2 = self.budget_delta(r[good], home[good])
        best = _smallest(good[self.within_budget(dn1 + dn2, dc1 + dc2)], worst, RESOURCE_TRIES)
        return [
            (w, [(a, b), (c, e)])
            for w, a, b, c, e in zip(
                worst[best].tolist(),
                r[best].tolist(),
                home[best].tolist(),
                v[best].tolist(),
                to[best].tolist(),
                strict=True,
            )
        ]

    def _compound_compiled(
        self, units: IntArray, dests: IntArray, migrated: IntArray, d: float
    ) -> list[tuple[float, list[tuple[int, int]]]]:
        """_compound_candidates through the kernels (the same candidates, the same selection)."""
        kernels, limit = self.kernels, d - TOLERANCE
        assert kernels is not None
        evaluation = self._evaluation_args()
        alone, good_alone, overlapping = kernels.scan_refunds(
            migrated, units, dests, self.assignment, self.original, *evaluation, limit
        )
        if len(good_alone) > COMPOUND_REFUNDS:
            good_alone = good_alone[
                np.argpartition(alone[good_alone], COMPOUND_REFUNDS - 1)[:COMPOUND_REFUNDS]
            ]
        refunds = migrated[np.concatenate([good_alone, overlapping])]
        if not len(refunds):
            return []
        counts, original, state, *budget = self._budget_args()
        worst, v, to, r, good = kernels.scan_compound(
            units, dests, refunds, self.assignment, original, *evaluation, limit, counts, state, *budget
        )
        best = _smallest(good, worst, RESOURCE_TRIES)
        home = original[r[best]]
        return [
            (w, [(a, b), (c, e)])
            for w, a, b, c, e in zip(
                worst[best].tolist(),
                r[best].tolist(),
                home.tolist(),
                v[best].tolist(),
                to[best].tolist(),
                strict=True,
            )
        ]

    def _chain_candidates(self, node: int, over: bool, d: float) -> list[tuple[float, list[tuple[int, int]]]]:
        """Ejection chains of two links that cost no more budget than the first: a move at the worst node that
        would push its partner past d, and a migrated unit (moving it again is free) that then leaves the partner
        (when the worst node is over) or fills it (when under). Exact on the three nodes touched."""
        migrated = _indices(self.migrated_mask())
        units, partners = self._moves(node, over)
        if not len(migrated) or not len(units):
            return []
        share, capacity, mean = self.share, self.capacity, self.mean
        if over:
            first_src = np.full(len(units), node, dtype=np.int64)
            here = self.util[node] - share[units] / capacity[node]
            there = self.util[partners] + share[units] / capacity[partners]
            keep = (np.abs(here - mean) < d - TOLERANCE) & (there - mean >= d - TOLERANCE)
        else:
            first_src = self.assignment[units]
            partners = first_src  # the node the first link empties
            here = self.util[node] + share[units] / capacity[node]
            there = self.util[partners] - share[units] / capacity[partners]
            keep = (np.abs(here - mean) < d - TOLERANCE) & (mean - there >= d - TOLERANCE)
            keep &= self.staying[partners]
        keep &= partners != node
        first = _indices(keep)
        if not len(first):
            return []
        first = first[np.argsort(np.abs(here[first] - mean), kind="stable")[:CHAIN_FIRST_LINKS]]
        u, b = units[first], partners[first]
        u_to = b if over else np.full(len(u), node, dtype=np.int64)
        if over:
            # second link: a migrated unit on the partner moves on to any staying node or home
            order = migrated[np.argsort(self.assignment[migrated], kind="stable")]
            where = self.assignment[order]
            lo, hi = np.searchsorted(where, b, "left"), np.searchsorted(where, b, "right")
            count = hi - lo
            pair = np.repeat(np.arange(len(u)), count)
            offset = np.arange(len(pair)) - np.repeat(np.cumsum(count) - count, count)
            v = order[np.repeat(lo, count) + offset]
            dests = np.union1d(self._extreme_nodes(True, node), [node])
            pair2 = np.concatenate([np.repeat(pair, len(dests)), pair])
            v2 = np.concatenate([np.repeat(v, len(dests)), v])
            c2 = np.concatenate([_tile(dests, len(v)), self.original[v]])
            v_from = b[pair2]
            v_to = c2
        else:
            # second link: a migrated unit from another node moves onto the emptied partner (at scale, those on the
            # most utilized nodes: their leaving helps most)
            if len(migrated) > CHAIN_SECOND_LINKS:
                migrated = migrated[np.argsort(-self.util[self.assignment[migrated]])[:CHAIN_SECOND_LINKS]]
            pair2 = np.repeat(np.arange(len(u)), len(migrated))
            v2 = _tile(migrated, len(u))
            v_from = self.assignment[v2]
            v_to = b[pair2]
        keep = (v_to != v_from) & (v2 != u[pair2]) & (v_from != node) & (v_to >= 0)
        pair2, v2, v_from, v_to = pair2[keep], v2[keep], v_from[keep], v_to[keep]
        if not len(v2):
            return []
        uu, u_from, uu_to = u[pair2], first_src[first][pair2], u_to[pair2]
        return self._best_legs([(uu, u_from, uu_to), (v2, v_from, v_to)], d)

    def _twin_candidates(
        self, units: IntArray, dests: IntArray, d: float
    ) -> list[tuple[float, list[tuple[int, int]]]]:
        """Under a cost budget: a migration replaced by a cheaper twin from its home (the twin takes its route,
        the migrated unit goes home), and the state saved spent on one of the best moves the budget blocked. A
        twin of close load leaves both nodes of the route about where they were, so it frees budget at little
        cost in balance; exact on the (up to six) nodes touched."""
        migrated = _indices(self.migrated_mask())
        if not len(units) or not len(migrated):
            return []
        state = self.state
        if len(migrated) > TWIN_MIGRATIONS:  # at scale: the most expensive migrations (they free the most)
            migrated = migrated[np.argsort(-state[migrated], kind="stable")[:TWIN_MIGRATIONS]]
        r_all, w_all = self._twin_pairs(migrated)
        if not len(r_all):
            return []
        pick = np.repeat(np.arange(len(r_all)), len(units))
        r, w = r_all[pick], w_all[pick]
        v, to = _tile(units, len(r_all)), _tile(dests, len(r_all))
        keep = (v != r) & (v != w)
        r, w, v, to = r[keep], w[keep], v[keep], to[keep]
        src, home, src_v = self.assignment[r], self.original[r], self.assignment[v]
        return self._best_legs([(r, src, home), (w, home, src), (v, src_v, to)], d)

    def _twin_pairs(self, migrated: IntArray) -> tuple[IntArray, IntArray]:
        """Per migration of `migrated` whose home stays, its TWINS twins: units at home there, movable, counted and
        cheaper in state, the closest to it in load first, ties by index. Returns (the migrations, repeated; the
        twins)."""
        share, state = self.share, self.state
        if self.kernels is not None:
            # The same pairs from one scan of the units: the loop below took ~2 ms a call at 80 nodes x 1,024
            # units, a sixth of a cost-budget search's time (campaign skew 13870).
            return self.kernels.twins_of(
                migrated, self.assignment, self.original, self.movable, self.counts, self.staying, share,
                state, TWINS,
            )  # fmt: skip
        rs, ws = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
        for unit in migrated.tolist():
            origin = int(self.original[unit])
            if origin < 0 or not self.staying[origin]:
                continue
            here = self.units_on(origin)
            here = here[(state[here] < state[unit]) & (here != unit) & self.counts[here]]
            here = here[self.assignment[here] == self.original[here]]  # not migrated: it leaves home
            twins = here[np.abs(share[here] - share[unit]).argsort(kind="stable")[:TWINS]]
            rs.append(np.full(len(twins), unit, dtype=np.int64))
            ws.append(twins)
        return np.concatenate(rs), np.concatenate(ws)

    def _funds(
        self, limit: float
    ) -> tuple[IntArray, IntArray, FloatArray, FloatArray, IntArray, FloatArray, IntArray, IntArray]:
        """What can pay for a blocked move under a cost budget, the largest first: every refund (a migrated unit
        sent home: its count and state freed), and per migration the TWINS cheapest twin exchanges (the unit goes
        home and a cheaper, not migrated unit of its home takes its route: its state less the twin's freed) that
        alone leave both nodes inside `limit`. Per fund: the node that loses (the migrated unit's), the home, the
        changes there, the count and cost freed, the migrated unit, the twin (-1 for a refund)."""
        share, capacity, state, util, mean = self.share, self.capacity, self.state, self.util, self.mean
        migrated = _indices(self.migrated_mask())
        x, h = self.assignment[migrated], self.original[migrated]
        routes = migrated[self.staying[h] & self.staying[x]] if TWINS else migrated[:0]
        if len(routes) > TWIN_MIGRATIONS:  # at scale: the most expensive migrations (they free the most)
            routes = routes[np.argsort(-state[routes], kind="stable")[:TWIN_MIGRATIONS]]
        if self.kernels is not None:
            funds = self.kernels.funds_of(
                migrated,
                routes,
                self.assignment,
                self.original,
                share,
                capacity,
                state,
                util,
                self.movable,
                self.counts,
                float(mean),
                limit,
                float(self.cap_limit),
                TWINS,
            )
            order = (-funds[5]).argsort(kind="stable")
            return tuple(part[order] for part in funds)
        points = share[migrated]
        parts = [
            (
                x,
                h,
                -points / capacity[x],
                points / capacity[h],
                np.ones(len(migrated), dtype=np.int64),
                state[migrated],
                migrated,
                np.full(len(migrated), -1, dtype=np.int64),
            )
        ]
        if len(routes):
            homes = np.zeros(self.inst.n_nodes, dtype=bool)
            homes[self.original[routes]] = True
            at_home = _indices(
                self.movable & self.counts & (self.assignment == self.original) & homes[self.assignment]
            )
            at_home = at_home[self.assignment[at_home].argsort(kind="stable")]
            where = self.assignment[at_home]
            home = self.original[routes]
            first = where.searchsorted(home, side="left")
            count = where.searchsorted(home, side="right") - first
            r, w = routes.repeat(count), at_home[_ranges(first, count)]
            group = np.arange(len(routes)).repeat(count)
            rx, rh = self.assignment[r], self.original[r]
            net = share[r] - share[w]  # load points leaving the route's node for home
            out, into = -net / capacity[rx], net / capacity[rh]
            after_x, after_h = util[rx] + out, util[rh] + into
            keep = (state[w] < state[r]) & (np.abs(after_x - mean) < limit) & (np.abs(after_h - mean) < limit)
            keep &= (out <= 1e-12) | (after_x <= self.cap_limit)
            keep &= (into <= 1e-12) | (after_h <= self.cap_limit)
            twin = _indices(keep)
            twin = twin[np.lexsort((state[w[twin]], group[twin]))]  # per route, the cheapest twins first
            if len(twin):
                starts = _first_of_runs(group[twin])
                rank = np.arange(len(twin)) - np.repeat(starts, np.diff(np.append(starts, len(twin))))
                twin = twin[rank < TWINS]
                parts.append(
                    (
                        rx[twin],
                        rh[twin],
                        out[twin],
                        into[twin],
                        np.zeros(len(twin), dtype=np.int64),
                        state[r[twin]] - state[w[twin]],
                        r[twin],
                        w[twin],
                    )
                )
        fund_x, fund_h, fund_out, fund_in, fund_n, fund_c, fund_unit, fund_twin = (
            np.concatenate([part[k] for part in parts]) for k in range(8)
        )
        order = (-fund_c).argsort(kind="stable")
        return (
            fund_x[order],
            fund_h[order],
            fund_out[order],
            fund_in[order],
            fund_n[order],
            fund_c[order],
            fund_unit[order],
            fund_twin[order],
        )

    def _funded_candidates(
        self, d: float, units: IntArray, dests: IntArray, worst: FloatArray
    ) -> list[tuple[float, list[tuple[int, int]]]]:
        """Under a cost budget: a blocked improving move at the worst node paid for by several funds (`_funds`:
        refunds and twin exchanges), taken greedily, the largest first, each only if its nodes, with every change
        the step makes there, stay inside d (`_fund_pairs`). Why: at a spent cost budget a single refund or twin
        often frees too little to pay for a unit off the worst node, and a refund alone moves its nodes far out
        (measured at the 1.343 optimum of flights-year 40n cost 2 %: every refund alone pushed its nodes 1.2-7.4
        points out, the best twin frees 0.53 of the 0.87 the cheapest blocked move needs, two twins pay for it).
        Tried: the FUNDED_UNITS cheapest units of the blocked moves, each to its best destination and to the nodes
        of the FUND_NODES largest funds (where a fund's change can offset the move's); at most FUNDED_PAIRS."""
        if not len(units) or not self.used_moves:
            return []
        limit = d - TOLERANCE
        funds = self._funds(limit)
        if not len(funds[0]):
            return []
        state = self.state
        order = np.lexsort((worst, state[units]))  # the cheapest unit first, then the least worst
        units, dests = units[order], dests[order]
        _, firsts = np.unique(units, return_index=True)
        firsts.sort()
        firsts = firsts[:FUNDED_UNITS]
        tried = np.zeros(len(units), dtype=bool)
        tried[firsts] = True
        near = np.zeros(self.inst.n_nodes, dtype=bool)
        near[funds[0][:FUND_NODES]] = True
        near[funds[1][:FUND_NODES]] = True
        chosen_units = np.zeros(len(self.assignment), dtype=bool)
        chosen_units[units[firsts]] = True
        pick = _indices(tried | (chosen_units[units] & near[dests]))[:FUNDED_PAIRS]
        pu, pd = units[pick], dests[pick]
        ps = self.assignment[pu]
        delta_n, delta_c = self.budget_delta(pu, pd)
        pairs = (
            ps,
            pd,
            -self.share[pu] / self.capacity[ps],
            self.share[pu] / self.capacity[pd],
            pu,
            self.used_moves + delta_n - self.max_moves,
            (self.used_cost + delta_c) - self.cost_limit,
        )
        if self.kernels is not None:
            value, chosen = self.kernels.fund_pairs(
                *pairs, *funds, self.util, self.staying, float(self.mean), float(self.cap_limit), limit, FUNDS
            )
        else:
            value, chosen = _fund_pairs(
                pairs, funds, self.util, self.staying, float(self.mean), float(self.cap_limit), limit, FUNDS
            )
        candidates: list[tuple[float, list[tuple[int, int]]]] = []
        fund_x, fund_h, fund_unit, fund_twin = funds[0], funds[1], funds[6], funds[7]
        for p in _indices(value < limit)[value[value < limit].argsort(kind="stable")].tolist():
            steps: list[tuple[int, int]] = []
            for f in chosen[p][chosen[p] >= 0].tolist():
                steps.append((int(fund_unit[f]), int(fund_h[f])))
                if fund_twin[f] >= 0:
                    steps.append((int(fund_twin[f]), int(fund_x[f])))
            steps.append((int(pu[p]), int(pd[p])))
            moved = np.array([unit for unit, _ in steps], dtype=np.int64)
            n, c = self.budget_delta(moved, np.array([dest for _, dest in steps], dtype=np.int64))
            if self.within_budget(np.array([n.sum()]), np.array([c.sum()]))[0]:
                candidates.append((float(value[p]), steps))
                # without resource caps the first is the step taken: the others are not built
                if len(candidates) == RESOURCE_TRIES or not self.resources.has_resources:
                    break
        return candidates

    def _best_legs(
        self, legs: list[tuple[IntArray, IntArray, IntArray]], d: float
    ) -> list[tuple[float, list[tuple[int, int]]]]:
        """The RESOURCE_TRIES best of aligned candidate steps made of several moves ("legs": units, from, to, one
        entry per candidate), each step evaluated exactly on every node its legs touch, kept when it lowers the
        worst node below d and fits the budget (priced only for the steps that improve: few do)."""
        if self.kernels is not None:
            worst, good = self.kernels.scan_legs(
                len(legs),
                np.concatenate([units for units, _, _ in legs]),
                np.concatenate([src for _, src, _ in legs]),
                np.concatenate([dst for _, _, dst in legs]),
                self.assignment,
                *self._evaluation_args(),
                d - TOLERANCE,
                *self._budget_args(),
            )
            best = _smallest(good, worst, RESOURCE_TRIES)
            return [(float(worst[i]), [(int(units[i]), int(dst[i])) for units, _, dst in legs]) for i in best]
        share, capacity = self.share, self.capacity
        nodes: list[IntArray] = []
        deltas: list[FloatArray] = []
        for units, src, dst in legs:
            nodes += [src, dst]
            deltas += [-share[units] / capacity[src], share[units] / capacity[dst]]
        worst, ok = self.evaluate(nodes, deltas)
        good = _indices(ok & (worst < d - TOLERANCE))
        priced = [self.budget_delta(units[good], dst[good]) for units, _, dst in legs]
        delta_n, delta_c = priced[0]
        for more_n, more_c in priced[1:]:
            delta_n, delta_c = delta_n + more_n, delta_c + more_c
        good = good[self.within_budget(delta_n, delta_c)]
        best = _smallest(good, worst, RESOURCE_TRIES)
        return [(float(worst[i]), [(int(units[i]), int(dst[i])) for units, _, dst in legs]) for i in best]

    # -- drivers -----------------------------------------------------------------------------------------------
    def descend(
        self,
        deadline: float,
        max_steps: int,
        proven: Callable[[float], bool] | None = None,
        seen: set[int] | None = None,
    ) -> bool:
        """Steps until none helps (True: a local optimum), or `max_steps` / the deadline (False). A plan whose load
        distance `proven` says is optimal ends it too (True): no step can lower d further, and the last step, the
        one that finds nothing, is the dearest (it tries every kind of step).

        `seen`: hashes of the plans earlier descents passed through (updated here). The descent is a function of
        the plan, so from a plan seen before it leads where it led then, to a plan already offered: it stops there
        (True). Iterated perturbations rebuild the same local optima again and again; this skips the rebuilding's
        rest and its dearest step."""
        for _ in range(max_steps):
            if time.perf_counter() > deadline:
                return False
            if seen is not None:
                plan = self.plan_hash()
                if plan in seen:
                    return True
                if len(seen) < SEEN_PLANS:
                    seen.add(plan)
            if (proven is not None and proven(self.key()[0])) or not self.step():
                return True
        return False

    def fill_band(
        self,
        band: float,
        rng: np.random.Generator,
        deadline: float,
        max_steps: int,
        by_size: IntArray | None = None,
    ) -> None:
        """Repair towards a band (after a perturbation): moves that bring a node outside mean +- `band` inside it
        (the most such nodes at once, drawn at random among the equal), else the move that takes the most excess
        over the band off the most utilized node or onto the least utilized one, until every staying node is
        inside, nothing helps, the budget is spent, `max_steps`, or the deadline.

        Why: with a count budget smaller than the nodes to fix, the migrations form a forest on the nodes and each
        tree balances only if one of its moves lands both of its nodes inside the band; the descent picks the best
        step at the worst node and so rebuilds the trees it came from (measured on a local optimum of real skew:
        after sending home 10-50 % of the migrations, a plan better than the origin in 3 % of the repairs with this
        band at the origin's distance, 0.3 % with the descent alone). Each move lowers the total excess over the
        band or lands more nodes inside it than it pushes out, and `max_steps` caps it."""
        staying, share, capacity, all_staying = self.staying, self.share, self.capacity, self.all_staying
        if by_size is None:
            by_size = _indices(self.movable)
            by_size = by_size[np.argsort(share[by_size], kind="stable")]
        sizes = share[by_size]
        # One uniform draw per step, drawn at once (the kernels take them in one call): a step takes the
        # candidate at its draw among the equal best.
        draws = rng.random(max_steps)
        if self.kernels is not None:
            self._fill_compiled(band, deadline, draws, sizes, by_size)
            return
        for draw in draws.tolist():
            if time.perf_counter() > deadline:
                return
            # without draining nodes every node stays: the masks by `staying` are no-ops (skipped: numpy calls)
            if all_staying:
                r = self.util - self.mean
                out = np.abs(r) > band
            else:
                r = np.where(staying, self.util - self.mean, 0.0)
                out = staying & (np.abs(r) > band)
            if not out.any():
                return
            dests = _lowest(_indices(r < band if all_staying else staying & (r < band)), r, FILL_NODES)
            giving = r[self.assignment] > -band
            units = _indices(
                self.movable & giving if all_staying else self.movable & staying[self.assignment] & giving
            )
            if not len(dests) or not len(units):
                return
            where, points = self.assignment[units], share[units]
            # a unit that lands its over node inside the band, to any node that may take it; a unit that lands an
            # under node inside the band, from any node that may give it
            lands = out[where] & (np.abs(r[where] - points / capacity[where]) <= band)
            parts = [_pairs(units[lands], dests)]
            under = _lowest(_indices(out & (r < 0)), r, FILL_NODES)
            if len(under):
                # per under node, the units of a size that lands it (at most FILL_UNITS, the closest to the
                # exact fit): a window of the units sorted by size, not units x nodes (100,000 units at scale)
                exact = -r[under] * capacity[under]
                lo = np.searchsorted(sizes, exact - band * capacity[under], side="left")
                hi = np.searchsorted(sizes, exact + band * capacity[under], side="right")
                at = np.searchsorted(sizes, exact)
                lo = np.maximum(lo, at - FILL_UNITS // 2)
                hi = np.minimum(hi, np.maximum(at + FILL_UNITS // 2, lo))
                counts = hi - lo
                picked = by_size[_ranges(lo, counts)]
                targets = np.repeat(under, counts)
                keep = r[self.assignment[picked]] > -band
                if not all_staying:
                    keep &= staying[self.assignment[picked]]
                parts.append((picked[keep], targets[keep]))
            if self._fill_step(parts, r, out, band, draw, landing=True):
                continue
            # none lands a node: the move that takes the most excess over the band off the most utilized node or
            # onto the least utilized one (and pushes no node out of the band)
            highest = where[np.argmax(r[where])]
            parts = [_pairs(units[where == highest], dests)] if r[highest] > band else []
            if len(under):
                givers = units[r[where] > 0]
                parts.append((givers, np.full(len(givers), under[0], dtype=np.int64)))
            if not self._fill_step(parts, r, out, band, draw, landing=False):
                return

    def _mine(self, node: int) -> IntArray:
        """units_on(node) by the kernels' scan of the assignment (up to UNITS_SCANNED units: beyond, the index)."""
        assert self.kernels is not None
        if len(self.assignment) <= UNITS_SCANNED:
            return self.kernels.units_on(node, self.assignment, self.movable)
        return self.units_on(node)

    def _fill_compiled(
        self, band: float, deadline: float, draws: FloatArray, sizes: FloatArray, by_size: IntArray
    ) -> None:
        """fill_band through the kernels (the same steps and draws): kernels.fill_steps in chunks, the deadline
        checked between them (a chunk is sized to end well within the time left, from the steps' measured cost),
        the budget, the plan hash and the arrivals index brought up to date after each."""
        kernels = self.kernels
        assert kernels is not None
        counts, original, state, costed, *_ = self._budget_args()
        done, chunk = 0, 1
        while done < len(draws):
            started = time.perf_counter()
            if started > deadline:
                return
            taken, ended, units, sources, dests, used_moves, used_cost = kernels.fill_steps(
                draws[done : done + chunk],
                self.util,
                float(self.mean),
                FILL_NODES,
                float(band),
                TOLERANCE,
                self.movable,
                self.assignment,
                self.staying,
                self.all_staying,
                self.share,
                self.capacity,
                float(self.cap_limit),
                sizes,
                by_size,
                FILL_UNITS,
                counts,
                original,
                state,
                costed,
                self.used_moves,
                int(self.max_moves),
                float(self.used_cost),
                float(self.cost_limit),
            )
            self.used_moves, self.used_cost = int(used_moves), float(used_cost)
            self._moved(units[:taken], sources[:taken], dests[:taken])
            done += taken
            if ended:
                return
            # the next chunk: a quarter of the time left at the steps' cost so far, 1-64 steps
            per_step = (time.perf_counter() - started) / max(taken, 1)
            chunk = int(np.clip(0.25 * (deadline - time.perf_counter()) / max(per_step, 1e-9), 1, 64))

    def _moved(self, units: IntArray, sources: IntArray, dests: IntArray) -> None:
        """The plan hash and the arrivals index after moves the kernels applied (in their order)."""
        n_nodes = self.inst.n_nodes
        for unit, source, dest in zip(units.tolist(), sources.tolist(), dests.tolist(), strict=True):
            if self._plan_hash is not None:
                self._plan_hash += _placement_key(unit, dest, n_nodes) - _placement_key(unit, source, n_nodes)
                self._plan_hash &= _MASK
            if self._indexed:
                self._arrived.setdefault(dest, []).append(unit)
                self._arrivals += 1
        if self._indexed and self._arrivals > max(1024, len(self._by_node) // 4):
            self._index()

    def _fill_step(
        self,
        parts: list[tuple[IntArray, IntArray]],
        r: FloatArray,
        out: BoolArray,
        band: float,
        draw: float,
        landing: bool,
    ) -> bool:
        """One move of fill_band among candidate (unit, destination) pairs: with `landing`, one that lands the most
        nodes inside the band, else the one that takes the most excess off, among the equal the one at `draw` (a
        uniform number in [0, 1)) in candidate order (kernels.fill_pick); never one that pushes more nodes out than
        it lands. With resource caps, the equal ones after it (cyclically) while it does not fit them, at most
        RESOURCE_TRIES. False when none fits (budget, cap, resources)."""
        if not parts:
            return False
        share, capacity = self.share, self.capacity
        units = np.concatenate([p[0] for p in parts])
        dests = np.concatenate([p[1] for p in parts])
        src = self.assignment[units]
        keep = src != dests
        units, dests, src = units[keep], dests[keep], src[keep]
        points = share[units]
        arriving = points / capacity[dests]
        after_src = r[src] - points / capacity[src]
        after_dst = r[dests] + arriving
        inside_src, inside_dst = np.abs(after_src) <= band, np.abs(after_dst) <= band
        # per node +1 when it lands (out, then inside), -1 when it is pushed out (inside, then out), else 0: that is
        # out + inside - 1, summed over the two nodes (integers: exact)
        landed = out[src].astype(np.int64) + inside_src + out[dests] + inside_dst - 2
        ok = self.util[dests] + arriving <= self.cap * (1 + 1e-12)
        if landing:
            ok &= landed >= 1
            score = landed.astype(np.float64)
        else:
            score = np.maximum(np.abs(r[src]) - band, 0) + np.maximum(np.abs(r[dests]) - band, 0)
            score -= np.maximum(np.abs(after_src) - band, 0) + np.maximum(np.abs(after_dst) - band, 0)
            ok &= (landed >= 0) & (score > TOLERANCE)
        good = _indices(ok)
        delta_n, delta_c = self.budget_delta(units[good], dests[good])
        fits = self.within_budget(delta_n, delta_c)
        good, delta_c = good[fits], delta_c[fits]
        if not len(good):
            return False
        top = score[good] >= score[good].max() - (0.0 if landing else TOLERANCE)
        best, delta_c = good[top], delta_c[top]
        if self.costed and len(best) > 1:
            # under a cost budget the cheapest quarter of the equal moves (state is the budget the trees need)
            best = best[delta_c <= _lower_quartile(delta_c)]
        first = int(draw * len(best))
        order = np.roll(best, -first)
        for i in order[:RESOURCE_TRIES].tolist():
            if self.resources.fits(int(units[i]), int(dests[i])):
                self.apply([(int(units[i]), int(dests[i]))])
                return True
        return False

    def pair_balance(self, deadline: float, good_enough: float = 0.0) -> int:
        """Re-partition two nodes' movable units at a time, exactly: of every split of the pair's PAIR_UNITS
        largest units between the two nodes (the rest stay), the one with the least larger deviation of the two,
        ties by fewer migrations, taken when that is below the pair's larger deviation now (by TOLERANCE), within
        the budget and the utilization cap. Pairs by deviation, the largest first; rounds until none improves or
        the deadline (time.perf_counter()). Returns the re-partitions made.

        The descent's steps move one unit or swap two; number partitioning (a few units a node, no budget to speak
        of) needs 2-for-1 and 3-for-2 exchanges, which this finds by enumeration: a random snapshot of 20 nodes x 60
        units without a budget ended at 0.99 points after 1 s of the other starts and the full model, at 0.29 after
        20 s; this start reaches 0.23 in 43 ms. Terminates: each re-partition lowers the pair's larger deviation and
        leaves every other node as it was, so the sorted deviations fall lexicographically (finitely many plans);
        the deadline and PAIR_SPLITS cap it besides (in floating point a split's gain is exact only to the rounding
        of the utilizations: the tolerance grows with their magnitude, and the cap holds whatever the rounding). Not
        under resource caps (the splits are not checked against them). Stops once the plan's distance is at most
        `good_enough` (the caller's gap: rounds that only polish below it cost a small call its milliseconds)."""
        if self.resources.has_resources:
            return 0
        mean, share = self.mean, self.share
        splits = 0
        while time.perf_counter() < deadline and splits < PAIR_SPLITS:
            before = splits
            order = self.active_nodes[np.argsort(-np.abs(self.util[self.active_nodes] - mean), kind="stable")]
            for first, x in enumerate(order.tolist()):
                if time.perf_counter() > deadline:
                    break
                if self.kernels is not None:
                    # The same pairs and splits, the partners scanned by compiled calls of PAIR_WORK splits at
                    # most (~1 ms; the deadline checked between them): ~1 us a pair of a few units, where the
                    # numpy code below costs ~50 us.
                    position = first + 1
                    while position >= 0 and splits < PAIR_SPLITS and time.perf_counter() <= deadline:
                        position, found, units, dest = self.kernels.scan_pairs(
                            x, order, position, PAIR_UNITS, TOLERANCE, self.assignment, self.movable, share,
                            self.capacity, self.util, mean, float(self.cap_limit), *self._budget_args(), PAIR_WORK,
                        )  # fmt: skip
                        if not found:
                            continue
                        moves = zip(units.tolist(), dest.tolist(), strict=True)
                        self.apply([(unit, node) for unit, node in moves if self.assignment[unit] != node])
                        splits += 1
                        if good_enough > 0.0 and self.key()[0] <= good_enough:
                            return splits
                        position += 1
                    continue
                for y in order[first + 1 :].tolist():
                    # (the deadline per pair too: a pair's 4,096 splits take ~0.1 ms, and on 2,000 nodes one x's
                    # partners took 0.5 s past a repacked start's slice of 50 ms)
                    if splits >= PAIR_SPLITS or time.perf_counter() > deadline:
                        break
                    now = max(abs(self.util[x] - mean), abs(self.util[y] - mean))
                    if now <= TOLERANCE:
                        break  # (the partners come by deviation: none further off)
                    units = np.concatenate((self.units_on(x), self.units_on(y)))
                    if len(units) > PAIR_UNITS:
                        units = units[np.argsort(-share[units], kind="stable")[:PAIR_UNITS]]
                    if not len(units):
                        continue
                    split = self._best_split(x, y, units, now)
                    if split is None:
                        continue
                    self.apply([(unit, dest) for unit, dest in split if self.assignment[unit] != dest])
                    splits += 1
                    if good_enough > 0.0 and self.key()[0] <= good_enough:
                        return splits
            if splits == before:
                break
        return splits

    def _best_split(self, x: int, y: int, units: IntArray, now: float) -> list[tuple[int, int]] | None:
        """pair_balance's choice for nodes x and y and their `units`: each unit's node in the best split, or None
        when no split improves within the budget and the cap."""
        mean, capacity = self.mean, self.capacity
        on_y = _split_masks(len(units))  # (2^n, n): unit j on y in split i
        sizes = self.share[units]
        was_y = self.assignment[units] == y
        # Every sum over the units in their order from 0.0 (kernels.best_split's, so both choose the same split)
        rest_x = self.util[x] - _ordered_sum(sizes[~was_y]) / capacity[x]
        rest_y = self.util[y] - _ordered_sum(sizes[was_y]) / capacity[y]
        to_y = _split_sums(on_y, sizes)
        util_x = rest_x + (_ordered_sum(sizes) - to_y) / capacity[x]
        util_y = rest_y + to_y / capacity[y]
        worst = np.maximum(np.abs(util_x - mean), np.abs(util_y - mean))
        # a gain beyond the rounding of utilizations this large (a split and its reverse never both look better)
        tolerance = TOLERANCE * max(1.0, abs(mean), abs(self.util[x]), abs(self.util[y]))
        # (a node above the cap may keep or lower its load, as everywhere)
        ok = (
            (worst < now - tolerance)
            & ((util_x <= self.cap_limit) | (util_x <= self.util[x]))
            & ((util_y <= self.cap_limit) | (util_y <= self.util[y]))
        )
        if not ok.any():
            return None
        home, counted = self.original[units], self.counts[units]
        dest = np.where(on_y, y, x)
        migrated_before = counted & (self.assignment[units] != home)
        migrated = counted[None, :] & (dest != home[None, :])
        delta_n = migrated.sum(axis=1) - int(migrated_before.sum())
        ok &= self.used_moves + delta_n <= self.max_moves
        if self.costed:
            state = self.state[units]
            delta_c = _split_sums(migrated, state) - _ordered_sum(state[migrated_before])
            ok &= self.used_cost + delta_c <= self.cost_limit
        candidates = _indices(ok)
        if not len(candidates):
            return None
        pick = int(candidates[np.lexsort((delta_n[candidates], worst[candidates]))[0]])
        return list(zip(units.tolist(), dest[pick].tolist(), strict=True))

    def _fits(self, unit: int, node: int) -> bool:
        """Whether `unit` moved onto `node` keeps the node within the cap and its resources."""
        after = self.util[node] + self.share[unit] / self.capacity[node]
        return bool(after <= self.cap_limit) and self.resources.fits(unit, node)

    def send_home(self, units: IntArray) -> None:
        """Perturbation: send these migrated units back to their original nodes where that fits (cap, resources)."""
        for unit in units.tolist():
            home = int(self.original[unit])
            if home < 0 or self.assignment[unit] == home or not self._fits(unit, home):
                continue
            self.apply([(unit, home)])

    def random_moves(self, count: int, rng: np.random.Generator) -> None:
        """Perturbation (a restart): up to `count` moves of random movable units to random staying nodes, each one
        that keeps the budget, the cap and the resources; 4 x `count` draws at most."""
        movable, nodes = np.flatnonzero(self.inst.movable), self.active_nodes
        if not len(movable) or not len(nodes):
            return
        for unit, dest in zip(
            rng.choice(movable, size=4 * count).tolist(),
            rng.choice(nodes, size=4 * count).tolist(),
            strict=True,
        ):
            if count <= 0:
                return
            if dest == self.assignment[unit]:
                continue
            delta_n, delta_c = self.budget_delta(np.array([unit]), np.array([dest]))
            if not self.within_budget(delta_n, delta_c)[0] or not self._fits(unit, dest):
                continue
            self.apply([(unit, dest)])
            count -= 1


def polish(
    instance: AssignmentInstance,
    assignment: IntArray,
    deadline: float,
    original: IntArray,
    max_steps: int = 10_000,
) -> IntArray:
    """The descent from `assignment` until no step helps, `max_steps`, or `deadline` (time.perf_counter()).

    `original` is where units are before the plan (the budget counts units away from it; unplaced units start on
    their free first placement and never count)."""
    search = LocalSearch(instance, assignment, original)
    search.descend(deadline, max_steps)
    return search.assignment

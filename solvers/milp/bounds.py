"""A proven lower bound on the load distance reachable within the budget, without any solver.

Three necessary conditions on every plan, each a bound on d (the load distance):

1. Moved load (bisection on a target distance t). Within the budget at most `movable_load` of load can change nodes:
   the sum of the K largest movable loads for max_migrations = K, the fractional-knapsack optimum (load as value,
   state_size as weight) for max_migration_cost, plus all load of units that have no node yet (placing them is free).
   Staying nodes above mean + t must shed their excess and nodes below mean - t must receive their deficit; each unit
   of moved load fills at most one node's need, so  excess(t) <= movable_load  and  deficit(t) <= movable_load.
2. Counting and covering (same bisection). With max_migrations = K, a node above mean + t needs at least as many
   migrations as the fewest of its own movable units whose loads cover its excess, and the needs add up (a migration
   leaves one node); a node below mean - t needs at least the fewest of the largest movable units anywhere that cover
   its deficit (a migration enters one node). Both sums must be at most K. With max_migration_cost the same holds
   with costs: each node's excess (deficit) needs at least its fractional min-cost cover (own units, resp. any movable
   unit, cheapest state per load first), and those covers add up to at most the cost budget. Units without a node
   are placed for free, so the deficit side is skipped when there are any.
   Every test shrinks as t grows, so the smallest feasible t is found by bisection; the infeasible end is the bound
   and the feasible end is the `threshold` the bound-built start aims at (solvers.milp.starts).
3. Hot units (no bisection, no budget): a unit of load L that ends on a staying node makes that node at least
   100 L / (largest staying capacity) utilized; among the n + 1 largest units that must end on the n staying nodes,
   two share a node. A unit on a draining node may stay there instead, which leaves its load missing from the staying
   nodes: some staying node then sits at least 100 L / (staying capacity) below the mean. Pinned units stay, so a
   staying node's pinned load is a floor for its utilization.
Each node alone also gives t >= util - mean - (what it alone can shed), and t >= mean - util - (what it can receive).
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from solvers.instance import UNPLACED, AssignmentInstance, FloatArray, IntArray
from solvers.integer_scaling import common_step
from solvers.metrics import SMALL_UNITS, pairwise_sum

RELATIVE_TOLERANCE = 1e-12  # floating-point slack on sums compared with budgets


# Points: the bisection stops when its ends are this close (a plan's own distance is tested exactly through
# LowerBound.rules_out, so the bound need not be finer to prove a plan optimal).
BISECTION_PRECISION = 1e-7
# Points: a lattice level must lie this far below a plan's distance to count as a better one (the search's own
# optimality tolerance; float noise in a utilization is far below it).
LEVEL_SLACK = 1e-6
# Distinct staying capacities up to which loads that are counts are treated as a lattice: its levels are looked up
# per capacity (eight lattice points each, per band and per bound), and the lattices of many node sizes together are
# dense (clusters have a few node types; 10,000 distinct capacities would make each band repair's look-up ~30 ms).
MAX_LATTICE_CAPACITIES = 16


@dataclass(frozen=True)
class LowerBound:
    value: float  # every plan within the budget has a load distance of at least this (points)
    threshold: float  # the smallest distance the bisection's tests could not rule out (>= value)
    # The counting and covering tests: feasible(t) is False only when no plan within the budget reaches t.
    feasible: Callable[[float], bool] = field(default=lambda t: True, repr=False, compare=False)
    static: float = 0.0  # the part that needs no bisection (hot units, granularity, single nodes)

    def refined(self, deadline: float = np.inf) -> LowerBound:
        """The bisection continued between `value` (a bound: static, or a distance the tests ruled out) and
        `threshold` until its ends are within BISECTION_PRECISION or the deadline passes."""
        lo, hi = _bisect(self.feasible, self.value, self.threshold, deadline)
        return LowerBound(lo, hi, self.feasible, self.static)

    def rules_out(self, distance: float) -> bool:
        """Whether no plan within the budget has a load distance of `distance` or less (so `distance` is a bound):
        one test at a plan's own distance proves it optimal without bisecting to it."""
        return distance < self.static or (distance >= 0.0 and not self.feasible(distance))


def _bisect(
    feasible: Callable[[float], bool], lo: float, hi: float, deadline: float, relative_precision: float = 0.0
) -> tuple[float, float]:
    """Bisection between a ruled-out `lo` and a not-ruled-out `hi` (at most 60 halvings) until the ends are within
    max(BISECTION_PRECISION, relative_precision x hi) or `deadline` (time.perf_counter()) passes; the lower end is a
    valid bound at every step."""
    for _ in range(60):
        if time.perf_counter() > deadline or hi - lo <= max(BISECTION_PRECISION, relative_precision * hi):
            break
        mid = 0.5 * (lo + hi)
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def _segments(nodes: IntArray, key: FloatArray) -> tuple[IntArray, FloatArray]:
    """Order of the items sorted by node, then by `key` ascending; and for each position in that order, the items
    before it on the same node (its rank)."""
    order = np.lexsort((key, nodes))
    sorted_nodes = nodes[order]
    first = sorted_nodes.searchsorted(sorted_nodes, side="left")
    return order, (np.arange(len(order)) - first).astype(np.float64)


def _segment_exclusive_prefix(sorted_nodes: IntArray, values: FloatArray) -> FloatArray:
    """Sum of the values before each position on the same node (values already in segment order)."""
    total = values.cumsum() - values
    first = sorted_nodes.searchsorted(sorted_nodes, side="left")
    return np.asarray(total - total[first] + 0.0, dtype=np.float64)


def _knapsack_load(
    instance: AssignmentInstance, nodes: IntArray, loads: FloatArray, costs: FloatArray, n_nodes: int
) -> FloatArray:
    """Per node: the most load its own units (`nodes`, `loads`, `costs`) can move within the budget (the K largest
    for max_migrations = K, the fractional knapsack for max_migration_cost; the smaller of both when both are set)."""
    total = np.bincount(nodes, weights=loads, minlength=n_nodes)
    best = total.copy()
    if instance.max_migrations is not None:
        order, rank = _segments(nodes, -loads)
        kept = rank < instance.max_migrations
        best = np.minimum(
            best, np.bincount(nodes[order][kept], weights=loads[order][kept], minlength=n_nodes)
        )
    if instance.max_migration_cost is not None:
        # Densest (load per state) first; free units first of all.
        order, _ = _segments(nodes, -log_ratio(loads, costs))
        sorted_nodes, c, lo = nodes[order], costs[order], loads[order]
        spent_before = _segment_exclusive_prefix(sorted_nodes, c)
        room = instance.max_migration_cost - spent_before
        with np.errstate(over="ignore"):  # (room / 5e-324 is inf: the whole unit, as clipped)
            share = np.where(c > 0, np.clip(room / np.where(c > 0, c, 1.0), 0.0, 1.0), 1.0)
        best = np.minimum(best, np.bincount(sorted_nodes, weights=lo * share, minlength=n_nodes))
    return np.asarray(best, dtype=np.float64)


def log_ratio(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    """log(numerator / denominator) for values >= 0, to rank by the quotient: unlike the quotient it neither
    overflows nor underflows (state 1e305 over load 1e-5 is 1e310: as quotients, two such units tied at inf and
    the dearer one could be ranked first, which made the cost cover too dear and the bound invalid). A zero
    denominator ranks last (+inf), a zero numerator over a positive denominator first (-inf)."""
    with np.errstate(divide="ignore"):
        logs = np.log(numerator) - np.log(np.where(denominator > 0, denominator, 1.0))
    return np.asarray(np.where(denominator > 0, logs, np.inf), dtype=np.float64)


class _CostCover:
    """Fractional min-cost cover of an amount of load by a pool of units (cheapest state per load first): a lower
    bound on the state cost of any set of those units whose loads add up to the amount."""

    def __init__(self, loads: FloatArray, costs: FloatArray) -> None:
        keep = loads > 0
        loads, costs = loads[keep], costs[keep]
        order = np.argsort(log_ratio(costs, loads), kind="stable")
        self.loads, self.costs = loads[order], costs[order]
        self.load_prefix = np.concatenate([[0.0], np.cumsum(self.loads)])
        self.cost_prefix = np.concatenate([[0.0], np.cumsum(self.costs)])

    def cost(self, amounts: FloatArray) -> float:
        """Sum of the covers of each amount (each covered on its own, from the whole pool)."""
        amounts = amounts[amounts > 0]
        if not len(amounts):
            return 0.0
        if amounts.max() > self.load_prefix[-1] * (1 + RELATIVE_TOLERANCE):
            return np.inf
        k = np.clip(np.searchsorted(self.load_prefix, amounts, side="left") - 1, 0, len(self.loads) - 1)
        # The part of unit k needed, times its cost (a share <= 1: no overflow where cost per load would).
        part = np.clip((amounts - self.load_prefix[k]) / self.loads[k], 0.0, None)
        return float(np.sum(self.cost_prefix[k] + part * self.costs[k]))


def hot_unit_bound(instance: AssignmentInstance) -> float:
    """Condition 3 of the module docstring (valid for every plan, whatever the budget)."""
    active = instance.active
    if not active.any() or instance.n_units == 0:
        return 0.0
    mean = instance.mean_utilization
    c_max = float(instance.capacity[active].max())
    c_staying = float(instance.capacity[active].sum())
    load = instance.load
    placed = instance.current != UNPLACED
    on_draining = instance.on_draining
    bound = 0.0
    # Units that must end on a staying node: not on a draining node now (pinned units there stay there).
    must = load[~on_draining]
    must.sort()  # (a copy: boolean indexing)
    must = must[::-1]
    if len(must):
        bound = max(bound, 100.0 * float(must[0]) / c_max - mean)
    n_active = int(active.sum())
    if len(must) > n_active:
        bound = max(bound, 100.0 * float(must[n_active - 1] + must[n_active]) / c_max - mean)
    # A movable unit on a draining node: on a staying node as above, or left behind (staying nodes short of it).
    free_draining = on_draining & instance.movable
    if free_draining.any():
        hot = float(load[free_draining].max())
        bound = max(bound, min(100.0 * hot / c_max - mean, 100.0 * hot / c_staying))
    pinned = instance.pinned & placed
    if pinned.any():
        # Pinned load on a staying node stays there; pinned load on a draining node never reaches the staying ones.
        pinned_load = np.bincount(instance.current[pinned], weights=load[pinned], minlength=instance.n_nodes)
        bound = max(bound, float(np.max(100.0 * pinned_load[active] / instance.capacity[active])) - mean)
        bound = max(bound, 100.0 * float(pinned_load[instance.draining].sum()) / c_staying)
    return max(bound, 0.0)


def utilization_steps(instance: AssignmentInstance) -> FloatArray | None:
    """The utilization steps of the staying nodes (100 g / capacity, one per distinct staying capacity, at most
    MAX_LATTICE_CAPACITIES of them) when every load is an integer multiple of a common step g (record counts: a key group's load is how many records its keys
    had), else None. A staying node's utilization is then a multiple of its step, so the load distances a plan can
    have form a lattice around the mean (see deviation_levels_below)."""
    capacity = np.unique(instance.capacity[instance.active])
    if not len(capacity) or len(capacity) > MAX_LATTICE_CAPACITIES:
        return None
    step = common_step(instance.load)
    if step is None:
        return None
    return 100.0 * step / capacity


def _lattice_resolves(step: float, span: float) -> bool:
    """Whether a lattice of `step` can be told apart from the reals over `span` points: a positive, finite step with
    at most 2^52 lattice points in the span (a denormal step, e.g. loads of 5e-324, would overflow the index)."""
    return step > 0.0 and math.isfinite(step) and math.isfinite(span) and span / step <= 2.0**52


def deviation_levels_below(d: float, mean: float, steps: FloatArray, count: int = 2) -> list[float]:
    """The `count` largest deviations |k s - mean| (k >= 0 an integer, s one of `steps`) below d - LEVEL_SLACK,
    largest first: the next load distances a plan can reach below d when every staying node's utilization is a
    multiple of its step (utilization_steps). Only the lattice points nearest to mean +- d can give them: count + 2
    on each side per step are looked at (the first may lie at or above d by rounding, the next `count` below it),
    so this is O(count x len(steps)) whatever d / s."""
    limit = d - LEVEL_SLACK
    found: set[float] = set()
    for s in steps.tolist():
        if limit <= 0.0 or not _lattice_resolves(s, abs(mean) + limit):
            continue
        upper = math.floor((mean + limit) / s)  # the highest k with k s - mean < d, within one step
        lower = max(0, math.ceil((mean - limit) / s))  # the lowest k with mean - k s < d, within one step
        for k in [upper - j for j in range(-1, count + 1)] + [lower + j for j in range(-1, count + 1)]:
            if k < 0:
                continue
            value = abs(k * s - mean)
            if value < limit:
                found.add(round(value, 12))
    return sorted(found, reverse=True)[:count]


def deviation_level_at_least(b: float, mean: float, steps: FloatArray) -> float | None:
    """The smallest deviation |k s - mean| (k >= 0 an integer, s one of `steps`) of at least b, or None (no step):
    on a lattice (utilization_steps) every plan's load distance is such a deviation, so a bound b on it is one on the
    lattice's next level too."""
    found: list[float] = []
    for s in steps.tolist():
        if not _lattice_resolves(s, abs(mean) + abs(b)):
            continue
        upper = math.ceil((mean + b) / s)  # the lowest k with k s - mean >= b, within one step
        lower = math.floor((mean - b) / s)  # the highest k with mean - k s >= b, within one step
        for k in (upper - 1, upper, upper + 1, lower - 1, lower, lower + 1):
            if k >= 0 and abs(k * s - mean) >= b:
                found.append(abs(k * s - mean))
    return min(found) if found else None


def lattice_bound(b: float, mean: float, steps: FloatArray | None) -> float:
    """A bound b on the load distance raised to the lattice's next level at or above it (less a slack for the
    floating point of both), where loads are counts (steps from utilization_steps); b itself elsewhere. E.g. nodes
    of 25 or 26 departures of 1.99 points around a mean of 25.13: no distance lies between 0.249 and 1.741, so a
    bound of 1.0 is one of 1.741."""
    if steps is None or not len(steps) or not math.isfinite(b):
        return b
    level = deviation_level_at_least(b - LEVEL_SLACK, mean, steps)
    if level is None:
        return b
    # A load counts as a multiple of the step within 1e-9 of itself (common_step), so a node's utilization is off
    # its lattice point by at most 1e-9 of it: twice that, plus float noise, below the level stays a bound.
    return max(b, level - (2e-9 * (abs(mean) + level) + 0.25 * LEVEL_SLACK))


def granularity_bound(instance: AssignmentInstance) -> float:
    """Equal staying capacities, loads all multiples of a step g, nothing on draining nodes: every staying node
    carries a multiple of g, so unless the average is one, some node is at or above the next multiple and some node
    at or below the previous one."""
    active = instance.active
    capacity = instance.capacity[active]
    if not len(capacity) or capacity.max() > capacity.min() or instance.on_draining.any():
        return 0.0
    step = common_step(instance.load)
    if step is None:
        return 0.0
    average = float(instance.load.sum()) / len(capacity) / step
    below, above = np.floor(average + 1e-9), np.ceil(average - 1e-9)
    if above <= below:
        return 0.0
    gap = (
        min(above - average, average - below) if len(capacity) == 1 else max(above - average, average - below)
    )
    return max(0.0, 100.0 * (gap * step) / float(capacity[0]) * (1 - 1e-9))


def lower_bound(
    instance: AssignmentInstance, deadline: float = np.inf, relative_precision: float = 0.0
) -> LowerBound:
    """At `deadline` (time.perf_counter()) the bisection stops: its lower end is a valid bound at every step. With
    `relative_precision` it stops once its ends are within that share of the upper end (LowerBound.refined goes on
    from there)."""
    n_nodes = instance.n_nodes
    placed = instance.current != UNPLACED
    movable = instance.movable & placed
    free_load = float(instance.load[~placed].sum())
    mov_units = movable.nonzero()[0]
    mov_nodes = instance.current[mov_units]
    mov_load = instance.load[mov_units]
    mov_cost = instance.state_size[mov_units]
    moved_max = (
        float(
            _knapsack_load(instance, np.zeros(len(mov_nodes), dtype=mov_nodes.dtype), mov_load, mov_cost, 1)[
                0
            ]
        )
        + free_load
    )
    node_load = np.bincount(instance.current[placed], weights=instance.load[placed], minlength=n_nodes)
    active = instance.active
    capacity = instance.capacity[active]
    util = 100.0 * node_load[active] / capacity
    mean = instance.mean_utilization
    # Per node: what it alone can shed (its own movable load within the budget) or receive.
    shed = _knapsack_load(instance, mov_nodes, mov_load, mov_cost, n_nodes)
    per_node = max(
        float((util - mean - 100.0 * shed[active] / capacity).max()),
        float((mean - util - 100.0 * moved_max / capacity).max()),
        0.0,
    )
    static = max(per_node, hot_unit_bound(instance), granularity_bound(instance))

    count_limit = instance.max_migrations
    cost_limit = instance.max_migration_cost
    position = np.full(n_nodes, -1, dtype=np.int64)
    position[active.nonzero()[0]] = np.arange(int(active.sum()))
    # Own units of each staying node, largest first (counting) and cheapest per load first (covering).
    on_staying = active[mov_nodes]
    own_nodes, own_load, own_cost = (
        position[mov_nodes[on_staying]],
        mov_load[on_staying],
        mov_cost[on_staying],
    )
    n_active = int(active.sum())
    own_total = np.bincount(own_nodes, weights=own_load, minlength=n_active)
    by_size = _segments(own_nodes, -own_load)[0] if count_limit is not None else np.zeros(0, dtype=np.int64)
    size_nodes = own_nodes[by_size]
    size_before = _segment_exclusive_prefix(size_nodes, own_load[by_size])
    # cheapest state per load first (units without load last)
    cover_ratio = log_ratio(own_cost, own_load) if cost_limit is not None else np.zeros(len(own_load))
    by_ratio = _segments(own_nodes, cover_ratio)[0] if cost_limit is not None else np.zeros(0, dtype=np.int64)
    ratio_nodes, ratio_load, ratio_cost = own_nodes[by_ratio], own_load[by_ratio], own_cost[by_ratio]
    ratio_before = _segment_exclusive_prefix(ratio_nodes, ratio_load)
    by_load = mov_load.copy()
    by_load.sort()
    global_prefix = by_load[::-1].cumsum()
    global_cover = _CostCover(mov_load, mov_cost) if cost_limit is not None else None
    # Slack against float noise: 1e-9 of a utilization point (of the smallest staying node) in load, and 1e-9 of
    # a state unit or of the budget where that is less. An absolute 1e-9 ignored every excess of loads in units of
    # 1e-12 (the same snapshot with loads and capacities x 1e-12 was bounded at 1.22 instead of 2.07 points and
    # searched to its time limit where it is proven at once); noise is ~1e-16 of a node's load. In points the
    # bound is then the same whatever the unit of load.
    point = float(capacity.min()) / 100.0 if len(capacity) else 1.0
    tolerance = 1e-9 * point
    cost_tolerance = 1e-9 * min(1.0, cost_limit) if cost_limit is not None else 0.0

    def feasible(t: float) -> bool:
        excess = np.maximum(0.0, util - mean - t) * capacity / 100.0
        deficit = np.maximum(0.0, mean - t - util) * capacity / 100.0
        limit = moved_max * (1 + RELATIVE_TOLERANCE)
        if excess.sum() > limit or deficit.sum() > limit:
            return False
        need = np.where(excess > tolerance, excess * (1 - RELATIVE_TOLERANCE), 0.0)
        if (need > own_total * (1 + RELATIVE_TOLERANCE) + tolerance).any():
            return False
        under = deficit[deficit > tolerance] * (1 - RELATIVE_TOLERANCE)
        if count_limit is not None:
            # A unit is needed when the larger units before it on its node do not cover the node's need yet.
            out_count = int(np.count_nonzero(size_before < need[size_nodes]))
            if out_count > count_limit:
                return False
            if free_load <= 0 and len(under):
                k = np.searchsorted(global_prefix, under, side="left")
                if (k >= len(global_prefix)).any() or int((k + 1).sum()) > count_limit:
                    return False
        if cost_limit is not None:
            room = cost_limit * (1 + RELATIVE_TOLERANCE) + cost_tolerance
            share = np.clip((need[ratio_nodes] - ratio_before) / np.maximum(ratio_load, 1e-300), 0.0, 1.0)
            if float(np.sum(ratio_cost * share)) > room:
                return False
            if free_load <= 0 and global_cover is not None and global_cover.cost(under) > room:
                return False
        return True

    test: Callable[[float], bool] = feasible
    if instance.n_units <= SMALL_UNITS:  # the same test on Python lists (see _feasible_on_lists)
        test = _feasible_on_lists(
            util, mean, capacity, moved_max, own_total, count_limit, cost_limit, size_before, size_nodes,
            free_load, global_prefix, ratio_nodes, ratio_before, ratio_load, ratio_cost, global_cover,
            tolerance, cost_tolerance,
        )  # fmt: skip
    lo, hi = 0.0, float(np.abs(util - mean).max())
    if test(lo):
        return LowerBound(static, max(static, lo), test, static)
    lo, hi = _bisect(test, lo, hi, deadline, relative_precision)
    return LowerBound(max(static, lo), max(static, hi), test, static)


def _feasible_on_lists(
    util: FloatArray,
    mean: float,
    capacity: FloatArray,
    moved_max: float,
    own_total: np.ndarray,
    count_limit: int | None,
    cost_limit: float | None,
    size_before: FloatArray,
    size_nodes: IntArray,
    free_load: float,
    global_prefix: FloatArray,
    ratio_nodes: IntArray,
    ratio_before: FloatArray,
    ratio_load: FloatArray,
    ratio_cost: FloatArray,
    global_cover: _CostCover | None,
    tolerance: float,
    cost_tolerance: float,
) -> Callable[[float], bool]:
    """`lower_bound`'s counting and covering test for a small instance (the bisection calls it a dozen times per
    solve; on ten nodes numpy's per-call overhead was most of the bound's time): every step is the numpy test's
    operation on one element, in the same order, and the sums are numpy's (pairwise_sum), so it answers the same
    (tests/test_small_paths.py)."""
    util_l, capacity_l, own_total_l = util.tolist(), capacity.tolist(), own_total.tolist()
    size_before_l, size_nodes_l = size_before.tolist(), size_nodes.tolist()
    prefix_l = global_prefix.tolist()
    ratio_nodes_l, ratio_before_l = ratio_nodes.tolist(), ratio_before.tolist()
    ratio_load_l = np.maximum(ratio_load, 1e-300).tolist()
    ratio_cost_l = ratio_cost.tolist()
    limit = moved_max * (1 + RELATIVE_TOLERANCE)
    own_room = [total * (1 + RELATIVE_TOLERANCE) + tolerance for total in own_total_l]
    # The units a node's need calls for (those whose larger units before them on the node do not cover it yet) are
    # a prefix of its segment: when every segment's sums before are non-decreasing (sums of loads >= 0 are; checked
    # here, else the pass over every unit), their count is one bisection per node instead of a pass per unit.
    same_node = size_nodes[1:] == size_nodes[:-1]
    sorted_segments = bool(np.all(size_before[1:][same_node] >= size_before[:-1][same_node]))
    edges = [0, *((~same_node).nonzero()[0] + 1).tolist(), len(size_nodes_l)]
    # by node (an empty one: no unit is ever needed)
    segment_of: list[list[float]] = [[] for _ in own_total_l]
    for a, b in itertools.pairwise(edges):
        if b > a:
            segment_of[size_nodes_l[a]] = size_before_l[a:b]

    def feasible(t: float) -> bool:
        # max(0.0, x) * c / 100.0 as a conditional (0.0 either way when x <= 0 or NaN; no call per node)
        excess = [
            x * c / 100.0 if (x := u - mean - t) > 0.0 else 0.0
            for u, c in zip(util_l, capacity_l, strict=True)
        ]
        deficit = [
            x * c / 100.0 if (x := mean - t - u) > 0.0 else 0.0
            for u, c in zip(util_l, capacity_l, strict=True)
        ]
        if pairwise_sum(excess) > limit or pairwise_sum(deficit) > limit:
            return False
        need = [e * (1 - RELATIVE_TOLERANCE) if e > tolerance else 0.0 for e in excess]
        if any(map(operator.gt, need, own_room)):
            return False
        under = [d * (1 - RELATIVE_TOLERANCE) for d in deficit if d > tolerance]
        if count_limit is not None:
            if sorted_segments:
                # a node without need counts none (its sums before start at 0.0)
                out_count = sum([bisect.bisect_left(segment_of[i], n) for i, n in enumerate(need) if n > 0.0])
            else:
                out_count = sum(map(operator.lt, size_before_l, map(need.__getitem__, size_nodes_l)))
            if out_count > count_limit:
                return False
            if free_load <= 0 and under:
                k = [bisect.bisect_left(prefix_l, amount) for amount in under]
                if max(k) >= len(prefix_l) or sum(k) + len(k) > count_limit:
                    return False
        if cost_limit is not None:
            room = cost_limit * (1 + RELATIVE_TOLERANCE) + cost_tolerance
            share = [
                min(max((need[node] - before) / load, 0.0), 1.0)
                for node, before, load in zip(ratio_nodes_l, ratio_before_l, ratio_load_l, strict=True)
            ]
            if pairwise_sum([c * x for c, x in zip(ratio_cost_l, share, strict=True)]) > room:
                return False
            if free_load <= 0 and global_cover is not None and global_cover.cost(np.array(under)) > room:
                return False
        return True

    return feasible


def load_distance_lower_bound(instance: AssignmentInstance) -> float:
    return lower_bound(instance).value

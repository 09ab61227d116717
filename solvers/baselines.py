"""Baseline rebalancers on the same instance and budget as the MILP: flux, largest-load-first, round-robin, random.

All of them: place units that have no node yet, never move pinned units, never move units onto draining nodes, stop
when the budget is spent, never let a receiving node exceed `instance.utilization_cap()`, and keep every further
resource of a receiving node at most at max(its capacity, its usage before the plan).
"""

from __future__ import annotations

import bisect
import heapq
import time
from collections import deque

import numpy as np

from solvers.errors import UnsolvableRequest
from solvers.instance import UNPLACED, AssignmentInstance, BoolArray, IntArray, Plan
from solvers.metrics import SMALL_UNITS


class BudgetTracker:
    """Counts migrations and their cost against the instance's budget, and further-resource usage per node."""

    def __init__(self, instance: AssignmentInstance) -> None:
        self.instance = instance
        self.moves = 0
        self.cost = 0.0
        self.has_resources = len(instance.resource_names) > 0
        if self.has_resources:
            placed = instance.current >= 0
            self.usage = np.zeros((instance.n_nodes, len(instance.resource_names)))
            np.add.at(self.usage, instance.current[placed], instance.resource_usage[placed])
            self.limit = np.maximum(instance.resource_capacity, self.usage)

    def fits(self, unit: int, dest: int) -> bool:
        """Whether `dest` has room for the unit's further resources."""
        if not self.has_resources:
            return True
        after = self.usage[dest] + self.instance.resource_usage[unit]
        return bool(np.all(after <= self.limit[dest] * (1 + 1e-9) + 1e-9))

    def fits_steps(self, steps: list[tuple[int, int]], assignment: IntArray) -> bool:
        """Whether the simultaneous moves (unit, dest) leave every receiving node within its resource room."""
        if not self.has_resources:
            return True
        change: dict[int, np.ndarray] = {}
        for unit, dest in steps:
            use = self.instance.resource_usage[unit]
            change[dest] = change.get(dest, 0.0) + use
            if assignment[unit] >= 0:
                change[int(assignment[unit])] = change.get(int(assignment[unit]), 0.0) - use
        return all(
            bool(np.all(self.usage[n] + delta <= self.limit[n] * (1 + 1e-9) + 1e-9))
            for n, delta in change.items()
            if any(dest == n for _, dest in steps)
        )

    def track(self, assignment: IntArray) -> None:
        """Take the resource usage of `assignment` (the budget counters are left alone)."""
        if self.has_resources:
            self.usage = np.zeros_like(self.usage)
            placed = assignment >= 0
            np.add.at(self.usage, assignment[placed], self.instance.resource_usage[placed])

    def allows(self, unit: int, dest: int | None = None) -> bool:
        """Whether moving `unit` (to `dest`, when given) stays within the budget and the resource room."""
        inst = self.instance
        if dest is not None and not self.fits(unit, dest):
            return False
        if inst.current[unit] == UNPLACED:
            return True
        if inst.max_migrations is not None and self.moves + 1 > inst.max_migrations:
            return False
        return not (
            inst.max_migration_cost is not None
            and self.cost + inst.state_size[unit] > inst.max_migration_cost * (1 + 1e-12)
        )

    def spend(self, unit: int, assignment: IntArray, to: int) -> None:
        """Move `unit` to `to`, accounting a migration only when it leaves its original node."""
        inst = self.instance
        if self.has_resources:
            if assignment[unit] >= 0:
                self.usage[assignment[unit]] -= inst.resource_usage[unit]
            self.usage[to] += inst.resource_usage[unit]
        original = inst.current[unit]
        was_moved = original != UNPLACED and assignment[unit] != original
        now_moved = original != UNPLACED and to != original
        if now_moved and not was_moved:
            self.moves += 1
            self.cost += float(inst.state_size[unit])
        elif was_moved and not now_moved:
            self.moves -= 1
            self.cost -= float(inst.state_size[unit])
        assignment[unit] = to

    @property
    def exhausted(self) -> bool:
        inst = self.instance
        return inst.max_migrations is not None and self.moves >= inst.max_migrations


def no_room(instance: AssignmentInstance, unit: int) -> UnsolvableRequest:
    """The 422 for a unit without a node that no staying node can take within the caps."""
    return UnsolvableRequest(
        ("body", "units", unit, "node"),
        f"infeasible: unit {instance.unit_ids[unit]!r} (load {instance.load[unit]:g}) has no node yet and fits on "
        f"no staying node without going over {instance.utilization_cap():g} % utilization (max of 100 % and the "
        "current peak) or a resource capacity; add capacity or place it by hand",
    )


def send_home_over_resource_caps(instance: AssignmentInstance, assignment: IntArray) -> list[str]:
    """For algorithms that balance the main load only (the correlation algorithms): a receiving node over a further
    resource's capacity gets its arrivals sent back home, largest usage first, until it fits; an arrival without a
    home is placed largest-first where it fits (place_unplaced, 422 naming it when it fits nowhere). Updates
    `assignment` in place and returns a note when it changed anything. Terminates: every round sends one arrival home
    or unplaces it, so there are at most U rounds."""
    if not instance.resource_names:
        return []
    capacity = instance.resource_capacity
    tracker = BudgetTracker(instance)
    tracker.track(assignment)
    usage = tracker.usage  # kept current below, so place_unplaced sees the same usage
    undone = 0
    for _ in range(instance.n_units):
        arrived = np.flatnonzero((assignment != instance.current) & (assignment >= 0))
        over: BoolArray = np.asarray((usage > capacity * (1 + 1e-9) + 1e-9).any(axis=1))
        culprits = arrived[over[assignment[arrived]]]
        if not len(culprits):
            break
        node = int(assignment[culprits[0]])
        on_node = culprits[assignment[culprits] == node]
        excess = usage[node] - capacity[node]
        # the arrival that removes most of the node's excess (in shares of each overflowing resource)
        weight = np.where(excess > 0, 1.0 / np.maximum(capacity[node], 1e-300), 0.0)
        unit = int(on_node[np.argmax(instance.resource_usage[on_node] @ weight)])
        usage[node] -= instance.resource_usage[unit]
        home = int(instance.current[unit])
        assignment[unit] = home
        if home >= 0:
            usage[home] += instance.resource_usage[unit]
        undone += 1
    if (assignment == UNPLACED).any():
        place_unplaced(instance, assignment, placed_node_load(instance, assignment), tracker)
    if not undone:
        return []
    return [
        f"{undone} planned move(s) undone: they would have put a receiving node over a further resource's "
        "capacity (this algorithm balances the main load only)"
    ]


def placed_node_load(instance: AssignmentInstance, assignment: IntArray) -> np.ndarray:
    """Each node's load under `assignment` (units without a node count nowhere), as float64 always: np.bincount of no
    unit at all returns int64 zeros even with float weights, and loads then added in place were truncated (every unit
    without a node: flux and largest-load-first piled them up, 487 points on 40 nodes x 2,000 units)."""
    placed = assignment >= 0
    return np.bincount(assignment[placed], weights=instance.load[placed], minlength=instance.n_nodes).astype(
        np.float64, copy=False
    )


def placed_start(instance: AssignmentInstance) -> IntArray:
    """The current placement with every unit without a node placed (`place_unplaced`: largest first onto the least
    utilized staying node with room): what every plan starts from. UnsolvableRequest when one fits nowhere."""
    start = instance.current.copy()
    if (start == UNPLACED).any():
        place_unplaced(instance, start, placed_node_load(instance, start))
    return start


def place_unplaced(
    instance: AssignmentInstance,
    assignment: IntArray,
    node_load: np.ndarray,
    tracker: BudgetTracker | None = None,
) -> None:
    """Largest-first onto the least utilized staying node with room (LPT); updates the arguments in place.

    Raises UnsolvableRequest when a unit finds no node within the utilization cap and its resource room."""
    unplaced = np.flatnonzero(assignment == UNPLACED)
    if not len(unplaced):
        return
    if node_load.dtype != np.float64:  # loads added in place would be truncated (see placed_node_load)
        raise TypeError(f"node_load must be float64, not {node_load.dtype}")
    tracker = tracker or BudgetTracker(instance)
    cap = instance.utilization_cap()
    active = np.flatnonzero(instance.active)
    heap = [(node_load[i] / instance.capacity[i], int(i)) for i in active]
    heapq.heapify(heap)
    for unit in unplaced[np.argsort(-instance.load[unplaced], kind="stable")].tolist():
        skipped = []
        while heap and not (
            tracker.fits(unit, heap[0][1])
            and 100.0 * (node_load[heap[0][1]] + instance.load[unit]) / instance.capacity[heap[0][1]]
            <= cap * (1 + 1e-12)
        ):
            skipped.append(heapq.heappop(heap))
        if not heap:
            raise no_room(instance, unit)
        _, node = heapq.heappop(heap)
        tracker.spend(unit, assignment, node)
        node_load[node] += instance.load[unit]
        heapq.heappush(heap, (node_load[node] / instance.capacity[node], node))
        for item in skipped:
            heapq.heappush(heap, item)


def _first_fitting(
    instance: AssignmentInstance,
    tracker: BudgetTracker,
    node_load: np.ndarray,
    cap: float,
    unit: int,
    preferred: list[int],
) -> int:
    """The first node of `preferred` where a unit without a node fits (utilization cap, resource room), else the
    least utilized staying node where it fits; UnsolvableRequest when there is none."""
    cap_with_slack = cap * (1 + 1e-12)
    load = instance.load[unit]
    for node in preferred:  # the cheap path: no scan of every node
        if (
            instance.active[node]
            and 100.0 * (node_load[node] + load) / instance.capacity[node] <= cap_with_slack
            and tracker.fits(unit, node)
        ):
            return int(node)
    active = np.flatnonzero(instance.active)
    util_after = 100.0 * (node_load[active] + load) / instance.capacity[active]
    for j in np.argsort(util_after, kind="stable").tolist():
        if util_after[j] > cap_with_slack:
            break  # sorted: no later node fits either
        if tracker.fits(unit, int(active[j])):
            return int(active[j])
    raise no_room(instance, unit)


def _start(instance: AssignmentInstance) -> tuple[IntArray, np.ndarray, BudgetTracker]:
    assignment = instance.current.copy()
    node_load = placed_node_load(instance, assignment)
    tracker = BudgetTracker(instance)
    place_unplaced(instance, assignment, node_load, tracker)
    return assignment, node_load, tracker


def _finish(instance: AssignmentInstance, assignment: IntArray, budget: BudgetTracker) -> Plan:
    changed = bool((assignment != instance.current).any())
    return Plan(assignment=assignment, status="feasible" if changed else "unchanged")


def _drain(
    instance: AssignmentInstance,
    assignment: IntArray,
    node_load: np.ndarray,
    budget: BudgetTracker,
    cap: float,
    deadline: Deadline | None = None,
) -> None:
    """Move units off draining nodes, largest first, each to the least utilized staying node where it fits (ties:
    the first such node). Stops with the moves made so far when `deadline` passes.

    Each unit costs one vectorised pass over the staying nodes: the least utilized after the move is the first
    minimum (np.argmin), the first node of the stable order by utilization, and only when it has no resource room is
    the whole order sorted. (A sort per unit and a scan of every unit per draining node took 7.7 s at 10,000 nodes,
    half of them draining, x 100,000 units, whatever time_limit_s said.)"""
    draining = np.flatnonzero(instance.draining)
    if not len(draining):
        return
    active = np.flatnonzero(instance.active)
    capacity = instance.capacity[active]
    # Units only leave draining nodes here (they go to staying ones), so each draining node's units are known once.
    by_node = _units_by_node(assignment, instance.movable, instance.n_nodes)
    for node in draining.tolist():
        units = by_node[node]
        for unit in units[np.argsort(-instance.load[units], kind="stable")].tolist():
            if deadline is not None and deadline.passed:
                return
            util_after = 100.0 * (node_load[active] + instance.load[unit]) / capacity
            first = int(np.argmin(util_after))
            if budget.fits(unit, int(active[first])):
                j = first
            else:
                j = next(
                    (
                        int(k)
                        for k in np.argsort(util_after, kind="stable")
                        if budget.fits(unit, int(active[k]))
                    ),
                    -1,
                )
            if j < 0 or util_after[j] > cap or not budget.allows(unit):
                continue
            dest = int(active[j])
            node_load[node] -= instance.load[unit]
            node_load[dest] += instance.load[unit]
            budget.spend(unit, assignment, dest)


class Deadline:
    """A wall-clock limit for a solver's loops (None: no limit). Checked between moves, so a solver stops with the
    best plan it has (every intermediate plan of these baselines is valid)."""

    def __init__(self, time_limit_s: float | None) -> None:
        self._end = None if time_limit_s is None else time.monotonic() + max(0.0, time_limit_s)

    @property
    def passed(self) -> bool:
        return self._end is not None and time.monotonic() >= self._end


def _units_by_node(assignment: IntArray, movable: np.ndarray, n_nodes: int) -> list[IntArray]:
    """The movable units of each node, in unit order: one O(U log U) pass instead of a scan of every unit per node."""
    units = np.flatnonzero(movable & (assignment >= 0))
    order = units[np.argsort(assignment[units], kind="stable")]
    bounds = np.searchsorted(assignment[order], np.arange(n_nodes + 1))
    return [order[bounds[n] : bounds[n + 1]] for n in range(n_nodes)]


def _move_cap(instance: AssignmentInstance) -> int:
    """A hard cap on the moves of the iterative baselines, on top of their strict progress: a unit may move a few
    times (a pair that improves may later hand it on), never unboundedly often."""
    return 4 * instance.n_units + instance.n_nodes


def _progress_tolerance(utilization: np.ndarray) -> float:
    """A move must improve by more than this (utilization points): far above float rounding of the utilizations, so
    a move and its reverse can never both look like improvements (the 0.45 tie of issue 9 moved a unit back and
    forth forever), far below any load a caller can mean."""
    scale = float(np.max(np.abs(utilization))) if len(utilization) else 1.0
    return 1e-9 * max(1.0, scale)


def flux(instance: AssignmentInstance, time_limit_s: float | None = None) -> Plan:
    """Flux as Madsen et al. describe it: sort nodes by load, pair the i-th most loaded with the i-th least loaded,
    move the best-fitting unit of the heavier node to the lighter one, repeat in rounds until the budget is spent or
    no pair improves. Draining nodes are emptied first (Flux has no scale-in; this keeps the baseline valid).

    Termination by construction: a move is taken only when it shrinks the pair's utilization gap by more than a
    tolerance (equivalently, sum of load^2 / capacity drops by at least load x tolerance), there are at most
    `_move_cap` moves, and `time_limit_s` stops the rounds with the plan so far."""
    deadline = Deadline(time_limit_s)
    if _plain_small(instance):
        return _flux_small(instance, deadline)
    assignment, node_load, budget = _start(instance)
    cap = instance.utilization_cap()
    _drain(instance, assignment, node_load, budget, cap, deadline)
    active = np.flatnonzero(instance.active)
    capacity = instance.capacity
    moves_left = _move_cap(instance)
    while not budget.exhausted and moves_left > 0 and not deadline.passed:
        util = 100.0 * node_load[active] / capacity[active]
        tolerance = _progress_tolerance(util)
        order = active[np.argsort(-util, kind="stable")]
        # Pairs are disjoint, so a node's units at the start of the round are its units when its pair comes.
        on_node = _units_by_node(assignment, instance.movable, instance.n_nodes)
        moved = False
        for i in range(len(order) // 2):
            hi, lo = int(order[i]), int(order[len(order) - 1 - i])
            gap = 100.0 * (node_load[hi] / capacity[hi] - node_load[lo] / capacity[lo])
            if gap <= tolerance:
                break
            units = on_node[hi]
            if not len(units):
                continue
            shift = 100.0 * instance.load[units] * (1.0 / capacity[hi] + 1.0 / capacity[lo])
            dest_util = 100.0 * (node_load[lo] + instance.load[units]) / capacity[lo]
            # A move helps the pair iff the new difference |gap - shift| is smaller than gap, by the tolerance.
            useful = (shift > tolerance) & (shift < 2.0 * gap - tolerance) & (dest_util <= cap)
            if not useful.any():
                continue
            candidates = units[useful]
            fit = np.abs(gap - shift[useful])
            for pick in np.argsort(fit, kind="stable"):
                unit = int(candidates[pick])
                if budget.allows(unit, lo):
                    node_load[hi] -= instance.load[unit]
                    node_load[lo] += instance.load[unit]
                    budget.spend(unit, assignment, lo)
                    moved = True
                    moves_left -= 1
                    break
            if budget.exhausted or moves_left <= 0 or deadline.passed:
                break
        if not moved:
            break
    return _finish(instance, assignment, budget)


# Up to SMALL_UNITS units (solvers.metrics), a plain instance (every unit placed, no draining node, no further
# resource) is balanced by flux on Python lists (`_flux_small`): on small instances numpy's per-call overhead (array
# creation, Python wrappers, a dozen calls per node pair) costs several times the arithmetic. The same float
# operations in the same order on IEEE doubles, the same stable orders: the same plan, bit for bit
# (tests/test_small_paths.py).


def _plain_small(instance: AssignmentInstance) -> bool:
    return (
        instance.n_units <= SMALL_UNITS
        and not instance.resource_names
        and not any(instance.draining_values)
        and (not instance.current_values or min(instance.current_values) >= 0)
    )


def _flux_small(instance: AssignmentInstance, deadline: Deadline) -> Plan:
    """`flux` on Python lists for a small plain instance (see SMALL_UNITS): each step is the numpy path's operation
    on one element, in the same order, so the plan is the same.

    The unit a pair moves is found by binary search, not by a pass over the giver's units: each node keeps its
    movable units in order of load (ties by unit index), along which the shift (100 load x per_load) and the
    receiver's utilization after the move both grow (IEEE addition, and multiplication and division by a positive
    number, are monotone). So the units that help the pair are one run of positions, their fit |gap - shift| falls
    while the shift is below the gap and grows after, and the least fit is next to where the shift crosses the gap,
    its ties the run of equal fits beside it. A cost budget (the units it allows depend on their state size, not on
    their load), or numbers that could make a NaN, take the pass instead."""
    current = instance.current_values
    load = instance.load_values
    capacity = instance.capacity_values
    state_size = instance.state_size_values
    n_nodes = instance.n_nodes
    node_load = list(instance.current_node_load_values)  # (changed move by move below: a copy)
    assignment = list(current)
    max_moves, max_cost = instance.max_migrations, instance.max_migration_cost
    cost_limit = None if max_cost is None else max_cost * (1 + 1e-12)
    moves, cost = 0, 0.0
    moves_left = _move_cap(instance)
    nodes = range(n_nodes)
    # The movable units of each node by load, ties by unit index (a stable sort), kept so move by move (the numpy
    # path rebuilds its units each round: the same sets, as a round's pairs are disjoint).
    by_load: list[int] = instance.load.argsort(kind="stable").tolist()
    on_node: list[list[int]] = [[] for _ in nodes]
    pinned: list[bool] = instance.pinned.tolist()
    if True in pinned:
        for unit in by_load:
            if not pinned[unit]:
                on_node[current[unit]].append(unit)
    else:
        for unit in by_load:
            on_node[current[unit]].append(unit)
    # The search needs numbers that make no NaN: loads not negative, their sums finite (the service's snapshots
    # always: loads and capacities are capped).
    search = cost_limit is None and (not load or (load[by_load[0]] >= 0.0 and sum(load) < 1e300))
    util = [100.0 * node_load[i] / capacity[i] for i in nodes]
    if search and load and instance.utilization_cap_override is None:
        cap = max(100.0, max(util))  # utilization_cap() of a plain instance: the same numbers, none a NaN
    else:
        cap = instance.utilization_cap()
    while not (max_moves is not None and moves >= max_moves) and moves_left > 0 and not deadline.passed:
        tolerance = 1e-9 * max(1.0, max(map(abs, util)))
        order = sorted(nodes, key=util.__getitem__, reverse=True)  # stable, as argsort(-util, kind="stable")
        moved = False
        for i in range(n_nodes // 2):
            hi, lo = order[i], order[n_nodes - 1 - i]
            gap = 100.0 * (node_load[hi] / capacity[hi] - node_load[lo] / capacity[lo])
            if gap <= tolerance:
                break
            giver = on_node[hi]
            if not giver:
                continue
            per_load = 1.0 / capacity[hi] + 1.0 / capacity[lo]
            most = 2.0 * gap - tolerance
            lo_load, lo_capacity = node_load[lo], capacity[lo]
            # The numpy path sorts the useful units by fit (stably) and takes the first that the budget allows
            # (BudgetTracker.allows: the count of moves tried, a move home included, and the cost): the unit of
            # least fit, ties by unit index, among those allowed; `at` is its position in `giver`.
            # (Here moves < max_moves, by the loops' conditions: the count allows one more move.)
            at = -1
            if search and gap < _INF and per_load < _INF:
                size = len(giver)
                # k: the first position whose shift reaches the gap (the division guesses it, exact steps settle it:
                # the shift grows along the positions)
                # (shift_low and shift_high: the shifts at k - 1 and k, where those exist)
                k = bisect.bisect_left(giver, gap / per_load / 100.0, key=load.__getitem__)
                shift_low = shift_high = 0.0
                while k > 0 and (shift_low := 100.0 * load[giver[k - 1]] * per_load) >= gap:
                    k -= 1
                while k < size and (shift_high := 100.0 * load[giver[k]] * per_load) < gap:
                    shift_low = shift_high
                    k += 1
                # The helping position of least fit below the crossing (its shift is below the gap, so below
                # `most`), and the one at or above it (its shift is above the tolerance): -1 and size where none.
                low = k - 1
                if low >= 0 and not tolerance < shift_low:
                    low = -1  # nor any smaller shift
                elif low >= 0 and not 100.0 * (lo_load + load[giver[low]]) / lo_capacity <= cap:
                    # over the receiver's cap (and so is every larger load): the last unit below that fits
                    low = (
                        bisect.bisect_right(
                            giver, cap, 0, low, key=lambda unit: 100.0 * (lo_load + load[unit]) / lo_capacity
                        )
                        - 1
                    )
                    if low >= 0 and not tolerance < (shift_low := 100.0 * load[giver[low]] * per_load):
                        low = -1
                high = k
                if high < size and not (
                    shift_high < most and 100.0 * (lo_load + load[giver[high]]) / lo_capacity <= cap
                ):
                    high = size  # nor any larger shift
                if low < 0 and high == size:
                    continue  # no unit helps
                fit_low = abs(gap - shift_low) if low >= 0 else _INF
                fit_high = abs(gap - shift_high) if high < size else _INF
                best_fit = min(fit_low, fit_high)
                best = len(load)
                if fit_low == best_fit:  # the run of equal fits down from `low`
                    position = low
                    while True:
                        if giver[position] < best:
                            best, at = giver[position], position
                        position -= 1
                        if position < 0:
                            break
                        shift = 100.0 * load[giver[position]] * per_load
                        if not tolerance < shift or abs(gap - shift) != best_fit:
                            break  # (a smaller load fits the cap too)
                if fit_high == best_fit:  # the run of equal fits up from `high`
                    position = high
                    while True:
                        if giver[position] < best:
                            best, at = giver[position], position
                        position += 1
                        if position == size:
                            break
                        shift = 100.0 * load[giver[position]] * per_load
                        if (
                            not (
                                shift < most
                                and 100.0 * (lo_load + load[giver[position]]) / lo_capacity <= cap
                            )
                            or abs(gap - shift) != best_fit
                        ):
                            break
            else:  # one pass over the giver's units in unit order
                useful = False
                best_fit, best = 0.0, -1
                for unit in sorted(giver):
                    shift = 100.0 * load[unit] * per_load
                    if tolerance < shift < most and 100.0 * (lo_load + load[unit]) / lo_capacity <= cap:
                        useful = True
                        fit = abs(gap - shift)
                        if (best < 0 or fit < best_fit) and (
                            cost_limit is None or not cost + state_size[unit] > cost_limit
                        ):
                            best_fit, best = fit, unit
                if not useful:
                    continue
                at = giver.index(best) if best >= 0 else -1
            if at >= 0:
                unit = giver.pop(at)
                home = current[unit]
                node_load[hi] -= load[unit]
                node_load[lo] += load[unit]
                util[hi] = 100.0 * node_load[hi] / capacity[hi]
                util[lo] = 100.0 * node_load[lo] / capacity[lo]
                was_moved, now_moved = assignment[unit] != home, lo != home
                if now_moved and not was_moved:
                    moves += 1
                    cost += state_size[unit]
                elif was_moved and not now_moved:
                    moves -= 1
                    cost -= state_size[unit]
                assignment[unit] = lo
                # into the receiver's units by load, after its units of smaller load and of equal load and index
                receiver = on_node[lo]
                position = bisect.bisect_right(receiver, load[unit], key=load.__getitem__)
                while (
                    position > 0
                    and receiver[position - 1] > unit
                    and load[receiver[position - 1]] == load[unit]
                ):
                    position -= 1
                receiver.insert(position, unit)
                moved = True
                moves_left -= 1
            if (max_moves is not None and moves >= max_moves) or moves_left <= 0 or deadline.passed:
                break
        if not moved:
            break
    return Plan(
        assignment=np.array(assignment, dtype=np.int64),
        status="feasible" if assignment != current else "unchanged",
    )


_INF = float("inf")


def largest_load_first(instance: AssignmentInstance, time_limit_s: float | None = None) -> Plan:
    """The most utilized node hands its largest unit that lowers the peak to the least utilized node; repeat.

    Termination by construction: the receiver must end below the giver's utilization by a tolerance, there are at
    most `_move_cap` moves, and `time_limit_s` stops it with the plan so far."""
    deadline = Deadline(time_limit_s)
    assignment, node_load, budget = _start(instance)
    cap = instance.utilization_cap()
    _drain(instance, assignment, node_load, budget, cap, deadline)
    active = np.flatnonzero(instance.active)
    capacity = instance.capacity[active]
    # Movable units per node, kept up to date move by move (a set per node: O(1) updates, no scan of every unit).
    on_node = [
        set(units.tolist()) for units in _units_by_node(assignment, instance.movable, instance.n_nodes)
    ]
    tried: set[int] = set()
    moves_left = _move_cap(instance)
    while not budget.exhausted and moves_left > 0 and not deadline.passed:
        util = 100.0 * node_load[active] / capacity
        tolerance = _progress_tolerance(util)
        order = np.argsort(-util, kind="stable")
        hi = next((int(active[j]) for j in order if int(active[j]) not in tried), None)
        if hi is None:
            break
        lo_pos = int(np.argmin(util))
        lo = int(active[lo_pos])
        peak = 100.0 * node_load[hi] / instance.capacity[hi]
        units = np.sort(np.fromiter(on_node[hi], dtype=np.int64, count=len(on_node[hi])))
        if hi == lo or not len(units):
            tried.add(hi)
            continue
        dest_util = 100.0 * (node_load[lo] + instance.load[units]) / instance.capacity[lo]
        ok = (dest_util < peak - tolerance) & (dest_util <= cap) & (instance.load[units] > 0)
        chosen = None
        for unit in units[ok][np.argsort(-instance.load[units[ok]], kind="stable")]:
            if budget.allows(int(unit), lo):
                chosen = int(unit)
                break
        if chosen is None:
            tried.add(hi)
            continue
        node_load[hi] -= instance.load[chosen]
        node_load[lo] += instance.load[chosen]
        budget.spend(chosen, assignment, lo)
        on_node[hi].discard(chosen)
        on_node[lo].add(chosen)
        moves_left -= 1
        tried.clear()
    return _finish(instance, assignment, budget)


def round_robin(instance: AssignmentInstance, time_limit_s: float | None = None) -> Plan:
    """Spread units evenly by count over the staying nodes, ignoring load: unplaced units go round-robin, then units
    on nodes over their share (draining nodes have share 0) move to nodes under it, within the budget. Linear in the
    units; `time_limit_s` stops the moves (not the placement of unplaced units) with the plan so far."""
    deadline = Deadline(time_limit_s)
    assignment = instance.current.copy()
    budget = BudgetTracker(instance)
    active = np.flatnonzero(instance.active)
    n_active = len(active)
    share = np.zeros(instance.n_nodes, dtype=np.int64)
    base, extra = divmod(instance.n_units, n_active)
    share[active] = base
    share[active[:extra]] += 1
    count = np.bincount(assignment[assignment >= 0], minlength=instance.n_nodes)
    # Pinned units count against their node's share; they never move. A node leaves the rotation for good once it
    # reaches its share (counts of nodes under their share only grow), so each call is amortized O(1).
    under = deque(int(n) for n in active if count[n] < share[n])

    def next_under() -> int | None:
        while under:
            node = under.popleft()
            if count[node] < share[node]:
                under.append(node)
                return node
        return None

    node_load = placed_node_load(instance, assignment)
    cap = instance.utilization_cap()
    for unit in np.flatnonzero(assignment == UNPLACED):
        preferred = next_under()
        node = _first_fitting(
            instance, budget, node_load, cap, int(unit), [] if preferred is None else [preferred]
        )
        budget.spend(int(unit), assignment, node)
        node_load[node] += instance.load[unit]
        count[node] += 1
    on_node = _units_by_node(assignment, instance.movable, instance.n_nodes)
    for node in np.argsort(-(count - share), kind="stable"):
        if count[node] <= share[node] or deadline.passed:
            break  # sorted by surplus: no later node is over its share
        for unit in on_node[node][::-1]:
            if count[node] <= share[node] or budget.exhausted:
                break
            dest = next_under()
            if dest is None:
                break
            if not budget.allows(int(unit), dest):
                continue
            if 100.0 * (node_load[dest] + instance.load[unit]) / instance.capacity[dest] > cap:
                continue  # it ignores load, but like every algorithm it never pushes a receiver over the cap
            count[node] -= 1
            count[dest] += 1
            node_load[node] -= instance.load[unit]
            node_load[dest] += instance.load[unit]
            budget.spend(int(unit), assignment, dest)
    return _finish(instance, assignment, budget)


def random_moves(instance: AssignmentInstance, seed: int = 0, time_limit_s: float | None = None) -> Plan:
    """Random baseline: unplaced units to random staying nodes; then random movable units to random staying nodes
    (where they fit under the utilization cap) until the budget is spent; with no budget, every movable unit is
    redrawn once. Linear in the units; `time_limit_s` stops the redraws with the plan so far."""
    deadline = Deadline(time_limit_s)
    rng = np.random.default_rng(seed)
    assignment = instance.current.copy()
    budget = BudgetTracker(instance)
    active = np.flatnonzero(instance.active)
    node_load = placed_node_load(instance, assignment)
    cap = instance.utilization_cap()
    for unit in np.flatnonzero(assignment == UNPLACED):
        # A few random draws first (O(1)); when none fits, the least utilized node that fits.
        draws = rng.choice(active, size=min(8, len(active))).tolist()
        node = _first_fitting(instance, budget, node_load, cap, int(unit), draws)
        budget.spend(int(unit), assignment, node)
        node_load[node] += instance.load[unit]
    # Units on draining nodes go first, so random still drains; the rest are drawn in random order.
    on_draining = np.flatnonzero(instance.movable & instance.on_draining)
    others = rng.permutation(
        np.flatnonzero(instance.movable & (instance.current >= 0) & ~instance.on_draining)
    )
    order = np.concatenate([rng.permutation(on_draining), others])
    destinations = rng.choice(active, size=len(order)) if len(order) else np.zeros(0, dtype=np.int64)
    for unit, dest in zip(order.tolist(), destinations.tolist(), strict=True):
        if budget.exhausted or deadline.passed:
            break
        src = int(assignment[unit])
        if not budget.allows(unit, dest):
            continue
        if dest == src or 100.0 * (node_load[dest] + instance.load[unit]) / instance.capacity[dest] > cap:
            continue
        node_load[src] -= instance.load[unit]
        node_load[dest] += instance.load[unit]
        budget.spend(unit, assignment, dest)
    return _finish(instance, assignment, budget)

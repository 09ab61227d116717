"""Baseline rebalancers on the same instance and budget as the MILP: flux, largest-load-first, round-robin, random.

All of them: place units that have no node yet, never move pinned units, never move units onto draining nodes, stop
when the budget is spent, never let a receiving node exceed `instance.utilization_cap()`, and keep every further
resource of a receiving node at most at max(its capacity, its usage before the plan).
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from collections.abc import Callable
from types import ModuleType

import numpy as np

from solvers.errors import UnsolvableRequest
from solvers.instance import UNPLACED, AssignmentInstance, BoolArray, IntArray, Plan


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

    @classmethod
    def of_plan(cls, instance: AssignmentInstance, assignment: IntArray) -> BudgetTracker:
        """A tracker holding a plan's migrations (counted from the snapshot) and its resource usage."""
        tracker = cls(instance)
        tracker.track(assignment)
        moved = instance.migration_mask(assignment)
        tracker.moves, tracker.cost = int(moved.sum()), float(instance.state_size[moved].sum())
        return tracker

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


def placed_start(instance: AssignmentInstance, make_room: bool = False) -> IntArray:
    """The current placement with every unit without a node placed (`place_unplaced`: largest first onto the least
    utilized staying node with room): what every plan starts from. UnsolvableRequest when one fits nowhere.
    `make_room`: see `place_unplaced` (the start may then hold migrations, within the budget)."""
    start = instance.current.copy()
    if (start == UNPLACED).any():
        place_unplaced(instance, start, placed_node_load(instance, start), make_room=make_room)
    return start


def place_unplaced(
    instance: AssignmentInstance,
    assignment: IntArray,
    node_load: np.ndarray,
    tracker: BudgetTracker | None = None,
    make_room: bool = False,
) -> None:
    """Largest-first onto the least utilized staying node with room (LPT); updates the arguments in place.

    `make_room`: a unit that fits on no node as they are gets one where moving a few of its units elsewhere makes
    room, within the budget (`_made_room`). Raises UnsolvableRequest when a unit finds no node within the
    utilization cap and its resource room (and none can be made)."""
    unplaced = np.flatnonzero(assignment == UNPLACED)
    if not len(unplaced):
        return
    if node_load.dtype != np.float64:  # loads added in place would be truncated (see placed_node_load)
        raise TypeError(f"node_load must be float64, not {node_load.dtype}")
    tracker = tracker or BudgetTracker(instance)
    cap = instance.utilization_cap()
    active = np.flatnonzero(instance.active)

    def utilization_heap() -> list[tuple[float, int]]:
        heap = [(node_load[i] / instance.capacity[i], int(i)) for i in active]
        heapq.heapify(heap)
        return heap

    heap = utilization_heap()
    room_calls = 0
    for unit in unplaced[np.argsort(-instance.load[unplaced], kind="stable")].tolist():
        skipped = []
        while heap and not (
            tracker.fits(unit, heap[0][1])
            and 100.0 * (node_load[heap[0][1]] + instance.load[unit]) / instance.capacity[heap[0][1]]
            <= cap * (1 + 1e-12)
        ):
            skipped.append(heapq.heappop(heap))
        if not heap:
            made = None
            if make_room and room_calls < ROOM_CALLS:
                room_calls += 1
                made = _made_room(instance, assignment, node_load, tracker, unit, cap)
            if made is None:
                raise no_room(instance, unit)
            # (the moves changed other nodes' loads: the heap is built again, O(nodes), on this rare path)
            tracker.spend(unit, assignment, made)
            node_load[made] += instance.load[unit]
            heap = utilization_heap()
            continue
        _, node = heapq.heappop(heap)
        tracker.spend(unit, assignment, node)
        node_load[node] += instance.load[unit]
        heapq.heappush(heap, (node_load[node] / instance.capacity[node], node))
        for item in skipped:
            heapq.heappush(heap, item)


# The nodes `_made_room` tries (those with the most room first), the units of each it may move, and its calls per
# placement: the fallback for units that fit nowhere stays O(ROOM_CALLS x ROOM_NODES x (units + ROOM_UNITS x
# nodes)) however large the snapshot (place_unplaced has no deadline; about 0.1 s at 10,000 nodes x 250,000 units).
ROOM_NODES = 8
ROOM_UNITS = 32
ROOM_CALLS = 16


def _made_room(
    instance: AssignmentInstance,
    assignment: IntArray,
    node_load: np.ndarray,
    tracker: BudgetTracker,
    unit: int,
    cap: float,
) -> int | None:
    """A staying node for `unit` (no node yet, fits on none as they are) once some of that node's movable units move
    to other staying nodes with room, or None; the moves are made (assignment, node_load, tracker), the unit is not
    placed. The nodes with the most room first; on each, its largest units first (the fewest migrations), each to the
    least utilized other staying node where it fits, until the unit fits: within the cap, the resource room and
    the budget left (counted from the snapshot, as every migration).

    Seen (30 Nov, against enumeration): 3 nodes of 100, n0 holds 44, n2 44, n1 drains; a new unit of 57 fits on
    neither staying node (101 %), and the answer was a 422 "fits on no staying node; add capacity" where moving the
    44 of n0 onto n2 (one migration, the budget) makes room: 11.5 points."""
    inst = instance
    active = np.flatnonzero(inst.active)
    capacity = inst.capacity
    limit = cap * (1 + 1e-12)
    load = inst.load[unit]
    room = limit * capacity[active] / 100.0 - node_load[active]
    for node in active[np.argsort(-room, kind="stable")][:ROOM_NODES].tolist():
        need = node_load[node] + load - limit * capacity[node] / 100.0  # load to move off the node
        units = np.flatnonzero((assignment == node) & inst.movable)
        units = units[np.argsort(-inst.load[units], kind="stable")][:ROOM_UNITS]
        others = active[active != node]
        trial = node_load.copy()
        # The moves are made on the tracker as they are chosen, and undone where the unit still does not fit.
        moved: list[int] = []
        for mover in units.tolist():
            if need <= 0:
                break
            # A unit at home costs a migration; one the plan moved already costs nothing more.
            if assignment[mover] == inst.current[mover] and not tracker.allows(mover):
                continue
            after = 100.0 * (trial[others] + inst.load[mover]) / capacity[others]
            k = least_utilized_fitting(after, others, limit, mover, tracker.fits)
            if k < 0:
                continue
            dest = int(others[k])
            tracker.spend(mover, assignment, dest)
            moved.append(mover)
            trial[node] -= inst.load[mover]
            trial[dest] += inst.load[mover]
            need -= inst.load[mover]
        if moved and 100.0 * (trial[node] + load) / capacity[node] <= limit and tracker.fits(unit, node):
            node_load[:] = trial
            return node
        for mover in reversed(moved):
            tracker.spend(mover, assignment, node)
    return None


def least_utilized_fitting(
    util_after: np.ndarray, nodes: IntArray, limit: float, unit: int, fits: Callable[[int, int], bool]
) -> int:
    """The position in `nodes` of the node where `unit` ends least utilized (`util_after`, per node), at most
    `limit`, that `fits(unit, node)` (resource room), or -1. The least (np.argmin: the first of equal ones) is tried
    alone first, one vectorised pass; the whole order (a stable sort) only when it lacks room: a sort per unit took
    7.7 s at 10,000 nodes, half of them draining, x 100,000 units (see _drain)."""
    if not len(util_after):
        return -1
    first = int(np.argmin(util_after))
    if util_after[first] > limit:
        return -1
    if fits(unit, int(nodes[first])):
        return first
    for k in np.argsort(util_after, kind="stable").tolist():
        if util_after[k] > limit:
            break  # sorted: no later node is within the limit either
        if fits(unit, int(nodes[k])):
            return int(k)
    return -1


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
    j = least_utilized_fitting(util_after, active, cap_with_slack, unit, tracker.fits)
    if j < 0:
        raise no_room(instance, unit)
    return int(active[j])


def _start(instance: AssignmentInstance) -> tuple[IntArray, np.ndarray, BudgetTracker]:
    assignment = instance.current.copy()
    node_load = placed_node_load(instance, assignment)
    tracker = BudgetTracker(instance)
    place_unplaced(instance, assignment, node_load, tracker, make_room=True)
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
            j = least_utilized_fitting(util_after, active, cap, unit, budget.fits)
            if j < 0 or not budget.allows(unit):
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
    if _kernels is not None and _plain(instance):
        compiled = _flux_compiled(instance, deadline, _kernels)
        if compiled is not None:
            return compiled
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


# A plain instance (every unit placed, no draining node, no further resource) is balanced by flux's rounds compiled
# with numba (solvers/baseline_kernels.py, once `warm_up` has loaded them in this process): the same decisions as the
# numpy code above, bit for bit (tests/test_flux_kernel.py, tests/test_small_paths.py): 24 us on a 10 x 100 request
# where the Python-list path it replaced took 72 (with the instance's first use of its arrays), 0.05 s on 10,000 x
# 250,000 where the numpy code takes 1.7 s. Until then, or when numba cannot compile here, the numpy code runs.
_kernels: ModuleType | None = None
# Steps (units + nodes a round) one call of the compiled rounds may take before the deadline is checked again: about
# a millisecond's work.
FLUX_STEPS_PER_CALL = 1 << 20


def warm_up() -> bool:
    """Compile flux's kernel (or load it from numba's on-disk cache) in this process; True when it is ready. Call
    it where no request's clock runs (solvers.compiled.warm_up does, for every kernel). Idempotent; on failure it
    warns and flux runs its numpy code."""
    global _kernels
    if _kernels is None:
        from solvers.compiled import load_kernels

        _kernels = load_kernels("solvers.baseline_kernels", "flux runs without its compiled kernel")
    return _kernels is not None


def _plain(instance: AssignmentInstance) -> bool:
    """No draining node and no further resource (units without a node: baseline_kernels.flux_start says)."""
    return not instance.resource_names and not any(instance.draining_values)


def _flux_compiled(instance: AssignmentInstance, deadline: Deadline, kernels: ModuleType) -> Plan | None:
    """`flux` of a plain instance by its compiled rounds, its deadline checked between calls of a bounded number of
    rounds (a round is O(units + nodes log nodes): FLUX_STEPS_PER_CALL steps a call); None for numbers the kernels
    leave to the numpy code (see baseline_kernels.flux_start). The node sums and the cap are computed by the kernel
    too: as numpy calls on a small snapshot they cost more than the whole search."""
    override = instance.utilization_cap_override
    if override is not None and not math.isfinite(override):
        return None
    current = np.ascontiguousarray(instance.current, dtype=np.int64)
    load = np.ascontiguousarray(instance.load, dtype=np.float64)
    capacity = np.ascontiguousarray(instance.capacity, dtype=np.float64)
    node_load = np.empty(len(capacity))
    cap = np.array([math.nan if override is None else float(override)])
    if not kernels.flux_start(current, load, capacity, node_load, cap):
        return None
    max_moves = -1 if instance.max_migrations is None else int(instance.max_migrations)
    max_cost = instance.max_migration_cost
    cost_limit = math.inf if max_cost is None else float(max_cost) * (1 + 1e-12)  # as BudgetTracker.allows
    counters = np.array([0, _move_cap(instance)], dtype=np.int64)  # migrations, moves left under the hard cap
    cost = np.zeros(1)
    rounds = max(1, FLUX_STEPS_PER_CALL // (instance.n_units + instance.n_nodes))
    assignment = current.copy()
    state_size = np.ascontiguousarray(instance.state_size, dtype=np.float64)
    pinned = np.ascontiguousarray(instance.pinned, dtype=np.bool_)
    while (
        kernels.flux_rounds(
            assignment,
            current,
            load,
            capacity,
            state_size,
            pinned,
            node_load,
            counters,
            cost,
            max_moves,
            cost_limit,
            cap,
            rounds,
        )
        == kernels.MORE
        and not deadline.passed
    ):
        pass
    # Every unit of a plain instance is placed: it is elsewhere now exactly when it counts as a migration.
    return Plan(assignment=assignment, status="feasible" if counters[0] > 0 else "unchanged")


class _UnitsOnNodes:
    """The movable units of each node as a set (O(1) updates), each set built the first time its node is looked at:
    at 10,000 nodes x 250,000 units the sets and heaps of every node took 0.126 s before the first check of the
    clock, and a short call looks at a few nodes (the deadlines bench, 7 Dec)."""

    def __init__(self, assignment: IntArray, movable: np.ndarray, n_nodes: int) -> None:
        self.by_node = _units_by_node(assignment, movable, n_nodes)
        self.sets: dict[int, set[int]] = {}

    def __getitem__(self, node: int) -> set[int]:
        units = self.sets.get(node)
        if units is None:
            units = self.sets[node] = set(self.by_node[node].tolist())
        return units


def _llf_start(
    instance: AssignmentInstance, deadline: Deadline
) -> tuple[IntArray, np.ndarray, BudgetTracker, float, IntArray, _UnitsOnNodes]:
    """largest-load-first's state after placing the unplaced units and draining: the assignment, node loads, budget,
    utilization cap, the staying nodes, and the movable units of each node."""
    assignment, node_load, budget = _start(instance)
    cap = instance.utilization_cap()
    _drain(instance, assignment, node_load, budget, cap, deadline)
    active = np.flatnonzero(instance.active)
    return (
        assignment,
        node_load,
        budget,
        cap,
        active,
        _UnitsOnNodes(assignment, instance.movable, instance.n_nodes),
    )


def _handed_unit(
    instance: AssignmentInstance,
    budget: BudgetTracker,
    node_load: np.ndarray,
    units_on_giver: set[int],
    receiver: int,
    below: float,
    cap: float,
) -> int | None:
    """The unit a giver hands to `receiver`: its largest (ties to the lowest index) of positive load that lands
    below `below` and at most `cap` utilization there, within the budget; None when none does."""
    units = np.sort(np.fromiter(units_on_giver, dtype=np.int64, count=len(units_on_giver)))
    dest_util = 100.0 * (node_load[receiver] + instance.load[units]) / instance.capacity[receiver]
    ok = (dest_util < below) & (dest_util <= cap) & (instance.load[units] > 0)
    for unit in units[ok][np.argsort(-instance.load[units[ok]], kind="stable")]:
        if budget.allows(int(unit), receiver):
            return int(unit)
    return None


def _hand_on(
    instance: AssignmentInstance,
    budget: BudgetTracker,
    assignment: IntArray,
    node_load: np.ndarray,
    on_node: _UnitsOnNodes | list[set[int]],
    unit: int,
    giver: int,
    receiver: int,
) -> None:
    """Move `unit` from `giver` to `receiver` in the state of `_llf_start`."""
    node_load[giver] -= instance.load[unit]
    node_load[receiver] += instance.load[unit]
    budget.spend(unit, assignment, receiver)
    on_node[giver].discard(unit)
    on_node[receiver].add(unit)


def largest_load_first(instance: AssignmentInstance, time_limit_s: float | None = None) -> Plan:
    """The most utilized node hands its largest unit that lowers the peak to the least utilized node; repeat.

    A node that cannot hand a unit on (none lands under its peak by the tolerance at the least utilized node, within
    the cap and the budget) is passed over until the next move. Which nodes can is decided for all of them at once,
    from each node's least positive load: the landing utilization grows with the load (in floating point too), so a
    node whose least load cannot land has no unit that can. The giver is the most utilized of the rest (ties to the
    lowest position) and only its units are evaluated. Before 30 Nov the nodes were sorted at every step and passed
    over one by one, then all tried again after every move: 10,000 nodes x 5,000 units made 1,112 of its 1,834 moves
    in 10 s (the deadlines bench). The choices are the same (the same IEEE operations on the same values;
    tests/test_largest_load_first.py checks it against the sort per step).

    Termination by construction: the receiver must end below the giver's utilization by a tolerance, there are at
    most `_move_cap` moves, and `time_limit_s` stops it with the plan so far."""
    deadline = Deadline(time_limit_s)
    assignment, node_load, budget, cap, active, on_node = _llf_start(instance, deadline)
    if not len(active):  # (no staying node: nothing can receive)
        return _finish(instance, assignment, budget)
    capacity = instance.capacity[active]
    loads = instance.load.tolist()
    # The positive loads of each node's movable units, least first: a heap per node whose entries of units that have
    # left are dropped when they reach the top (a unit enters once per arrival), so the least is found in O(log)
    # amortized however many units share it (a scan of the giver's units after each move was quadratic on equal
    # loads: 20,000 units of one load on one node took 3x the sort per step's time; found in review). Each heap is
    # built from its node's units the first time its least load is asked after a move (like `on_node`); the first
    # least loads of all nodes come from one numpy pass, the same values.
    positive: dict[int, list[tuple[float, int]]] = {}

    def least_positive(node: int) -> float:
        heap = positive.get(node)
        units = on_node[node]
        if heap is None:
            heap = positive[node] = [(loads[k], k) for k in units if loads[k] > 0]
            heapq.heapify(heap)
        while heap and heap[0][1] not in units:
            heapq.heappop(heap)
        return heap[0][0] if heap else math.inf

    # By position in `active`: utilization, least positive movable load, and whether the node was tried (handed
    # nothing on) since the last move.
    util = 100.0 * node_load[active] / capacity
    least = np.full(instance.n_nodes, np.inf)
    placed = np.flatnonzero(instance.movable & (assignment >= 0) & (instance.load > 0))
    np.minimum.at(least, assignment[placed], instance.load[placed])
    smallest = least[active]
    tried = np.zeros(len(active), dtype=np.bool_)
    moves_left = _move_cap(instance)
    while not budget.exhausted and moves_left > 0 and not deadline.passed:
        tolerance = _progress_tolerance(util)
        lo_pos = int(np.argmin(util))
        lo = int(active[lo_pos])
        # The most utilized node not tried (the first of equal maxima: the lowest position), when its least load can
        # land (most steps of a small cluster); else every node that may hand a unit to `lo` at once, and the most
        # utilized of them. (A utilization that is not finite makes the tolerance or `lo`'s load infinite or NaN:
        # then none may.)
        hi_pos = int(np.argmax(np.where(tried, -np.inf, util)))
        if (
            hi_pos == lo_pos
            or tried[hi_pos]
            or not 100.0 * (node_load[lo] + smallest[hi_pos]) / capacity[lo_pos] < util[hi_pos] - tolerance
        ):
            may = (100.0 * (node_load[lo] + smallest) / capacity[lo_pos] < util - tolerance) & ~tried
            may[lo_pos] = False  # (never `lo` itself)
            candidates = np.flatnonzero(may)
            if not len(candidates):
                break
            hi_pos = int(candidates[np.argmax(util[candidates])])
        hi = int(active[hi_pos])
        peak = util[hi_pos]
        chosen = _handed_unit(instance, budget, node_load, on_node[hi], lo, peak - tolerance, cap)
        if chosen is None:
            tried[hi_pos] = True
            continue
        _hand_on(instance, budget, assignment, node_load, on_node, chosen, hi, lo)
        # (positive: only such units are handed on; a heap built later finds the unit in the set)
        if lo in positive:
            heapq.heappush(positive[lo], (loads[chosen], chosen))
        smallest[lo_pos] = min(smallest[lo_pos], loads[chosen])
        if loads[chosen] == smallest[hi_pos]:
            smallest[hi_pos] = least_positive(hi)
        for j, node in ((hi_pos, hi), (lo_pos, lo)):
            util[j] = 100.0 * node_load[node] / capacity[j]
        moves_left -= 1
        tried[:] = False
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

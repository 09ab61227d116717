"""Baseline rebalancers on the same instance and budget as the MILP: flux, largest-load-first, round-robin, random.

All of them: place units that have no node yet, never move pinned units, never move units onto draining nodes, stop
when the budget is spent, and never let a receiving node exceed `instance.utilization_cap()`.
"""

from __future__ import annotations

import heapq

import numpy as np

from solvers.instance import UNPLACED, AssignmentInstance, IntArray, Plan


class BudgetTracker:
    """Counts migrations and their cost against the instance's budget."""

    def __init__(self, instance: AssignmentInstance) -> None:
        self.instance = instance
        self.moves = 0
        self.cost = 0.0

    def allows(self, unit: int) -> bool:
        inst = self.instance
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


def place_unplaced(instance: AssignmentInstance, assignment: IntArray, node_load: np.ndarray) -> None:
    """Largest-first onto the least utilized staying node (LPT); updates assignment and node_load in place."""
    unplaced = np.flatnonzero(assignment == UNPLACED)
    if not len(unplaced):
        return
    active = np.flatnonzero(instance.active)
    heap = [(node_load[i] / instance.capacity[i], int(i)) for i in active]
    heapq.heapify(heap)
    for unit in unplaced[np.argsort(-instance.load[unplaced], kind="stable")]:
        _, node = heapq.heappop(heap)
        assignment[unit] = node
        node_load[node] += instance.load[unit]
        heapq.heappush(heap, (node_load[node] / instance.capacity[node], node))


def _start(instance: AssignmentInstance) -> tuple[IntArray, np.ndarray, BudgetTracker]:
    assignment = instance.current.copy()
    placed = assignment >= 0
    node_load = np.bincount(assignment[placed], weights=instance.load[placed], minlength=instance.n_nodes)
    place_unplaced(instance, assignment, node_load)
    return assignment, node_load.astype(np.float64), BudgetTracker(instance)


def _finish(instance: AssignmentInstance, assignment: IntArray, budget: BudgetTracker) -> Plan:
    changed = bool((assignment != instance.current).any())
    return Plan(assignment=assignment, status="feasible" if changed else "unchanged")


def _drain(
    instance: AssignmentInstance,
    assignment: IntArray,
    node_load: np.ndarray,
    budget: BudgetTracker,
    cap: float,
) -> None:
    """Move units off draining nodes, largest first, each to the least utilized staying node where it fits."""
    active = np.flatnonzero(instance.active)
    for node in np.flatnonzero(instance.draining):
        units = np.flatnonzero((assignment == node) & instance.movable)
        for unit in units[np.argsort(-instance.load[units], kind="stable")]:
            if not budget.allows(unit):
                continue
            util_after = 100.0 * (node_load[active] + instance.load[unit]) / instance.capacity[active]
            dest = int(active[np.argmin(util_after)])
            if util_after.min() > cap:
                continue
            node_load[node] -= instance.load[unit]
            node_load[dest] += instance.load[unit]
            budget.spend(unit, assignment, dest)


def flux(instance: AssignmentInstance) -> Plan:
    """Flux as Madsen et al. describe it: sort nodes by load, pair the i-th most loaded with the i-th least loaded,
    move the best-fitting unit of the heavier node to the lighter one, repeat in rounds until the budget is spent or
    no pair improves. Draining nodes are emptied first (Flux has no scale-in; this keeps the baseline valid)."""
    assignment, node_load, budget = _start(instance)
    cap = instance.utilization_cap()
    _drain(instance, assignment, node_load, budget, cap)
    active = np.flatnonzero(instance.active)
    capacity = instance.capacity
    while not budget.exhausted:
        util = 100.0 * node_load[active] / capacity[active]
        order = active[np.argsort(-util, kind="stable")]
        moved = False
        for i in range(len(order) // 2):
            hi, lo = int(order[i]), int(order[len(order) - 1 - i])
            gap = 100.0 * (node_load[hi] / capacity[hi] - node_load[lo] / capacity[lo])
            if gap <= 1e-12:
                break
            units = np.flatnonzero((assignment == hi) & instance.movable)
            if not len(units):
                continue
            shift = 100.0 * instance.load[units] * (1.0 / capacity[hi] + 1.0 / capacity[lo])
            dest_util = 100.0 * (node_load[lo] + instance.load[units]) / capacity[lo]
            # A move helps the pair iff the new difference |gap - shift| is smaller than gap.
            useful = (shift > 1e-12) & (shift < 2.0 * gap) & (dest_util <= cap)
            if not useful.any():
                continue
            candidates = units[useful]
            fit = np.abs(gap - shift[useful])
            for pick in np.argsort(fit, kind="stable"):
                unit = int(candidates[pick])
                if budget.allows(unit):
                    node_load[hi] -= instance.load[unit]
                    node_load[lo] += instance.load[unit]
                    budget.spend(unit, assignment, lo)
                    moved = True
                    break
            if budget.exhausted:
                break
        if not moved:
            break
    return _finish(instance, assignment, budget)


def largest_load_first(instance: AssignmentInstance) -> Plan:
    """The most utilized node hands its largest unit that lowers the peak to the least utilized node; repeat."""
    assignment, node_load, budget = _start(instance)
    cap = instance.utilization_cap()
    _drain(instance, assignment, node_load, budget, cap)
    active = np.flatnonzero(instance.active)
    capacity = instance.capacity[active]
    tried: set[int] = set()
    while not budget.exhausted:
        util = 100.0 * node_load[active] / capacity
        order = np.argsort(-util, kind="stable")
        hi = next((int(active[j]) for j in order if int(active[j]) not in tried), None)
        if hi is None:
            break
        lo_pos = int(np.argmin(util))
        lo = int(active[lo_pos])
        peak = 100.0 * node_load[hi] / instance.capacity[hi]
        units = np.flatnonzero((assignment == hi) & instance.movable)
        if hi == lo or not len(units):
            tried.add(hi)
            continue
        dest_util = 100.0 * (node_load[lo] + instance.load[units]) / instance.capacity[lo]
        ok = (dest_util < peak - 1e-12) & (dest_util <= cap) & (instance.load[units] > 0)
        chosen = None
        for unit in units[ok][np.argsort(-instance.load[units[ok]], kind="stable")]:
            if budget.allows(int(unit)):
                chosen = int(unit)
                break
        if chosen is None:
            tried.add(hi)
            continue
        node_load[hi] -= instance.load[chosen]
        node_load[lo] += instance.load[chosen]
        budget.spend(chosen, assignment, lo)
        tried.clear()
    return _finish(instance, assignment, budget)


def round_robin(instance: AssignmentInstance) -> Plan:
    """Spread units evenly by count over the staying nodes, ignoring load: unplaced units go round-robin, then units
    on nodes over their share (draining nodes have share 0) move to nodes under it, within the budget."""
    assignment = instance.current.copy()
    budget = BudgetTracker(instance)
    active = np.flatnonzero(instance.active)
    n_active = len(active)
    share = np.zeros(instance.n_nodes, dtype=np.int64)
    base, extra = divmod(instance.n_units, n_active)
    share[active] = base
    share[active[:extra]] += 1
    count = np.bincount(assignment[assignment >= 0], minlength=instance.n_nodes)
    # Pinned units count against their node's share; they never move.
    under = [int(n) for n in active if count[n] < share[n]]
    cursor = 0

    def next_under() -> int | None:
        nonlocal cursor
        for _ in range(len(under)):
            node = under[cursor % len(under)]
            cursor += 1
            if count[node] < share[node]:
                return node
        return None

    for unit in np.flatnonzero(assignment == UNPLACED):
        node = next_under()
        if node is None:
            node = int(active[cursor % n_active])
            cursor += 1
        assignment[unit] = node
        count[node] += 1
    for node in np.argsort(-(count - share), kind="stable"):
        for unit in np.flatnonzero((assignment == node) & instance.movable)[::-1]:
            if count[node] <= share[node] or budget.exhausted:
                break
            dest = next_under()
            if dest is None or not budget.allows(int(unit)):
                break
            count[node] -= 1
            count[dest] += 1
            budget.spend(int(unit), assignment, dest)
    return _finish(instance, assignment, budget)


def random_moves(instance: AssignmentInstance, seed: int = 0) -> Plan:
    """Random baseline: unplaced units to random staying nodes; then random movable units to random staying nodes
    (where they fit under the utilization cap) until the budget is spent; with no budget, every movable unit is
    redrawn once."""
    rng = np.random.default_rng(seed)
    assignment = instance.current.copy()
    budget = BudgetTracker(instance)
    active = np.flatnonzero(instance.active)
    placed = assignment >= 0
    node_load = np.bincount(assignment[placed], weights=instance.load[placed], minlength=instance.n_nodes)
    for unit in np.flatnonzero(assignment == UNPLACED):
        node = int(rng.choice(active))
        assignment[unit] = node
        node_load[node] += instance.load[unit]
    cap = instance.utilization_cap()
    movable = np.flatnonzero(instance.movable & (instance.current >= 0))
    # Units on draining nodes go first, so random still drains; the rest are drawn in random order.
    on_draining = movable[instance.draining[instance.current[movable]]]
    others = rng.permutation(movable[~instance.draining[instance.current[movable]]])
    for unit in np.concatenate([rng.permutation(on_draining), others]):
        if budget.exhausted:
            break
        if not budget.allows(int(unit)):
            continue
        dest = int(rng.choice(active))
        src = int(assignment[unit])
        if dest == src or 100.0 * (node_load[dest] + instance.load[unit]) / instance.capacity[dest] > cap:
            continue
        node_load[src] -= instance.load[unit]
        node_load[dest] += instance.load[unit]
        budget.spend(int(unit), assignment, dest)
    return _finish(instance, assignment, budget)

"""Starts for the search that need no solver: the plan built from the lower bound's threshold.

At the threshold t of the bound (solvers.milp.bounds: the smallest distance its counting and covering tests could
not rule out), every staying node above mean + t sheds its fewest largest movable units until it is at most
mean + t (draining nodes shed all of theirs), and the shed units go, largest first, to the least utilized staying
node where they fit (utilization cap, resources) while the budget allows. This is the shape the bound describes:
when the bound is tight it is often the optimum itself, and the descent finishes what it leaves.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from solvers.baselines import BudgetTracker
from solvers.instance import AssignmentInstance, IntArray


def bound_plan(
    instance: AssignmentInstance, start: IntArray, threshold: float, deadline: float = np.inf
) -> IntArray:
    """`start`: every unit placed (the current plan with first placements done); the budget counts from
    instance.current, as everywhere. At `deadline` (time.perf_counter()) the plan built so far is returned."""
    inst = instance
    assignment = start.copy()
    capacity = inst.capacity
    share = 100.0 * inst.load
    util = np.bincount(assignment, weights=share, minlength=inst.n_nodes) / capacity
    target = inst.mean_utilization + threshold
    movable = np.flatnonzero(inst.movable)
    # Per node, its movable units largest first; a unit is shed while the larger ones before it leave the node
    # above the target (a draining node's target is zero: it sheds everything).
    order = movable[np.lexsort((-inst.load[movable], assignment[movable]))]
    nodes = assignment[order]
    ahead = np.cumsum(share[order]) - share[order]
    first = np.searchsorted(nodes, nodes, side="left")
    shed_before = ahead - ahead[first]  # points of the node's larger units (before capacity)
    node_target = np.where(inst.active[nodes], target, -np.inf)
    shed = order[util[nodes] - shed_before / capacity[nodes] > node_target + 1e-12]
    shed = shed[np.argsort(-inst.load[shed], kind="stable")]

    budget = BudgetTracker(inst)
    budget.track(assignment)
    cap = inst.utilization_cap()
    heap = [(float(util[n]), int(n)) for n in np.flatnonzero(inst.active)]
    heapq.heapify(heap)
    for step, unit in enumerate(shed.tolist()):
        if budget.exhausted or (step % 256 == 255 and time.perf_counter() > deadline):
            break
        source = int(assignment[unit])
        skipped = []
        dest = -1
        while heap:
            level, node = heapq.heappop(heap)
            if level != util[node]:
                continue  # stale entry
            skipped.append((level, node))
            after = util[node] + share[unit] / capacity[node]
            if (
                node != source
                and after <= cap * (1 + 1e-12)
                and after < util[source]
                and budget.allows(unit, node)
            ):
                dest = node
                break
            if len(skipped) >= 8:  # the least utilized few refuse it: keep the unit where it is
                break
        for item in skipped:
            heapq.heappush(heap, item)
        if dest < 0:
            continue
        util[source] -= share[unit] / capacity[source]
        util[dest] += share[unit] / capacity[dest]
        budget.spend(unit, assignment, dest)
        heapq.heappush(heap, (float(util[dest]), dest))
        if inst.active[source]:
            heapq.heappush(heap, (float(util[source]), source))
    return assignment

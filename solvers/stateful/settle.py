"""Turning a target assignment into a plan the service can serve: budget and capacity cap enforced by reverting moves.

CLB and universal hashing compute a whole new assignment without looking at the migration budget or the node
capacities. The contract demands that every plan keeps the budget and that no receiving node ends above
`AssignmentInstance.utilization_cap()`; both are restored here by sending moved units back to where they are now.
Reverting only ever shrinks the set of moves, so the loop ends.
"""

from __future__ import annotations

import numpy as np

from solvers.instance import UNPLACED, AssignmentInstance, IntArray


def revert_over_cap(instance: AssignmentInstance, assignment: IntArray) -> int:
    """Send moved units back until no node that receives units is above the utilization cap; returns how many.

    Over a node the cap breaks, the largest incoming units go back first (fewest reverts). A unit that had no node
    (initial placement) cannot go back and stays."""
    cap = instance.utilization_cap()
    n_nodes = instance.n_nodes
    reverted = 0
    while True:
        moved = instance.migration_mask(assignment)
        node_load = np.bincount(assignment, weights=instance.load, minlength=n_nodes)[:n_nodes]
        util = 100.0 * node_load / instance.capacity
        receivers = np.unique(assignment[moved])
        over = receivers[util[receivers] > cap * (1 + 1e-12)]
        if not len(over):
            return reverted
        node = int(over[np.argmax(util[over])])
        incoming = np.flatnonzero(moved & (assignment == node))
        excess = node_load[node] - cap * instance.capacity[node] / 100.0
        for unit in incoming[np.argsort(-instance.load[incoming], kind="stable")]:
            assignment[unit] = instance.current[unit]
            reverted += 1
            excess -= instance.load[unit]
            if excess <= 0:
                break


def revert_over_budget(instance: AssignmentInstance, assignment: IntArray) -> int:
    """Send moved units back until the plan keeps the budget; returns how many were reverted.

    The moves kept are the cheapest ones (ascending state size), so a cost budget realizes as many of the planned
    moves as it can."""
    moved = np.flatnonzero(instance.migration_mask(assignment))
    if instance.within_budget(assignment):
        return 0
    order = moved[np.argsort(instance.state_size[moved], kind="stable")]
    keep = len(order)
    if instance.max_migrations is not None:
        keep = min(keep, instance.max_migrations)
    if instance.max_migration_cost is not None:
        spent = np.cumsum(instance.state_size[order])
        keep = min(keep, int(np.searchsorted(spent, instance.max_migration_cost * (1 + 1e-12), side="right")))
    back = order[keep:]
    assignment[back] = instance.current[back]
    return len(back)


def keep_pinned(instance: AssignmentInstance, assignment: IntArray) -> int:
    """Pinned units stay where they are; returns how many the target assignment wanted to move."""
    stray = instance.pinned & (assignment != instance.current) & (instance.current != UNPLACED)
    assignment[stray] = instance.current[stray]
    return int(stray.sum())

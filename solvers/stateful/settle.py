"""Turning a target assignment into a plan the service can serve: budget and capacity cap enforced by reverting moves.

CLB and universal hashing compute a whole new assignment without looking at the migration budget or the node
capacities. The contract demands that every plan keeps the budget and that no receiving node ends above
`AssignmentInstance.utilization_cap()`; both are restored here by sending moved units back to where they are now.
Reverting only ever shrinks the set of moves, so the loop ends.
"""

from __future__ import annotations

import numpy as np

from solvers.instance import UNPLACED, AssignmentInstance, FloatArray, IntArray


def resource_arrays(instance: AssignmentInstance) -> tuple[FloatArray, FloatArray]:
    """(units, R) usage and (nodes, R) capacity of the further resources; R = 0 when the request has none."""
    r = len(instance.resource_names)
    if r == 0:
        return np.zeros((instance.n_units, 0)), np.zeros((instance.n_nodes, 0))
    return instance.resource_usage, instance.resource_capacity


def revert_over_cap(instance: AssignmentInstance, assignment: IntArray) -> int:
    """Send moved units back until no node that receives units is above the utilization cap or above a further
    resource capacity (`resources` of the request); returns how many moves were reverted.

    On the worst node, the largest incoming units go back first (fewest reverts). A unit that had no node (initial
    placement) cannot go back and stays."""
    cap = instance.utilization_cap()
    n_nodes = instance.n_nodes
    node_load = np.bincount(assignment, weights=instance.load, minlength=n_nodes)[:n_nodes]
    unit_usage, capacity_r = resource_arrays(instance)
    usage = np.zeros(capacity_r.shape)
    np.add.at(usage, assignment, unit_usage)
    room = capacity_r * (1 + 1e-9) + 1e-9  # inf: uncapped
    reverted = 0
    while True:
        moved = instance.migration_mask(assignment)
        receivers = np.unique(assignment[moved])
        util = 100.0 * node_load[receivers] / instance.capacity[receivers]
        over_cap = util > cap * (1 + 1e-12)
        over_room = (usage[receivers] > room[receivers]).any(axis=1)
        bad = receivers[over_cap | over_room]
        if not len(bad):
            return reverted
        node = int(bad[0])
        incoming = np.flatnonzero(moved & (assignment == node))
        unit = int(
            incoming[np.argmax(instance.load[incoming] + instance.resource_usage[incoming].sum(axis=1))]
        )
        back = int(instance.current[unit])
        node_load[node] -= instance.load[unit]
        node_load[back] += instance.load[unit]
        usage[node] -= unit_usage[unit]
        usage[back] += unit_usage[unit]
        assignment[unit] = back
        reverted += 1


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

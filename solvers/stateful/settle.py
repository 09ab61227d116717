"""Turning a target assignment into a plan the service can serve: budget and capacity cap enforced by reverting moves.

CLB and universal hashing compute a whole new assignment without looking at the migration budget or the node
capacities. The contract demands that every plan keeps the budget and that no receiving node ends above
`AssignmentInstance.utilization_cap()`; both are restored here by sending moved units back to where they are now.
Reverting only ever shrinks the set of moves, so the loop ends.
"""

from __future__ import annotations

import numpy as np

from solvers.errors import UnsolvableRequest
from solvers.instance import UNPLACED, AssignmentInstance, BoolArray, FloatArray, IntArray


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
    placement) cannot go back: once no placed unit is left to revert, such units are taken off over-full receivers
    (largest first) and put, largest first, on the least-utilized staying node where they fit; if none fits,
    `UnsolvableRequest` names the unit. Both phases end: the first only shrinks the set of moves, the second places
    each unit once on a node where it fits (so it creates no new violation)."""
    cap = instance.utilization_cap()
    n_nodes = instance.n_nodes
    node_load = np.bincount(assignment, weights=instance.load, minlength=n_nodes)[:n_nodes]
    unit_usage, capacity_r = resource_arrays(instance)
    usage = np.zeros(capacity_r.shape)
    np.add.at(usage, assignment, unit_usage)
    room = capacity_r * (1 + 1e-9) + 1e-9  # inf: uncapped
    size = instance.load + unit_usage.sum(axis=1)
    placed = instance.current != UNPLACED

    def over(nodes: IntArray) -> BoolArray:
        util = 100.0 * node_load[nodes] / instance.capacity[nodes]
        return np.asarray((util > cap * (1 + 1e-12)) | (usage[nodes] > room[nodes]).any(axis=1))

    def take_off(unit: int) -> None:
        node = int(assignment[unit])
        node_load[node] -= instance.load[unit]
        usage[node] -= unit_usage[unit]

    def put_on(unit: int, node: int) -> None:
        node_load[node] += instance.load[unit]
        usage[node] += unit_usage[unit]
        assignment[unit] = node

    reverted = 0
    while True:  # phase 1: revert placed units (the set of moves shrinks every round)
        moved = instance.migration_mask(assignment)
        receivers = np.unique(assignment[moved])
        bad = receivers[over(receivers)]
        if not len(bad):
            break
        node = int(bad[0])
        incoming = np.flatnonzero(moved & (assignment == node))
        unit = int(incoming[np.argmax(size[incoming])])
        take_off(unit)
        put_on(unit, int(instance.current[unit]))
        reverted += 1
    # phase 2: units without a node that overfill their receiver go to the least-utilized node where they fit
    newcomers = np.flatnonzero(~placed)
    homeless: list[int] = []
    for node in np.unique(assignment[newcomers]):
        mine = newcomers[assignment[newcomers] == node]
        for unit in mine[np.argsort(-size[mine], kind="stable")]:
            if not over(np.array([node]))[0]:
                break
            take_off(int(unit))
            assignment[unit] = UNPLACED
            homeless.append(int(unit))
    staying = np.flatnonzero(instance.active)
    for unit in sorted(homeless, key=lambda k: (-size[k], k)):
        fits = (
            100.0 * (node_load[staying] + instance.load[unit]) / instance.capacity[staying]
            <= cap * (1 + 1e-12)
        ) & (usage[staying] + unit_usage[unit] <= room[staying]).all(axis=1)
        if not fits.any():
            raise UnsolvableRequest(
                ("body", "units", unit, "load"),
                f"unit {instance.unit_ids[unit]!r} has no node and fits on no staying node under the capacity cap "
                f"({cap:g} %) and the resource capacities",
            )
        candidates = staying[fits]
        node = int(candidates[np.argmin(node_load[candidates] / instance.capacity[candidates])])
        put_on(unit, node)
        reverted += 1
    return reverted


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

"""Verify a plan of key groups against the real instance and repair it by reverting whole groups.

ALBIC plans on a derived instance (partitions as units) and COLA plans from scratch: both expand to key groups and
must then respect the real rules (what solvers.plan_check checks on the wire): the migration budget, pinned units
unmoved, nothing onto draining nodes, no receiving node above `utilization_cap()` nor above a further resource's
room (max of its capacity and its usage before). A violation is repaired by sending a moved group back to where its
members were (the start: the current placement, units without a node placed first). Every round reverts a group that
had moves, so the loop ends after at most one round per group; the start itself breaks no rule.
"""

from __future__ import annotations

import numpy as np

from solvers.instance import AssignmentInstance, FloatArray, IntArray

TOL = 1e-9


def violations(instance: AssignmentInstance, start: IntArray, assignment: IntArray) -> tuple[bool, IntArray]:
    """(budget exceeded, indices of units that break a per-unit or per-node rule)."""
    moved = assignment != start
    bad = moved & (instance.pinned | instance.draining[assignment])
    receiving = np.zeros(instance.n_nodes, dtype=bool)
    receiving[assignment[moved]] = True
    util = instance.utilization(assignment)
    over = receiving & (util > instance.utilization_cap() * (1 + TOL) + TOL)
    if len(instance.resource_names):
        usage_before = _usage(instance, start)
        usage_after = _usage(instance, assignment)
        room = np.maximum(instance.resource_capacity, usage_before)
        over |= receiving & np.any(usage_after > room * (1 + TOL) + TOL, axis=1)
    bad |= moved & over[assignment]
    return not instance.within_budget(assignment), np.flatnonzero(bad)


def _usage(instance: AssignmentInstance, assignment: IntArray) -> FloatArray:
    usage = np.zeros((instance.n_nodes, len(instance.resource_names)))
    placed = assignment >= 0
    np.add.at(usage, assignment[placed], instance.resource_usage[placed])
    return usage


def repair(
    instance: AssignmentInstance,
    start: IntArray,
    assignment: IntArray,
    group_of: IntArray,
    priority: FloatArray,
) -> tuple[IntArray, int]:
    """Revert groups (group_of[k] = group of unit k) until no rule is broken: first groups with a unit that breaks a
    rule, then, while over budget, the moved group of lowest `priority` (one value per group). Returns the repaired
    assignment and the number of groups reverted."""
    result = assignment.copy()
    reverted = 0
    for _ in range(int(group_of.max()) + 2 if len(group_of) else 1):
        over_budget, bad = violations(instance, start, result)
        if not over_budget and not len(bad):
            break
        moved_groups = np.unique(group_of[result != start])
        if not len(moved_groups):
            break  # the start breaks no rule: unreachable, kept as a bound
        if len(bad):
            culprits = np.unique(group_of[bad])
            target = culprits[np.argmin(priority[culprits])]
        else:
            target = moved_groups[np.argmin(priority[moved_groups])]
        members = group_of == target
        result[members] = start[members]
        reverted += 1
    return result, reverted

"""The integrative adaptation framework (Madsen, Zhou & Cao, Section 4.1, Algorithm 1), one period of it:

1. nodes marked for removal in earlier periods that hold nothing any more are released (the service lists draining
   nodes a plan leaves empty in `scaling.remove_nodes`);
2. plan <- keyGroupAlloc() (ALBIC or the MILP): a potential plan, not applied;
3. Scaling(plan): how many nodes the load of that plan needs (its load after collocation, when a serialization cost
   says what collocation saves); the paper leaves the scaling algorithm open (Section 4.2), here it is a parameter:
   a target utilization range [lower, upper] % (the node count whose utilization lies in it, nearest to the middle) or
   a node count;
4. if the count changes: plan <- keyGroupAlloc() again on the scaled cluster: new nodes (empty, the mean staying
   capacity) can receive units; nodes marked for removal (the least loaded staying nodes without pinned units) are
   draining, so the MILP empties them gradually under the same migration budget while it balances (integrated
   scale-in; the paper's Lemma 4.1 and 4.2: they end empty);
5. the plan is returned (applied by the caller); `Plan.added_nodes` / `Plan.marked_nodes` say what was decided.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from solvers.errors import UnsolvableRequest
from solvers.instance import MAX_NODES, AddedNode, AssignmentInstance, IntArray, Plan
from solvers.metrics import load_index

Allocate = Callable[[AssignmentInstance, float], Plan]
FIRST_PLAN_SHARE = 0.4  # of the time limit, for the potential plan; the re-plan gets the rest
# A scaling decision asks for at most solvers.instance.MAX_NODES staying nodes: a target utilization of 1e-300 %
# asked for 1e302 nodes (their ids generated one by one until the worker's memory ran out), one of 5e-324 % for
# round(inf) (an OverflowError).
TARGET_LOC = ("body", "algorithm", "target_utilization")


@dataclass(frozen=True)
class ScalingPolicy:
    target_utilization: tuple[float, float] | None = None  # [lower, upper] in percent
    target_nodes: int | None = None
    new_node_capacity: float | None = None  # default: the mean staying capacity
    new_node_prefix: str = "albic-new"


def needed_nodes(instance: AssignmentInstance, assignment: IntArray, policy: ScalingPolicy) -> int:
    """Scaling(plan): the number of staying nodes the plan's load needs under the policy."""
    staying = int(instance.active.sum())
    if policy.target_nodes is not None:
        return policy.target_nodes
    if policy.target_utilization is None:
        return staying
    lower, upper = policy.target_utilization
    index = load_index(instance, assignment)
    total = float(instance.load.sum()) * (1.0 if index is None else index / 100.0)
    per_node = float(instance.capacity[instance.active].mean())
    utilization = 100.0 * total / (staying * per_node)
    if lower <= utilization <= upper:
        return staying
    middle = 0.5 * (lower + upper)
    nearest = 100.0 * total / (middle * per_node)
    if not nearest <= MAX_NODES:  # (also inf and nan: never round() them)
        raise UnsolvableRequest(
            TARGET_LOC,
            f"target_utilization [{lower:g}, {upper:g}] % needs about {nearest:.4g} staying nodes of capacity "
            f"{per_node:g} for the plan's load {total:g}, over the node cap of {MAX_NODES}: raise the range",
        )
    count = max(1, round(nearest))
    # The count nearest the middle may still be above `upper` after rounding: one more node each time (utilization
    # falls strictly with the count and upper > 0, so this ends; at most a node or two past the middle's count).
    while 100.0 * total / (count * per_node) > upper and count < MAX_NODES:
        count += 1
    return count


def _with_new_nodes(
    instance: AssignmentInstance, count: int, capacity: float, prefix: str
) -> tuple[AssignmentInstance, tuple[AddedNode, ...]]:
    taken = set(instance.node_ids)
    ids: list[str] = []
    serial = 1
    while len(ids) < count:  # at most count + len(taken) ids are tried
        candidate = f"{prefix}-{serial}"
        if candidate not in taken:
            ids.append(candidate)
        serial += 1
    added = tuple(AddedNode(id=i, capacity=capacity) for i in ids)
    extended = replace(
        instance,
        node_ids=instance.node_ids + tuple(ids),
        capacity=np.concatenate([instance.capacity, np.full(count, capacity)]),
        draining=np.concatenate([instance.draining, np.zeros(count, dtype=bool)]),
        resource_capacity=np.concatenate(
            [instance.resource_capacity, np.full((count, instance.resource_capacity.shape[1]), np.inf)]
        )
        if instance.resource_capacity.shape[0] == instance.n_nodes
        else instance.resource_capacity,
        utilization_cap_override=instance.utilization_cap(),
    )
    return extended, added


def _nodes_to_mark(instance: AssignmentInstance, count: int) -> IntArray:
    """The `count` least loaded staying nodes that hold no pinned key group (cheapest to drain)."""
    placed = instance.current >= 0
    load = np.bincount(instance.current[placed], weights=instance.load[placed], minlength=instance.n_nodes)
    has_pinned = np.bincount(instance.current[instance.pinned], minlength=instance.n_nodes) > 0
    candidates = np.flatnonzero(instance.active & ~has_pinned)
    order = candidates[np.lexsort((candidates, load[candidates] / instance.capacity[candidates]))]
    return np.sort(order[:count])


def adapt(
    instance: AssignmentInstance, allocate: Allocate, policy: ScalingPolicy, time_limit_s: float
) -> Plan:
    """One period of Algorithm 1 within `time_limit_s`."""
    started = time.perf_counter()
    plan = allocate(instance, FIRST_PLAN_SHARE * time_limit_s)
    staying = int(instance.active.sum())
    wanted = needed_nodes(instance, plan.assignment, policy)
    if wanted == staying:
        plan.notes.append(f"scaling: keep {staying} staying nodes")
        return plan
    remaining = max(0.05, time_limit_s - (time.perf_counter() - started))
    if wanted > staying:
        capacity = policy.new_node_capacity or float(instance.capacity[instance.active].mean())
        extended, added = _with_new_nodes(instance, wanted - staying, capacity, policy.new_node_prefix)
        replan = allocate(extended, remaining)
        replan.added_nodes = added
        replan.notes = [
            *plan.notes,
            f"scaling: scale out from {staying} to {wanted} nodes ({', '.join(a.id for a in added)}), then re-planned",
            *replan.notes,
        ]
        return replan
    marked = _nodes_to_mark(instance, staying - wanted)
    if not len(marked):
        plan.notes.append(f"scaling: {wanted} nodes would do, but every staying node holds pinned key groups")
        return plan
    draining = instance.draining.copy()
    draining[marked] = True
    replan = allocate(
        replace(instance, draining=draining, utilization_cap_override=instance.utilization_cap()), remaining
    )
    holds = np.bincount(replan.assignment, minlength=instance.n_nodes) > 0
    replan.marked_nodes = tuple(int(i) for i in marked)
    replan.removed_nodes = tuple(int(i) for i in marked if not holds[i])
    replan.notes = [
        *plan.notes,
        f"scaling: scale in from {staying} to {staying - len(marked)} nodes: "
        f"{', '.join(instance.node_ids[i] for i in marked)} marked for removal and drained under the budget, then "
        "re-planned",
        *replan.notes,
    ]
    return replan

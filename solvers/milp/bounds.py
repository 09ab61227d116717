"""A proven lower bound on the load distance reachable within the budget, without any solver.

Within the budget at most `movable_load` of load can change nodes: the sum of the K largest movable loads for
max_migrations = K, the fractional-knapsack optimum (load as value, state_size as weight) for max_migration_cost,
plus all load of units that have no node yet (placing them is free). For a target distance t, staying nodes above
mean + t must shed their excess and nodes below mean - t must receive their deficit; each unit of moved load fills at
most one node's need, so  excess(t) <= movable_load  and  deficit(t) <= movable_load  are necessary. Both sides
shrink as t grows, so the smallest feasible t is found by bisection; each node also gives
t >= util - mean - (what it alone can shed), and t >= mean - util - (what it alone can receive).

With max_migrations = K there is a stronger, counting version: a node above mean + t needs at least as many
migrations as the fewest of its own movable units whose loads cover its excess, and the nodes' needs add up (a
migration leaves one node); a node below mean - t needs at least the fewest of the largest movable units anywhere
that cover its deficit (a migration enters one node). Both sums must be at most K. Units without a node are placed
for free, so the deficit count is skipped when there are any.
"""

from __future__ import annotations

import numpy as np

from solvers.instance import UNPLACED, AssignmentInstance, FloatArray


def _movable_load(instance: AssignmentInstance, loads: FloatArray, costs: FloatArray) -> float:
    k = instance.max_migrations
    cost_limit = instance.max_migration_cost
    if k is None and cost_limit is None:
        return float(loads.sum())
    best = np.inf
    if k is not None:
        best = float(np.sort(loads)[::-1][:k].sum())
    if cost_limit is not None:
        free = costs <= 0
        value = float(loads[free].sum())
        paid = np.flatnonzero(~free)
        order = paid[np.argsort(-(loads[paid] / costs[paid]), kind="stable")]
        room = cost_limit
        for unit in order:
            if costs[unit] <= room:
                value += loads[unit]
                room -= costs[unit]
            else:
                value += loads[unit] * room / costs[unit]
                break
        best = min(best, value)
    return float(best)


def load_distance_lower_bound(instance: AssignmentInstance) -> float:
    placed = instance.current != UNPLACED
    movable = instance.movable & placed
    free_load = float(instance.load[~placed].sum())
    moved_max = _movable_load(instance, instance.load[movable], instance.state_size[movable]) + free_load
    node_load = np.bincount(
        instance.current[placed], weights=instance.load[placed], minlength=instance.n_nodes
    )
    active = instance.active
    capacity = instance.capacity[active]
    util = 100.0 * node_load[active] / capacity
    mean = instance.mean_utilization
    # Per node: what it alone can shed (its own movable load within the budget) or receive.
    shed = np.zeros(instance.n_nodes)
    for node in np.flatnonzero(active):
        own = movable & (instance.current == node)
        shed[node] = _movable_load(instance, instance.load[own], instance.state_size[own])
    per_node = max(
        float(np.max(util - mean - 100.0 * shed[active] / capacity)),
        float(np.max(mean - util - 100.0 * moved_max / capacity)),
        0.0,
    )

    active_nodes = np.flatnonzero(active)
    count_limit = instance.max_migrations
    own_prefix: dict[int, np.ndarray] = {}
    if count_limit is not None:
        for node in active_nodes:
            own = instance.load[movable & (instance.current == node)]
            own_prefix[int(node)] = np.cumsum(np.sort(own)[::-1])
        global_prefix = np.cumsum(np.sort(instance.load[movable])[::-1])
    tolerance = 1e-9

    def needed(prefix: np.ndarray, amount: float) -> float:
        """Fewest largest pieces whose sum covers `amount` (inf when even all of them do not)."""
        if amount <= tolerance:
            return 0.0
        k = int(np.searchsorted(prefix, amount * (1 - 1e-12), side="left"))
        return float(k + 1) if k < len(prefix) else np.inf

    def feasible(t: float) -> bool:
        excess_each = np.maximum(0.0, util - mean - t) * capacity / 100.0
        deficit_each = np.maximum(0.0, mean - t - util) * capacity / 100.0
        if excess_each.sum() > moved_max * (1 + 1e-12) or deficit_each.sum() > moved_max * (1 + 1e-12):
            return False
        if count_limit is None:
            return True
        out_needed = sum(
            needed(own_prefix[int(node)], float(e))
            for node, e in zip(active_nodes, excess_each, strict=True)
            if e > 0
        )
        if out_needed > count_limit:
            return False
        if free_load > 0:
            return True
        in_needed = sum(needed(global_prefix, float(f)) for f in deficit_each if f > 0)
        return in_needed <= count_limit

    lo, hi = 0.0, float(np.max(np.abs(util - mean)))
    if feasible(lo):
        return per_node
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    return max(per_node, lo)

"""A proven lower bound on the load distance reachable within the budget, without any solver.

Within the budget at most `movable_load` of load can change nodes: the sum of the K largest movable loads for
max_migrations = K, the fractional-knapsack optimum (load as value, state_size as weight) for max_migration_cost,
plus all load of units that have no node yet (placing them is free). For a target distance t, staying nodes above
mean + t must shed their excess and nodes below mean - t must receive their deficit; each unit of moved load fills at
most one node's need, so  excess(t) <= movable_load  and  deficit(t) <= movable_load  are necessary. Both sides
shrink as t grows, so the smallest feasible t is found by bisection; each node also gives
t >= util - mean - (what it alone can shed), and t >= mean - util - (what it alone can receive).
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

    def feasible(t: float) -> bool:
        excess = float(np.sum(np.maximum(0.0, util - mean - t) * capacity) / 100.0)
        deficit = float(np.sum(np.maximum(0.0, mean - t - util) * capacity) / 100.0)
        return excess <= moved_max * (1 + 1e-12) and deficit <= moved_max * (1 + 1e-12)

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

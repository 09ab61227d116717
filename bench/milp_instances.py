"""Synthetic key-group clusters as in Madsen et al. Section 5.1 (also used by tests).

Key groups are spread evenly (G/N per node). Each key group's load starts at the mean and is adjusted by a random
percentage in [-5 %, +5 %]. Then 20 % of the nodes change load: half of them lose 0.5 x varies of their load, the
other half gain 0.5 x varies, by changing the load of a random half of the node's key groups. The paper does not
give the mean node load; we use 50 % of a node (so the cluster can absorb the shifts), and `varies` as a fraction
of the node load.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.instance import AssignmentInstance


def madsen_cluster(
    n_nodes: int,
    n_groups: int,
    max_migrations: int | None,
    varies: float = 0.4,
    node_load: float = 50.0,
    seed: int = 0,
    draining: int = 0,
) -> AssignmentInstance:
    rng = np.random.default_rng(seed)
    per_node = n_groups // n_nodes
    current = np.repeat(np.arange(n_nodes), per_node).astype(np.int64)
    mean_group = node_load / per_node
    load = mean_group * (1.0 + rng.uniform(-0.05, 0.05, size=len(current)))
    changed = rng.choice(n_nodes, size=max(2, round(0.2 * n_nodes)), replace=False)
    for position, node in enumerate(changed):
        sign = -1.0 if position < len(changed) // 2 else 1.0
        groups = np.flatnonzero(current == node)
        chosen = rng.choice(groups, size=max(1, len(groups) // 2), replace=False)
        delta = sign * 0.5 * varies * load[groups].sum()
        load[chosen] += delta / len(chosen)
        load[chosen] = np.maximum(load[chosen], 0.0)
    draining_mask = np.zeros(n_nodes, dtype=bool)
    if draining:
        draining_mask[rng.choice(n_nodes, size=draining, replace=False)] = True
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n_nodes)),
        capacity=np.full(n_nodes, 100.0),
        draining=draining_mask,
        unit_ids=tuple(f"kg{k}" for k in range(len(current))),
        current=current,
        series=load[:, None],
        state_size=rng.integers(1, 100, size=len(current)).astype(np.float64),
        pinned=np.zeros(len(current), dtype=bool),
        max_migrations=max_migrations,
    )


def to_request(
    instance: AssignmentInstance, algorithm: dict[str, Any], time_limit_s: float
) -> dict[str, Any]:
    """The instance as a /v1/assignment/plan request body."""
    return {
        "nodes": [
            {"id": node_id, "capacity": float(c), "draining": bool(dr)}
            for node_id, c, dr in zip(instance.node_ids, instance.capacity, instance.draining, strict=True)
        ],
        "units": [
            {"id": uid, "node": instance.node_ids[n], "load": float(lo), "state_size": float(s)}
            for uid, n, lo, s in zip(
                instance.unit_ids, instance.current.tolist(), instance.load, instance.state_size, strict=True
            )
        ],
        "budget": {"max_migrations": instance.max_migrations},
        "algorithm": algorithm,
        "time_limit_s": time_limit_s,
    }

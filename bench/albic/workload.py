"""The synthetic job of Madsen et al. Section 5.3 (also used by tests).

A chain of operators O_0 -> O_1 -> ... -> O_{m-1}, G / m key groups each. A share x of each operator's key groups is
in 1-1 communication: key group j < x G / m of O_i sends all its output to key group j of O_{i+1} (chains through the
job); every other key group sends its output evenly to all key groups of the next operator (full partitioning). A
key group's output rate is proportional to its load, so at most about x of the traffic can stay on a node: the paper's
"maximum collocation factor". Loads and placement as in Section 5.1 (solvers' madsen_cluster): every node gets G / N
key groups, here in a random order (so collocation starts near 1 / N), each key group's load is the mean adjusted by
+-5 %, the mean node load 50 %. Each period, 20 % of the nodes change their load by a random percentage in +-2 %
(`drift`). The paper does not say how the 1-1 key groups are chosen, the rates or the node load: these are ours.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from solvers.instance import AssignmentInstance, IntArray

RATE_PER_LOAD = 10.0  # tuples per second per load unit


def synthetic_job(
    n_nodes: int,
    n_groups: int,
    n_operators: int,
    one_to_one: float,
    seed: int = 0,
    node_load: float = 50.0,
    max_migrations: int | None = 20,
    serialization_cost: float | None = None,
) -> AssignmentInstance:
    rng = np.random.default_rng(seed)
    per_node = n_groups // n_nodes
    per_op = n_groups // n_operators
    total = per_node * n_nodes
    current = rng.permutation(np.repeat(np.arange(n_nodes), per_node)).astype(np.int64)
    load = node_load / per_node * (1.0 + rng.uniform(-0.05, 0.05, size=total))
    operator = np.minimum(np.arange(total) // per_op, n_operators - 1)
    index = np.arange(total) - operator * per_op
    chained = index < round(one_to_one * per_op)
    src: list[IntArray] = []
    dst: list[IntArray] = []
    rate: list[np.ndarray] = []
    for op in range(n_operators - 1):
        senders = np.flatnonzero(operator == op)
        receivers = np.flatnonzero(operator == op + 1)
        ones = senders[chained[senders]]
        src.append(ones)
        dst.append(receivers[index[ones]])
        rate.append(RATE_PER_LOAD * load[ones])
        spread = senders[~chained[senders]]
        if len(spread):
            src.append(np.repeat(spread, len(receivers)))
            dst.append(np.tile(receivers, len(spread)))
            rate.append(np.repeat(RATE_PER_LOAD * load[spread] / len(receivers), len(receivers)))
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n_nodes)),
        capacity=np.full(n_nodes, 100.0),
        draining=np.zeros(n_nodes, dtype=bool),
        unit_ids=tuple(f"kg{k}" for k in range(total)),
        current=current,
        series=load[:, None],
        state_size=np.ones(total),
        pinned=np.zeros(total, dtype=bool),
        operators=tuple(f"op{o}" for o in operator),
        traffic_src=np.concatenate(src).astype(np.int64),
        traffic_dst=np.concatenate(dst).astype(np.int64),
        traffic_rate=np.concatenate(rate),
        max_migrations=max_migrations,
        serialization_cost=serialization_cost,
    )


def drift(
    instance: AssignmentInstance, rng: np.random.Generator, share: float = 0.2, spread: float = 0.02
) -> AssignmentInstance:
    """One period: `share` of the nodes change their load by a random percentage in [-spread, +spread] (their key
    groups' loads scale by it; output rates follow the load)."""
    n_changed = max(1, round(share * instance.n_nodes))
    nodes = rng.choice(instance.n_nodes, size=n_changed, replace=False)
    factor = np.ones(instance.n_nodes)
    factor[nodes] = 1.0 + rng.uniform(-spread, spread, size=n_changed)
    unit_factor = factor[instance.current]
    return replace(
        instance,
        series=instance.series * unit_factor[:, None],
        traffic_rate=instance.traffic_rate * unit_factor[instance.traffic_src],
    )


def with_assignment(instance: AssignmentInstance, assignment: IntArray) -> AssignmentInstance:
    """The next period's snapshot: the plan applied."""
    return replace(instance, current=np.asarray(assignment, dtype=np.int64).copy())

"""Schema in, solver instance; solver plan out, response. Nothing else: the algorithms live in `solvers`."""

from __future__ import annotations

import numpy as np

from schemas.assignment import (
    AssignmentRequest,
    LowerBound,
    Move,
    PlanResponse,
    PlanStats,
    Scaling,
)
from solvers.instance import UNPLACED, AssignmentInstance, Plan
from solvers.metrics import ClusterStats, cluster_stats


def to_instance(request: AssignmentRequest) -> AssignmentInstance:
    node_index = {node.id: i for i, node in enumerate(request.nodes)}
    unit_index = {unit.id: k for k, unit in enumerate(request.units)}
    units = request.units
    if isinstance(units[0].load, list):
        series = np.array([u.load for u in units], dtype=np.float64)
    else:  # single loads: no list per unit (250,000 of them cost a second)
        series = np.fromiter((u.load for u in units), dtype=np.float64, count=len(units))[:, None]
    resource_names = tuple(
        sorted({r for u in units for r in u.resources} | {r for n in request.nodes for r in n.resources})
    )
    usage = (
        np.array([[u.resources.get(r, 0.0) for r in resource_names] for u in units], dtype=np.float64)
        if resource_names
        else np.zeros((len(units), 0))
    )
    capacity_r = np.array(
        [[n.resources.get(r, np.inf) for r in resource_names] for n in request.nodes], dtype=np.float64
    )
    return AssignmentInstance(
        node_ids=tuple(n.id for n in request.nodes),
        capacity=np.array([n.capacity for n in request.nodes], dtype=np.float64),
        draining=np.array([n.draining for n in request.nodes], dtype=np.bool_),
        unit_ids=tuple(u.id for u in units),
        current=np.array(
            [node_index[u.node] if u.node is not None else UNPLACED for u in units], dtype=np.int64
        ),
        series=series,
        state_size=np.array([u.state_size for u in units], dtype=np.float64),
        pinned=np.array([u.pinned for u in units], dtype=np.bool_),
        operators=tuple(u.operator for u in units),
        resource_names=resource_names,
        resource_usage=usage.reshape(len(units), len(resource_names)),
        resource_capacity=capacity_r.reshape(len(request.nodes), len(resource_names)),
        traffic_src=np.array([unit_index[t.src] for t in request.traffic], dtype=np.int64),
        traffic_dst=np.array([unit_index[t.dst] for t in request.traffic], dtype=np.int64),
        traffic_rate=np.array([t.rate for t in request.traffic], dtype=np.float64),
        # More migrations than units limits nothing: clamp, so no solver sees a count beyond the instance.
        max_migrations=None
        if request.budget.max_migrations is None
        else min(request.budget.max_migrations, len(units)),
        max_migration_cost=request.budget.max_migration_cost,
        serialization_cost=request.serialization_cost,
    )


def _stats(stats: ClusterStats) -> PlanStats:
    return PlanStats(**stats.__dict__)


def to_response(instance: AssignmentInstance, plan: Plan, algorithm: str, solve_ms: float) -> PlanResponse:
    """The plan as the diff of two states (Cruise Control style) with statistics of both."""
    node_ids = list(instance.node_ids) + [a.id for a in plan.added_nodes]
    added_capacity = np.array([a.capacity for a in plan.added_nodes], dtype=np.float64)
    assignment = plan.assignment
    # Nodes the plan releases: the ones it removes explicitly, and draining nodes it leaves empty.
    holds = np.bincount(assignment, minlength=len(node_ids)) > 0
    removed = sorted(
        set(plan.removed_nodes)
        | {int(i) for i in np.flatnonzero(instance.draining & ~holds[: instance.n_nodes])}
    )
    moved = np.flatnonzero(instance.migration_mask(assignment))
    cost = float(instance.state_size[moved].sum())
    total_state = float(instance.state_size.sum())
    before = cluster_stats(instance, instance.current)
    # Nodes marked for removal (scale-in) no longer count as staying, like draining ones.
    leaving = sorted(set(removed) | set(plan.marked_nodes))
    after = cluster_stats(instance, assignment, added_capacity, np.array(leaving, dtype=np.int64))
    scaling = Scaling(
        add_nodes=[a.id for a in plan.added_nodes],
        remove_nodes=[node_ids[i] for i in removed],
        drain_nodes=[node_ids[i] for i in plan.marked_nodes],
    )
    if plan.added_nodes:
        scaling.new_node_capacity = float(added_capacity[0])
    return PlanResponse(
        status=plan.status,
        algorithm=algorithm,
        assignment={uid: node_ids[n] for uid, n in zip(instance.unit_ids, assignment.tolist(), strict=True)},
        moves=[
            Move(
                unit=instance.unit_ids[k],
                **{"from": instance.node_ids[instance.current[k]]},
                to=node_ids[assignment[k]],
                cost=float(instance.state_size[k]),
            )
            for k in moved.tolist()
        ],
        scaling=scaling,
        before=_stats(before),
        after=_stats(after),
        migrations=len(moved),
        migration_cost=cost,
        state_moved_share=cost / total_state if total_state > 0 else 0.0,
        load_moved=float(instance.load[moved].sum()),
        lower_bound=LowerBound(load_distance=plan.lower_bound),
        solve_ms=solve_ms,
        notes=plan.notes,
    )

"""Schema in, solver instance; solver plan out, response. Nothing else: the algorithms live in `solvers`."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import compress, repeat
from operator import itemgetter, ne
from typing import Any

import numpy as np

from schemas.assignment import (
    NODE_DEFAULTS,
    AssignmentRequest,
    PlanResponse,
    UnitColumns,
    request_fields,
)
from solvers.instance import UNPLACED, AssignmentInstance, Plan
from solvers.metrics import SMALL_UNITS, ClusterStats, pairwise_sum, plan_stats

# The traffic arrays of a snapshot without traffic (most of them): one empty array of each type for every instance,
# read-only (nothing writes to an instance's arrays; an empty one holds nothing to share), instead of three numpy
# calls a request.
_NO_TRAFFIC_UNITS = np.zeros(0, dtype=np.int64)
_NO_TRAFFIC_RATE = np.zeros(0, dtype=np.float64)
_NO_TRAFFIC_UNITS.flags.writeable = False
_NO_TRAFFIC_RATE.flags.writeable = False


def to_instance(
    request: AssignmentRequest | dict[str, Any], columns: UnitColumns | None = None
) -> AssignmentInstance:
    """The solver's instance of a request: the model, or its fields' values (schemas.assignment.request_fields),
    with its unit columns when the caller has listed some already (the cross-field checks read four of them)."""
    # Per-unit columns through map() with C-level getters: one pass each and no Python frame per unit (250,000),
    # read from each unit's field dict (a dict lookup is 40 % cheaper than a model's attribute lookup: the seven
    # columns cost less than the one pass that lists the dicts).
    request = request_fields(request)
    fields, nodes, traffic = request["units"], request["nodes"], request["traffic"]
    budget = request["budget"]
    if columns is None:
        columns = UnitColumns(fields)
    n_units = len(fields)
    node_ids = tuple(map(itemgetter("id"), nodes))
    node_index = dict(zip(node_ids, range(len(node_ids)), strict=True))
    unit_ids = tuple(columns["id"])
    loads = columns["load"]
    single = not isinstance(loads[0], list)
    series = np.array(loads, dtype=np.float64)
    if single:  # single loads: no list per unit (250,000 of them cost a second)
        series = series[:, None]
    # (A node's or unit's field that has a default may be left out of its dict: read with the default. Most
    # snapshots name no resource: one C-level truth scan then, no list or set of every unit's names.)
    no_resources: Mapping[str, float] = NODE_DEFAULTS["resources"]
    node_resources: list[Mapping[str, float]] = list(
        map(dict.get, nodes, repeat("resources"), repeat(no_resources))
    )
    resource_names = (
        tuple(sorted(set().union(*columns["resources"], *node_resources)))
        if any(node_resources) or any(map(dict.get, fields, repeat("resources")))
        else ()
    )
    if resource_names:
        usage = np.array(
            [[u.get("resources", no_resources).get(r, 0.0) for r in resource_names] for u in fields],
            dtype=np.float64,
        ).reshape(n_units, len(resource_names))
        capacity_r = np.array(
            [[n.get(r, np.inf) for r in resource_names] for n in node_resources], dtype=np.float64
        ).reshape(len(nodes), len(resource_names))
    else:  # (already of their shapes: no reshape, a numpy call each)
        usage, capacity_r = np.zeros((n_units, 0)), np.zeros((len(nodes), 0))
    # Traffic names units: index them only when there is traffic.
    unit_index = dict(zip(unit_ids, range(n_units), strict=True)) if traffic else {}
    max_migrations = budget["max_migrations"]
    # The columns the small paths read as lists (solvers.instance: `*_values`) are listed first and handed over
    # with the arrays built from them: each converted once (the validated fields' values are Python floats, bools
    # and the node indices ints, as the arrays' tolist() gives them back).
    capacity = list(map(dict.get, nodes, repeat("capacity"), repeat(NODE_DEFAULTS["capacity"])))
    draining = list(map(dict.get, nodes, repeat("draining"), repeat(NODE_DEFAULTS["draining"])))
    state_size = columns["state_size"]
    pinned = columns["pinned"]
    instance = AssignmentInstance(
        node_ids=node_ids,
        capacity=np.array(capacity, dtype=np.float64),
        draining=np.array(draining, dtype=np.bool_),
        unit_ids=unit_ids,
        # Every named node exists (reference_errors ran first); None is no node. (Straight into the array: listing
        # the indices first cost more than the one tolist() the small paths then share.)
        current=np.fromiter(
            map(node_index.get, columns["node"], repeat(UNPLACED)), dtype=np.int64, count=n_units
        ),
        series=series,
        state_size=np.array(state_size, dtype=np.float64),
        # (most snapshots pin nothing: a truth scan of the listed flags is cheaper than converting them)
        pinned=np.array(pinned, dtype=np.bool_) if any(pinned) else np.zeros(n_units, dtype=np.bool_),
        operators=tuple(columns["operator"]),
        resource_names=resource_names,
        resource_usage=usage,
        resource_capacity=capacity_r,
        traffic_src=np.array([unit_index[t["src"]] for t in traffic], dtype=np.int64)
        if traffic
        else _NO_TRAFFIC_UNITS,
        traffic_dst=np.array([unit_index[t["dst"]] for t in traffic], dtype=np.int64)
        if traffic
        else _NO_TRAFFIC_UNITS,
        traffic_rate=np.array([t["rate"] for t in traffic], dtype=np.float64)
        if traffic
        else _NO_TRAFFIC_RATE,
        # More migrations than units limits nothing: clamp, so no solver sees a count beyond the instance.
        max_migrations=None if max_migrations is None else min(max_migrations, n_units),
        max_migration_cost=budget["max_migration_cost"],
        serialization_cost=request["serialization_cost"],
    )
    if n_units > SMALL_UNITS:  # (the large paths read the arrays: no lists kept)
        return instance
    lists = {"draining_values": draining, "state_size_values": state_size}
    if single:
        lists["load_values"] = loads
    return instance.with_values(**lists)


def _stats(stats: ClusterStats) -> dict[str, Any]:
    """A PlanStats in its wire form (ClusterStats has its fields, in its order)."""
    return {
        key: None if value is None else float(value) if key != "parallelism" else int(value)
        for key, value in stats.__dict__.items()
    }


def to_response(instance: AssignmentInstance, plan: Plan, algorithm: str, solve_ms: float) -> PlanResponse:
    """The plan as the response model (what `plan_answer` sends, validated against the schema)."""
    return PlanResponse.model_validate(plan_answer(instance, plan, algorithm, solve_ms))


def plan_answer(instance: AssignmentInstance, plan: Plan, algorithm: str, solve_ms: float) -> dict[str, Any]:
    """The plan as the diff of two states (Cruise Control style) with statistics of both, in its wire form (the JSON
    data of a PlanResponse). The per-unit parts (the assignment and the moves, up to 250,000 entries each) are built
    straight from the solver's arrays as plain data: a model object per move cost seconds at the unit cap; the
    fixed-size rest is plain data too."""
    node_ids = list(instance.node_ids) + [a.id for a in plan.added_nodes]
    # (no array for no added node, nor below for no leaving one: a numpy call costs microseconds in a request)
    added_capacity = (
        np.array([a.capacity for a in plan.added_nodes], dtype=np.float64) if plan.added_nodes else None
    )
    assignment = plan.assignment
    unit_ids = instance.unit_ids
    if instance.n_units <= SMALL_UNITS:
        # A small plan on Python lists (numpy's per-call overhead would be most of the cost); sums in numpy's order.
        where, current = assignment.tolist(), instance.current_values
        held = set(where)
        drained = [i for i, drains in enumerate(instance.draining_values) if drains and i not in held]
        # the units on another node now (a C-level scan), of them the ones placed before
        moved_units = [k for k in compress(range(len(where)), map(ne, where, current)) if current[k] >= 0]
        sizes = instance.state_size_values
        cost = pairwise_sum([sizes[k] for k in moved_units])
        load_moved = pairwise_sum([instance.load_values[k] for k in moved_units])
        assigned = dict(zip(unit_ids, map(node_ids.__getitem__, where), strict=True))
        moves = [
            {"unit": unit_ids[k], "from": node_ids[current[k]], "to": node_ids[where[k]], "cost": sizes[k]}
            for k in moved_units
        ]
    else:
        names = np.array(node_ids, dtype=object)  # node index -> id for a whole array at once
        holds = np.bincount(assignment, minlength=len(node_ids)) > 0
        drained = np.flatnonzero(instance.draining & ~holds[: instance.n_nodes]).tolist()
        moved = np.flatnonzero(instance.migration_mask(assignment))
        moved_units = moved.tolist()
        cost = float(instance.state_size[moved].sum())
        load_moved = float(instance.load[moved].sum())
        assigned = dict(zip(unit_ids, names[assignment].tolist(), strict=True))
        # the ids of the moved units only (an object array of all ids cost more)
        moves = [
            {"unit": unit, "from": src, "to": dst, "cost": size}
            for unit, src, dst, size in zip(
                [unit_ids[k] for k in moved_units],
                names[instance.current[moved]].tolist(),
                names[assignment[moved]].tolist(),
                instance.state_size[moved].tolist(),
                strict=True,
            )
        ]
    # Nodes the plan releases: the ones it removes explicitly, and draining nodes it leaves empty.
    removed = sorted(set(plan.removed_nodes) | set(drained))
    total_state = float(np.add.reduce(instance.state_size))
    # Nodes marked for removal (scale-in) no longer count as staying, like draining ones.
    leaving = sorted(set(removed) | set(plan.marked_nodes))
    before, after = plan_stats(
        instance, assignment, added_capacity, np.array(leaving, dtype=np.int64) if leaving else None
    )
    # The fixed-size rest as plain data too, in the schema's field order, the same JSON as PlanResponse's
    # model_dump (tests/test_small_paths.py checks it against the model): five model objects per plan cost more than
    # the statistics.
    answer: dict[str, Any] = {
        "status": plan.status,
        "algorithm": algorithm,
        "assignment": assigned,
        "moves": moves,
        "scaling": {
            "add_nodes": [a.id for a in plan.added_nodes],
            "remove_nodes": [node_ids[i] for i in removed],
            "new_node_capacity": float(added_capacity[0]) if added_capacity is not None else 100.0,
            "drain_nodes": [node_ids[i] for i in plan.marked_nodes],
        },
        "before": _stats(before),
        "after": _stats(after),
        "migrations": len(moved_units),
        "migration_cost": cost,
        "state_moved_share": cost / total_state if total_state > 0 else 0.0,
        "load_moved": load_moved,
        "lower_bound": {"load_distance": None if plan.lower_bound is None else float(plan.lower_bound)},
        "solve_ms": float(solve_ms),
        "notes": list(plan.notes),
    }
    return answer

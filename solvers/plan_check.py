"""Independent plan validator: recomputes every number of a plan from the raw request and checks every invariant.

It works on the wire form (the request and response as plain JSON dicts) and shares no code with the adapter or
`solvers.metrics`, so a bug there cannot hide itself here. The service runs it on every plan before answering;
tests run it on every plan they see.

Invariants: every unit assigned exactly once to a known or added node; pinned units stay; draining and removed nodes
receive nothing; removed nodes end empty; the moves list is exactly the diff of the two states with the right costs;
the budget holds; no receiving node ends above max(100 %, the peak before) nor above a resource capacity; the
reported before/after statistics and lower bound agree with a recomputation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

REL_TOL = 1e-6
ABS_TOL = 1e-6


def _close(a: float | None, b: float | None, scale: float = 1.0) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL * max(1.0, scale))


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _variance(values: Sequence[float]) -> float:
    m = _mean(values)
    return math.fsum((v - m) ** 2 for v in values) / len(values)


def _correlation(a: Sequence[float], b: Sequence[float]) -> float:
    ma, mb = _mean(a), _mean(b)
    da = [x - ma for x in a]
    db = [y - mb for y in b]
    na = math.sqrt(math.fsum(x * x for x in da))
    nb = math.sqrt(math.fsum(y * y for y in db))
    if na <= 1e-12 * max(1.0, max(abs(x) for x in a)) or nb <= 1e-12 * max(1.0, max(abs(y) for y in b)):
        return 0.0
    return math.fsum(x * y for x, y in zip(da, db, strict=True)) / (na * nb)


def _stats(
    series_by_unit: Mapping[str, list[float]],
    where: Mapping[str, str | None],
    capacity: Mapping[str, float],
    staying: Sequence[str],
    all_nodes: Sequence[str],
    windows: int,
) -> dict[str, Any]:
    totals = {n: [0.0] * windows for n in all_nodes}
    counts = dict.fromkeys(all_nodes, 0)
    total_load = 0.0
    for unit, series in series_by_unit.items():
        total_load += _mean(series)
        node = where.get(unit)
        if node is None:
            continue
        counts[node] += 1
        acc = totals[node]
        for w, value in enumerate(series):
            acc[w] += value
    util = {n: 100.0 * _mean(totals[n]) / capacity[n] for n in all_nodes}
    mean_util = 100.0 * total_load / math.fsum(capacity[n] for n in staying)
    stats: dict[str, Any] = {
        "load_distance": max(abs(util[n] - mean_util) for n in staying),
        "max_utilization": max(util.values()),
        "min_utilization": min(util[n] for n in staying),
        "imbalance": _variance([totals[n][-1] for n in staying]),
        "imbalance_total": math.fsum(_variance([totals[n][w] for n in staying]) for w in range(windows)),
        "parallelism": sum(1 for n in all_nodes if counts[n] > 0),
        "avg_load_correlation": None,
        "mean_node_load_variance": None,
        "min_mean_node_load_variance": None,
    }
    if windows >= 2:
        rows = [totals[n] for n in staying]
        if len(rows) >= 2 and len(rows) <= 400:  # pairwise check is quadratic: skip it for huge clusters
            pairs = [
                _correlation(rows[i], rows[j]) for i in range(len(rows)) for j in range(i + 1, len(rows))
            ]
            stats["avg_load_correlation"] = math.fsum(pairs) / len(pairs)
        elif len(rows) < 2:
            stats["avg_load_correlation"] = 0.0
        stats["mean_node_load_variance"] = _mean([_variance(r) for r in rows])
        # Theorem 1 (Xing et al.): the mean node variance is at least var(total series) / n^2.
        total = [math.fsum(r[w] for r in rows) for w in range(windows)]
        stats["min_mean_node_load_variance"] = _variance(total) / len(rows) ** 2
    return stats


def _traffic_stats(
    request: Mapping[str, Any],
    series: Mapping[str, list[float]],
    current: Mapping[str, str | None],
    where: Mapping[str, str | None],
) -> dict[str, float | None]:
    """Collocation factor (share of the traffic rate between units on one node) and load index (estimated load in
    percent of the state before, crossing traffic costing serialization_cost load units per unit of rate)."""
    traffic = request.get("traffic") or []

    def crossing(placement: Mapping[str, str | None]) -> float:
        return math.fsum(
            float(t["rate"])
            for t in traffic
            if placement.get(t["src"]) is None or placement.get(t["src"]) != placement.get(t["dst"])
        )

    total_rate = math.fsum(float(t["rate"]) for t in traffic)
    factor = None if total_rate <= 0.0 else 1.0 - crossing(where) / total_rate
    cost = request.get("serialization_cost")
    total_load = math.fsum(_mean(s) for s in series.values())
    index = None
    if cost is not None and total_load > 0.0:
        index = max(
            0.0, 100.0 * (total_load - float(cost) * (crossing(current) - crossing(where))) / total_load
        )
    return {"collocation_factor": factor, "load_index": index}


def check_plan(request: Mapping[str, Any], plan: Mapping[str, Any]) -> list[str]:
    """Every violation found, as sentences; an empty list means the plan is valid for the request."""
    problems: list[str] = []
    nodes = {n["id"]: n for n in request["nodes"]}
    units = {u["id"]: u for u in request["units"]}
    scaling = plan.get("scaling") or {}
    added = list(scaling.get("add_nodes", []))
    removed = set(scaling.get("remove_nodes", []))
    marked = set(scaling.get("drain_nodes", []))  # marked for removal by the plan (scale-in): like draining
    new_capacity = float(scaling.get("new_node_capacity", 100.0))

    for node_id in added:
        if node_id in nodes:
            problems.append(f"added node {node_id!r} clashes with an existing node")
    for node_id in removed:
        if node_id not in nodes and node_id not in added:
            problems.append(f"removed node {node_id!r} is unknown")
    for node_id in marked:
        if node_id not in nodes:
            problems.append(f"node {node_id!r} marked for removal is unknown")

    capacity = {n: float(nodes[n].get("capacity", 100.0)) for n in nodes}
    capacity.update(dict.fromkeys(added, new_capacity))
    all_nodes = list(nodes) + [n for n in added if n not in nodes]
    draining = {n for n in nodes if nodes[n].get("draining", False)}

    assignment: Mapping[str, str] = plan.get("assignment", {})
    missing = [u for u in units if u not in assignment]
    extra = [u for u in assignment if u not in units]
    if missing:
        problems.append(f"{len(missing)} units not assigned, e.g. {missing[:3]}")
    if extra:
        problems.append(f"{len(extra)} unknown units assigned, e.g. {extra[:3]}")
    if missing or extra:
        return problems

    current = {u: units[u].get("node") for u in units}
    expected_moves: dict[str, tuple[str | None, str, float]] = {}
    receivers: set[str] = set()
    for unit_id, node_id in assignment.items():
        unit = units[unit_id]
        if node_id not in capacity:
            problems.append(f"unit {unit_id!r} assigned to unknown node {node_id!r}")
            continue
        if node_id in removed:
            problems.append(f"unit {unit_id!r} is on removed node {node_id!r}")
        before = current[unit_id]
        if node_id != before:
            if unit.get("pinned", False):
                problems.append(f"pinned unit {unit_id!r} moved from {before!r} to {node_id!r}")
            if node_id in draining:
                problems.append(f"unit {unit_id!r} moved onto draining node {node_id!r}")
            if node_id in marked:
                problems.append(
                    f"unit {unit_id!r} moved onto node {node_id!r} that the plan marks for removal"
                )
            receivers.add(node_id)
            if before is not None:
                expected_moves[unit_id] = (before, node_id, float(unit.get("state_size", 0.0)))
    if problems:
        return problems

    reported = {m["unit"]: (m.get("from"), m["to"], float(m["cost"])) for m in plan.get("moves", [])}
    if len(reported) != len(plan.get("moves", [])):
        problems.append("a unit appears twice in moves")
    if set(reported) != set(expected_moves):
        problems.append(
            f"moves list {sorted(reported)[:5]} does not match the diff of the assignment {sorted(expected_moves)[:5]}"
        )
    else:
        for unit_id, (src, dst, cost) in expected_moves.items():
            if reported[unit_id][:2] != (src, dst) or not _close(reported[unit_id][2], cost, cost):
                problems.append(f"move of {unit_id!r} reported as {reported[unit_id]}, is {(src, dst, cost)}")
    count = len(expected_moves)
    cost_total = math.fsum(c for _, _, c in expected_moves.values())
    if plan.get("migrations") is not None and plan["migrations"] != count:
        problems.append(f"migrations reported {plan['migrations']}, counted {count}")
    if not _close(float(plan.get("migration_cost", 0.0)), cost_total, cost_total):
        problems.append(f"migration_cost reported {plan.get('migration_cost')}, computed {cost_total}")
    budget = request.get("budget") or {}
    if budget.get("max_migrations") is not None and count > budget["max_migrations"]:
        problems.append(f"{count} migrations exceed max_migrations {budget['max_migrations']}")
    max_cost = budget.get("max_migration_cost")
    if max_cost is not None and cost_total > float(max_cost) * (1 + 1e-9) + 1e-9:
        problems.append(f"migration cost {cost_total} exceeds max_migration_cost {max_cost}")
    if plan.get("status") == "unchanged" and expected_moves:
        problems.append("status 'unchanged' but the plan moves units")

    for node_id in removed:
        held = [u for u, n in assignment.items() if n == node_id]
        if held:
            problems.append(f"removed node {node_id!r} still holds {len(held)} units")

    # Loads: a single number is a series of one window.
    series = {u: (v["load"] if isinstance(v["load"], list) else [float(v["load"])]) for u, v in units.items()}
    windows = len(next(iter(series.values())))
    staying_before = [n for n in nodes if n not in draining]
    staying_after = [n for n in all_nodes if n not in draining and n not in removed and n not in marked]
    before = _stats(series, current, capacity, staying_before, list(nodes), windows)
    after = _stats(series, assignment, capacity, staying_after, all_nodes, windows)
    before.update(_traffic_stats(request, series, current, current))
    after.update(_traffic_stats(request, series, current, assignment))

    # Capacity: a receiving node may not end above 100 % or the peak before, whichever is higher.
    cap = max(100.0, before["max_utilization"]) if any(current.values()) else None
    node_load = dict.fromkeys(all_nodes, 0.0)
    for unit_id, node_id in assignment.items():
        node_load[node_id] += _mean(series[unit_id])
    for node_id in receivers:
        util = 100.0 * node_load[node_id] / capacity[node_id]
        limit = cap if cap is not None else max(100.0, after["max_utilization"])
        if util > limit * (1 + 1e-9) + 1e-9:
            problems.append(
                f"node {node_id!r} receives units and ends at {util:.3f}% utilization, over {limit:.3f}%"
            )
    # Further resources are hard caps on receiving nodes.
    usage: dict[tuple[str, str], float] = {}
    for unit_id, node_id in assignment.items():
        for resource, amount in (units[unit_id].get("resources") or {}).items():
            usage[(node_id, resource)] = usage.get((node_id, resource), 0.0) + float(amount)
    for (node_id, resource), amount in usage.items():
        limit_r = (nodes.get(node_id, {}).get("resources") or {}).get(resource)
        if node_id in receivers and limit_r is not None and amount > float(limit_r) * (1 + 1e-9) + 1e-9:
            problems.append(
                f"node {node_id!r} uses {amount:g} of {resource!r}, over its capacity {limit_r:g}"
            )

    for label, computed in (("before", before), ("after", after)):
        claimed = plan.get(label) or {}
        for key, value in computed.items():
            if key not in claimed:
                problems.append(f"{label}.{key} missing")
            elif not _close(claimed[key], value, abs(value) if isinstance(value, float) else 1.0):
                problems.append(f"{label}.{key} reported {claimed[key]}, recomputed {value}")
    floor, variance = after["min_mean_node_load_variance"], after["mean_node_load_variance"]
    if floor is not None and variance is not None and variance < floor * (1 - 1e-9) - 1e-9:
        problems.append(f"mean node load variance {variance} is below the Theorem 1 minimum {floor}")
    bound = (plan.get("lower_bound") or {}).get("load_distance")
    if bound is not None and bound > after["load_distance"] + 1e-6:
        problems.append(f"lower bound {bound} exceeds the plan's load distance {after['load_distance']}")
    return problems

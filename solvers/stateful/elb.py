"""Eager load balancing (ELB), Guo & Zhou Algorithm 1: every statistics window, bring every instance's load into
[v, u] by moving substreams only from overloaded to underloaded instances, largest first.

Phase 1 (preparing): w = latest-window load of all units, new parallelism pi = ceil(2w / (u + v)), mean l = w / pi.
  pi > n: pi - n empty instances are added; pi < n: the n - pi least-loaded instances form R and are emptied.
  Overloaded instances OI have load > l, the others are UI.
Phase 2 (identifying): an overloaded instance j gives away, in one traversal of its substreams by descending load,
  every substream with load <= theta = min(l_j - l, (u - v) / 2), updating l_j and theta after each pick. Every
  substream of R (and of a draining node, which the contract treats like R) is given away too.
Phase 3 (reassigning): the given-away substreams, largest first, each go to the least-loaded instance of UI; an
  instance whose load reaches (u + v) / 2 leaves UI.

Deviations from the listing, and why:
- Line 20 reads "theta <- theta - y"; with theta capped at (u - v)/2 that would cap what an overloaded instance may
  shed at (u - v)/2, which contradicts the prose ("the load that could be moved out is at most l_jt - l_t"). We
  recompute theta = min(l_j - l, (u - v)/2) after each pick, which equals the listing whenever the cap is not active.
- "load smaller than theta" is taken as <= theta: with strict < an instance whose substreams are exactly (u - v)/2
  could never shed anything. Zero-load substreams are never moved (they cost state and balance nothing).
- The contract adds what the paper has not: pinned units never move (an instance holding one is not picked for R),
  draining instances are emptied like R and never receive, the migration budget is kept (a unit the budget cannot
  pay for stays where it is), and no receiving node may end above `utilization_cap()` (the least-loaded instance of
  UI where the unit fits is taken; further resources are hard caps the same way). If UI runs empty, units that must leave R or a draining node go to the
  least-loaded remaining instance; others stay. A node of R that cannot be emptied is kept (see the plan's notes).
- pi is computed as ceil(2w/(u+v) - 1e-9) and at least 1, so that `tolerance` (v, u = mean x (1 -/+ t)) keeps the
  parallelism despite rounding.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from solvers.errors import UnsolvableRequest
from solvers.instance import UNPLACED, AddedNode, AssignmentInstance, Plan
from solvers.stateful.settle import resource_arrays

PI_ROUNDING = 1e-9


def elb_bounds(
    instance: AssignmentInstance, lower: float | None, upper: float | None, tolerance: float | None
) -> tuple[float, float]:
    """[v, u] in load units: given, or `tolerance` as a fraction around the mean latest-window load per staying node."""
    if lower is not None and upper is not None:
        return float(lower), float(upper)
    if tolerance is None:
        raise ValueError("ELB needs lower and upper, or tolerance")
    mean = float(instance.series[:, -1].sum()) / int(instance.active.sum())
    return mean * (1.0 - tolerance), mean * (1.0 + tolerance)


def elb_parallelism(total_load: float, lower: float, upper: float) -> int:
    """The paper's pi = ceil(2w / (u + v)), at least one instance."""
    return max(1, math.ceil(2.0 * total_load / (upper + lower) - PI_ROUNDING))


def _new_node_ids(existing: tuple[str, ...], count: int) -> list[str]:
    taken = set(existing)
    ids: list[str] = []
    k = 0
    while len(ids) < count:
        k += 1
        candidate = f"elb-new-{k}"
        if candidate not in taken:
            ids.append(candidate)
    return ids


def elb(
    instance: AssignmentInstance,
    lower: float | None = None,
    upper: float | None = None,
    tolerance: float | None = None,
    new_node_capacity: float | None = None,
) -> Plan:
    v, u = elb_bounds(instance, lower, upper, tolerance)
    y = instance.series[:, -1]  # the latest histogram Y_t
    mean_load = instance.load  # what the capacity cap of the contract is about
    n_nodes = instance.n_nodes
    staying = np.flatnonzero(instance.active)
    n = len(staying)
    notes: list[str] = []

    # ---- Phase 1: preparing
    placed = instance.current >= 0
    load = np.bincount(instance.current[placed], weights=y[placed], minlength=n_nodes).astype(np.float64)
    w = float(y.sum())
    # An idle window with `tolerance` gives v = u = 0: nothing to balance, the parallelism stays.
    pi = elb_parallelism(w, v, u) if u + v > 0 else n
    mean = w / pi
    half_width = (u - v) / 2.0
    midpoint = (u + v) / 2.0

    removed: list[int] = []
    if pi < n:
        has_pinned = np.zeros(n_nodes, dtype=bool)
        has_pinned[instance.current[instance.pinned & placed]] = True
        candidates = [int(j) for j in staying[np.argsort(load[staying], kind="stable")] if not has_pinned[j]]
        removed = candidates[: n - pi]
        if len(removed) < n - pi:
            notes.append(
                f"only {len(removed)} of {n - pi} instances can be removed: the others hold pinned units"
            )
    n_added = max(0, pi - n)
    capacity_new = (
        float(new_node_capacity)
        if new_node_capacity is not None
        else float(instance.capacity[staying].mean())
    )
    added_ids = _new_node_ids(instance.node_ids, n_added)
    total_nodes = n_nodes + n_added
    load = np.concatenate([load, np.zeros(n_added)])
    node_mean = np.concatenate(
        [
            np.bincount(instance.current[placed], weights=mean_load[placed], minlength=n_nodes),
            np.zeros(n_added),
        ]
    )
    capacity = np.concatenate([instance.capacity, np.full(n_added, capacity_new)])
    cap = instance.utilization_cap()

    leaving = np.zeros(total_nodes, dtype=bool)  # R and draining nodes: every unit must go
    leaving[removed] = True
    leaving[:n_nodes] |= instance.draining
    instances = np.flatnonzero(~leaving)
    overloaded = np.zeros(total_nodes, dtype=bool)
    overloaded[instances] = load[instances] > mean

    assignment = instance.current.copy()
    spent = {"moves": 0, "cost": 0.0}  # every move leaves the unit's original node: counted once

    def affordable(unit: int) -> bool:
        if instance.current[unit] == UNPLACED:
            return True
        if instance.max_migrations is not None and spent["moves"] + 1 > instance.max_migrations:
            return False
        return instance.max_migration_cost is None or spent["cost"] + instance.state_size[
            unit
        ] <= instance.max_migration_cost * (1 + 1e-12)

    queue: list[int] = []  # PQ of the paper: units to (re)assign

    # ---- Phase 2: identifying
    for j in instances[np.argsort(-load[instances], kind="stable")]:
        if not overloaded[j]:
            continue
        own = np.flatnonzero((assignment == j) & instance.movable & (y > 0))
        lj = load[j]
        theta = min(lj - mean, half_width)
        for unit in own[np.argsort(-y[own], kind="stable")]:
            if y[unit] <= theta:
                queue.append(int(unit))
                lj -= y[unit]
                theta = min(lj - mean, half_width)
        load[j] = lj
    for unit in np.flatnonzero(placed & instance.movable):
        if leaving[instance.current[unit]]:
            queue.append(int(unit))
    queue.extend(int(k) for k in np.flatnonzero(~placed))
    for unit in queue:
        origin = instance.current[unit]
        if origin != UNPLACED:
            if leaving[origin]:
                load[origin] -= y[unit]  # phase 2 already took the others off their origin
            node_mean[origin] -= mean_load[unit]

    # ---- Phase 3: reassigning, largest first, to the least-loaded underloaded instance
    under = [(float(load[j]), int(j)) for j in instances if not overloaded[j]]
    heapq.heapify(under)

    # Further resources (`resources` of the request) are hard caps on receiving nodes; added nodes have none.
    unit_usage, capacity_r = resource_arrays(instance)
    usage = np.zeros((total_nodes, capacity_r.shape[1]))
    np.add.at(usage, instance.current[placed], unit_usage[placed])
    room = np.vstack([capacity_r, np.full((n_added, usage.shape[1]), np.inf)])
    room = room * (1 + 1e-9) + 1e-9

    def fits(unit: int, node: int) -> bool:
        if 100.0 * (node_mean[node] + mean_load[unit]) / capacity[node] > cap * (1 + 1e-12):
            return False
        return bool((usage[node] + unit_usage[unit] <= room[node]).all())

    def put(unit: int, node: int) -> None:
        origin = instance.current[unit]
        if node != origin:
            usage[node] += unit_usage[unit]
            if origin != UNPLACED:
                usage[origin] -= unit_usage[unit]
                spent["moves"] += 1
                spent["cost"] += float(instance.state_size[unit])
        assignment[unit] = node
        load[node] += y[unit]
        node_mean[node] += mean_load[unit]

    kept_back = 0
    stuck_on_leaving = 0
    for unit in sorted(queue, key=lambda k: (-y[k], k)):
        origin = int(instance.current[unit])
        must_go = origin == UNPLACED or bool(leaving[origin])
        if not affordable(unit):
            put(unit, origin)
            kept_back += 1
            stuck_on_leaving += int(must_go)
            continue
        skipped: list[tuple[float, int]] = []
        dest = None
        while under:
            entry = heapq.heappop(under)
            if fits(unit, entry[1]):
                dest = entry[1]
                break
            skipped.append(entry)
        for entry in skipped:
            heapq.heappush(under, entry)
        if dest is None and must_go:
            # UI ran empty (or nothing there fits): the least-loaded remaining instance where the unit fits.
            for j in instances[np.argsort(load[instances], kind="stable")]:
                if fits(unit, int(j)):
                    dest = int(j)
                    break
            if dest is None and origin == UNPLACED:
                raise UnsolvableRequest(
                    ("body", "units", unit, "load"),
                    f"unit {instance.unit_ids[unit]!r} has no node and fits on none under the capacity cap",
                )
        if dest is None:
            put(unit, origin)
            kept_back += 1
            stuck_on_leaving += int(must_go)
            continue
        put(unit, dest)
        if not overloaded[dest]:
            if load[dest] >= midpoint:
                overloaded[dest] = True  # UI <- UI - {o_j}, OI <- OI + {o_j}
            else:
                heapq.heappush(under, (float(load[dest]), dest))
    if kept_back:
        notes.append(
            f"{kept_back} substreams stay put: the budget, the capacity cap or a resource capacity does not allow their move"
        )

    # Added instances that received nothing are not asked for; R nodes that could not be emptied stay.
    holds = np.bincount(assignment, minlength=total_nodes) > 0
    used_added = [k for k in range(n_added) if holds[n_nodes + k]]
    remap = np.arange(total_nodes)
    for new_index, k in enumerate(used_added):
        remap[n_nodes + k] = n_nodes + new_index
    assignment = remap[assignment]
    released = [j for j in removed if not holds[j]]
    if stuck_on_leaving and len(released) < len(removed):
        notes.append(f"{len(removed) - len(released)} instances chosen for removal keep units and stay")
    added = tuple(AddedNode(added_ids[k], capacity_new) for k in used_added)
    notes.insert(
        0,
        f"elb: window load w={w:g}, range [v, u]=[{v:g}, {u:g}], parallelism {n} -> {pi}, mean w/pi={mean:g}; "
        f"{len(added)} instances added, {len(released)} removed",
    )
    changed = bool((assignment != instance.current).any()) or bool(added) or bool(released)
    return Plan(
        assignment=assignment.astype(np.int64),
        status="feasible" if changed else "unchanged",
        added_nodes=added,
        removed_nodes=tuple(released),
        notes=notes,
    )

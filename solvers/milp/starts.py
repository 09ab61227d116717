"""Starts for the search that need no solver: the plan built from the lower bound's threshold.

At the threshold t of the bound (solvers.milp.bounds: the smallest distance its counting and covering tests could
not rule out), every staying node above mean + t sheds its fewest largest movable units until it is at most
mean + t (draining nodes shed all of theirs), and the shed units go, largest first, to the least utilized staying
node where they fit (utilization cap, resources) while the budget allows. This is the shape the bound describes:
when the bound is tight it is often the optimum itself, and the descent finishes what it leaves.
"""

from __future__ import annotations

import bisect
import heapq
import time

import numpy as np
from scipy.optimize import linear_sum_assignment

from solvers.baselines import BudgetTracker
from solvers.instance import AssignmentInstance, FloatArray, IntArray
from solvers.milp.bounds import log_ratio

# Nodes (or units) looked at for one unit (or one deficit) before it gives up: bounds every loop of packed_plan.
MAX_FILL_TRIES = 8


def _price_keys(inst: AssignmentInstance, units: IntArray) -> tuple[FloatArray, FloatArray]:
    """Sort keys for state per load, cheapest first, of units with load (np.lexsort's order: the last key is the
    first): the log of the quotient where the quotient overflows (else 0), and the quotient. Why: state 1e305 and
    1e304 over load 1e-5 both overflow to inf, and ranked as a tie the dearer one came first (the fuzz bench's
    `albic` found the overflow, 30 Nov); finite quotients rank as before, ties in the units' order."""
    with np.errstate(over="ignore"):
        price = inst.state_size[units] / inst.load[units]
    beyond = np.where(np.isinf(price), log_ratio(inst.state_size[units], inst.load[units]), 0.0)
    return beyond, price


def bound_plan(
    instance: AssignmentInstance,
    start: IntArray,
    threshold: float,
    deadline: float = np.inf,
    cheapest_first: bool = False,
) -> IntArray:
    """`start`: every unit placed (the current plan with first placements done); the budget counts from
    instance.current, as everywhere. At `deadline` (time.perf_counter()) the plan built so far is returned.

    `cheapest_first` (for cost budgets): each node sheds its units of least state per load first, and the shed
    units go in that order too, the cover the bound's min-cost test describes: the budget buys the most load where
    it is cheapest. A node already within the target sheds no more. Measured (bench.milp_campaign seed 6092: 80
    nodes x 6,000 units of at most 0.4 load placed skewed, one node at 461 %, a cost budget of 2 % of the state):
    300.56 points in 3 ms, 300.43 after 0.3 s of descent (bound 300.32), where the largest-first plan is 429 and
    milp answered 409 at 1 s and 317 at 5 s."""
    inst = instance
    assignment = start.copy()
    capacity = inst.capacity
    share = 100.0 * inst.load
    util = np.bincount(assignment, weights=share, minlength=inst.n_nodes) / capacity
    target = inst.mean_utilization + threshold
    movable = np.flatnonzero(inst.movable)
    if cheapest_first:
        movable = movable[inst.load[movable] > 0.0]  # (a unit without load sheds nothing)
        # Per node, its movable units cheapest per load first; a unit is shed while those before it leave the node
        # above the target (a draining node's target is zero: it sheds everything).
        order = movable[np.lexsort((*_price_keys(inst, movable), assignment[movable]))]
    else:
        # Per node, its movable units largest first; a unit is shed while the larger ones before it leave the node
        # above the target (a draining node's target is zero: it sheds everything).
        order = movable[np.lexsort((-inst.load[movable], assignment[movable]))]
    nodes = assignment[order]
    ahead = np.cumsum(share[order]) - share[order]
    first = np.searchsorted(nodes, nodes, side="left")
    shed_before = ahead - ahead[first]  # points of the node's units before it (before capacity)
    node_target = np.where(inst.active[nodes], target, -np.inf)
    shed = order[util[nodes] - shed_before / capacity[nodes] > node_target + 1e-12]
    if cheapest_first:
        shed = shed[np.lexsort(_price_keys(inst, shed))]  # (stable, as the cheapest-first order above)
    else:
        shed = shed[np.argsort(-inst.load[shed], kind="stable")]

    budget = BudgetTracker(inst)
    budget.track(assignment)
    cap = inst.utilization_cap()
    heap = [(float(util[n]), int(n)) for n in np.flatnonzero(inst.active)]
    heapq.heapify(heap)
    for step, unit in enumerate(shed.tolist()):
        if budget.exhausted or (step % 256 == 255 and time.perf_counter() > deadline):
            break
        source = int(assignment[unit])
        if cheapest_first and inst.active[source] and util[source] <= target + 1e-12:
            continue
        skipped = []
        dest = -1
        while heap:
            level, node = heapq.heappop(heap)
            if level != util[node]:
                continue  # stale entry
            skipped.append((level, node))
            after = util[node] + share[unit] / capacity[node]
            if (
                node != source
                and after <= cap * (1 + 1e-12)
                and after < util[source]
                and budget.allows(unit, node)
            ):
                dest = node
                break
            if len(skipped) >= 8:  # the least utilized few refuse it: keep the unit where it is
                break
        for item in skipped:
            heapq.heappush(heap, item)
        if dest < 0:
            continue
        util[source] -= share[unit] / capacity[source]
        util[dest] += share[unit] / capacity[dest]
        budget.spend(unit, assignment, dest)
        heapq.heappush(heap, (float(util[dest]), dest))
        if inst.active[source]:
            heapq.heappush(heap, (float(util[source]), source))
    return assignment


def packed_plan(
    instance: AssignmentInstance, start: IntArray, threshold: float, deadline: float = np.inf
) -> IntArray:
    """A plan that tries to bring every staying node within mean +- `threshold` (the bound's band) by packing.

    `bound_plan` sheds each node's largest units and sends them to the least utilized nodes: its sheds overshoot
    (the last largest unit takes far more than the excess left), and its placement ignores how much room each
    receiver has, so where the bound is reachable only by packing tightly it never reaches it. Measured on 1,000
    nodes x 100,000 key groups of NYC flight counts (bench.milp_skew, 1,000 migrations, load distance = the
    largest deviation from the mean either way): the band of the bound (0.409 points: 332-337 departures a node)
    is reachable with 980 migrations (HiGHS on the units grouped by node and size: 980 is the least count), while
    the search stopped at 0.488 after every start.

    The construction (a best effort; the caller keeps it only when it is better than its other starts):
    1. each node above the band sheds the fewest movable units that bring it into the band, the last of them
       the largest that keeps the node at or above the band's floor (or else the smallest that suffices): the
       same count as largest-first, with the overshoot kept for the nodes below the band; a draining node sheds
       every movable unit;
    2. the shed units go largest first to the node with the most room while nodes below the band remain
       (filling them), else to the node with the least room that still holds them (best fit decreasing), never
       above the band's top or the utilization cap, never back to the node they leave, within the budget and the
       nodes' resources; a unit that fits nowhere stays (so the nodes that shed take nothing here);
    3. nodes still below the band take single units from nodes that stay in the band without them (the smallest
       unit that fills the deficit, else the largest that fits), while the budget allows.
    Every loop is bounded by the units shed or the staying nodes times MAX_FILL_TRIES; the deadline
    (time.perf_counter()) ends it with the plan built so far."""
    inst = instance
    assignment = start.copy()
    if not np.isfinite(threshold) or not inst.active.any():
        return assignment
    capacity = inst.capacity
    load = inst.load
    share = 100.0 * load
    util = inst.utilization(start)  # (as the plan's distance is computed)
    mean = inst.mean_utilization
    top = min(mean + threshold, inst.utilization_cap())
    floor = mean - threshold
    # Rounding: the plan's distance is recomputed from its node sums, so the band is judged with a relative slack.
    slack = 1e-12 * max(1.0, abs(mean) + abs(threshold))
    scale = capacity / 100.0  # utilization points to load
    excess = np.where(inst.active, (util - top) * scale, np.inf)  # a draining node sheds everything
    width = np.maximum(top - floor, 0.0) * scale  # how far below the top a node may end
    over = np.flatnonzero(excess > slack * scale)
    if time.perf_counter() > deadline:
        return assignment
    movable = np.flatnonzero(inst.movable)
    order = movable[np.lexsort((-load[movable], start[movable]))]  # per node, largest first
    nodes_of = start[order]
    shed: list[int] = []
    for count, node in enumerate(over.tolist()):
        if count % 256 == 255 and time.perf_counter() > deadline:
            return assignment  # (about 20 us a node: 0.1-0.2 s at 10,000 nodes)
        lo, hi = np.searchsorted(nodes_of, [node, node + 1])
        units = order[lo:hi]
        if not inst.active[node]:
            shed.extend(units.tolist())
            continue
        if not len(units):
            continue
        sizes = load[units]
        need = float(excess[node]) - slack * scale[node]
        covered = np.cumsum(sizes)
        # the fewest units: the k largest, k the first count whose sum covers the excess (all when none does)
        k = min(int(np.searchsorted(covered, need, side="left")) + 1, len(units))
        before = float(covered[k - 2]) if k >= 2 else 0.0
        left, most = need - before, need - before + float(width[node])
        rest = sizes[k - 1 :]  # descending
        # the largest remaining unit within [left, most], else the smallest that covers `left`
        fit = int(np.searchsorted(-rest, -most, side="left"))
        covering = int(np.searchsorted(-rest, -left, side="right")) - 1
        last = k - 1 + (fit if fit < len(rest) and rest[fit] >= left else max(covering, 0))
        shed.extend(units[: k - 1].tolist())
        shed.append(int(units[last]))
    budget = BudgetTracker(inst)
    budget.track(assignment)
    if shed:
        shed_array = np.asarray(shed, dtype=np.int64)
        np.subtract.at(util, start[shed_array], share[shed_array] / capacity[start[shed_array]])
    # room below the top, in load, of every staying node (sorted, ascending) once the shed units have left; not of
    # the nodes that shed: a unit of theirs that fits nowhere goes back, and its room must still be there
    room = np.where(inst.active, (top - util) * scale, -np.inf)
    if shed:
        room[start[shed_array]] = -np.inf
    receivers = sorted((float(room[n]), int(n)) for n in np.flatnonzero(room > 0.0))

    def deficit(node: int, node_room: float) -> float:
        return node_room - float(width[node])

    def move(unit: int, index: int) -> None:
        node_room, node = receivers.pop(index)
        budget.spend(unit, assignment, node)
        util[node] += share[unit] / capacity[node]
        if node_room - load[unit] > 0.0:
            bisect.insort(receivers, (node_room - float(load[unit]), node))

    placed_back: list[int] = []
    largest_first = sorted(shed, key=lambda u: -load[u])
    for step, unit in enumerate(largest_first):
        if step % 256 == 255 and time.perf_counter() > deadline:
            placed_back.extend(largest_first[step:])
            break
        size = float(load[unit])
        source = int(start[unit])
        chosen = -1
        # nodes below the band first: the one with the most room (the largest deficit when capacities are equal)
        if (
            receivers
            and deficit(receivers[-1][1], receivers[-1][0]) > slack * scale[receivers[-1][1]]
            and receivers[-1][0] >= size
        ):
            index = len(receivers) - 1
            if receivers[index][1] != source and budget.allows(unit, receivers[index][1]):
                chosen = index
        if chosen < 0:
            position = bisect.bisect_left(receivers, (size, -1))  # the least room that holds it
            for index in range(position, min(position + MAX_FILL_TRIES, len(receivers))):
                if receivers[index][1] != source and budget.allows(unit, receivers[index][1]):
                    chosen = index
                    break
        if chosen < 0:
            placed_back.append(unit)
            continue
        move(unit, chosen)
    for unit in placed_back:  # it fits nowhere within the band: it stays where it was
        util[int(start[unit])] += share[unit] / capacity[int(start[unit])]
    # 3. deficits left: single units from the nodes with the most load above the floor
    short = np.flatnonzero(inst.active & (util < floor - slack))
    if not len(short) or budget.exhausted:
        return assignment
    members = movable[np.argsort(assignment[movable], kind="stable")]
    member_nodes = assignment[members]
    surplus = np.where(inst.active, (util - floor) * scale, -np.inf)
    donors = [(-float(surplus[n]), int(n)) for n in np.flatnonzero(surplus > 0.0)]
    heapq.heapify(donors)
    for node in short[np.argsort(util[short])].tolist():
        for _ in range(MAX_FILL_TRIES):
            gap = (floor - util[node]) * scale[node]
            if gap <= slack * scale[node] or not donors:
                break
            if time.perf_counter() > deadline or budget.exhausted:
                return assignment
            top_room = (top - util[node]) * scale[node]
            tried: list[tuple[float, int]] = []
            picked = -1
            while donors and len(tried) < MAX_FILL_TRIES and picked < 0:
                entry = heapq.heappop(donors)
                donor = entry[1]
                if -entry[0] != surplus[donor]:
                    continue  # stale
                tried.append(entry)
                if donor == node:
                    continue
                lo, hi = np.searchsorted(member_nodes, [donor, donor + 1])
                units = members[lo:hi]
                units = units[assignment[units] == donor]  # still there
                sizes = load[units]
                fits = (sizes <= min(float(surplus[donor]), top_room)) & (sizes > 0.0)
                if not fits.any():
                    continue
                candidates, candidate_sizes = units[fits], sizes[fits]
                filling = candidate_sizes >= gap * (1.0 - 1e-12)
                pool = np.flatnonzero(filling)
                # the smallest unit that fills the gap, else the largest that fits
                pick = pool[np.argmin(candidate_sizes[pool])] if len(pool) else np.argmax(candidate_sizes)
                unit = int(candidates[pick])
                if budget.allows(unit, node):
                    picked = unit
            for entry in tried:
                heapq.heappush(donors, entry)
            if picked < 0:
                break
            donor = int(assignment[picked])
            budget.spend(picked, assignment, node)
            util[donor] -= share[picked] / capacity[donor]
            util[node] += share[picked] / capacity[node]
            surplus[donor] = (util[donor] - floor) * scale[donor]
            surplus[node] = (util[node] - floor) * scale[node]
            for changed in (donor, node):
                if surplus[changed] > 0.0:
                    heapq.heappush(donors, (-float(surplus[changed]), changed))
    return assignment


# Units x staying nodes up to which the repack runs (each unit looks at every staying node: ~20 ms at this size with
# the compiled kernel, kernels.least_after; the numpy fallback, before warm_up, stops at its deadline).
REPACK_MAX_WORK = 20_000_000
# Nodes of one capacity class up to which the repack's node labels are matched to the current placement (a square
# assignment problem of this side; scipy's linear_sum_assignment is cubic).
REPACK_MAX_RELABEL = 1_500


def repacked_plan(instance: AssignmentInstance, start: IntArray, deadline: float = np.inf) -> IntArray | None:
    """Every movable unit placed anew, largest first, on the staying node where its utilization after it is least
    (LPT for machines of different speeds; ties: the first such node), the units that cannot move where they are;
    then, among staying nodes of the same capacity that hold no unit that cannot move (interchangeable bins), the
    new contents are matched to the nodes that hold most of them now (scipy's linear_sum_assignment: the same
    utilizations, the fewest migrations, or the least state moved under a cost budget). None when the plan is not
    within the budget, a unit would pass the utilization cap, the instance has resource caps (not checked here),
    units x staying nodes exceed REPACK_MAX_WORK, or `deadline` (time.perf_counter()) passes.

    The start for number partitioning at scale, where every other start repairs the current placement step by step:
    with no budget (or one that the repack fits in) on 16 nodes x 1,024 key groups of 1x/2x capacities, milp
    answered 0.03-0.08 points at 1 s and 0.016 at 5 s (bench.milp_campaign --family skew, seed 9164); this plan,
    re-partitioned by pairs and descended, is 0.006. (Karmarkar-Karp differencing would balance equal capacities
    better still; LPT is what extends to mixed capacities and a cap, and the pair re-partition that follows it
    closes most of the difference.)"""
    from solvers.milp import local_search  # (the kernels, once warm_up has compiled them)

    inst = instance
    if inst.resource_names:
        return None
    movable = np.flatnonzero(inst.movable)
    active = np.flatnonzero(inst.active)
    if not len(movable) or not len(active) or len(movable) * len(active) > REPACK_MAX_WORK:
        return None
    fixed = ~inst.movable
    node_load = np.bincount(start[fixed], weights=inst.load[fixed], minlength=inst.n_nodes).astype(np.float64)
    held = np.ascontiguousarray(node_load[active])
    capacity = np.ascontiguousarray(inst.capacity[active])
    limit = inst.utilization_cap() * (1 + 1e-12) / 100.0
    order = np.ascontiguousarray(movable[np.argsort(-inst.load[movable], kind="stable")])
    dest = np.zeros(len(order), dtype=np.int64)
    if local_search.kernels_ready():
        from solvers.milp import kernels

        loads = np.ascontiguousarray(inst.load, dtype=np.float64)
        if kernels.least_after(order, loads, held, capacity, limit, dest) < len(order):
            return None
    else:  # the same operations, unit by unit
        for count, unit in enumerate(order.tolist()):
            if count % 256 == 0 and time.perf_counter() > deadline:
                return None
            load = inst.load[unit]
            j = int(np.argmin((held + load) / capacity))
            if held[j] + load > limit * capacity[j]:
                return None
            held[j] += load
            dest[count] = j
    if time.perf_counter() > deadline:
        return None
    assignment = start.copy()
    assignment[order] = active[dest]
    _relabel(inst, assignment, fixed)
    return assignment if inst.within_budget(assignment) else None


def repack_fits(instance: AssignmentInstance) -> bool:
    """Whether the budget, if any, cannot bind (so a repacked plan is always within it), and the instance has no
    resource caps: where `repacked_plan` is a start. (solve_milp plans under a budget that cannot bind as without
    one, so there this is: no budget and no resource caps.)"""
    return not instance.resource_names and not instance.budget_binds


def _relabel(inst: AssignmentInstance, assignment: IntArray, fixed: np.ndarray) -> None:
    """Permute the contents of interchangeable staying nodes (the same capacity, no unit that cannot move) so that
    as many units (as much state, under a cost budget) as possible stay where they are now; in place."""
    has_fixed = np.zeros(inst.n_nodes, dtype=bool)
    has_fixed[assignment[fixed]] = True  # (where the start put them)
    free = inst.active & ~has_fixed
    weight = inst.state_size if inst.max_migration_cost is not None else np.ones(inst.n_units)
    movable = inst.movable
    for c in np.unique(inst.capacity[free]):
        nodes = np.flatnonzero(free & (inst.capacity == c))
        if len(nodes) < 2 or len(nodes) > REPACK_MAX_RELABEL:
            continue
        index = np.full(inst.n_nodes, -1)
        index[nodes] = np.arange(len(nodes))
        units = np.flatnonzero(movable & (index[assignment] >= 0))
        bins = index[assignment[units]]
        now = index[np.maximum(inst.current[units], 0)]
        kept = (inst.current[units] >= 0) & (now >= 0)
        overlap = np.bincount(
            bins[kept] * len(nodes) + now[kept], weights=weight[units[kept]], minlength=len(nodes) ** 2
        ).reshape(len(nodes), len(nodes))
        rows, cols = linear_sum_assignment(overlap, maximize=True)
        target = np.empty(len(nodes), dtype=np.int64)
        target[rows] = nodes[cols]
        assignment[units] = target[bins]

"""ALBIC's step 3 when `pairs="budget"` (beyond the paper): as many merges as the migration budget and the load
distance allow, chosen by the collocation they bring per migration, toward a target that does not change from one
period to the next.

Why not simply the best pairs one after the other: merging every qualifying pair by its own traffic grows collocated
sets from many points at once (each pair on the less loaded of its two nodes), so a chain ends cut into short
segments on many nodes; joining two segments later means moving a whole partition for one edge, and the budget is
gone. Measured on the Fig. 10 setup this stalls near 36 % collocation (docs/albic.md). So:

1. Target sets (step 2 applied to the whole qualifying graph, not only to its collocated part): the groups of the
   derived instance (step 2's partitions and single key groups) joined by qualifying pairs form components; a
   component heavier than maxPL is split by balanced graph partitioning (METIS, vertex weight = load, edge weight =
   traffic) into ceil(load / maxPL) target sets. Existing partitions are vertices, never cut: collocation already
   reached is kept, and the targets of the next period are built from this period's partitions (stable).
2. Anchors: each target set gets the node that already holds most of its load, the sets spread evenly over the
   staying nodes (a linear assignment with ceil(sets / nodes) slots per node), so collocating them does not pile
   load on a few nodes. A pinned member decides the anchor; a draining node is never one.
3. Greedy merges in rounds: every group away from its set's anchor is a candidate to move there; its gain is the
   collocated traffic it brings (all traffic, not only qualifying pairs: the collocation factor counts all of it)
   minus what it leaves behind, per unit of the budget its members spend. Each round takes the best candidates
   whose source and target nodes no other move of the round touches (so every gain and load check of the round is
   exact), while the budget lasts and every node stays within `band` of the mean utilization (or no further from it
   than before). When the band blocks every best move, a swap with a resident of its anchor that is not waited for
   there (2 migrations, positive exact gain of the pair) leaves the loads nearly as they are.
4. Free moves: once no target set has a candidate left, groups in no target set (no qualifying pair, e.g. full
   partitioning) move toward the node they exchange most traffic with, never onto an anchor still waiting for
   members, with what the target sets left of the budget.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.sparse.csgraph import connected_components

from solvers.albic.graph import partition_graph
from solvers.albic.repair import violations
from solvers.instance import AssignmentInstance, FloatArray, IntArray

# A target set may be this much heavier than maxPL before it is split (loads drift by a few percent each period:
# without slack a set at maxPL would flip between one and two target sets, and its anchor with it).
TARGET_SLACK = 0.1
# Above this many target sets the anchors are picked greedily (largest overlap first) instead of by the linear
# assignment (cubic in the number of sets; 500 sets take about 0.05 s).
ASSIGNMENT_MAX_SETS = 500
SWAP_RESIDENTS = (
    32  # residents of an anchor tried per blocked move (in the seeded order): bounds a swap round
)
TOL = 1e-9
# Groups the MILP moved that step 5 (keep_collocation) tries to take back at most (each try checks every rule over
# every unit: O(units)); with a count budget the MILP moves at most that many groups anyway.
TAKE_BACK_TRIES = 256


@dataclass
class MergePlan:
    assignment: IntArray  # key group -> node after the merges (the start elsewhere)
    group_home: IntArray  # per group: its node after the merges
    moved_groups: IntArray  # groups that moved to their anchor
    target_of: IntArray  # per group: its target set, -1 for none
    anchor: IntArray  # per target set: its node
    spent: float  # budget share spent (budget = 1)
    migrations: int
    # No move toward a target set that balancing could make room for is left: none brings collocated traffic, or
    # each needs more room at its anchor than the band (what an anchor at the mean has).
    targets_done: bool


def target_sets(
    group_of: IntArray,
    group_load: FloatArray,
    first: IntArray,
    second: IntArray,
    weights: sp.csr_matrix,
    max_pl_units: float,
) -> tuple[IntArray, int]:
    """Step 1 above: per group its target set (-1 if it has no qualifying pair to another group)."""
    n_groups = len(group_load)
    gf, gs = group_of[first], group_of[second]
    keep = gf != gs
    gf, gs = gf[keep], gs[keep]
    target_of = np.full(n_groups, -1, dtype=np.int64)
    if not len(gf):
        return target_of, 0
    n_units = len(group_of)
    indicator = sp.csr_matrix((np.ones(n_units), (group_of, np.arange(n_units))), shape=(n_groups, n_units))
    # Traffic between groups over the qualifying pairs only (what the target sets are meant to collocate).
    qualifying = sp.csr_matrix((np.ones(len(first)), (first, second)), shape=(n_units, n_units))
    qualifying = weights.multiply(qualifying + qualifying.T).tocsr()
    group_weights = (indicator @ qualifying @ indicator.T).tocsr()
    group_weights.setdiag(0.0)
    group_weights.eliminate_zeros()
    n_comp, label = connected_components(group_weights, directed=False)
    sizes = np.bincount(label, minlength=n_comp)
    comp_load = np.bincount(label, weights=group_load, minlength=n_comp)
    order = np.argsort(label, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    n_sets = 0
    for c in np.flatnonzero(sizes > 1).tolist():
        members = order[bounds[c] : bounds[c + 1]].astype(np.int64)
        k = (
            1
            if max_pl_units <= 0
            else max(1, math.ceil(comp_load[c] / (max_pl_units * (1 + TARGET_SLACK)) - TOL))
        )
        for part in partition_graph(members, group_weights, group_load[members], min(k, len(members))):
            target_of[part] = n_sets
            n_sets += 1
    return target_of, n_sets


def anchors(
    instance: AssignmentInstance,
    home: IntArray,
    target_of: IntArray,
    n_sets: int,
    group_load: FloatArray,
    group_pinned: np.ndarray,
) -> IntArray:
    """Step 2 above: one staying node per target set, most of its load already there, sets spread over the nodes."""
    eligible = np.flatnonzero(~instance.draining)
    in_set = target_of >= 0
    overlap = np.zeros((n_sets, instance.n_nodes))
    np.add.at(overlap, (target_of[in_set], home[in_set]), group_load[in_set])
    forced = np.full(n_sets, -1, dtype=np.int64)
    pinned_in = in_set & group_pinned
    forced[target_of[pinned_in]] = home[
        pinned_in
    ]  # a pinned member decides (the last one if several disagree)
    big = float(group_load.sum()) + 1.0
    score = overlap[:, eligible].copy()
    has_forced = forced >= 0
    if has_forced.any():
        score[has_forced] = np.where(eligible[None, :] == forced[has_forced, None], big, -big)
    slots = max(1, math.ceil(n_sets / max(len(eligible), 1)))
    anchor = np.full(n_sets, -1, dtype=np.int64)  # -1: no node may receive the set
    if not len(eligible) or not n_sets:
        pass
    elif n_sets <= ASSIGNMENT_MAX_SETS:
        rows, cols = linear_sum_assignment(-np.repeat(score, slots, axis=1))
        anchor[rows] = eligible[cols // slots]
    else:
        taken = np.zeros(len(eligible), dtype=np.int64)
        for s in np.argsort(-score.max(axis=1), kind="stable").tolist():
            options = np.where(taken < slots, score[s], -np.inf)
            pick = int(np.argmax(options))
            anchor[s] = eligible[pick]
            taken[pick] += 1
    anchor[has_forced] = forced[has_forced]
    return anchor


def greedy_merges(
    instance: AssignmentInstance,
    start: IntArray,
    group_of: IntArray,
    home: IntArray,
    group_pinned: np.ndarray,
    target_of: IntArray,
    anchor: IntArray,
    unit_share: FloatArray,
    allowed: float,
    max_groups: int,
    weights: sp.csr_matrix,
    band: float,
    deadline: float,
    rng_order: IntArray,
    free_moves: bool = True,
) -> MergePlan:
    """Step 3 above: rounds of node-disjoint moves of whole groups to their anchors, best collocation per migration
    first. Every round moves at least one group or ends the loop, and a group moves at most once: it ends."""
    n_groups = len(home)
    assignment = start.copy()
    group_home = home.copy()
    load = instance.load
    capacity = instance.capacity
    node_load = np.bincount(start, weights=load, minlength=instance.n_nodes).astype(np.float64)
    mean = instance.mean_utilization
    cap = instance.utilization_cap()
    group_load = np.bincount(group_of, weights=load, minlength=n_groups).astype(np.float64)
    group_cost = np.bincount(group_of, weights=unit_share, minlength=n_groups).astype(np.float64)
    migrations_of = np.bincount(group_of, weights=(start >= 0).astype(np.float64), minlength=n_groups)
    budgeted = bool(np.any(unit_share > 0))
    rows = np.repeat(np.arange(weights.shape[0]), np.diff(weights.indptr))
    cols, rates = weights.indices, weights.data
    moved = np.zeros(n_groups, dtype=bool)
    spent, merged = 0.0, 0
    # Phase 1: target sets only; phase 2 (free_moves): what the budget has left, to every group.
    phases = [False, True] if free_moves else [False]
    phase = 0
    set_anchor = np.concatenate([anchor, [-1]])[target_of]  # per group; target_of -1 picks the -1 at the end
    by_group = np.argsort(group_of, kind="stable")
    group_start = np.concatenate([[0], np.cumsum(np.bincount(group_of, minlength=n_groups))])

    def members_of(g: int) -> IntArray:
        return by_group[group_start[g] : group_start[g + 1]]

    def collocation_delta(units: IntArray, nodes: IntArray) -> float:
        return collocation_change(weights, assignment, units, nodes)

    def within_band(node: int, change: float) -> bool:
        before = 100.0 * node_load[node] / capacity[node]
        after = before + 100.0 * change / capacity[node]
        return (after <= cap * (1 + TOL) or change <= 0) and abs(after - mean) <= max(
            band, abs(before - mean)
        ) + TOL

    def move(g: int, target: int) -> None:
        nonlocal spent, merged
        members = members_of(g)
        source = int(group_home[g])
        assignment[members] = target
        group_home[g] = target
        node_load[source] -= group_load[g]
        node_load[target] += group_load[g]
        moved[g] = True
        spent += group_cost[g]
        merged += 1

    def gain_toward(goal: IntArray) -> FloatArray:
        """Per group: traffic of its members to its goal node minus to the other groups on its own node."""
        own_group = group_of[rows]
        to_goal = (assignment[cols] == goal[own_group]) & (goal[own_group] >= 0)
        left_behind = (assignment[cols] == assignment[rows]) & (group_of[cols] != own_group)
        weights_ = rates * (to_goal.astype(np.float64) - left_behind)
        return np.bincount(own_group, weights=weights_, minlength=n_groups).astype(np.float64)

    def swap_round(order: IntArray, goal: IntArray, touched: np.ndarray) -> int:
        took = 0
        for g in order.tolist():
            if merged + 2 > max_groups or time.perf_counter() > deadline:
                break
            source, target = int(group_home[g]), int(goal[g])
            if touched[source] or touched[target] or instance.draining[target]:
                continue
            residents = np.flatnonzero(
                (group_home == target)
                & ~moved
                & ~group_pinned
                & (set_anchor != target)
                & (migrations_of <= 1)
            )
            residents = residents[residents != g]
            residents = residents[np.argsort(rng_order[residents], kind="stable")][:SWAP_RESIDENTS]
            best: tuple[float, int] | None = None
            for r in residents.tolist():
                if spent + group_cost[g] + group_cost[r] > allowed + TOL:
                    continue
                change = group_load[g] - group_load[r]
                if not (within_band(target, change) and within_band(source, -change)):
                    continue
                units = np.concatenate([members_of(g), members_of(r)])
                nodes = np.concatenate(
                    [np.full(len(members_of(g)), target), np.full(len(members_of(r)), source)]
                )
                value = collocation_delta(units, nodes)
                if value > TOL and (best is None or value > best[0]):
                    best = (value, r)
            if best is None:
                continue
            move(g, target)
            move(best[1], source)
            touched[source] = touched[target] = True
            took += 2
        return took

    while merged < max_groups and time.perf_counter() < deadline:
        goal = set_anchor.copy()
        if phases[phase]:
            # Groups outside every target set (no qualifying pair): toward the node they exchange most traffic with.
            free = target_of < 0
            goal[free] = _busiest_other_node(
                instance, assignment, group_of, group_home, rows, cols, rates, n_groups
            )[free]
        candidate = (goal >= 0) & (goal != group_home) & ~moved & ~group_pinned
        # Anchors still waiting for members of their set.
        waiting = np.zeros(instance.n_nodes, dtype=bool)
        incomplete = (set_anchor >= 0) & (group_home != set_anchor) & ~group_pinned
        waiting[set_anchor[incomplete]] = True
        if not candidate.any():
            if phase + 1 < len(phases):
                phase += 1
                continue
            break
        gain = gain_toward(goal)
        # Per unit of the budget it spends (its members' shares; without a budget, per migration).
        per_migration = gain / (np.maximum(group_cost, TOL) if budgeted else np.maximum(migrations_of, 1.0))
        picks = np.flatnonzero(candidate & (gain > TOL))
        if not len(picks):
            if phase + 1 < len(phases):
                phase += 1
                continue
            break
        util = 100.0 * node_load / capacity
        # Best per migration first; ties: from the fuller node to the emptier one, then a seeded random order.
        relief = util[group_home[picks]] - util[goal[picks]]
        order = picks[np.lexsort((rng_order[picks], -relief, -per_migration[picks]))]
        touched = np.zeros(instance.n_nodes, dtype=bool)
        took = 0
        for g in order.tolist():
            if merged >= max_groups:
                break
            source, target = int(group_home[g]), int(goal[g])
            if touched[source] or touched[target] or instance.draining[target]:
                continue
            if spent + group_cost[g] > allowed + TOL:
                continue
            delta = group_load[g]
            after_target = 100.0 * (node_load[target] + delta) / capacity[target]
            after_source = 100.0 * (node_load[source] - delta) / capacity[source]
            if after_target > cap * (1 + TOL):
                continue
            if after_target - mean > max(band, util[target] - mean) + TOL:
                continue
            if mean - after_source > max(band, mean - util[source]) + TOL:
                continue
            if phases[phase] and waiting[target]:
                continue  # a free move never takes room that a target set still needs
            move(g, target)
            touched[source] = touched[target] = True
            took += 1
        if not took and not phases[phase]:
            # Every best move is blocked by the band: swap it with a resident of its anchor that is not waited for
            # there (2 migrations, the pair's exact gain must be positive).
            took = swap_round(order, goal, touched)
        if not took:
            if phase + 1 < len(phases):
                phase += 1
                continue
            break
    # The target-set moves still worth making, and the room each needs at its anchor (utilization points): an anchor
    # brought to the mean by balancing has `band` points of room, so moves that need more wait for no balancing.
    left = (set_anchor >= 0) & (group_home != set_anchor) & ~moved & ~group_pinned
    left &= gain_toward(set_anchor) > TOL
    need = 100.0 * group_load[left] / capacity[set_anchor[left]]
    return MergePlan(
        assignment=assignment,
        group_home=group_home,
        moved_groups=np.flatnonzero(moved),
        target_of=target_of,
        anchor=anchor,
        spent=spent,
        migrations=int(migrations_of[moved].sum()),
        targets_done=bool(not len(need) or need.min() > band + TOL),
    )


def collocation_change(
    weights: sp.csr_matrix, assignment: IntArray, units: IntArray, nodes: IntArray
) -> float:
    """Exact change of the collocated traffic (undirected `weights` between units) if `units` moved to `nodes`
    (edges between two of them counted once)."""
    after = assignment.copy()
    after[units] = nodes
    moving = np.zeros(len(assignment), dtype=bool)
    moving[units] = True
    total = 0.0
    for u in units.tolist():
        nbr = weights.indices[weights.indptr[u] : weights.indptr[u + 1]]
        w = weights.data[weights.indptr[u] : weights.indptr[u + 1]]
        change = (after[nbr] == after[u]).astype(np.float64) - (assignment[nbr] == assignment[u])
        total += float(np.sum(w * change * np.where(moving[nbr], 0.5, 1.0)))
    return total


def keep_collocation(
    instance: AssignmentInstance,
    start: IntArray,
    merged: IntArray,
    assignment: IntArray,
    group_of: IntArray,
    weights: sp.csr_matrix,
    limit: float,
    deadline: float,
) -> tuple[IntArray, int]:
    """Step 5 (trimtab, pairs="budget"; the caller runs it once no merge needs room): the MILP's balancing moves
    that cost collocated traffic are taken back while the load distance stays within `limit` and the plan keeps
    every rule (solvers.albic.repair.violations against `start`). `merged` is the plan after the merges, the MILP's
    start; the MILP moved whole groups (`group_of`). Returns the plan and the number of groups it places as in
    `merged` that `assignment` did not.

    - If `merged` itself is within `limit` and collocates more: every balancing move is taken back, then the MILP's
      moves that cost no collocated traffic are made again where they do not raise the load distance (they balance
      for free). Taken back together, so that a swap (two moves that only balance as a pair) comes back whole.
    - Otherwise single groups, most collocated traffic regained first, each where the plan stays within `limit`.
    At most TAKE_BACK_TRIES groups are tried (each try is a rule check over every unit), by `deadline`
    (time.perf_counter()).

    Why: the MILP minimizes the load distance with whatever budget the merges left. Once the merges had nothing
    left to do, it spent the whole budget every period on balancing far inside maxLD (0.96 -> 0.41 points on the
    Fig. 10 setup from COLA's allocation), moving key groups away from the traffic they share, and the collocation
    fell period after period (47.6 % -> 46.3 % in 15 periods, below COLA's). ALBIC's goal is collocation within
    maxLD, and the merges keep the nodes within `limit`: balancing beyond it is not worth collocated traffic once no
    merge needs the room. (While merges are left, the room balancing makes is what lets them in: taking it back then
    cost 0.5 points of collocation from a random start.)"""
    moved_groups = np.unique(group_of[assignment != merged])
    if not len(moved_groups):
        return assignment.copy(), 0
    by_group = np.argsort(group_of, kind="stable")
    group_start = np.concatenate([[0], np.cumsum(np.bincount(group_of, minlength=int(group_of.max()) + 1))])

    def members_of(g: int) -> IntArray:
        return by_group[group_start[g] : group_start[g + 1]]

    def allowed_distance(plan: IntArray) -> float | None:
        """The plan's load distance where it keeps every rule and `limit`, else None."""
        over_budget, bad = violations(instance, start, plan)
        if over_budget or len(bad):
            return None
        distance = instance.load_distance(plan)
        return distance if distance <= limit + TOL else None

    def change(plan: IntArray, g: int, to: IntArray) -> float:
        return collocation_change(weights, plan, members_of(g), to[members_of(g)])

    tries = moved_groups[:TAKE_BACK_TRIES].tolist()
    distance = allowed_distance(merged)
    if distance is not None and _collocated(weights, merged) > _collocated(weights, assignment) + TOL:
        result = merged.copy()
        for g in tries:
            if time.perf_counter() > deadline:
                break
            if change(result, g, assignment) < -TOL:
                continue
            trial = result.copy()
            trial[members_of(g)] = assignment[members_of(g)]
            trial_distance = allowed_distance(trial)
            if trial_distance is not None and trial_distance <= distance + TOL:
                result, distance = trial, trial_distance
        return result, len(np.unique(group_of[(result == merged) & (assignment != merged)]))
    result = assignment.copy()
    gains = np.array([change(result, g, merged) for g in tries])
    by_gain = np.argsort(-gains, kind="stable")
    taken_back = 0
    for g in np.asarray(tries)[by_gain[gains[by_gain] > TOL]].tolist():
        if time.perf_counter() > deadline:
            break
        # (exact now: a group taken back before may have changed this one's gain)
        if change(result, g, merged) <= TOL:
            continue
        trial = result.copy()
        trial[members_of(g)] = merged[members_of(g)]
        if allowed_distance(trial) is not None:
            result = trial
            taken_back += 1
    return result, taken_back


def _collocated(weights: sp.csr_matrix, assignment: IntArray) -> float:
    """Collocated traffic of `assignment` (undirected `weights`: each edge twice)."""
    rows = np.repeat(np.arange(weights.shape[0]), np.diff(weights.indptr))
    return float(weights.data[assignment[rows] == assignment[weights.indices]].sum())


def _busiest_other_node(
    instance: AssignmentInstance,
    assignment: IntArray,
    group_of: IntArray,
    group_home: IntArray,
    rows: IntArray,
    cols: IntArray,
    rates: FloatArray,
    n_groups: int,
) -> IntArray:
    """Per group: the staying node other than its own that its members exchange the most traffic with (-1: none)."""
    own_group = group_of[rows]
    node = assignment[cols]
    elsewhere = (node != group_home[own_group]) & ~instance.draining[node]
    per_node = sp.csr_matrix(
        (rates[elsewhere], (own_group[elsewhere], node[elsewhere])), shape=(n_groups, instance.n_nodes)
    )
    per_node.sum_duplicates()
    best = np.asarray(per_node.argmax(axis=1)).ravel().astype(np.int64)
    has = np.asarray(per_node.max(axis=1).todense()).ravel() > 0
    return np.where(has, best, -1)

"""ALBIC: Autonomic Load Balancing with Integrated Collocation (Madsen, Zhou & Cao, Section 4.3.2, Algorithm 2).

A heuristic on top of the MILP (solvers.milp.solve_milp, unchanged): key groups that talk a lot and already share a
node are kept together as indivisible partitions, the best pair that does not share a node yet is brought together,
and the MILP balances the partitions. The four steps of Algorithm 2:

1. Scores (solvers.albic.graph.qualifying_pairs): a pair qualifies when out(g_i, g_j) > avg(g_i) x sF.
2. Maintain collocation: qualifying pairs on one node (colGrps) are merged into sets (union-find); each set is split by
   balanced graph partitioning (METIS) into max(p1, p2) partitions, p1 = ceil(migration cost / maxMigrCost),
   p2 = ceil(load / maxPL), again on any part that still breaks one of the two limits.
3. Improve collocation: the qualifying pair with the most traffic that does not share a node (toBeColGrps; ties broken
   at random, seeded) is merged, on the less utilized of its two nodes (cases 1 and 3) or on the node of the member
   that belongs to a partition (case 2).
4. Solve: the MILP on a derived instance whose units are the partitions; if the load distance is above maxLD, maxPL is
   lowered by stepPL and the steps are redone (maxPL <= 0: one unit per key group, the plain MILP, no pair).

How the derived instance expresses it (where the paper is silent; see docs/albic.md):
- A partition is one unit: its load series, further resources and migration cost are the sums over its members, its
  current node is the node its members share. Moving it moves them all: its cost is exact.
- The merged pair of step 3 is a *pinned* unit whose current node is the chosen target: the paper's constraint "g_i, g_j
  on node n". Bringing its members there costs what moving the members that are elsewhere costs; that cost is charged
  up front by lowering the MILP's budget by it (exact, since the unit cannot move again).
- Budgets: the MILP counts migrations per unit, but a partition of five key groups is five migrations. Every unit of the
  derived instance therefore carries its share of the real budget as its `state_size`, and the MILP gets a cost budget:
  with only max_migrations the share is its member count (budget max_migrations), with only max_migration_cost the
  members' state sizes, with both max(count / max_migrations, cost / max_migration_cost) against a budget of 1 (the
  sum of maxima bounds both sums: sound, slightly conservative). No budget: none.
- Capacity: the derived instance keeps the real utilization cap (max of 100 % and the real peak before), and a pair is
  only merged where the target node stays under it.
- After expansion to key groups the plan is verified against the real instance (budget, pins, draining, caps) and
  repaired by reverting whole partitions (solvers.albic.repair); by construction this should not trigger.

Beyond the paper: `pairs="budget"` (solvers.albic.merges) moves as many groups as the budget allows (keeping
`balance_reserve` of it for the MILP's balancing): step 2 applied to the whole qualifying graph gives target sets with
anchor nodes, and groups move to their anchor by most collocation per migration, within half of maxLD of the mean
utilization. While the load distance is above maxLD the number of moved groups halves before maxPL is lowered.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import scipy.sparse as sp

from solvers.albic.graph import (
    UnionFind,
    partition_graph,
    qualifying_pairs,
    undirected_weights,
)
from solvers.albic.merges import anchors, greedy_merges, keep_collocation, target_sets
from solvers.albic.repair import repair
from solvers.baselines import placed_start
from solvers.instance import AssignmentInstance, FloatArray, IntArray, Plan
from solvers.metrics import collocation_factor
from solvers.milp import solve_milp

PairMode = Literal["one", "budget"]
# A unit whose migration alone costs more than the whole budget (e.g. state over a zero cost budget) can never move.
NEVER = 2.0
# The largest share of the budget a unit is given: finite, and summed over every unit still finite (a share this
# large already exceeds the budget more times than there are units).
MAX_SHARE = 1e300
# Time: ALBIC attempts share this part of the call; the rest is kept for the plain MILP should none meet maxLD.
ATTEMPT_SHARE = 0.6
FIRST_ATTEMPT_SHARE = 0.6  # of the attempts' part, for the first attempt (usually the only one)
# pairs="budget": merges keep every node within this share of maxLD of the mean utilization (or no further than
# before), so that the MILP's small reserve of the budget can bring the load distance down.
MERGE_BAND_SHARE = 0.5


@dataclass(frozen=True)
class AlbicConfig:
    max_load_distance: float = 10.0  # maxLD, percentage points
    max_partition_load: float = 25.0  # maxPL, percent of the mean staying node capacity
    step_partition_load: float = 5.0  # stepPL
    score_factor: float = 1.5  # sF
    pairs: PairMode = "one"  # the paper: one pair per period
    balance_reserve: float = 0.1  # pairs="budget": share of the budget kept for the MILP's balancing
    backend: Literal["cp-sat", "highs"] = "cp-sat"
    seed: int = 0


@dataclass
class Grouping:
    """Units of the derived instance: group_of[k] is the group of key group k; home is each group's node."""

    group_of: IntArray
    home: IntArray
    fixed: np.ndarray  # bool per group: pinned in the derived instance
    merged_pairs: int
    partitions: int  # multi-member groups from step 2
    precharge: float  # budget share spent on bringing merged pairs together
    # pairs="budget": no merge is left that balancing could make room for (MergePlan.targets_done)
    targets_done: bool = False


def migration_share(instance: AssignmentInstance) -> FloatArray | None:
    """Each key group's share of the real migration budget (budget = 1), or None without a budget."""
    if not instance.budgeted:
        return None
    share = np.zeros(instance.n_units)
    if instance.max_migrations is not None:
        share = np.maximum(share, 1.0 / instance.max_migrations if instance.max_migrations else NEVER)
    if instance.max_migration_cost is not None:
        limit = instance.max_migration_cost
        with np.errstate(over="ignore"):
            by_cost = (
                instance.state_size / limit if limit > 0 else np.where(instance.state_size > 0, NEVER, 0.0)
            )
        # (capped: a budget of 5e-324 made shares infinite, and their sums an OverflowError; at the cap a unit still
        # fills more budgets than there are units, as any share that large did before)
        share = np.maximum(share, np.minimum(by_cost, MAX_SHARE))
    share[instance.current < 0] = 0.0  # a first placement is not a migration
    return share


def _split_sets(
    instance: AssignmentInstance,
    start: IntArray,
    first: IntArray,
    second: IntArray,
    share: FloatArray | None,
    weights: sp.csr_matrix,
    max_pl: float,
) -> list[IntArray]:
    """Step 2: the sets of collocated qualifying pairs, split into partitions under maxMigrCost and maxPL."""
    together = start[first] == start[second]
    finder = UnionFind(instance.n_units)
    for a, b in zip(first[together].tolist(), second[together].tolist(), strict=True):
        finder.union(a, b)
    load = instance.load
    cost = share if share is not None else np.zeros(instance.n_units)
    partitions: list[IntArray] = []
    pending = [s for s in finder.sets() if len(s) > 1]
    while pending:  # every split makes strictly smaller pieces: ends
        members = pending.pop()
        if max_pl <= 0:
            partitions += [members[i : i + 1] for i in range(len(members))]
            continue
        p_cost, p_load = float(cost[members].sum()), float(load[members].sum())
        # (as many parts as members at most: more is the same split into single members, and a maxPL of 1e-300 made
        # p_load / max_pl infinite, an OverflowError)
        p1 = math.ceil(min(p_cost, len(members)) - 1e-12) if share is not None else 1
        p2 = math.ceil(min(p_load / max_pl, len(members)) - 1e-12)
        n_parts = max(p1, p2, 1)
        if n_parts <= 1 or len(members) == 1:
            partitions.append(members)
            continue
        # Vertex weight: the migration cost when it is the binding limit, else the load (the paper's rule).
        vertex = cost[members] if share is not None and p_cost > p_load / max_pl else load[members]
        for part in partition_graph(members, weights, vertex, n_parts):
            pending.append(part) if len(part) < len(members) else partitions.append(part)
    return partitions


def _group(
    instance: AssignmentInstance,
    start: IntArray,
    config: AlbicConfig,
    max_pl_units: float,
    max_pairs: int,
    pairs: tuple[IntArray, IntArray, FloatArray],
    share: FloatArray | None,
    weights: sp.csr_matrix,
    rng_order: IntArray,
    deadline: float = math.inf,
) -> Grouping:
    """Steps 2 and 3: partitions of collocated sets, then up to `max_pairs` merged pairs (pairs="one": the paper's
    step 3; pairs="budget": solvers.albic.merges, up to `max_pairs` groups moved)."""
    first, second, value = pairs
    partitions = _split_sets(instance, start, first, second, share, weights, max_pl_units)
    group_of = np.full(instance.n_units, -1, dtype=np.int64)
    for g, members in enumerate(partitions):
        group_of[members] = g
    singles = np.flatnonzero(group_of < 0)
    group_of[singles] = len(partitions) + np.arange(len(singles))
    n_groups = len(partitions) + len(singles)
    home = np.zeros(n_groups, dtype=np.int64)
    home[group_of] = start
    pinned_group = np.zeros(n_groups, dtype=bool)
    np.logical_or.at(pinned_group, group_of, instance.pinned)
    multi = np.bincount(group_of, minlength=n_groups) > 1
    fixed = pinned_group.copy()

    merged, precharge = 0, 0.0
    # (No qualifying pair: step 5 does not run. Nothing is there for ALBIC to collocate by the paper's scores, and
    # the plan is the MILP's, balanced as the paper's; taking back its balancing for the traffic no pair carries
    # gave 2.5 % collocation against 2.4 % at a load distance of 1.90 against 0.17 on Fig. 10's x = 0.)
    targets_done = False
    # Budget share for the merges: pairs="budget" keeps balance_reserve for the MILP only when balancing is needed,
    # i.e. some node is already further than the merges' band from the mean (the merges never push one there).
    band = config.max_load_distance * MERGE_BAND_SHARE
    needs_balance = config.pairs == "budget" and instance.load_distance(start) > band
    allowed = 1.0 - (config.balance_reserve if needs_balance else 0.0)
    if config.pairs == "budget" and max_pl_units > 0 and max_pairs > 0 and len(first):
        group_load = np.bincount(group_of, weights=instance.load, minlength=n_groups).astype(np.float64)
        target_of, n_sets = target_sets(group_of, group_load, first, second, weights, max_pl_units)
        anchor = anchors(instance, home, target_of, n_sets, group_load, pinned_group)
        unit_share = share if share is not None else np.zeros(instance.n_units)
        merge = greedy_merges(
            instance,
            start,
            group_of,
            home,
            pinned_group,
            target_of,
            anchor,
            unit_share,
            allowed,
            max_pairs,
            weights,
            band,
            deadline,
            np.random.default_rng(config.seed).permutation(n_groups).astype(np.int64),
        )
        # Every target set that received a group becomes one unit pinned on its anchor: the groups of the set
        # that are there now (the paper's constraint "g_i, g_j on node n", for a whole set).
        set_anchor = np.concatenate([anchor, [-1]])[target_of]  # per group, -1 outside every target set
        at_anchor = (set_anchor >= 0) & (merge.group_home == set_anchor)
        receiving = np.zeros(max(n_sets, 1), dtype=bool)
        receiving[target_of[merge.moved_groups]] = True
        joins = at_anchor & receiving[np.maximum(target_of, 0)]
        new_group = np.arange(n_groups)
        first_of_set = np.full(max(n_sets, 1), -1, dtype=np.int64)
        for g in np.flatnonzero(joins).tolist():
            t = int(target_of[g])
            if first_of_set[t] < 0:
                first_of_set[t] = g
            new_group[g] = first_of_set[t]
        group_of = new_group[group_of]
        for t in np.flatnonzero(first_of_set >= 0).tolist():
            g = int(first_of_set[t])
            home[g] = anchor[t]
            fixed[g] = True
        for g in merge.moved_groups[~joins[merge.moved_groups]].tolist():
            home[g] = merge.group_home[
                g
            ]  # a free or swapped move: pinned where it went (its cost is precharged)
            fixed[g] = True
        merged, precharge = len(merge.moved_groups), merge.spent
        targets_done = merge.targets_done
    elif max_pl_units > 0 and max_pairs > 0 and len(first):
        cost = share if share is not None else np.zeros(instance.n_units)
        node_load = np.bincount(start, weights=instance.load, minlength=instance.n_nodes).astype(np.float64)
        cap = instance.utilization_cap()
        members_of: dict[int, IntArray] = {
            int(g): np.flatnonzero(group_of == g) for g in np.flatnonzero(multi)
        }
        apart = start[first] != start[second]
        # Step 3 candidates: toBeColGrps by traffic, ties in a seeded random order (the paper: "random ... with max value").
        order = rng_order[np.argsort(-value[rng_order], kind="stable")]
        # The paper's one pair: the best pair that can be brought together (the next best if it cannot).
        for pair in order[apart[order]].tolist():
            gi, gj = int(group_of[first[pair]]), int(group_of[second[pair]])
            if gi == gj:
                continue
            target = _target(instance, node_load, home, multi, pinned_group, gi, gj)
            if target is None:
                continue
            mi = members_of.get(gi, np.array([first[pair]]))
            mj = members_of.get(gj, np.array([second[pair]]))
            members = np.concatenate([mi, mj])
            incoming = members[start[members] != target]
            extra = float(cost[incoming].sum())
            arriving = float(instance.load[incoming].sum())
            if precharge + extra > allowed + 1e-12:
                continue
            if 100.0 * (node_load[target] + arriving) / instance.capacity[target] > cap * (1 + 1e-12):
                continue
            np.subtract.at(node_load, start[incoming], instance.load[incoming])
            node_load[target] += arriving
            start = start.copy()
            start[incoming] = target  # the members now count as being on the target (for later pairs)
            group_of[mj] = gi
            members_of[gi] = members
            members_of.pop(gj, None)
            home[gi] = target
            multi[gi] = fixed[gi] = True
            pinned_group[gi] |= pinned_group[gj]
            precharge += extra
            merged += 1
            if merged >= max_pairs:
                break
    # Renumber groups densely (merged pairs leave gaps).
    used, dense = np.unique(group_of, return_inverse=True)
    return Grouping(
        group_of=dense.astype(np.int64),
        home=home[used],
        fixed=fixed[used],
        merged_pairs=merged,
        partitions=len(partitions),
        precharge=precharge,
        targets_done=targets_done,
    )


def _target(
    instance: AssignmentInstance,
    node_load: FloatArray,
    home: IntArray,
    multi: np.ndarray,
    pinned: np.ndarray,
    gi: int,
    gj: int,
) -> int | None:
    """Step 3's node for merging groups gi and gj: case 2 (one belongs to a partition): that partition's node; cases
    1 and 3: the less utilized of the two nodes. A group with a pinned key group decides the node; a draining node is
    never a target (the other node is taken instead, when it may be)."""
    ni, nj = int(home[gi]), int(home[gj])
    if pinned[gi] and pinned[gj]:
        options = [ni] if ni == nj else []
    elif pinned[gi] or pinned[gj]:
        options = [ni if pinned[gi] else nj]
    elif multi[gi] != multi[gj]:
        preferred = ni if multi[gi] else nj
        options = [preferred, nj if preferred == ni else ni]
    else:
        util = node_load / instance.capacity
        options = sorted({ni, nj}, key=lambda n: (util[n], n))
    return next((n for n in options if not instance.draining[n]), None)


def derived_instance(
    instance: AssignmentInstance, grouping: Grouping, share: FloatArray | None
) -> AssignmentInstance:
    """The MILP instance whose units are the groups (see the module docstring for the budget representation)."""
    n_groups = len(grouping.home)
    indicator = sp.csr_matrix(
        (np.ones(instance.n_units), (grouping.group_of, np.arange(instance.n_units))),
        shape=(n_groups, instance.n_units),
    )
    pinned = grouping.fixed.copy()
    np.logical_or.at(pinned, grouping.group_of, instance.pinned)
    budget: dict[str, float | int | None] = {"max_migrations": None, "max_migration_cost": None}
    state = np.zeros(n_groups)
    if share is not None:
        # The real budget left once the merged pairs are brought together, in the unit the derived costs are in.
        left = max(0.0, 1.0 - grouping.precharge)
        if instance.max_migration_cost is None:  # only a count: each key group that migrates counts 1
            state = indicator @ (instance.current >= 0).astype(np.float64)
            budget["max_migration_cost"] = float(math.floor(left * (instance.max_migrations or 0) + 1e-9))
        elif instance.max_migrations is None:  # only a cost: the members' state sizes
            state = indicator @ np.where(instance.current >= 0, instance.state_size, 0.0)
            budget["max_migration_cost"] = left * instance.max_migration_cost
        else:  # both: each key group's larger share of the two budgets, against a budget of 1
            state = indicator @ share
            budget["max_migration_cost"] = left
    resource_usage = (
        np.asarray(indicator @ instance.resource_usage)
        if len(instance.resource_names)
        else np.zeros((n_groups, 0))
    )
    return replace(
        instance,
        unit_ids=tuple(f"albic-partition-{g}" for g in range(n_groups)),
        current=grouping.home.copy(),
        series=np.asarray(indicator @ instance.series),
        state_size=np.asarray(state, dtype=np.float64),
        pinned=pinned,
        operators=(),
        resource_usage=resource_usage,
        traffic_src=np.zeros(0, dtype=np.int64),
        traffic_dst=np.zeros(0, dtype=np.int64),
        traffic_rate=np.zeros(0),
        utilization_cap_override=instance.utilization_cap(),
        **budget,  # type: ignore[arg-type]
    )


def solve_albic(
    instance: AssignmentInstance, config: AlbicConfig | None = None, time_limit_s: float = 2.0
) -> Plan:
    """Algorithm 2 within `time_limit_s` (the whole call). Without traffic: the plain MILP (said in the notes)."""
    config = config or AlbicConfig()
    started = time.perf_counter()
    deadline = started + time_limit_s
    if not len(instance.traffic_rate) or float(instance.traffic_rate.sum()) <= 0.0:
        plan = solve_milp(instance, backend=config.backend, time_limit_s=time_limit_s, seed=config.seed)
        plan.notes.insert(0, "albic: no traffic given, so nothing to collocate: this is the plain milp plan")
        return plan
    start = placed_start(instance)
    share = migration_share(instance)
    weights = undirected_weights(instance)
    pairs = qualifying_pairs(instance, config.score_factor)
    rng = np.random.default_rng(config.seed)
    rng_order = rng.permutation(len(pairs[0])).astype(np.int64)
    staying_capacity = float(instance.capacity[instance.active].mean())
    max_pl = config.max_partition_load
    max_pairs = 1 if config.pairs == "one" else len(pairs[0])
    notes = [
        f"albic: {len(pairs[0])} key group pairs qualify (sF {config.score_factor:g}); collocation factor before "
        f"{_percent(collocation_factor(instance, instance.current))}"
    ]
    attempts: list[tuple[float, IntArray, str]] = []
    attempt_end = started + ATTEMPT_SHARE * time_limit_s
    first = True
    while max_pl > 0:  # maxPL falls by stepPL (> 0) or the pair count halves each round: ends
        remaining = attempt_end - time.perf_counter()
        if remaining <= 0.05 * time_limit_s:
            break
        grouping = _group(
            instance,
            start,
            config,
            max_pl * staying_capacity / 100.0,
            max_pairs,
            pairs,
            share,
            weights,
            rng_order,
            deadline=started + 0.5 * (attempt_end - started),
        )
        derived = derived_instance(instance, grouping, share)
        budget_s = remaining * (FIRST_ATTEMPT_SHARE if first else 0.5)
        first = False
        plan = solve_milp(derived, backend=config.backend, time_limit_s=budget_s, seed=config.seed)
        assignment, reverted = _expand_and_repair(instance, start, grouping, plan.assignment)
        taken_back = 0
        if config.pairs == "budget" and grouping.targets_done:
            # Step 5: once nothing is left to merge, balancing that costs collocation is taken back while the nodes
            # stay within the merges' band.
            limit = max(config.max_load_distance * MERGE_BAND_SHARE, instance.load_distance(assignment))
            merged = grouping.home[grouping.group_of]
            assignment, taken_back = keep_collocation(
                instance, start, merged, assignment, grouping.group_of, weights, limit, attempt_end
            )
        distance = instance.load_distance(assignment)
        label = (
            f"maxPL {max_pl:g}: {grouping.partitions} partitions, {grouping.merged_pairs} pair(s) merged, load "
            f"distance {distance:.3g}"
            + (f", {reverted} partition(s) reverted to fit the budget" if reverted else "")
            + (f", {taken_back} balancing move(s) taken back for collocation" if taken_back else "")
        )
        attempts.append((distance, assignment, label))
        if distance <= config.max_load_distance:
            break
        if config.pairs == "budget" and max_pairs > 1:
            max_pairs = max(1, grouping.merged_pairs // 2)
        else:
            max_pl -= config.step_partition_load
    notes += [f"albic attempt {i + 1}: {label}" for i, (_, _, label) in enumerate(attempts)]
    met = [a for a in attempts if a[0] <= config.max_load_distance]
    if met:
        _, best, _ = met[0]
    else:
        # maxPL reached 0 (or the attempts ran out of time): the plain MILP, one unit per key group.
        plan = solve_milp(
            instance,
            backend=config.backend,
            time_limit_s=max(0.05, deadline - time.perf_counter()),
            seed=config.seed,
        )
        candidates = [*attempts, (instance.load_distance(plan.assignment), plan.assignment, "plain milp")]
        _, best, label = min(candidates, key=lambda a: a[0])
        notes.append(
            f"albic: no attempt met maxLD {config.max_load_distance:g}; the plan is the {label} plan"
        )
    notes.append(f"albic: collocation factor after {_percent(collocation_factor(instance, best))}")
    changed = bool((best != instance.current).any())
    # No lower bound: the derived instances restrict the problem, so their bounds say nothing about the real one.
    return Plan(assignment=best, status="feasible" if changed else "unchanged", notes=notes)


def _expand_and_repair(
    instance: AssignmentInstance, start: IntArray, grouping: Grouping, derived_assignment: IntArray
) -> tuple[IntArray, int]:
    assignment = np.asarray(derived_assignment, dtype=np.int64)[grouping.group_of]
    group_load = np.bincount(grouping.group_of, weights=instance.load, minlength=len(grouping.home)).astype(
        np.float64
    )
    return repair(instance, start, assignment, grouping.group_of, group_load)


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100.0 * value:.1f} %"

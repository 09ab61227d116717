"""Tree recombination: the trees of many plans, recombined by set partitioning (issue 10, 7 Dec).

Under a budget that binds, a plan's migrations form a forest on the nodes: each tree (a connected component of the
graph whose edges join a migrated unit's original node and its node in the plan) moves load only among its own
nodes, so its nodes end where they are in that plan whatever the other trees do. Trees of different plans whose node
sets are disjoint therefore combine into a plan whose node loads are exactly those of the trees' own plans, and
whose migrations are the trees' migrations added up.

The perturbations' repairs (solve._Rounds) pass through thousands of plans a second; each of them balances some
groups of nodes well and others badly. `TreePool` keeps every tree whose nodes all end within the best plan's
distance d, and `recombine` asks for the plans of distance D < d that its trees make: every staying node farther
than D from the mean in the original placement covered by exactly one tree whose nodes end within D, every other
node by at most one, the migrations (and their state) within the budget. That is a set-partitioning model, the
classic of the route pools of vehicle routing (Subramanian, Uchoa & Ochi 2013, ILS-SP), solved by HiGHS's MILP
through scipy.optimize.milp (in process: OR-Tools links a HiGHS of its own whose symbols clash with highspy's, not
with scipy's).

Why: with a count budget near the number of nodes to fix (K < n), the best plans are forests of small trees (tail
airtime 1024kg 80n K50 at its best known 0.6145: 23 trees of 2-6 nodes, 50 migrations for 73 nodes), and the
perturbations leave plans whose every tree is good somewhere in the pool but never all at once (0.7349 on every
seed from 0.5 to 5 s: the search's plateau). The pool of 1,500 repairs held the best known plan: the model found it
in 0.26 s.

Where it applies (`applies`): a budget that binds, every node staying, every unit placed, no resource caps.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components

from solvers.instance import AssignmentInstance, FloatArray, IntArray

# The distances asked of the pool, as shares of the best plan's distance d, lowest first: the first the trees can
# make is taken (an infeasible model at a low level is proven in milliseconds: few trees end within it).
LEVELS = (0.8, 0.9, 0.97)
# At most this many trees are kept (the newest are dropped beyond: the model's size is bounded).
MAX_TREES = 50_000
# Trees of more nodes than this are not kept: a tree that spans most of the cluster combines with nothing.
MAX_TREE_NODES = 64
# Stars built for the model (`stars`): per node off the target, at most this many, of at most STAR_UNITS units.
STARS_PER_NODE = 16
STAR_UNITS = 3
# An over node's subsets are drawn from its STAR_CANDIDATES largest units (after the ones it must shed anyway).
STAR_CANDIDATES = 16
# Stars are built around the nodes fewer than STAR_COVER of the pool's trees (within the distance asked) cover.
STAR_COVER = 8


@dataclass(frozen=True)
class Tree:
    units: IntArray  # the migrated units, sorted
    dests: IntArray  # their nodes in the plan the tree was taken from
    nodes: IntArray  # every node the tree touches (original nodes and destinations)
    deviation: float  # the largest |utilization - mean| among its nodes in that plan, points
    moves: int
    cost: float  # the migrated units' state


def applies(instance: AssignmentInstance) -> bool:
    """Whether trees recombine: a budget that binds (without one there is no forest), every node staying and every
    unit placed (a tree's nodes then end exactly where its plan put them), and no resource caps (not modelled)."""
    return (
        instance.budget_binds
        and bool(instance.active.all())
        and bool((instance.current >= 0).all())
        and not instance.resource_names
    )


def _undominated(trees: list[Tree]) -> list[Tree]:
    """The trees no other tree on the same nodes beats in both migrations and state (fewer or equal in both, and not
    the same): a plan with a dominated tree has one at least as good with the other. About a fifth of a pool's trees
    repeat another's nodes with more moves (tail airtime 80n K50, route-day 150n K120), and each is a column less."""
    kept: list[Tree] = []
    least_cost: dict[bytes, float] = {}
    for tree in sorted(trees, key=lambda tree: (tree.moves, tree.cost)):
        key = tree.nodes.tobytes()
        # (the first tree on its nodes is kept whatever its state: a sum of huge states may be inf)
        if key not in least_cost or tree.cost < least_cost[key]:
            least_cost[key] = tree.cost
            kept.append(tree)
    return kept


def _subsets(count: int, size: int) -> list[IntArray]:
    """Every subset of range(count) of 1..size elements, as index arrays by size (a row per subset)."""
    out = []
    for k in range(1, min(size, count) + 1):
        out.append(np.array(list(itertools.combinations(range(count), k)), dtype=np.int64).reshape(-1, k))
    return out


class TreePool:
    """The trees seen in plans (`add`), and the plans they make together (`recombine`)."""

    def __init__(
        self, instance: AssignmentInstance, original: IntArray, kernels: ModuleType | None = None
    ) -> None:
        """`kernels`: the compiled kernels module where it is ready (LocalSearch.kernels), for `forest`."""
        self.instance = instance
        self.original = original
        self.kernels = kernels
        share = 100.0 * instance.load
        util = np.bincount(original, weights=share, minlength=instance.n_nodes) / instance.capacity
        self.state: FloatArray = instance.state_size
        self.share: FloatArray = share
        self.original_util: FloatArray = util
        self.signed: FloatArray = util - instance.mean_utilization  # the original deviations, signed
        # the cap with its slack, as every cap test of the search computes it
        self.cap_limit = instance.utilization_cap() * (1 + 1e-12)
        # each node's movable units, largest first (the over nodes' subsets are drawn from them)
        movable = np.flatnonzero(instance.movable)
        movable = movable[np.lexsort((-share[movable], original[movable]))]
        starts = np.searchsorted(original[movable], np.arange(instance.n_nodes + 1))
        self.units_of = [movable[starts[v] : starts[v + 1]] for v in range(instance.n_nodes)]
        self.movable_units = movable
        self.subsets = _subsets(STAR_CANDIDATES, STAR_UNITS)
        self.trees: dict[bytes, Tree] = {}
        self.stars_for = -1.0  # the distance the stars in `built` were built for (`stars`)
        self.built: list[Tree] = []
        self.new = 0  # trees added since the last recombination
        self.seconds = 0.0  # time spent in recombinations
        self.recombinations = self.wins = 0

    def add(self, assignment: IntArray, deviation: FloatArray, below: float) -> list[Tree]:
        """The trees of a plan (`deviation`: |utilization - mean| per node in it) whose nodes all end below `below`;
        returns those that were new."""
        migrated = np.flatnonzero(assignment != self.original)
        if not len(migrated) or len(self.trees) >= MAX_TREES:
            return []
        dests_of = assignment[migrated]
        edges, edge_bounds, nodes, node_bounds, worst = self.forest(
            self.original[migrated], dests_of, deviation, below
        )
        new = []
        for tree in range(len(worst)):
            chosen = edges[edge_bounds[tree] : edge_bounds[tree + 1]]
            units, dests = migrated[chosen], dests_of[chosen]
            key = units.tobytes() + dests.tobytes()
            if key in self.trees:
                continue
            found = Tree(
                units,
                dests,
                nodes[node_bounds[tree] : node_bounds[tree + 1]],
                float(worst[tree]),
                len(units),
                float(self.state[units].sum()),
            )
            self.trees[key] = found
            new.append(found)
        self.new += len(new)
        return new

    def forest(
        self,
        src: IntArray,
        dst: IntArray,
        deviation: FloatArray,
        below: float,
        max_nodes: int = MAX_TREE_NODES,
    ) -> tuple[IntArray, IntArray, IntArray, IntArray, FloatArray]:
        """kernels.forest_trees (the trees of the edges src -> dst whose nodes all end below `below`, of at most
        `max_nodes` nodes: edges by tree, offsets, nodes by tree, offsets, largest deviations), compiled where
        the kernels are ready (a trial of the perturbations pays it: 0.7 ms through scipy at 120 nodes, K 100),
        else through scipy's connected components, the same trees in the same order."""
        if self.kernels is not None:
            result: tuple[IntArray, IntArray, IntArray, IntArray, FloatArray] = self.kernels.forest_trees(
                src, dst, deviation, self.instance.n_nodes, float(below), max_nodes
            )
            return result
        n_edges = len(src)
        nodes, index = np.unique(np.concatenate([src, dst]), return_inverse=True)
        graph = coo_matrix(
            (np.ones(n_edges), (index[:n_edges], index[n_edges:])), shape=(len(nodes), len(nodes))
        )
        n_labels, label = connected_components(graph, directed=False)
        worst = np.zeros(n_labels)
        np.maximum.at(worst, label, deviation[nodes])
        keep = (worst < below) & (np.bincount(label, minlength=n_labels) <= max_nodes)
        edge_label = label[index[:n_edges]]
        first = np.full(n_labels, n_edges)
        np.minimum.at(first, edge_label, np.arange(n_edges))
        kept = np.flatnonzero(keep)
        kept = kept[np.argsort(first[kept], kind="stable")]  # the trees by their first edge
        tree_of = np.full(n_labels, -1)
        tree_of[kept] = np.arange(len(kept))
        edge_tree = tree_of[edge_label]
        edges = np.flatnonzero(edge_tree >= 0)
        edges = edges[np.argsort(edge_tree[edges], kind="stable")]
        node_tree = tree_of[label]
        members = np.flatnonzero(node_tree >= 0)
        members = members[np.argsort(node_tree[members], kind="stable")]
        counts = np.arange(len(kept) + 1)
        return (
            edges,
            np.searchsorted(edge_tree[edges], counts),
            nodes[members],
            np.searchsorted(node_tree[members], counts),
            worst[kept],
        )

    def add_tree(self, units: IntArray, dests: IntArray, below: float) -> bool:
        """A tree read from elsewhere (the second chain's pool): checked (movable units, each once, to another
        staying node, the cap) and evaluated here from the original placement; kept when all its nodes end below
        `below`. Whether it was new and kept."""
        inst = self.instance
        n = len(units)
        if not 0 < n <= MAX_TREE_NODES or n != len(dests) or len(self.trees) >= MAX_TREES:
            return False
        if units.min() < 0 or units.max() >= inst.n_units or dests.min() < 0 or dests.max() >= inst.n_nodes:
            return False
        order = np.argsort(units)
        units, dests = units[order].astype(np.int64), dests[order].astype(np.int64)
        if (
            (np.diff(units) == 0).any()
            or not inst.movable[units].all()
            or (dests == self.original[units]).any()
        ):
            return False
        key = units.tobytes() + dests.tobytes()
        if key in self.trees:
            return False
        tree = self._tree(units, dests, np.inf)  # its deviation evaluated below
        capacity = inst.capacity[tree.nodes]
        delta = np.zeros(inst.n_nodes)
        np.add.at(delta, self.original[units], -self.share[units])
        np.add.at(delta, dests, self.share[units])
        util = self.original_util[tree.nodes] + delta[tree.nodes] / capacity
        deviation = float(np.abs(util - inst.mean_utilization).max())
        over_cap = (util > self.cap_limit) & (delta[tree.nodes] > 0)
        if deviation >= below or over_cap.any():
            return False
        self.trees[key] = replace(tree, deviation=deviation)
        self.new += 1
        return True

    def recombine(self, d: float, deadline: float, rng: np.random.Generator) -> IntArray | None:
        """A plan of distance below `d` made of the pool's trees and stars, at the lowest of LEVELS x d the model
        finds one for before `deadline`; None when it finds none."""
        started = time.perf_counter()
        self.recombinations += 1
        self.new = 0
        try:
            # Trees that cannot take part in any plan below d are dropped for good (the best plan only improves).
            self.trees = {key: tree for key, tree in self.trees.items() if tree.deviation < d}
            # Stars built once per distance, at the highest level: a star within a lower one is one of them (its
            # windows are narrower), so each level takes the trees and stars that end within it.
            trees = list(self.trees.values())
            if self.stars_for != d:
                # stars only around the nodes few trees cover (the pool covers the others well already)
                top = LEVELS[-1] * d
                within = [tree.nodes for tree in trees if tree.deviation <= top]
                cover = np.bincount(
                    np.concatenate([np.zeros(0, np.int64), *within]), minlength=self.instance.n_nodes
                )
                self.stars_for = d
                self.built = self.stars(
                    top, rng, started + 0.5 * (deadline - started), np.flatnonzero(cover < STAR_COVER)
                )
            trees += self.built
            trees.sort(key=lambda tree: tree.deviation)
            deviations = np.array([tree.deviation for tree in trees])
            for level in LEVELS:
                left = deadline - time.perf_counter()
                if left <= 0:
                    return None
                target = level * d
                count = int(np.searchsorted(deviations, target, side="right"))
                plan = self._partition(trees[:count], target, left)
                if plan is not None:
                    return plan
            return None
        finally:
            self.seconds += time.perf_counter() - started

    def stars(
        self, target: float, rng: np.random.Generator, deadline: float = np.inf, nodes: IntArray | None = None
    ) -> list[Tree]:
        """Trees built for the model at distance `target`, from the original placement: each node above it sheds a
        subset of its units that lands it within the target, each unit to a node it lands (out-stars); each node
        below it takes units that land it, from distinct nodes each of which that unit's departure lands (in-stars).
        Why: the pool holds only the trees the perturbations' plans had, and a node no plan touched (the plateau's
        limit, often a node just off the target) is covered by none of them. At most STARS_PER_NODE a node, the
        nodes farthest off first, until `deadline`; around `nodes` only, where given."""
        out: list[Tree] = []
        r, share, capacity = self.signed, self.share, self.instance.capacity
        landing: dict[int, IntArray] = {}

        def lands(unit: int, source: int) -> IntArray:
            """The nodes (other than `source`) that `unit` arriving alone keeps within the target and the cap."""
            if unit not in landing:
                arriving = share[unit] / capacity
                ok = (np.abs(r + arriving) <= target) & (self.original_util + arriving <= self.cap_limit)
                ok[source] = False
                landing[unit] = np.flatnonzero(ok)
            return landing[unit]

        # the units whose departure alone lands their node, by load (one order serves every receiving node)
        departing = self.movable_units
        homes = self.original[departing]
        leaving = np.abs(r[homes] - share[departing] / capacity[homes]) <= target
        departing = departing[leaving]
        departing = departing[np.argsort(share[departing], kind="stable")]
        centres = np.arange(len(r)) if nodes is None else nodes
        for node in centres[np.argsort(-np.abs(r[centres]), kind="stable")].tolist():
            if abs(r[node]) <= target or time.perf_counter() > deadline:
                break
            if r[node] > 0:
                out.extend(self._out_stars(node, target, rng, lands))
            else:
                out.extend(self._in_stars(node, target, rng, departing))
        return out

    def _out_stars(
        self, node: int, target: float, rng: np.random.Generator, lands: Callable[[int, int], IntArray]
    ) -> list[Tree]:
        r, share, capacity = self.signed, self.share, self.instance.capacity
        units = self.units_of[node]
        points = share[units] / capacity[node]
        need = int(np.searchsorted(np.cumsum(points), r[node] - target)) + 1  # fewest (largest) units to shed
        if need > len(units):
            return []
        fixed = max(0, need - STAR_UNITS)  # beyond STAR_UNITS, the largest are shed in every star
        base = float(points[:fixed].sum())
        candidates = np.arange(fixed, min(len(units), fixed + STAR_CANDIDATES))
        picked: list[IntArray] = []
        for rows in self.subsets:
            rows = rows[rows.max(axis=1) < len(candidates)] if len(rows) else rows
            sums = base + points[candidates[rows]].sum(axis=1)
            picked.extend(candidates[rows[np.abs(r[node] - sums) <= target]])
        if not picked:
            return []
        out = []
        for choice in rng.permutation(len(picked))[:STARS_PER_NODE].tolist():
            rows = np.concatenate([np.arange(fixed), picked[choice]])  # ascending: the node's order
            shed = units[rows]
            dests: list[int] = []
            for unit in shed.tolist():
                options = lands(unit, node)
                options = options[~np.isin(options, dests)]
                if not len(options):
                    break
                dests.append(int(rng.choice(options)))
            else:
                arrive = share[shed] / capacity[dests]
                deviation = max(abs(r[node] - float(points[rows].sum())), *np.abs(r[dests] + arrive))
                out.append(self._tree(shed, np.array(dests, dtype=np.int64), float(deviation)))
        return out

    def _in_stars(
        self, node: int, target: float, rng: np.random.Generator, departing: IntArray
    ) -> list[Tree]:
        """Stars into `node` of 1-STAR_UNITS units from distinct other nodes (`departing`: the units whose departure
        lands their node, by load), drawn at random among those whose total lands it: singles, then pairs and
        triples completed by a binary search over the loads."""
        r, share, capacity, original = self.signed, self.share, self.instance.capacity, self.original
        loads = share[departing]  # ascending; points on this node are loads / its capacity
        c = float(capacity[node])
        room = min(target - r[node], self.cap_limit - self.original_util[node]) * c  # a unit must fit alone
        fits = int(np.searchsorted(loads, room, side="right"))
        if not fits:
            return []
        low, high = (-target - r[node]) * c, min((target - r[node]) * c, room)  # the node's total intake

        def distinct(group: tuple[int, ...]) -> bool:
            sources = original[departing[list(group)]]
            return len(set(group)) == len(group) and len(set(sources.tolist()) | {node}) == len(group) + 1

        chosen: list[tuple[int, ...]] = []
        lo, hi = (
            int(np.searchsorted(loads, low, side="left")),
            int(np.searchsorted(loads, high, side="right")),
        )
        singles = rng.permutation(np.arange(lo, min(hi, fits)))[: STARS_PER_NODE // 4].tolist()
        chosen.extend((int(i),) for i in singles if distinct((int(i),)))
        for size in range(2, STAR_UNITS + 1):
            for _ in range(STARS_PER_NODE):
                first = rng.integers(0, fits, size=size - 1).tolist()
                taken = float(loads[first].sum())
                lo = int(np.searchsorted(loads, low - taken, side="left"))
                hi = min(int(np.searchsorted(loads, high - taken, side="right")), fits)
                if lo >= hi:
                    continue
                group = (*first, int(rng.integers(lo, hi)))
                if distinct(group):
                    chosen.append(tuple(sorted(group)))
        out = []
        for group in list(dict.fromkeys(chosen))[:STARS_PER_NODE]:
            units = departing[list(group)]
            homes = original[units]
            deviation = max(
                abs(r[node] + float(loads[list(group)].sum()) / c),
                *np.abs(r[homes] - share[units] / capacity[homes]),
            )
            out.append(self._tree(units, np.full(len(units), node, dtype=np.int64), float(deviation)))
        return out

    def _tree(self, units: IntArray, dests: IntArray, deviation: float) -> Tree:
        order = np.argsort(units)
        units, dests = units[order], dests[order]
        nodes = np.unique(np.concatenate([self.original[units], dests]))
        return Tree(units, dests, nodes, deviation, len(units), float(self.state[units].sum()))

    def _partition(self, trees: list[Tree], target: float, seconds: float) -> IntArray | None:
        """The set-partitioning model at distance `target`: each node off by more than it in exactly one tree, the
        others in at most one, the budget kept; fewest migrations (least state under a cost budget)."""
        inst = self.instance
        must = np.abs(self.signed) > target
        trees = _undominated(trees)
        if not trees:
            return None
        columns = np.repeat(np.arange(len(trees)), [len(tree.nodes) for tree in trees])
        rows = np.concatenate([tree.nodes for tree in trees])
        cover = csr_matrix((np.ones(len(rows)), (rows, columns)), shape=(inst.n_nodes, len(trees)))
        covered = np.bincount(rows, minlength=inst.n_nodes) > 0
        if (must & ~covered).any():  # a node off the target that no tree fixes: no plan (no solver needed)
            return None
        used = np.flatnonzero(covered)
        moves = np.array([tree.moves for tree in trees], dtype=np.float64)
        cost = np.array([tree.cost for tree in trees])
        constraints = [LinearConstraint(cover[used], must[used].astype(np.float64), np.ones(len(used)))]
        if inst.max_migrations is not None:
            constraints.append(LinearConstraint(moves[None, :], 0.0, float(inst.max_migrations)))
        objective = moves
        if inst.max_migration_cost is not None:
            constraints.append(LinearConstraint(cost[None, :], 0.0, float(inst.max_migration_cost)))
            objective = cost / max(float(inst.max_migration_cost), 1e-300)
        result = milp(
            c=objective,
            constraints=constraints,
            integrality=np.ones(len(trees)),
            bounds=Bounds(0.0, 1.0),
            # Any plan will do (mip_rel_gap 1: the first one found; the objective only steers it). No presolve:
            # HiGHS's presolve does not look at the time limit (0.3 s on 2,000 trees of tail monthly under a limit
            # of 0.05 s), and the search with it found plans no sooner.
            options={"time_limit": max(seconds, 1e-3), "presolve": False, "mip_rel_gap": 1.0},
        )
        if result.x is None:
            return None
        plan = self.original.copy()
        for index in np.flatnonzero(result.x > 0.5).tolist():
            plan[trees[index].units] = trees[index].dests
        return plan

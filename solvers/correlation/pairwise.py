"""Xing, Zdonik & Hwang, Section 3.3: the pair-wise algorithms, and the same schemes with LLF / random selection.

One call is one load distribution period: the staying nodes are ordered by utilization, the i-th most utilized is
paired with the i-th least utilized, and every pair whose utilization gap exceeds epsilon (a fraction of capacity,
0.1 in Table 2) is handled by the chosen variant:
- `one-way` (3.3.1): the heavier node sends operators, best score S(o) = (rho(o, N1) - rho(o, N2)) / 2 first, each
  one smaller than half the remaining gap, until none can be selected;
- `two-way` (3.3.2): all movable operators of the pair are reassigned from "empty" nodes (pinned operators only):
  the less loaded node receives the operator with the largest S(o, N_r) = mean_j rho(o, N_j) - rho(o, N_r); then
  one-way balancing;
- `selective-exchange` (3.3.3): one-way balancing; then, up to (operators on the pair) times, the more loaded node
  sends its best operator if its score exceeds delta; then one-way balancing;
- `improved-two-way` / `improved-selective-exchange` (3.3.4): the two-way variant, then the correlation improvement
  step: every node whose divergent load level (mean + std, over capacity) exceeds 1 looks up its least correlated
  partner; if that correlation is below theta, the two-way algorithm runs tentatively on the pair and is kept only if
  the pair's correlation rises.

`selection` swaps the score for the baselines of Section 5.1.3 (largest load first, random): their "pair-wise
versions" are the one-way scheme with that selection (LLF-BAL, RAND-BAL).

Common rules (trimtab): pinned units never move (the paper's non-movable operators); draining nodes never receive
and are emptied first; units with no node yet are placed first (greedily, as the global algorithm does); every move
checks the migration budget (a step stops when it is spent) and that the receiver ends at or below
`instance.utilization_cap()`.
"""

from __future__ import annotations

import heapq
import math
import time
from typing import Literal

import numpy as np

from solvers.correlation.stats import LoadState
from solvers.instance import UNPLACED, AssignmentInstance, BoolArray, FloatArray, IntArray

Selection = Literal["correlation", "largest-load", "random"]
PairwiseVariant = Literal[
    "one-way", "two-way", "selective-exchange", "improved-two-way", "improved-selective-exchange"
]
TWO_WAY_OF_IMPROVED: dict[str, str] = {
    "improved-two-way": "two-way",
    "improved-selective-exchange": "selective-exchange",
}
_TIE = 1e-12


class PairContext:
    """What every pair-wise step needs besides the state: policy, thresholds, the cap, the random stream."""

    def __init__(
        self,
        state: LoadState,
        selection: Selection = "correlation",
        delta: float = 0.2,
        seed: int = 0,
        deadline: float = math.inf,
    ) -> None:
        self.state = state
        self.selection = selection
        self.delta = delta
        # time.perf_counter() instant after which every loop stops and the greedy places the rest by load alone
        self.deadline = deadline
        self.timed_out = False
        self.cap = state.instance.utilization_cap()
        self.rng = np.random.default_rng(seed)
        inst = state.instance
        self.movable = inst.movable
        self.staying = np.flatnonzero(inst.active)

    def out_of_time(self) -> bool:
        if time.perf_counter() > self.deadline:
            self.timed_out = True
        return self.timed_out

    def pair_within_cap(self, a: int, b: int) -> bool:
        """Whether neither node of the pair ends above the cap while holding a unit that was elsewhere."""
        st = self.state
        util = st.utilization()
        return all(
            util[n] <= self.cap * (1 + 1e-12) or not np.any((st.assignment == n) & (st.instance.current != n))
            for n in (a, b)
        )

    def units_on(self, node: int) -> IntArray:
        return np.flatnonzero((self.state.assignment == node) & self.movable)

    def fits(self, units: IntArray, to: int) -> BoolArray:
        """Which of `units` may move to `to`: the receiver stays under the cap and the budget allows the move."""
        st = self.state
        after = 100.0 * (st.node_load[to] + st.load[units]) / st.capacity[to]
        return np.asarray(
            (after <= self.cap * (1 + 1e-12)) & st.migrations_allowed(units, to), dtype=np.bool_
        )

    def pick(self, load: np.ndarray, scores: np.ndarray | None) -> int:
        """Position of the candidate the selection policy takes: best score (ties: larger load), largest load, or
        random. `load` and `scores` are the candidates' mean loads and scores."""
        if self.selection == "random":
            return int(self.rng.integers(len(load)))
        if self.selection == "largest-load" or scores is None:
            return int(np.argmax(load))
        tied = np.flatnonzero(scores >= scores.max() - _TIE)
        return int(tied[np.argmax(load[tied])])


# ---------------------------------------------------------------------------------------------- pair steps


def one_way(ctx: PairContext, heavy: int, light: int) -> int:
    """3.3.1: `heavy` offloads to `light`, one operator at a time, each smaller than half the remaining gap.
    Returns the number of operators moved."""
    st = ctx.state
    cap_h, cap_l = st.capacity[heavy], st.capacity[light]
    pair = np.array([heavy, light])
    moved = 0
    while not ctx.out_of_time():
        gap = 100.0 * (st.node_load[heavy] / cap_h - st.node_load[light] / cap_l)
        units = ctx.units_on(heavy)
        if gap <= 0 or not len(units):
            break
        # Moving load l closes the utilization gap by 100 l (1/c_h + 1/c_l); the paper's "total selected load less
        # than (L1 - L2) / 2" is this shift staying below the gap (so the heavier node stays the heavier).
        shift = 100.0 * st.load[units] * (1.0 / cap_h + 1.0 / cap_l)
        ok = (shift < gap) & (st.load[units] > 0) & ctx.fits(units, light)
        candidates = units[ok]
        if not len(candidates):
            break
        scores = None
        if ctx.selection == "correlation":
            rho = st.rho(candidates, pair)
            scores = (rho[:, 0] - rho[:, 1]) / 2.0
        st.move(int(candidates[ctx.pick(st.load[candidates], scores)]), light)
        moved += 1
    return moved


def greedy_assign(ctx: PairContext, units: IntArray, receivers: IntArray, check_budget: bool) -> None:
    """The greedy of 3.3.2 / 3.4: the least utilized receiver takes the unit with the largest score
    S(o, N_r) = mean_j rho(o, N_j) - rho(o, N_r) (j over the receivers), until every unit is placed.

    Units whose every placement breaks the budget stay where they are (`check_budget`); a receiver prefers units that
    fit under the utilization cap and takes an unfitting one only when none fits (initial placement of an over-full
    cluster: the validator's cap is then the peak after). At the deadline the units still unplaced go, largest load
    first, to the least utilized receiver (the load-only greedy, O(U log n)), so the whole placement stops in time."""
    st = ctx.state
    units = np.asarray(units, dtype=np.int64)
    alive = np.ones(len(units), dtype=bool)
    # rho(o, N_j) of every unit still to place against every receiver, kept incrementally: placing o on r changes
    # only r's series (and that of o's former node, when o leaves a draining node), so each step recomputes one or
    # two columns, O(U k), instead of the whole U x n matrix, O(U n k).
    rho = _rho_in_chunks(ctx, units, receivers) if ctx.selection == "correlation" else None
    receiver_pos = {int(node): pos for pos, node in enumerate(receivers.tolist())}
    while alive.any():
        if ctx.out_of_time():
            _place_by_load(ctx, units[alive], receivers, check_budget)
            return
        r_pos = int(np.argmin(st.utilization(receivers)))
        r = int(receivers[r_pos])
        rows = np.flatnonzero(alive)
        if check_budget:
            allowed = st.migrations_allowed(units[rows], r)
            if not allowed.any():
                # Nothing left may move to the least loaded node: no further receiver will do better for balance.
                break
            rows = rows[allowed]
        cand = units[rows]
        fitting = 100.0 * (st.node_load[r] + st.load[cand]) / st.capacity[r] <= ctx.cap * (1 + 1e-12)
        if fitting.any():
            rows, cand = rows[fitting], cand[fitting]
        scores = None
        if rho is not None:
            scores = rho[rows].mean(axis=1) - rho[rows, r_pos]
        chosen = int(rows[ctx.pick(st.load[cand], scores)])
        unit = int(units[chosen])
        former = int(st.assignment[unit])
        st.move(unit, r)
        alive[chosen] = False
        if rho is not None and alive.any():
            changed = np.array(
                [r_pos] + ([receiver_pos[former]] if former in receiver_pos and former != r else []),
                dtype=np.int64,
            )
            left = np.flatnonzero(alive)
            rho[np.ix_(left, changed)] = st.rho(units[left], receivers[changed])


# Units per block of the initial rho matrix: the deadline is checked between blocks (each O(block x n x k)).
_RHO_BLOCK = 64


def _rho_in_chunks(ctx: PairContext, units: IntArray, receivers: IntArray) -> FloatArray | None:
    """rho(units, receivers) block by block; None when the deadline passes first (the caller places by load)."""
    out = np.empty((len(units), len(receivers)))
    for start in range(0, len(units), _RHO_BLOCK):
        if ctx.out_of_time():
            return None
        block = units[start : start + _RHO_BLOCK]
        out[start : start + len(block)] = ctx.state.rho(block, receivers)
    return out


def _place_by_load(ctx: PairContext, units: IntArray, receivers: IntArray, check_budget: bool) -> None:
    """Largest load first onto the least utilized receiver (a heap of utilizations): the greedy's fallback at the
    deadline, on mean loads only, applied in one pass at the end (O(U log n + U k)). Units the budget keeps off
    that receiver stay where they are."""
    st = ctx.state
    inst = st.instance
    node_load = st.node_load.copy()
    heap = [(float(100.0 * node_load[r] / st.capacity[r]), int(r)) for r in receivers.tolist()]
    heapq.heapify(heap)
    migrations, cost = st.migrations, st.migration_cost
    targets = st.assignment.copy()
    for unit in units[np.argsort(-st.load[units], kind="stable")].tolist():
        if not heap:
            break
        _, r = heapq.heappop(heap)
        origin = int(inst.current[unit])
        adds = origin != UNPLACED and r != origin and targets[unit] == origin
        if check_budget and adds:
            size = float(inst.state_size[unit])
            if (inst.max_migrations is not None and migrations + 1 > inst.max_migrations) or (
                inst.max_migration_cost is not None and cost + size > inst.max_migration_cost * (1 + 1e-12)
            ):
                heapq.heappush(heap, (float(100.0 * node_load[r] / st.capacity[r]), r))
                continue
        if adds:
            migrations += 1
            cost += float(inst.state_size[unit])
        if targets[unit] >= 0:
            node_load[targets[unit]] -= st.load[unit]
        targets[unit] = r
        node_load[r] += st.load[unit]
        heapq.heappush(heap, (float(100.0 * node_load[r] / st.capacity[r]), r))
    st.reassign(targets)


def split_pair(ctx: PairContext, a: int, b: int, units: IntArray) -> IntArray:
    """The greedy of 3.3.2 for one node pair, on the pair's own Gram matrix: returns the node (a or b) of each unit.

    Both nodes start with their other units only (pinned ones); with K = c c^T over the pair's movable units,
    G[o, j] = c_o . c_j (node j's current centered series) and q_j = |c_j|^2 change by K[:, o] and 2 G[o, j] + K[o, o]
    when o joins j, so each step is O(p) after one O(p^2 k) product (no series is re-summed)."""
    st = ctx.state
    nodes = np.array([a, b])
    centered = st.centered[units]
    gram = centered @ centered.T
    unit_sq = np.diag(gram).copy()
    on_a = st.assignment[units] == a
    base = st.node_centered[nodes] - np.stack([centered[on_a].sum(axis=0), centered[~on_a].sum(axis=0)])
    g = centered @ base.T
    node_sq = np.einsum("ij,ij->i", base, base)
    load = st.load[units]
    node_load = st.node_load[nodes] - np.array([load[on_a].sum(), load[~on_a].sum()])
    capacity = st.capacity[nodes]
    tol = 1e-18 * st.scale
    inv_unit_norm = np.zeros(len(units))
    np.divide(1.0, np.sqrt(unit_sq), out=inv_unit_norm, where=unit_sq > tol)
    # rho[:, j] = rho(o, N_j) for every unit, refreshed for the receiving column only after each assignment.
    rho = np.zeros((len(units), 2))
    for j in (0, 1):
        if node_sq[j] > tol:
            rho[:, j] = g[:, j] * inv_unit_norm / np.sqrt(node_sq[j])
    # Ties (e.g. constant series) go to the larger load: a nudge far below any meaningful score difference.
    tie_break = 1e-9 * load / max(float(load.max(initial=0.0)), 1e-300)
    # The cap only matters when the pair's whole load could exceed it on one node.
    cap_matters = bool(100.0 * (node_load.sum() + load.sum()) / capacity.min() > ctx.cap)
    taken = np.zeros(len(units), dtype=bool)
    target = np.empty(len(units), dtype=np.int64)
    correlation = ctx.selection == "correlation"
    for _ in range(len(units)):
        r = 0 if node_load[0] / capacity[0] <= node_load[1] / capacity[1] else 1
        if correlation:
            # S(o, N_r) = (rho(o, N_a) + rho(o, N_b)) / 2 - rho(o, N_r) = (rho_other - rho_r) / 2
            key = (rho[:, 1 - r] - rho[:, r]) / 2.0 + tie_break
        elif ctx.selection == "largest-load":
            key = load.copy()
        else:
            key = ctx.rng.random(len(units))
        key[taken] = -np.inf
        if cap_matters:
            fits = 100.0 * (node_load[r] + load) / capacity[r] <= ctx.cap * (1 + 1e-12)
            if (fits & ~taken).any():
                key[~fits] = -np.inf
        pick = int(np.argmax(key))
        node_sq[r] += 2.0 * g[pick, r] + gram[pick, pick]
        g[:, r] += gram[:, pick]
        node_load[r] += load[pick]
        if correlation:
            rho[:, r] = g[:, r] * inv_unit_norm / np.sqrt(node_sq[r]) if node_sq[r] > tol else 0.0
        target[pick] = nodes[r]
        taken[pick] = True
    return target


def two_way(ctx: PairContext, a: int, b: int) -> bool:
    """3.3.2: redistribute all movable units of the pair from scratch, then balance one way. Kept only if the result
    respects the budget and the cap; otherwise the pair falls back to one-way balancing. Returns True if kept."""
    st = ctx.state
    if ctx.out_of_time():
        return False
    snap = st.snapshot()
    units = np.concatenate([ctx.units_on(a), ctx.units_on(b)])
    if len(units):
        target = split_pair(ctx, a, b, units)
        changed = target != st.assignment[units]
        for u, to in zip(units[changed].tolist(), target[changed].tolist(), strict=True):
            st.move(u, to)
    util = st.utilization()
    heavy, light = (a, b) if util[a] >= util[b] else (b, a)
    one_way(ctx, heavy, light)
    if st.within_budget() and ctx.pair_within_cap(a, b):
        return True
    st.restore(snap)
    util = st.utilization()
    heavy, light = (a, b) if util[a] >= util[b] else (b, a)
    one_way(ctx, heavy, light)
    return False


def selective_exchange(ctx: PairContext, a: int, b: int) -> None:
    """3.3.3: balance, exchange operators whose score exceeds delta (from the more loaded node), balance.

    An exchange may overload the receiver for a moment (the next step sends an operator back): the cap is checked
    on the pair's final state, and a pair that ends over it keeps only the first balancing step."""
    st = ctx.state

    def ordered() -> tuple[int, int]:
        util = st.utilization()
        return (a, b) if util[a] >= util[b] else (b, a)

    one_way(ctx, *ordered())
    snap = st.snapshot()
    pair_units = len(ctx.units_on(a)) + len(ctx.units_on(b))
    exchanged = 0
    for _ in range(pair_units):
        if ctx.out_of_time():
            break
        heavy, light = ordered()
        units = ctx.units_on(heavy)
        units = units[st.migrations_allowed(units, light)]
        if not len(units):
            break
        rho = st.rho(units, np.array([heavy, light]))
        scores = (rho[:, 0] - rho[:, 1]) / 2.0
        good = scores > ctx.delta
        if not good.any():
            break
        st.move(int(units[good][ctx.pick(st.load[units[good]], scores[good])]), light)
        exchanged += 1
    if exchanged:
        one_way(ctx, *ordered())
        if not ctx.pair_within_cap(a, b):
            st.restore(snap)


def run_pair(ctx: PairContext, variant: str, a: int, b: int) -> None:
    """Apply a (non-improved) variant to the pair (a, b); a is the more utilized node."""
    if variant == "one-way":
        one_way(ctx, a, b)
    elif variant == "two-way":
        two_way(ctx, a, b)
    elif variant == "selective-exchange":
        selective_exchange(ctx, a, b)
    else:  # pragma: no cover - the schema admits only the names above
        raise ValueError(f"unknown pair-wise variant {variant!r}")


# ---------------------------------------------------------------------------------------------- rounds


def pairing_round(ctx: PairContext, variant: str, epsilon: float) -> None:
    """Order staying nodes by utilization, pair i-th most with i-th least, act on pairs whose gap exceeds epsilon."""
    st = ctx.state
    nodes = ctx.staying
    order = nodes[np.argsort(-st.utilization(nodes), kind="stable")]
    for i in range(len(order) // 2):
        if ctx.out_of_time():
            return
        heavy, light = int(order[i]), int(order[len(order) - 1 - i])
        util = st.utilization()
        if util[heavy] - util[light] > 100.0 * epsilon:
            run_pair(ctx, variant, heavy, light)


def correlation_improvement(ctx: PairContext, two_way_variant: str, theta: float) -> int:
    """3.3.4: for each node likely to overload (mean + std over capacity > 1), most likely first, try the two-way
    algorithm with its least correlated partner when that correlation is below theta; keep it if the pair's
    correlation rises. Returns the number of pairs changed."""
    st = ctx.state
    nodes = ctx.staying
    if len(nodes) < 2:
        return 0
    divergent = (st.node_load[nodes] + st.node_std(nodes)) / st.capacity[nodes]
    changed = 0
    for pos in np.argsort(-divergent, kind="stable").tolist():
        if divergent[pos] <= 1.0 or ctx.out_of_time():
            break
        node = int(nodes[pos])
        corr = st.node_correlations(nodes)[pos]
        corr[pos] = np.inf
        partner_pos = int(np.argmin(corr))
        old = float(corr[partner_pos])
        if old >= theta:
            continue
        partner = int(nodes[partner_pos])
        snap = st.snapshot()
        heavy, light = (
            (node, partner) if st.utilization()[node] >= st.utilization()[partner] else (partner, node)
        )
        run_pair(ctx, two_way_variant, heavy, light)
        if st.node_correlation(node, partner) > old + _TIE and st.within_budget():
            changed += 1
        else:
            st.restore(snap)
    return changed


def place_and_drain(ctx: PairContext) -> None:
    """Units with no node are placed greedily on the staying nodes; movable units of draining nodes follow, as far
    as the budget allows."""
    st = ctx.state
    unplaced = np.flatnonzero(st.assignment == UNPLACED)
    if len(unplaced):
        greedy_assign(ctx, unplaced, ctx.staying, check_budget=False)
    draining = st.instance.draining
    leaving = np.flatnonzero(ctx.movable & (st.assignment >= 0) & draining[np.maximum(st.assignment, 0)])
    if len(leaving):
        greedy_assign(ctx, leaving, ctx.staying, check_budget=True)


def pairwise_assignment(
    instance: AssignmentInstance,
    variant: str,
    epsilon: float = 0.1,
    delta: float = 0.2,
    theta: float = 0.8,
    selection: Selection = "correlation",
    seed: int = 0,
    deadline: float = math.inf,
) -> tuple[IntArray, LoadState, PairContext]:
    """One load distribution period of the pair-wise algorithm `variant`; returns the new assignment, the state and
    the context (whose `timed_out` says whether the improvement step stopped at the deadline)."""
    state = LoadState(instance, instance.current)
    ctx = PairContext(state, selection=selection, delta=delta, seed=seed, deadline=deadline)
    place_and_drain(ctx)
    base = TWO_WAY_OF_IMPROVED.get(variant, variant)
    pairing_round(ctx, base, epsilon)
    if variant in TWO_WAY_OF_IMPROVED:
        correlation_improvement(ctx, base, theta)
    return state.assignment, state, ctx

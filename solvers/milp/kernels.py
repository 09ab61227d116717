"""The descent's evaluation kernels, compiled with numba: one loop per kind of candidate step over plain arrays.

A descent step on 40 nodes x 1,024 units was ~80 numpy calls on arrays of 40-2,000 entries, most of its time the
calls' own overhead; each kernel here replaces the calls of one evaluation (build the candidates, evaluate them on
the nodes they touch, price the budget of those that improve) with one compiled loop. The selection among the
survivors (numpy's argpartition and stable argsort, whose tie order the plans depend on) and everything that draws
random numbers stay in `local_search.py`, so the search takes the same decisions, bit for bit, with or without them:

- every floating-point number is computed by the same IEEE operations on the same operands, in the same order, as
  the numpy code it replaces (no fastmath: LLVM then neither reassociates nor drops a `+ 0.0`); maxima are taken
  over the same values (no NaN arises: loads, capacities and utilizations are finite), so their order is moot;
- candidates are produced in the order of the numpy code's arrays (the index of a candidate is its position
  there), so the selection that follows sees the same arrays.

`tests/test_milp_kernels.py` checks each kernel against the numpy code it replaces (ties, integer loads, huge and
tiny values) and whole descents and band repairs with and without them, step by step.

The kernels are compiled on first use, or loaded from numba's on-disk cache (`cache=True`, in `__pycache__`):
`local_search.warm_up()` does that once per process (the service, before it forks its solver workers, which
inherit the compiled code), and until then the search runs its numpy code, so no compile ever lands inside a
request's time limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

CAP_SLACK = 1e-12  # a node that gains may end at cap * (1 + CAP_SLACK); a gain of at most this is no gain


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _budget_of(
    counted: bool, home: int, state: float, source: int, dest: int, costed: bool
) -> tuple[int, float]:
    """The count and cost change of a move from `source` to `dest` of a unit with these (scalar) properties:
    scalars only, so a call costs no reference counting of arrays."""
    before = 1 if counted and source != home else 0
    after = 1 if counted and dest != home else 0
    delta_n = after - before
    if not costed:
        return delta_n, 0.0
    return delta_n, delta_n * state + 0.0


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _fits(
    delta_n: int,
    delta_c: float,
    costed: bool,
    used_moves: int,
    max_moves: int,
    used_cost: float,
    cost_limit: float,
) -> bool:
    """LocalSearch.within_budget of one step."""
    if not costed:
        return used_moves + delta_n <= max_moves
    return (used_moves + delta_n <= max_moves) and (used_cost + delta_c <= cost_limit)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _role(
    util: float, staying: bool, total: float, all_staying: bool, mean: float, cap_limit: float
) -> tuple[float, bool]:
    """One role of `_worst_ok`: a node's deviation after `total` (0 on a draining node) and its cap test, from the
    node's utilization and whether it stays (scalars: a jitted call with array arguments pays their reference
    counting, which cost more than the evaluation)."""
    after = util + total
    deviation = abs(after - mean)
    if not all_staying and not staying:
        deviation = 0.0
    return deviation, (total <= CAP_SLACK) or (after <= cap_limit)


@njit(cache=True, nogil=True, error_model="numpy")
def scan_moves(
    units: np.ndarray,
    dests: np.ndarray,
    assignment: np.ndarray,
    share: np.ndarray,
    capacity: np.ndarray,
    util: np.ndarray,
    staying: np.ndarray,
    all_staying: bool,
    mean: float,
    cap_limit: float,
    limit: float,
    counts: np.ndarray,
    original: np.ndarray,
    state: np.ndarray,
    costed: bool,
    used_moves: int,
    max_moves: int,
    used_cost: float,
    cost_limit: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The single moves of a step (`units[i]` to `dests[i]`), as LocalSearch.step evaluates them: the worst
    deviation after each, and the moves that improve (every touched node below `limit`, within the cap, a real
    move) with whether each fits the budget and its cost change."""
    n = len(units)
    worst = np.empty(n)
    improving = np.empty(n, np.int64)
    fits = np.empty(n, np.bool_)
    delta_c = np.empty(n)
    found = 0
    for i in range(n):
        unit, dest = units[i], dests[i]
        source = assignment[unit]
        points = share[unit]
        w_src, ok_src = _role(
            util[source], staying[source], -points / capacity[source], all_staying, mean, cap_limit
        )
        w_dst, ok_dst = _role(
            util[dest], staying[dest], points / capacity[dest], all_staying, mean, cap_limit
        )
        w = max(w_src, w_dst)
        worst[i] = w
        if ok_src and ok_dst and w < limit and source != dest:
            dn, dc = _budget_of(counts[unit], original[unit], state[unit], source, dest, costed)
            improving[found] = i
            fits[found] = _fits(dn, dc, costed, used_moves, max_moves, used_cost, cost_limit)
            delta_c[found] = dc
            found += 1
    return worst, improving[:found], fits[:found], delta_c[:found]


@njit(cache=True, nogil=True, error_model="numpy")
def move_unit(
    unit: int,
    dest: int,
    assignment: np.ndarray,
    util: np.ndarray,
    share: np.ndarray,
    capacity: np.ndarray,
    counts: np.ndarray,
    original: np.ndarray,
) -> tuple[int, bool, bool]:
    """LocalSearch.apply's arrays for one move (in place): the unit's share of utilization off its node and onto
    `dest`, the unit on `dest`. Returns (the node it left, whether it counted as a migration before, after)."""
    source = assignment[unit]
    counted, home = counts[unit], original[unit]
    util[source] -= share[unit] / capacity[source]
    util[dest] += share[unit] / capacity[dest]
    assignment[unit] = dest
    return source, counted and source != home, counted and dest != home


@njit(cache=True, nogil=True, error_model="numpy")
def units_on(node: int, assignment: np.ndarray, movable: np.ndarray) -> np.ndarray:
    """LocalSearch.units_on by a scan of the assignment: the movable units on `node`, ascending."""
    found = np.empty(len(assignment), np.int64)
    n = 0
    for unit in range(len(assignment)):
        if assignment[unit] == node and movable[unit]:
            found[n] = unit
            n += 1
    return found[:n]


@njit(cache=True, nogil=True, error_model="numpy")
def least_first(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """index sorted by values[index], stably (np.argsort(kind="stable")): an insertion sort, for the few dozen
    entries a band repair step sorts."""
    ordered = index.copy()
    for i in range(1, len(ordered)):
        item = ordered[i]
        key = values[item]
        j = i
        while j > 0 and values[ordered[j - 1]] > key:
            ordered[j] = ordered[j - 1]
            j -= 1
        ordered[j] = item
    return ordered


@njit(cache=True, nogil=True, error_model="numpy")
def band_state(
    util: np.ndarray, mean: float, staying: np.ndarray, all_staying: bool, band: float
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray]:
    """The start of a fill_band step: the staying nodes' deviations r (0 on draining nodes), which are outside
    the band, how many, the nodes below mean + band (candidate destinations) and those under the band."""
    n = len(util)
    r = np.empty(n)
    out = np.empty(n, np.bool_)
    below = np.empty(n, np.int64)
    under = np.empty(n, np.int64)
    n_out = n_below = n_under = 0
    for i in range(n):
        stays = all_staying or staying[i]
        r[i] = util[i] - mean if stays else 0.0
        out[i] = stays and abs(r[i]) > band
        n_out += out[i]
        if stays and r[i] < band:
            below[n_below] = i
            n_below += 1
        if out[i] and r[i] < 0:
            under[n_under] = i
            n_under += 1
    return r, out, n_out, below[:n_below], under[:n_under]


@njit(cache=True, nogil=True, error_model="numpy")
def worst_node(util: np.ndarray, active_nodes: np.ndarray, mean: float) -> tuple[int, float, bool]:
    """LocalSearch.step's start: the staying node of the largest |utilization - mean| (the first of equal ones, as
    np.argmax), that deviation d, and whether the node is over the mean."""
    position = 0
    largest = -1.0
    deviation = 0.0
    for i in range(len(active_nodes)):
        r = util[active_nodes[i]] - mean
        if abs(r) > largest:
            position, largest, deviation = i, abs(r), r
    return active_nodes[position], abs(deviation), deviation > 0


@njit(cache=True, nogil=True, error_model="numpy")
def scan_near_moves(
    node: int,
    over: bool,
    mine: np.ndarray,
    active_nodes: np.ndarray,
    movable: np.ndarray,
    assignment: np.ndarray,
    share: np.ndarray,
    capacity: np.ndarray,
    util: np.ndarray,
    staying: np.ndarray,
    all_staying: bool,
    mean: float,
    cap_limit: float,
    limit: float,
    counts: np.ndarray,
    original: np.ndarray,
    state: np.ndarray,
    costed: bool,
    used_moves: int,
    max_moves: int,
    used_cost: float,
    cost_limit: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """LocalSearch._moves with at most NEAR_NODES staying nodes (every other staying node is a destination or a
    source), then scan_moves on them: over the mean, every unit of the worst node (`mine`) to every other staying
    node, unit-major, then those away from home back home; under it, every movable unit elsewhere onto it.
    Returns (units, dests, and scan_moves' worst, improving, fits, cost changes)."""
    if over:
        others = np.empty(len(active_nodes), np.int64)
        n_others = 0
        for a in active_nodes:
            if a != node:
                others[n_others] = a
                n_others += 1
        n_back = 0
        for unit in mine:
            n_back += counts[unit] and original[unit] != node
        units = np.empty(len(mine) * n_others + n_back, np.int64)
        dests = np.empty(len(units), np.int64)
        k = 0
        for unit in mine:
            for j in range(n_others):
                units[k], dests[k] = unit, others[j]
                k += 1
        for unit in mine:
            if counts[unit] and original[unit] != node:
                units[k], dests[k] = unit, original[unit]
                k += 1
    else:
        units = np.empty(len(assignment), np.int64)
        k = 0
        for unit in range(len(assignment)):
            if movable[unit] and assignment[unit] != node:
                units[k] = unit
                k += 1
        units = units[:k]
        dests = np.full(k, node, np.int64)
    worst, improving, fits, delta_c = scan_moves(
        units,
        dests,
        assignment,
        share,
        capacity,
        util,
        staying,
        all_staying,
        mean,
        cap_limit,
        limit,
        counts,
        original,
        state,
        costed,
        used_moves,
        max_moves,
        used_cost,
        cost_limit,
    )
    return units, dests, worst, improving, fits, delta_c


@njit(cache=True, nogil=True, error_model="numpy")
def sure_move(d: float, worst: np.ndarray, improving: np.ndarray, fits: np.ndarray, count: int) -> int:
    """The single move LocalSearch.step takes without a cost budget, when it does not depend on the order in
    which numpy's argpartition leaves ties: the step keeps the `count` smallest of -(d - worst) among the allowed
    moves (`improving[fits]`) and takes the first of least worst among them. With at most `count` allowed, all are
    kept in a stable order: the first allowed of least worst. With more, that move is still the one taken when it
    is the only one of least worst and at most `count` share its key (the least key: the key does not fall as the
    worst grows), so all of them are kept. Returns its index, or -1 when not sure (or none is allowed)."""
    allowed = 0
    least = np.inf
    first = -1
    for i in range(len(improving)):
        if fits[i]:
            allowed += 1
            if worst[improving[i]] < least:
                least, first = worst[improving[i]], improving[i]
    if allowed <= count:
        return first
    key = -(d - least)
    at_least = with_key = 0
    for i in range(len(improving)):
        if fits[i]:
            w = worst[improving[i]]
            at_least += w == least
            with_key += -(d - w) == key
    return first if at_least == 1 and with_key <= count else -1


@njit(cache=True, nogil=True, error_model="numpy")
def placement_keys(assignment: np.ndarray, n_nodes: int) -> np.uint64:
    """local_search._placement_keys of every unit on its node (uint64 arithmetic wrapping as numpy's does)."""
    total = np.uint64(0)
    width = np.uint64(n_nodes + 1)
    for unit in range(len(assignment)):
        x = np.uint64(unit) * width + np.uint64(assignment[unit] + 1)
        x = x * MIX_FIRST
        x ^= x >> np.uint64(29)
        x = x * MIX_SECOND
        x ^= x >> np.uint64(32)
        total += x
    return total


MIX_FIRST, MIX_SECOND = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9)  # local_search._MIX


@njit(cache=True, nogil=True, error_model="numpy")
def near_step(
    active_nodes: np.ndarray,
    movable: np.ndarray,
    assignment: np.ndarray,
    share: np.ndarray,
    capacity: np.ndarray,
    util: np.ndarray,
    staying: np.ndarray,
    all_staying: bool,
    mean: float,
    cap_limit: float,
    tolerance: float,
    counts: np.ndarray,
    original: np.ndarray,
    state: np.ndarray,
    costed: bool,
    used_moves: int,
    max_moves: int,
    used_cost: float,
    cost_limit: float,
) -> tuple[int, float, bool, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The start of LocalSearch.step with at most NEAR_NODES staying nodes, in one call: worst_node, then (when
    d > tolerance) the worst node's units and scan_near_moves. Returns (node, d, over, and scan_near_moves'
    arrays; empty when d <= tolerance)."""
    node, d, over = worst_node(util, active_nodes, mean)
    if d <= tolerance:
        empty_f, empty_i, empty_b = np.empty(0), np.empty(0, np.int64), np.empty(0, np.bool_)
        return node, d, over, empty_i, empty_i, empty_f, empty_i, empty_b, empty_f
    mine = units_on(node, assignment, movable) if over else np.empty(0, np.int64)
    units, dests, worst, improving, fits, delta_c = scan_near_moves(
        node,
        over,
        mine,
        active_nodes,
        movable,
        assignment,
        share,
        capacity,
        util,
        staying,
        all_staying,
        mean,
        cap_limit,
        d - tolerance,
        counts,
        original,
        state,
        costed,
        used_moves,
        max_moves,
        used_cost,
        cost_limit,
    )
    return node, d, over, units, dests, worst, improving, fits, delta_c


@njit(cache=True, nogil=True, error_model="numpy")
def scan_refunds(
    migrated: np.ndarray,
    units: np.ndarray,
    dests: np.ndarray,
    assignment: np.ndarray,
    original: np.ndarray,
    share: np.ndarray,
    capacity: np.ndarray,
    util: np.ndarray,
    staying: np.ndarray,
    all_staying: bool,
    mean: float,
    cap_limit: float,
    limit: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first half of LocalSearch._compound_candidates: each migration sent home alone (its worst deviation),
    the positions in `migrated` of the refunds that alone improve and touch no node of the blocked moves
    (`units` to `dests`), and of those that do touch one."""
    n_nodes = len(util)
    touched = np.zeros(n_nodes, np.bool_)
    for i in range(len(units)):
        touched[assignment[units[i]]] = True
        touched[dests[i]] = True
    m = len(migrated)
    alone = np.empty(m)
    good = np.empty(m, np.int64)
    overlapping = np.empty(m, np.int64)
    n_good = n_over = 0
    for i in range(m):
        unit = migrated[i]
        source, home = assignment[unit], original[unit]
        points = share[unit]
        w_src, ok_src = _role(
            util[source], staying[source], -points / capacity[source], all_staying, mean, cap_limit
        )
        w_dst, ok_dst = _role(
            util[home], staying[home], points / capacity[home], all_staying, mean, cap_limit
        )
        w = max(w_src, w_dst)
        alone[i] = w
        if touched[source] or touched[home]:
            overlapping[n_over] = i
            n_over += 1
        elif ok_src and ok_dst and w < limit:
            good[n_good] = i
            n_good += 1
    return alone, good[:n_good], overlapping[:n_over]


@njit(cache=True, nogil=True, error_model="numpy")
def scan_compound(
    units: np.ndarray,
    dests: np.ndarray,
    refunds: np.ndarray,
    assignment: np.ndarray,
    original: np.ndarray,
    share: np.ndarray,
    capacity: np.ndarray,
    util: np.ndarray,
    staying: np.ndarray,
    all_staying: bool,
    mean: float,
    cap_limit: float,
    limit: float,
    counts: np.ndarray,
    state: np.ndarray,
    costed: bool,
    used_moves: int,
    max_moves: int,
    used_cost: float,
    cost_limit: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The second half of LocalSearch._compound_candidates: every blocked move (`units[i]` to `dests[i]`) with
    every refund (a migrated unit sent home), unit-major, a unit never paired with itself; the worst deviation of
    each pair (LocalSearch._evaluate_legs: each role's own change plus the other leg's on the same node), and the
    pairs that improve and fit the budget. Returns (worst, moved unit, its destination, refunded unit, good)."""
    total = len(units) * len(refunds)
    worst = np.empty(total)
    moved = np.empty(total, np.int64)
    moved_to = np.empty(total, np.int64)
    refunded = np.empty(total, np.int64)
    good = np.empty(total, np.int64)
    k = n_good = 0
    for i in range(len(units)):
        v, to = units[i], dests[i]
        src_a = assignment[v]
        share_a = share[v]
        out_a, in_a = -share_a / capacity[src_a], share_a / capacity[to]
        for j in range(len(refunds)):
            r = refunds[j]
            if r == v:
                continue
            src_b, dst_b = assignment[r], original[r]
            share_b = share[r]
            out_b, in_b = -share_b / capacity[src_b], share_b / capacity[dst_b]
            # _evaluate_legs' totals: a node of one leg meets at most one node of the other (nested np.where)
            t0 = out_a + (out_b if src_b == src_a else (in_b if dst_b == src_a else 0.0))
            t1 = in_a + (out_b if src_b == to else (in_b if dst_b == to else 0.0))
            t2 = out_b + (out_a if src_b == src_a else (in_a if src_b == to else 0.0))
            t3 = in_b + (out_a if dst_b == src_a else (in_a if dst_b == to else 0.0))
            w0, ok0 = _role(util[src_a], staying[src_a], t0, all_staying, mean, cap_limit)
            w1, ok1 = _role(util[to], staying[to], t1, all_staying, mean, cap_limit)
            w2, ok2 = _role(util[src_b], staying[src_b], t2, all_staying, mean, cap_limit)
            w3, ok3 = _role(util[dst_b], staying[dst_b], t3, all_staying, mean, cap_limit)
            w = max(max(w0, w1), max(w2, w3))
            worst[k] = w
            moved[k], moved_to[k], refunded[k] = v, to, r
            if ok0 and ok1 and ok2 and ok3 and w < limit:
                dn1, dc1 = _budget_of(counts[v], original[v], state[v], src_a, to, costed)
                dn2, dc2 = _budget_of(counts[r], original[r], state[r], src_b, dst_b, costed)
                if _fits(dn1 + dn2, dc1 + dc2, costed, used_moves, max_moves, used_cost, cost_limit):
                    good[n_good] = k
                    n_good += 1
            k += 1
    return worst[:k], moved[:k], moved_to[:k], refunded[:k], good[:n_good]


LINEAR_SEARCH = 64  # sorted arrays up to this long are searched by a count of the values below


@njit(cache=True, nogil=True, error_model="numpy")
def _search_left(values: np.ndarray, x: float) -> int:
    """np.searchsorted(values, x, side="left") on sorted values without NaN: how many are below x. Branch-free
    halving (the step is added times the comparison): a step's thousand searches on random targets were mostly
    mispredicted branches."""
    n = len(values)
    if n <= LINEAR_SEARCH:  # a count (vectorized, no dependent loads): the worst node's few units
        below = 0
        for i in range(n):
            below += values[i] < x
        return below
    base = 0
    while n > 1:  # invariant: the answer is in base .. base + n
        half = n // 2
        base += half * (values[base + half - 1] < x)
        n -= half
    return base + (values[base] < x)


@njit(cache=True, nogil=True, error_model="numpy")
def _search_right(values: np.ndarray, x: float) -> int:
    """np.searchsorted(values, x, side="right") on sorted values without NaN: how many are at most x (as
    _search_left)."""
    n = len(values)
    if n <= LINEAR_SEARCH:
        at_most = 0
        for i in range(n):
            at_most += values[i] <= x
        return at_most
    base = 0
    while n > 1:
        half = n // 2
        base += half * (values[base + half - 1] <= x)
        n -= half
    return base + (values[base] <= x)


@njit(cache=True, nogil=True, error_model="numpy")
def scan_swaps(
    node: int,
    over: bool,
    mine: np.ndarray,
    active_nodes: np.ndarray,
    movable: np.ndarray,
    assignment: np.ndarray,
    share: np.ndarray,
    capacity: np.ndarray,
    util: np.ndarray,
    staying: np.ndarray,
    all_staying: bool,
    mean: float,
    cap_limit: float,
    limit: float,
    swap_elements: int,
    counts: np.ndarray,
    original: np.ndarray,
    state: np.ndarray,
    costed: bool,
    used_moves: int,
    max_moves: int,
    used_cost: float,
    cost_limit: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """LocalSearch._swaps and _swap_candidates up to the selection: the units of the worst node (`mine`, sorted)
    and those on the other side of the mean it may swap with (the most opposite nodes first, at most
    `swap_elements` pairs), the pairs in the window of net load that can land both nodes inside d, mine-major.
    Returns (worst, the worst node's unit, the partner's unit, good: the pairs that improve and fit the budget)."""
    empty_f, empty_i = np.empty(0), np.empty(0, np.int64)
    if len(mine) == 0:
        return empty_f, empty_i, empty_i, empty_i
    util_node = util[node]
    n_active = len(active_nodes)
    side_nodes = np.empty(n_active, np.int64)
    n_side = 0
    for i in range(n_active):
        a = active_nodes[i]
        if (util[a] < util_node) if over else (util[a] > util_node):
            side_nodes[n_side] = a
            n_side += 1
    partners = side_nodes[:n_side]
    key = np.empty(n_side)
    for i in range(n_side):
        key[i] = util[partners[i]] if over else -util[partners[i]]
    partners = partners[np.argsort(key, kind="mergesort")]  # stable
    position = np.full(len(util), n_side, np.int64)
    for i in range(n_side):
        position[partners[i]] = i
    n_units = len(assignment)
    theirs_all = np.empty(n_units, np.int64)
    n_theirs = 0
    for unit in range(n_units):
        if movable[unit] and position[assignment[unit]] < n_side:
            theirs_all[n_theirs] = unit
            n_theirs += 1
    theirs = theirs_all[:n_theirs]
    most = max(1, swap_elements // len(mine))
    if n_theirs > most:
        # the first `most` by their node's rank, stably (np.argsort(kind="stable") of the ranks): a counting sort
        # by rank, the units in ascending order within each (numba's mergesort of 100,000 ranks took ~10 ms)
        starts = np.zeros(n_side + 1, np.int64)
        for unit in theirs:
            starts[position[assignment[unit]] + 1] += 1
        for rank in range(n_side):
            starts[rank + 1] += starts[rank]
        ordered = np.empty(n_theirs, np.int64)
        for unit in theirs:
            rank = position[assignment[unit]]
            ordered[starts[rank]] = unit
            starts[rank] += 1
        theirs = ordered[:most]
    n_theirs = len(theirs)
    if n_theirs == 0:
        return empty_f, empty_i, empty_i, empty_i
    sizes_mine = np.empty(len(mine))
    for i in range(len(mine)):
        sizes_mine[i] = share[mine[i]]
    by_size = np.argsort(sizes_mine, kind="mergesort")
    sizes = sizes_mine[by_size]
    deviation = util_node - mean
    cap_node = capacity[node]
    # per partner node, the interval of net load (lo, hi) that lands both nodes inside d, and its hair
    lows, highs, hairs = np.empty(len(util)), np.empty(len(util)), np.empty(len(util))
    for partner in partners:
        partner_deviation = util[partner] - mean
        lo = max(cap_node * (deviation - limit), capacity[partner] * (-limit - partner_deviation))
        hi = min(cap_node * (deviation + limit), capacity[partner] * (limit - partner_deviation))
        lows[partner], highs[partner] = lo, hi
        hairs[partner] = 1e-7 * (1.0 + max(abs(lo), abs(hi)))
    firsts = np.empty(n_theirs, np.int64)
    windows = np.empty(n_theirs, np.int64)
    total = 0
    for j in range(n_theirs):
        partner = assignment[theirs[j]]
        points = share[theirs[j]]
        first = _search_left(sizes, points + lows[partner] - hairs[partner])
        count = max(_search_right(sizes, points + highs[partner] + hairs[partner]) - first, 0)
        firsts[j], windows[j] = first, count
        total += count
    if total == 0:
        return empty_f, empty_i, empty_i, empty_i
    # the pairs mine-major (then by partner unit), as the numpy code's sort of mine * len(theirs) + theirs
    # orders them: a counting sort by the worst node's unit (the partners come in ascending order already)
    per_mine = np.zeros(len(mine) + 1, np.int64)
    for j in range(n_theirs):
        for at in range(firsts[j], firsts[j] + windows[j]):
            per_mine[by_size[at] + 1] += 1
    for i in range(len(mine)):
        per_mine[i + 1] += per_mine[i]
    partner_of = np.empty(total, np.int64)
    filled = per_mine[:-1].copy()
    for j in range(n_theirs):
        for at in range(firsts[j], firsts[j] + windows[j]):
            slot = by_size[at]
            partner_of[filled[slot]] = j
            filled[slot] += 1
    worst = np.empty(total)
    mine_units = np.empty(total, np.int64)
    their_units = np.empty(total, np.int64)
    good = np.empty(total, np.int64)
    n_good = 0
    for i in range(len(mine)):
        a = mine[i]
        for k in range(per_mine[i], per_mine[i + 1]):
            c = theirs[partner_of[k]]
            other = assignment[c]
            net = share[a] - share[c]  # load points leaving the worst node
            w_here, ok_here = _role(util[node], staying[node], -net / cap_node, all_staying, mean, cap_limit)
            w_other, ok_other = _role(
                util[other], staying[other], net / capacity[other], all_staying, mean, cap_limit
            )
            w = max(w_here, w_other)
            worst[k] = w
            mine_units[k], their_units[k] = a, c
            if ok_here and ok_other and w < limit:
                dn1, dc1 = _budget_of(counts[a], original[a], state[a], node, other, costed)
                dn2, dc2 = _budget_of(counts[c], original[c], state[c], other, node, costed)
                if _fits(dn1 + dn2, dc1 + dc2, costed, used_moves, max_moves, used_cost, cost_limit):
                    good[n_good] = k
                    n_good += 1
    return worst, mine_units, their_units, good[:n_good]


@njit(cache=True, nogil=True, error_model="numpy")
def scan_fill(
    landing: bool,
    dests: np.ndarray,
    under: np.ndarray,
    r: np.ndarray,
    out: np.ndarray,
    band: float,
    tolerance: float,
    movable: np.ndarray,
    assignment: np.ndarray,
    staying: np.ndarray,
    all_staying: bool,
    share: np.ndarray,
    capacity: np.ndarray,
    util: np.ndarray,
    cap_limit: float,
    sizes: np.ndarray,
    by_size: np.ndarray,
    fill_units: int,
    counts: np.ndarray,
    original: np.ndarray,
    state: np.ndarray,
    costed: bool,
    used_moves: int,
    max_moves: int,
    used_cost: float,
    cost_limit: float,
) -> tuple[bool, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One step of LocalSearch.fill_band up to the selection: its candidate moves (`landing`: a unit that lands
    its over node inside the band to each of `dests`, then per under node the units of a landing size; else the
    units of the most utilized node to each of `dests` and every unit of a node above the mean to the least
    utilized one), evaluated as LocalSearch._fill_step does. Returns (False when there is no giving unit or no
    destination: the band repair ends; the scores, cost changes, units and destinations of the moves
    that may be taken: they land a node, or take excess off, and fit the cap and the budget)."""
    empty_f, empty_i = np.empty(0), np.empty(0, np.int64)
    n_units = len(assignment)
    units = np.empty(n_units, np.int64)
    n = 0
    for unit in range(n_units):
        node = assignment[unit]
        if movable[unit] and r[node] > -band and (all_staying or staying[node]):
            units[n] = unit
            n += 1
    if len(dests) == 0 or n == 0:
        return False, empty_f, empty_f, empty_i, empty_i
    units = units[:n]
    # the candidates, in the order of fill_band's parts: (pairs of units and dests, unit-major), then the rest
    first_units = np.empty(n, np.int64)
    n_first = 0
    rest_units = np.empty(0, np.int64)
    rest_dests = np.empty(0, np.int64)
    if landing:
        for i in range(n):
            unit = units[i]
            node = assignment[unit]
            if out[node] and abs(r[node] - share[unit] / capacity[node]) <= band:
                first_units[n_first] = unit
                n_first += 1
        if len(under):
            lo = np.empty(len(under), np.int64)
            hi = np.empty(len(under), np.int64)
            total = 0
            for i in range(len(under)):
                node = under[i]
                exact = -r[node] * capacity[node]
                low = _search_left(sizes, exact - band * capacity[node])
                high = _search_right(sizes, exact + band * capacity[node])
                at = _search_left(sizes, exact)
                low = max(low, at - fill_units // 2)
                high = min(high, max(at + fill_units // 2, low))
                lo[i], hi[i] = low, high
                total += high - low
            rest_units = np.empty(total, np.int64)
            rest_dests = np.empty(total, np.int64)
            k = 0
            for i in range(len(under)):
                for position in range(lo[i], hi[i]):
                    unit = by_size[position]
                    node = assignment[unit]
                    if r[node] > -band and (all_staying or staying[node]):
                        rest_units[k], rest_dests[k] = unit, under[i]
                        k += 1
            rest_units, rest_dests = rest_units[:k], rest_dests[:k]
    else:
        highest = assignment[units[0]]
        for i in range(1, n):  # np.argmax: the first of the largest
            node = assignment[units[i]]
            if r[node] > r[highest]:
                highest = node
        if r[highest] > band:
            for i in range(n):
                if assignment[units[i]] == highest:
                    first_units[n_first] = units[i]
                    n_first += 1
        if len(under):
            rest_units = np.empty(n, np.int64)
            k = 0
            for i in range(n):
                if r[assignment[units[i]]] > 0:
                    rest_units[k] = units[i]
                    k += 1
            rest_units = rest_units[:k]
            rest_dests = np.full(k, under[0], np.int64)
    n_pairs = n_first * len(dests)
    total = n_pairs + len(rest_units)
    good_units = np.empty(total, np.int64)
    good_dests = np.empty(total, np.int64)
    scores = np.empty(total)
    delta_cs = np.empty(total)
    n_good = 0
    for k in range(total):
        if k < n_pairs:
            unit, dest = first_units[k // len(dests)], dests[k % len(dests)]
        else:
            unit, dest = rest_units[k - n_pairs], rest_dests[k - n_pairs]
        src = assignment[unit]
        if src == dest:
            continue
        points = share[unit]
        arriving = points / capacity[dest]
        after_src = r[src] - points / capacity[src]
        after_dst = r[dest] + arriving
        inside_src, inside_dst = abs(after_src) <= band, abs(after_dst) <= band
        # per node +1 when it lands, -1 when it is pushed out: out + inside - 1 (integers)
        landed = int(out[src]) + int(inside_src) + int(out[dest]) + int(inside_dst) - 2
        if not util[dest] + arriving <= cap_limit:
            continue
        if landing:
            if landed < 1:
                continue
            score = float(landed)
        else:
            score = max(abs(r[src]) - band, 0.0) + max(abs(r[dest]) - band, 0.0)
            score = score - (max(abs(after_src) - band, 0.0) + max(abs(after_dst) - band, 0.0))
            if not (landed >= 0 and score > tolerance):
                continue
        dn, dc = _budget_of(counts[unit], original[unit], state[unit], src, dest, costed)
        if not _fits(dn, dc, costed, used_moves, max_moves, used_cost, cost_limit):
            continue
        good_units[n_good], good_dests[n_good] = unit, dest
        scores[n_good], delta_cs[n_good] = score, dc
        n_good += 1
    return (
        True,
        scores[:n_good],
        delta_cs[:n_good],
        good_units[:n_good],
        good_dests[:n_good],
    )


@njit(cache=True, nogil=True, error_model="numpy")
def scan_legs(
    legs: int,
    units: np.ndarray,
    sources: np.ndarray,
    dests: np.ndarray,
    assignment: np.ndarray,
    share: np.ndarray,
    capacity: np.ndarray,
    util: np.ndarray,
    staying: np.ndarray,
    all_staying: bool,
    mean: float,
    cap_limit: float,
    limit: float,
    counts: np.ndarray,
    original: np.ndarray,
    state: np.ndarray,
    costed: bool,
    used_moves: int,
    max_moves: int,
    used_cost: float,
    cost_limit: float,
) -> tuple[np.ndarray, np.ndarray]:
    """LocalSearch._best_legs up to the selection: candidate steps of `legs` moves each (leg l of candidate i:
    units[l * n + i] from sources[...] to dests[...]), evaluated as LocalSearch.evaluate does (roles that may
    share a node: each role's total is the changes of the roles on its node, added in role order), priced per
    leg at the unit's current node. Returns (worst, good: the steps that improve and fit the budget)."""
    n = len(units) // legs
    roles = 2 * legs
    node = np.empty(roles, np.int64)
    own = np.empty(roles)
    worst = np.empty(n)
    good = np.empty(n, np.int64)
    n_good = 0
    for i in range(n):
        for leg in range(legs):
            unit = units[leg * n + i]
            points = share[unit]
            src, dst = sources[leg * n + i], dests[leg * n + i]
            node[2 * leg], own[2 * leg] = src, -points / capacity[src]
            node[2 * leg + 1], own[2 * leg + 1] = dst, points / capacity[dst]
        w = 0.0
        ok = True
        for m in range(roles):
            # The role-order sum over the roles on this node: a role elsewhere adds own x 0.0, a zero, which
            # leaves a sum unchanged but for the sign of a zero sum, and no result reads that sign (util is never
            # -0.0, so util + total, the cap test and the deviation are the same numbers).
            total = 0.0
            for k in range(roles):
                if node[k] == node[m]:
                    total += own[k]
            deviation, fits = _role(util[node[m]], staying[node[m]], total, all_staying, mean, cap_limit)
            w = max(w, deviation)
            ok = ok and fits
        worst[i] = w
        if ok and w < limit:
            delta_n, delta_c = 0, 0.0
            for leg in range(legs):
                unit = units[leg * n + i]
                dn, dc = _budget_of(
                    counts[unit], original[unit], state[unit], assignment[unit], dests[leg * n + i], costed
                )
                if leg == 0:
                    delta_n, delta_c = dn, dc
                else:
                    delta_n, delta_c = delta_n + dn, delta_c + dc
            if _fits(delta_n, delta_c, costed, used_moves, max_moves, used_cost, cost_limit):
                good[n_good] = i
                n_good += 1
    return worst, good[:n_good]


@njit(cache=True, nogil=True, error_model="numpy")
def rank_by_efficiency(index: np.ndarray, gain: np.ndarray, delta_c: np.ndarray, count: int) -> np.ndarray:
    """local_search.efficiency_order's first `count`: the candidates `index` by gain per unit of state spent (free
    steps first, as infinitely efficient; then paid steps whose quotient overflows, by the quotient scaled by
    2^-1200), then by gain, then in their order (np.lexsort is stable)."""
    n = len(index)
    kind = np.empty(n, np.int64)  # 0 free, 1 paid with an overflowing quotient, 2 paid
    value = np.empty(n)
    for i in range(n):
        cost = delta_c[index[i]]
        if cost > 0:
            value[i] = gain[index[i]] / cost
            kind[i] = 2
            if np.isinf(value[i]):
                value[i] = (gain[index[i]] * 2.0**-600) / (cost * 2.0**600)
                kind[i] = 1
        else:
            value[i] = 0.0
            kind[i] = 0
    chosen = np.empty(min(count, n), np.int64)  # positions into index, best first (insertion into the top)
    size = 0
    for i in range(n):
        # i goes before a chosen j when it ranks strictly better (later positions lose ties)
        at = size
        while at > 0:
            j = chosen[at - 1]
            better = kind[i] < kind[j] or (
                kind[i] == kind[j]
                and (-value[i] < -value[j] or (-value[i] == -value[j] and -gain[index[i]] < -gain[index[j]]))
            )
            if not better:
                break
            at -= 1
        if at >= len(chosen):
            continue
        last = min(size, len(chosen) - 1)
        for k in range(last, at, -1):
            chosen[k] = chosen[k - 1]
        chosen[at] = i
        size = min(size + 1, len(chosen))
    return index[chosen[:size]]


@njit(cache=True, nogil=True, error_model="numpy")
def _extreme_nodes(
    util: np.ndarray, active_nodes: np.ndarray, exclude: int, lowest: bool, count: int
) -> np.ndarray:
    """LocalSearch._extreme_nodes: the `count` least (or most) utilized of `active_nodes` other than `exclude`,
    ties by index."""
    nodes = active_nodes[active_nodes != exclude]
    if len(nodes) <= count:
        return nodes
    key = util[nodes] if lowest else -util[nodes]
    return nodes[np.argsort(key, kind="mergesort")[:count]]


@njit(cache=True, nogil=True, error_model="numpy")
def _migration_nodes(
    homes: bool,
    assignment: np.ndarray,
    original: np.ndarray,
    counts: np.ndarray,
    staying: np.ndarray,
    util: np.ndarray,
    count: int,
) -> np.ndarray:
    """LocalSearch._migration_nodes: the staying nodes where migrated units sit (or their homes), at most `count`
    of them (the least utilized, or with `homes` the most), ties by index."""
    touched = np.zeros(len(util), np.bool_)
    for unit in range(len(assignment)):
        if counts[unit] and assignment[unit] != original[unit]:
            touched[original[unit] if homes else assignment[unit]] = True
    nodes = np.flatnonzero(touched & staying)
    if len(nodes) <= count:
        return nodes
    key = -util[nodes] if homes else util[nodes]
    return nodes[np.argsort(key, kind="mergesort")[:count]]


@njit(cache=True, nogil=True, error_model="numpy")
def far_moves(
    node: int,
    over: bool,
    mine: np.ndarray,
    active_nodes: np.ndarray,
    assignment: np.ndarray,
    original: np.ndarray,
    counts: np.ndarray,
    movable: np.ndarray,
    staying: np.ndarray,
    util: np.ndarray,
    near_nodes: int,
    migration_nodes: int,
) -> tuple[np.ndarray, np.ndarray]:
    """LocalSearch._moves where the staying nodes are more than `near_nodes` (the same pairs in the same order):
    over, the worst node's units `mine` to the least utilized nodes and the nodes of migrated units (sorted, unit
    major), then the refunds home; under, onto it from the most utilized nodes, the homes of migrated units, the
    draining nodes, its own migrated units and every migrated unit, in unit order."""
    n_nodes = len(util)
    if over:
        near = np.zeros(n_nodes, np.bool_)
        near[_extreme_nodes(util, active_nodes, node, True, near_nodes)] = True
        near[_migration_nodes(False, assignment, original, counts, staying, util, migration_nodes)] = True
        near[node] = False
        dests = np.flatnonzero(near)
        n_back = 0
        for unit in mine:
            if counts[unit] and original[unit] != node:
                n_back += 1
        n_pairs = len(mine) * len(dests)
        units = np.empty(n_pairs + n_back, np.int64)
        moved_to = np.empty(n_pairs + n_back, np.int64)
        k = 0
        for unit in mine:
            for dest in dests:
                units[k], moved_to[k] = unit, dest
                k += 1
        for unit in mine:
            if counts[unit] and original[unit] != node:
                units[k], moved_to[k] = unit, original[unit]
                k += 1
        return units, moved_to
    source = ~staying
    source[_extreme_nodes(util, active_nodes, node, False, near_nodes)] = True
    source[_migration_nodes(True, assignment, original, counts, staying, util, migration_nodes)] = True
    units = np.empty(len(assignment), np.int64)
    n = 0
    for unit in range(len(assignment)):
        where = assignment[unit]
        if not movable[unit] or where == node:
            continue
        if source[where] or (counts[unit] and (original[unit] == node or where != original[unit])):
            units[n] = unit
            n += 1
    return units[:n], np.full(n, node, np.int64)


@njit(cache=True, nogil=True, error_model="numpy")
def tree_edges(src: np.ndarray, dst: np.ndarray, seed: int, size: int, n_nodes: int) -> np.ndarray:
    """solve._tree_edges in one call (the same edges in the same order): `size` of the edges (src[e], dst[e]),
    breadth first over the forest they form from node `seed`, each node's edges in index order, then from the
    source of the first edge not taken yet, until `size` are taken or none is left."""
    n_edges = len(src)
    # each node's edges in index order (compressed rows)
    starts = np.zeros(n_nodes + 1, np.int64)
    for e in range(n_edges):
        starts[src[e] + 1] += 1
        starts[dst[e] + 1] += 1
    for node in range(n_nodes):
        starts[node + 1] += starts[node]
    edges = np.empty(starts[n_nodes], np.int64)
    filled = starts[:n_nodes].copy()
    for e in range(n_edges):
        edges[filled[src[e]]] = e
        filled[src[e]] += 1
        if dst[e] != src[e]:
            edges[filled[dst[e]]] = e
            filled[dst[e]] += 1
    taken = np.zeros(n_edges, np.bool_)
    visited = np.zeros(n_nodes, np.bool_)
    queue = np.empty(n_nodes + n_edges + 1, np.int64)
    chosen = np.empty(min(size, n_edges), np.int64)
    n_chosen = 0
    first_free = 0
    while n_chosen < size:
        visited[seed] = True
        head, tail = 0, 1
        queue[0] = seed
        while head < tail and n_chosen < size:
            node = queue[head]
            head += 1
            for k in range(starts[node], filled[node]):
                e = edges[k]
                if taken[e]:
                    continue
                taken[e] = True
                chosen[n_chosen] = e
                n_chosen += 1
                if n_chosen >= size:
                    break
                other = dst[e] if src[e] == node else src[e]
                if not visited[other]:
                    visited[other] = True
                    queue[tail] = other
                    tail += 1
        while first_free < n_edges and taken[first_free]:
            first_free += 1
        if first_free == n_edges:
            break
        seed = src[first_free]
    return chosen[:n_chosen]


@njit(cache=True, nogil=True, error_model="numpy")
def forest_trees(
    src: np.ndarray, dst: np.ndarray, deviation: np.ndarray, n_nodes: int, below: float, max_nodes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The trees (connected components) of the forest of edges (src[e], dst[e]) whose nodes all have a deviation
    below `below`, of at most `max_nodes` nodes (recombine.TreePool.add): their edges (each tree's in index order,
    the trees by their first edge), the trees' offsets into them, their nodes (ascending) and offsets, and each
    tree's largest deviation. A union-find, linear in the nodes and edges."""
    n_edges = len(src)
    parent = np.arange(n_nodes)

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for e in range(n_edges):
        a, b = find(src[e]), find(dst[e])
        if a != b:
            parent[a] = b
    worst = np.zeros(n_nodes)
    size = np.zeros(n_nodes, np.int64)
    seen = np.zeros(n_nodes, np.bool_)
    for e in range(n_edges):
        for node in (src[e], dst[e]):
            if not seen[node]:
                seen[node] = True
                root = find(node)
                size[root] += 1
                worst[root] = max(worst[root], deviation[node])
    tree = np.full(n_nodes, -1, np.int64)  # per root: its tree's number, by first edge
    n_trees = 0
    edge_count = np.zeros(n_edges + 1, np.int64)
    for e in range(n_edges):
        root = find(src[e])
        if worst[root] < below and size[root] <= max_nodes:
            if tree[root] < 0:
                tree[root] = n_trees
                n_trees += 1
            edge_count[tree[root] + 1] += 1
    worsts = np.zeros(n_trees)
    for node in range(n_nodes):
        if tree[node] >= 0:  # (a root's tree number: its largest deviation is the tree's)
            worsts[tree[node]] = worst[node]
    edge_bounds = np.cumsum(edge_count[: n_trees + 1])
    edges = np.empty(edge_bounds[n_trees], np.int64)
    filled = edge_bounds[:n_trees].copy()
    node_count = np.zeros(n_trees + 1, np.int64)
    for e in range(n_edges):
        t = tree[find(src[e])]
        if t >= 0:
            edges[filled[t]] = e
            filled[t] += 1
    for node in range(n_nodes):
        if seen[node]:
            t = tree[find(node)]
            if t >= 0:
                node_count[t + 1] += 1
    node_bounds = np.cumsum(node_count)
    nodes = np.empty(node_bounds[n_trees], np.int64)
    filled = node_bounds[:n_trees].copy()
    for node in range(n_nodes):
        if seen[node]:
            t = tree[find(node)]
            if t >= 0:
                nodes[filled[t]] = node
                filled[t] += 1
    return edges, edge_bounds, nodes, node_bounds, worsts


@njit(cache=True, nogil=True, error_model="numpy")
def least_of(values: np.ndarray, index: np.ndarray, count: int) -> np.ndarray:
    """The `count` entries of `index` of least values[index], in order, ties in the order of `index`
    (index[np.argsort(values[index], kind="stable")[:count]]): the insertion sort for the few dozen nodes of most
    band repairs, a merge sort beyond."""
    if len(index) <= count:
        return least_first(values, index)
    return index[np.argsort(values[index], kind="mergesort")[:count]]


@njit(cache=True, nogil=True, error_model="numpy")
def lower_quartile(values: np.ndarray) -> float:
    """np.quantile(values, 0.25) (linear; at least two values), as local_search._lower_quartile computes it."""
    virtual = (len(values) - 1) * 0.25
    below = int(virtual)
    weight = virtual - below
    ordered = np.sort(values)
    a, b = ordered[below], ordered[below + 1]
    step = b - a
    return a + step * weight if weight < 0.5 else b - step * (1 - weight)


@njit(cache=True, nogil=True, error_model="numpy")
def fill_pick(
    landing: bool, score: np.ndarray, delta_c: np.ndarray, tolerance: float, costed: bool, draw: float
) -> int:
    """fill_band's choice among a step's candidates: of the best scores (landing: the most nodes landed; else the
    most excess taken off, within the tolerance), under a cost budget the cheapest quarter, the one at `draw`
    (a uniform number in [0, 1)) of them, in candidate order."""
    best = score.max() - (0.0 if landing else tolerance)
    top = np.flatnonzero(score >= best)
    if costed and len(top) > 1:
        cheapest = lower_quartile(delta_c[top])
        top = top[delta_c[top] <= cheapest]
    return top[int(draw * len(top))]


@njit(cache=True, nogil=True, error_model="numpy")
def fill_steps(
    draws: np.ndarray,
    util: np.ndarray,
    mean: float,
    fill_nodes: int,
    band: float,
    tolerance: float,
    movable: np.ndarray,
    assignment: np.ndarray,
    staying: np.ndarray,
    all_staying: bool,
    share: np.ndarray,
    capacity: np.ndarray,
    cap_limit: float,
    sizes: np.ndarray,
    by_size: np.ndarray,
    fill_units: int,
    counts: np.ndarray,
    original: np.ndarray,
    state: np.ndarray,
    costed: bool,
    used_moves: int,
    max_moves: int,
    used_cost: float,
    cost_limit: float,
) -> tuple[int, bool, np.ndarray, np.ndarray, np.ndarray, int, float]:
    """Up to len(draws) steps of LocalSearch.fill_band, each move applied in place (assignment, util) as `apply`
    does, one draw per step: band_state, the least utilized destinations and under nodes (least_of), scan_fill
    landing and, when no move lands a node, scan_fill taking excess off, fill_pick. Returns (the steps taken,
    whether the repair ended: every node inside the band, no giving unit or destination, or no candidate; the
    moved units, the nodes they left and reached, in order; the budget used after them)."""
    moved = np.empty(len(draws), np.int64)
    left = np.empty(len(draws), np.int64)
    reached = np.empty(len(draws), np.int64)
    for step in range(len(draws)):
        r, out, n_out, below, under = band_state(util, mean, staying, all_staying, band)
        if n_out == 0:
            return step, True, moved, left, reached, used_moves, used_cost
        dests = least_of(r, below, fill_nodes)
        under = least_of(r, under, fill_nodes)
        chosen = -1
        landing = True
        score, delta_c = np.empty(0), np.empty(0)
        units, moved_to = np.empty(0, np.int64), np.empty(0, np.int64)
        for landing in (True, False):
            going, score, delta_c, units, moved_to = scan_fill(
                landing,
                dests,
                under,
                r,
                out,
                band,
                tolerance,
                movable,
                assignment,
                staying,
                all_staying,
                share,
                capacity,
                util,
                cap_limit,
                sizes,
                by_size,
                fill_units,
                counts,
                original,
                state,
                costed,
                used_moves,
                max_moves,
                used_cost,
                cost_limit,
            )
            if not going:
                return step, True, moved, left, reached, used_moves, used_cost
            if len(score):
                chosen = fill_pick(landing, score, delta_c, tolerance, costed, draws[step])
                break
        if chosen < 0:
            return step, True, moved, left, reached, used_moves, used_cost
        unit, dest = units[chosen], moved_to[chosen]
        source, before, after = move_unit(unit, dest, assignment, util, share, capacity, counts, original)
        used_moves += int(after) - int(before)
        if costed:
            used_cost += (state[unit] if after else 0.0) - (state[unit] if before else 0.0)
        moved[step], left[step], reached[step] = unit, source, dest
    return len(draws), False, moved, left, reached, used_moves, used_cost


@njit(cache=True, nogil=True, error_model="numpy")
def _units_at_home(
    homes: np.ndarray, assignment: np.ndarray, original: np.ndarray, movable: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The movable, counted units at home on the nodes of `homes`, grouped by node in index order (a counting
    sort: the stable argsort): node v's are at_home[start[v]:start[v + 1]]."""
    n_nodes = len(homes)
    start = np.zeros(n_nodes + 1, dtype=np.int64)
    for w in range(len(assignment)):
        node = assignment[w]
        if node >= 0 and movable[w] and counts[w] and node == original[w] and homes[node]:
            start[node + 1] += 1
    for node in range(n_nodes):
        start[node + 1] += start[node]
    at_home = np.empty(start[n_nodes], dtype=np.int64)
    fill = start[:n_nodes].copy()
    for w in range(len(assignment)):
        node = assignment[w]
        if node >= 0 and movable[w] and counts[w] and node == original[w] and homes[node]:
            at_home[fill[node]] = w
            fill[node] += 1
    return start, at_home


@njit(cache=True, nogil=True, error_model="numpy")
def twins_of(
    migrated: np.ndarray,
    assignment: np.ndarray,
    original: np.ndarray,
    movable: np.ndarray,
    counts: np.ndarray,
    staying: np.ndarray,
    share: np.ndarray,
    state: np.ndarray,
    twins: int,
) -> tuple[np.ndarray, np.ndarray]:
    """LocalSearch._twin_candidates' pairs: per migration of `migrated` (in its order) whose home stays, the `twins`
    units at home there, movable, counted and cheaper in state, closest to it in load (|share difference|), ties by
    index, as the reference's stable sort. Returns (the migrations, repeated; their twins). One scan of the units
    (a counting sort by home) where the reference listed each home's units once per migration."""
    if twins <= 0:
        return migrated[:0].copy(), migrated[:0].copy()
    homes = np.zeros(len(staying), dtype=np.bool_)
    for r in migrated:
        if original[r] >= 0 and staying[original[r]]:
            homes[original[r]] = True
    start, at_home = _units_at_home(homes, assignment, original, movable, counts)
    pairs_r = np.empty(twins * len(migrated), dtype=np.int64)
    pairs_w = np.empty(twins * len(migrated), dtype=np.int64)
    kept = np.empty(max(twins, 1), dtype=np.int64)
    gaps = np.empty(max(twins, 1))
    k = 0
    for r in migrated:
        home = original[r]
        if home < 0 or not staying[home]:
            continue
        n_kept = 0
        for position in range(start[home], start[home + 1]):
            w = at_home[position]
            if not state[w] < state[r] or w == r:
                continue
            gap = abs(share[w] - share[r])
            if n_kept == twins and not gap < gaps[n_kept - 1]:
                continue  # (the later of equal gaps loses: the stable order)
            slot = n_kept if n_kept < twins else twins - 1
            while slot > 0 and gaps[slot - 1] > gap:
                kept[slot], gaps[slot] = kept[slot - 1], gaps[slot - 1]
                slot -= 1
            kept[slot], gaps[slot] = w, gap
            n_kept = min(n_kept + 1, twins)
        for j in range(n_kept):
            pairs_r[k], pairs_w[k] = r, kept[j]
            k += 1
    return pairs_r[:k], pairs_w[:k]


@njit(cache=True, nogil=True, error_model="numpy")
def funds_of(
    migrated: np.ndarray,
    routes: np.ndarray,
    assignment: np.ndarray,
    original: np.ndarray,
    share: np.ndarray,
    capacity: np.ndarray,
    state: np.ndarray,
    util: np.ndarray,
    movable: np.ndarray,
    counts: np.ndarray,
    mean: float,
    limit: float,
    cap_limit: float,
    twins: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """LocalSearch._funds before its final sort: the refunds of `migrated`, then per route (in its order) the
    `twins` cheapest twin exchanges that alone stay inside `limit` (a stable order by state within the route's
    home units in index order, as the reference's lexsort), with the reference's operations."""
    homes = np.zeros(len(util), dtype=np.bool_)
    for r in routes:
        homes[original[r]] = True
    start, at_home = _units_at_home(homes, assignment, original, movable, counts)
    total = len(migrated) + twins * len(routes)
    fund_x = np.empty(total, dtype=np.int64)
    fund_h = np.empty(total, dtype=np.int64)
    fund_out = np.empty(total)
    fund_in = np.empty(total)
    fund_n = np.empty(total, dtype=np.int64)
    fund_c = np.empty(total)
    fund_unit = np.empty(total, dtype=np.int64)
    fund_twin = np.empty(total, dtype=np.int64)
    k = 0
    for m in migrated:
        x, h = assignment[m], original[m]
        fund_x[k], fund_h[k] = x, h
        fund_out[k] = -share[m] / capacity[x]
        fund_in[k] = share[m] / capacity[h]
        fund_n[k], fund_c[k], fund_unit[k], fund_twin[k] = 1, state[m], m, -1
        k += 1
    kept = np.empty(len(at_home), dtype=np.int64)
    outs = np.empty(len(at_home))
    ins = np.empty(len(at_home))
    for r in routes:
        rx, rh = assignment[r], original[r]
        n_kept = 0
        for position in range(start[rh], start[rh + 1]):
            w = at_home[position]
            net = share[r] - share[w]
            out, into = -net / capacity[rx], net / capacity[rh]
            after_x, after_h = util[rx] + out, util[rh] + into
            if not (state[w] < state[r] and abs(after_x - mean) < limit and abs(after_h - mean) < limit):
                continue
            if not (out <= CAP_SLACK or after_x <= cap_limit):
                continue
            if not (into <= CAP_SLACK or after_h <= cap_limit):
                continue
            # a stable insertion by state (the reference's lexsort within the route)
            slot = n_kept
            while slot > 0 and state[kept[slot - 1]] > state[w]:
                kept[slot], outs[slot], ins[slot] = kept[slot - 1], outs[slot - 1], ins[slot - 1]
                slot -= 1
            kept[slot], outs[slot], ins[slot] = w, out, into
            n_kept += 1
        for j in range(min(n_kept, twins)):
            w = kept[j]
            fund_x[k], fund_h[k], fund_out[k], fund_in[k] = rx, rh, outs[j], ins[j]
            fund_n[k], fund_c[k], fund_unit[k], fund_twin[k] = 0, state[r] - state[w], r, w
            k += 1
    return (
        fund_x[:k],
        fund_h[:k],
        fund_out[:k],
        fund_in[:k],
        fund_n[:k],
        fund_c[:k],
        fund_unit[:k],
        fund_twin[:k],
    )


@njit(cache=True, nogil=True, error_model="numpy")
def fund_pairs(
    pair_src: np.ndarray,
    pair_dst: np.ndarray,
    pair_out: np.ndarray,
    pair_in: np.ndarray,
    pair_unit: np.ndarray,
    need_n0: np.ndarray,
    need_c0: np.ndarray,
    fund_x: np.ndarray,
    fund_h: np.ndarray,
    fund_out: np.ndarray,
    fund_in: np.ndarray,
    fund_n: np.ndarray,
    fund_c: np.ndarray,
    fund_unit: np.ndarray,
    fund_twin: np.ndarray,
    util: np.ndarray,
    staying: np.ndarray,
    mean: float,
    cap_limit: float,
    limit: float,
    max_funds: int,
) -> tuple[np.ndarray, np.ndarray]:
    """local_search._fund_pairs (the greedy of funded moves), the same operations in the same order: a node's
    total starts at 0.0 when the step first touches it (the reference's dict default), and the worst deviation is
    the maximum over the touched nodes (the same values, no NaN: their order is moot)."""
    pairs = len(pair_src)
    worst = np.full(pairs, np.inf)
    chosen = np.full((pairs, max_funds), -1, dtype=np.int64)
    n_nodes = len(util)
    total = np.zeros(n_nodes)
    mark = np.full(n_nodes, -1, dtype=np.int64)  # the pair that last touched the node
    touched = np.empty(2 + 2 * max_funds, dtype=np.int64)
    used = np.empty(1 + 2 * max_funds, dtype=np.int64)
    for p in range(pairs):
        s, t = pair_src[p], pair_dst[p]
        total[s] = pair_out[p]
        mark[s] = p
        touched[0] = s
        n_touched = 1
        if mark[t] != p:
            total[t] = 0.0
            mark[t] = p
            touched[n_touched] = t
            n_touched += 1
        total[t] = total[t] + pair_in[p]
        used[0] = pair_unit[p]
        n_used = 1
        need_n, need_c = need_n0[p], need_c0[p]
        taken = 0
        for f in range(len(fund_x)):
            if (need_n <= 0 and need_c <= 0.0) or taken == max_funds:
                break
            unit, twin = fund_unit[f], fund_twin[f]
            clash = False
            for k in range(n_used):
                if used[k] == unit or (twin >= 0 and used[k] == twin):
                    clash = True
                    break
            if clash:
                continue
            a, b = fund_x[f], fund_h[f]
            ta = (total[a] if mark[a] == p else 0.0) + fund_out[f]
            tb = (total[b] if mark[b] == p else 0.0) + fund_in[f]
            after_a, after_b = util[a] + ta, util[b] + tb
            if staying[a] and not abs(after_a - mean) < limit:
                continue
            if staying[b] and not abs(after_b - mean) < limit:
                continue
            if not (ta <= CAP_SLACK or after_a <= cap_limit) or not (tb <= CAP_SLACK or after_b <= cap_limit):
                continue
            if mark[a] != p:
                mark[a] = p
                touched[n_touched] = a
                n_touched += 1
            if mark[b] != p:
                mark[b] = p
                touched[n_touched] = b
                n_touched += 1
            total[a], total[b] = ta, tb
            used[n_used] = unit
            n_used += 1
            if twin >= 0:
                used[n_used] = twin
                n_used += 1
            chosen[p, taken] = f
            taken += 1
            need_n -= fund_n[f]
            need_c -= fund_c[f]
        if taken and need_n <= 0 and need_c <= 0.0:
            value = 0.0
            for k in range(n_touched):
                node = touched[k]
                if staying[node]:
                    value = max(value, abs(util[node] + total[node] - mean))
            worst[p] = value
    return worst, chosen


@njit(cache=True, nogil=True, error_model="numpy")
def least_after(
    order: np.ndarray,
    load: np.ndarray,
    held: np.ndarray,
    capacity: np.ndarray,
    limit: float,
    out: np.ndarray,
) -> int:
    """The repack's placement (solvers.milp.starts.repacked_plan): each unit of `order` in turn onto the node whose
    (held + load) / capacity is least (the first such, as np.argmin), `held` updated in place, its index in `out`;
    returns how many were placed before one would pass held + load > limit * capacity (len(order): all)."""
    n = held.shape[0]
    for k in range(order.shape[0]):
        unit_load = load[order[k]]
        best = 0
        best_value = (held[0] + unit_load) / capacity[0]
        for j in range(1, n):
            value = (held[j] + unit_load) / capacity[j]
            if value < best_value:
                best = j
                best_value = value
        if held[best] + unit_load > limit * capacity[best]:
            return k
        held[best] += unit_load
        out[k] = best
    return order.shape[0]


@njit(cache=True, nogil=True, error_model="numpy")
def best_split(
    x: int,
    y: int,
    units: np.ndarray,
    now: float,
    tolerance: float,
    assignment: np.ndarray,
    share: np.ndarray,
    capacity: np.ndarray,
    util: np.ndarray,
    mean: float,
    cap_limit: float,
    counts: np.ndarray,
    original: np.ndarray,
    state: np.ndarray,
    costed: bool,
    used_moves: int,
    max_moves: int,
    used_cost: float,
    cost_limit: float,
) -> int:
    """LocalSearch._best_split's choice of a split of `units` between nodes x and y (bit j of a split: unit j on
    y): the index of the split of least larger deviation, ties by fewer migrations, then the first; -1 when none
    lowers the pair's larger deviation `now` by more than `tolerance` within the cap and the budget. Every sum
    runs over the units in their order from 0.0, as the numpy code's do."""
    k = len(units)
    on_x = 0.0
    on_y = 0.0
    total = 0.0
    moved_before = 0
    cost_before = 0.0
    for j in range(k):
        unit = units[j]
        total += share[unit]
        if assignment[unit] == y:
            on_y += share[unit]
        else:
            on_x += share[unit]
        if counts[unit] and assignment[unit] != original[unit]:
            moved_before += 1
            cost_before += state[unit]
    rest_x = util[x] - on_x / capacity[x]
    rest_y = util[y] - on_y / capacity[y]
    best = -1
    best_worst = 0.0
    best_moves = 0
    for split in range(1 << k):
        to_y = 0.0
        for j in range(k):
            to_y += share[units[j]] if (split >> j) & 1 else 0.0
        util_x = rest_x + (total - to_y) / capacity[x]
        util_y = rest_y + to_y / capacity[y]
        worst = max(abs(util_x - mean), abs(util_y - mean))
        if not worst < now - tolerance:
            continue
        if not (util_x <= cap_limit or util_x <= util[x]) or not (util_y <= cap_limit or util_y <= util[y]):
            continue
        moved = 0
        cost = 0.0
        for j in range(k):
            unit = units[j]
            dest = y if (split >> j) & 1 else x
            migrated = counts[unit] and dest != original[unit]
            moved += 1 if migrated else 0
            cost += state[unit] if migrated else 0.0
        delta_n = moved - moved_before
        if used_moves + delta_n > max_moves:
            continue
        if costed and used_cost + (cost - cost_before) > cost_limit:
            continue
        if best < 0 or worst < best_worst or (worst == best_worst and delta_n < best_moves):
            best, best_worst, best_moves = split, worst, delta_n
    return best


@njit(cache=True, nogil=True, error_model="numpy")
def scan_pairs(
    x: int,
    partners: np.ndarray,
    first: int,
    pair_units: int,
    small: float,
    assignment: np.ndarray,
    movable: np.ndarray,
    share: np.ndarray,
    capacity: np.ndarray,
    util: np.ndarray,
    mean: float,
    cap_limit: float,
    counts: np.ndarray,
    original: np.ndarray,
    state: np.ndarray,
    costed: bool,
    used_moves: int,
    max_moves: int,
    used_cost: float,
    cost_limit: float,
    work: int,
) -> tuple[int, bool, np.ndarray, np.ndarray]:
    """LocalSearch.pair_balance's partners of node x from partners[first:] on, until a pair has an improving split
    (best_split, on the pair's `pair_units` largest units, x's then y's units ascending, as the numpy code orders
    them) or the pairs scanned have had `work` splits (at least one pair: the caller checks its deadline between
    calls). Returns the position of that partner and True with the split's units and their nodes; or the position
    to go on from and False; or -1 and False once every partner is scanned or a pair's larger deviation is at most
    `small` (the partners come by deviation)."""
    none = np.empty(0, np.int64)
    mine = units_on(x, assignment, movable)
    done = 0
    for position in range(first, len(partners)):
        if done >= work:
            return position, False, none, none
        y = partners[position]
        now = max(abs(util[x] - mean), abs(util[y] - mean))
        if now <= small:
            return -1, False, none, none
        units = np.concatenate((mine, units_on(y, assignment, movable)))
        if len(units) > pair_units:
            units = units[np.argsort(-share[units], kind="mergesort")[:pair_units]]
        if not len(units):
            continue
        done += 1 << len(units)
        tolerance = small * max(1.0, abs(mean), abs(util[x]), abs(util[y]))
        split = best_split(
            x, y, units, now, tolerance, assignment, share, capacity, util, mean, cap_limit,
            counts, original, state, costed, used_moves, max_moves, used_cost, cost_limit,
        )  # fmt: skip
        if split >= 0:
            dest = np.empty(len(units), np.int64)
            for j in range(len(units)):
                dest[j] = y if (split >> j) & 1 else x
            return position, True, units, dest
    return -1, False, none, none


def compile_all() -> None:
    """Compile every kernel for the types the search passes (or load it from the on-disk cache): a call of each on
    a two-node, two-unit plan. The search passes exactly these types (C-contiguous int64, float64 and bool arrays,
    Python or numpy scalars of the same kinds), so no later call compiles."""
    i = np.array([0, 1], dtype=np.int64)
    f = np.array([1.0, 2.0])
    b = np.array([True, False])
    evaluation = (f, f, f, b, True, 1.0, 2.0)
    budget = (b, i, f, False, 0, 1, 0.0, 1.0)
    calls: list[tuple[Callable[..., Any], tuple[Any, ...]]] = [
        (worst_node, (f, i, 1.0)),
        (units_on, (0, i, b)),
        (move_unit, (0, 0, i.copy(), f.copy(), f, f, b, i)),
        (least_first, (f, i)),
        (band_state, (f, 1.0, b, True, 1.0)),
        (scan_moves, (i, i, i, *evaluation, 1.0, *budget)),
        (scan_near_moves, (0, True, i, i, b, i, *evaluation, 1.0, *budget)),
        (scan_near_moves, (0, False, i, i, b, i, *evaluation, 1.0, *budget)),
        (scan_refunds, (i, i, i, i, i, *evaluation, 1.0)),
        (near_step, (i, b, i, *evaluation, 1e-9, *budget)),
        (sure_move, (1.0, f, i, b, 16)),
        (placement_keys, (i, 2)),
        (scan_compound, (i, i, i, i, i, *evaluation, 1.0, b, f, False, 0, 1, 0.0, 1.0)),
        (scan_swaps, (0, True, i, i, b, i, *evaluation, 1.0, 10, *budget)),
        (scan_legs, (2, i, i, i, i, *evaluation, 1.0, *budget)),
        (rank_by_efficiency, (i, f, f, 16)),
        (scan_fill, (True, i, i, f, b, 1.0, 1e-9, b, i, b, True, f, f, f, 2.0, f, i, 64, *budget)),
        (least_of, (f, i, 64)),
        (tree_edges, (i, i[::-1].copy(), 0, 1, 2)),
        (forest_trees, (i, i[::-1].copy(), f, 2, 3.0, 64)),
        (far_moves, (0, True, i, i, i, i, b, b, b, f, 64, 256)),
        (far_moves, (0, False, i[:0], i, i, i, b, b, b, f, 64, 256)),
        (lower_quartile, (f,)),
        (fill_pick, (True, f, f, 1e-9, False, 0.5)),
        (fill_steps, (f, f.copy(), 1.0, 64, 1.0, 1e-9, b, i.copy(), b, True, f, f, 2.0, f, i, 64, *budget)),
        (fund_pairs, (i, i, f, f, i, i, f, i, i, f, f, i, f, i, i, f, b, 1.0, 2.0, 1.0, 8)),
        (funds_of, (i, i, i, i, f, f, f, f, b, b, 1.0, 1.0, 2.0, 3)),
        (twins_of, (i, i, i, b, b, b, f, f, 3)),
        (least_after, (i, f, f.copy(), f, 1.0, i.copy())),
        (scan_pairs, (0, i, 0, 12, 1e-9, i, b, f, f, f, 1.0, 2.0, *budget, 1 << 16)),
    ]
    for kernel, args in calls:
        kernel(*args)

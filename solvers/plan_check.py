"""Independent plan validator: recomputes every number of a plan from the raw request and checks every invariant.

It works on the wire form (the request and response as plain JSON dicts: the service hands it the decoded body, or
for a small inline plan the request's validated fields' values, the same values, top-level defaults filled in and a
node's or unit's field left out as in the body; every default is applied here) and
shares no code with the adapter or `solvers.metrics`, so a bug there cannot hide itself here. The service runs it on
every plan before answering; tests run it on every plan they see.

Invariants: every unit assigned exactly once to a known or added node; pinned units stay; draining and removed nodes
receive nothing; removed nodes end empty; the moves list is exactly the diff of the two states with the right costs;
the budget holds; no receiving node ends above max(100 %, the peak before) nor above max(a resource capacity, its
usage before); the reported before/after statistics and lower bound agree with a recomputation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import compress, repeat
from operator import itemgetter, ne, not_
from typing import Any, Protocol

import numpy as np

REL_TOL = 1e-6
ABS_TOL = 1e-6
_MISSING = object()  # a key the plan does not report


def _close(a: float | None, b: float | None, scale: float = 1.0) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL * max(1.0, scale))


# A node series whose spread is at most this share of its size is constant (correlation undefined, counted as 0).
# Sums computed in another order can land on either side of such a line, so a value is accepted when it matches the
# recomputation with the line a little lower or a little higher, or lies between those two.
CONSTANT_SERIES = (1e-13, 1e-11)
# Series between the two lines are constant or not depending on where exactly the line is drawn: when several are,
# the value may lie outside the range of the two lines' (two such series counted as varying and a third not; found by
# the red team: a 500 "Plan failed validation"). Every line between the two counts the series whose spread is above
# it as varying. Up to this many series between the lines, the value of every choice of them is recomputed (rounding
# may reorder series of nearly the same spread; 2**8 at most; each line's own choice is among them); beyond, that of
# each line (one per series, added one at a time in the order of their spread). A claim matching one is accepted.
MAX_BETWEEN_LINES = 8


def _average_correlations(rows: np.ndarray, constant_below: tuple[float, float]) -> list[float]:
    """Mean Pearson correlation over all pairs of rows, in O(rows x windows): with z_i the centered rows scaled to unit
    length (0 for constant rows), sum over pairs i < j of z_i . z_j = (|sum z_i|^2 - sum |z_i|^2) / 2. The first
    two values are those with the lower and the higher constant-series line; then the values of the other choices of
    the rows between the lines as varying (see MAX_BETWEEN_LINES). The centered rows and their norms are computed
    once."""
    n = rows.shape[0]
    if n < 2:
        return [0.0 for _ in constant_below]
    centered = rows - rows.mean(axis=1, keepdims=True)
    norms = np.sqrt(np.einsum("ij,ij->i", centered, centered))
    size = np.maximum(1.0, np.abs(rows).max(axis=1))
    pairs = n * (n - 1) / 2.0

    def average(varying: np.ndarray) -> float:
        z = centered[varying] / norms[varying, None]
        total = z.sum(axis=0)
        return (float(total @ total) - float(np.einsum("ij,ij->", z, z))) / 2.0 / pairs

    values = [average(norms > line * size) for line in constant_below]
    low, high = min(constant_below), max(constant_below)
    between = np.flatnonzero((norms > low * size) & (norms <= high * size))
    if len(between) < 2:  # (none or one: the two lines' values are all there is)
        return values
    sure = norms > high * size
    if len(between) <= MAX_BETWEEN_LINES:
        # Every choice of them (the lines' own choices, the rows above each line, are among these).
        for choice in range(1, 2 ** len(between) - 1):  # (none and all of them: the two lines' values)
            varying = sure.copy()
            varying[between[[bool(choice >> b & 1) for b in range(len(between))]]] = True
            values.append(average(varying))
        return values
    # Each line between the two: the rows above it, added one at a time from the largest spread down.
    z = centered[sure] / norms[sure, None]
    total, squares = z.sum(axis=0), float(np.einsum("ij,ij->", z, z))
    for i in between[np.argsort(-(norms[between] / size[between]), kind="stable")].tolist():
        row = centered[i] / norms[i]
        total, squares = total + row, squares + float(row @ row)
        values.append((float(total @ total) - squares) / 2.0 / pairs)
    return values


def _node_series(unit_series: np.ndarray, where: np.ndarray, n_nodes: int) -> np.ndarray:
    """(nodes, windows) load of each node: its units' series summed (units at -1 count nowhere). Single loads in one
    bincount (the grouped sums below cost 6 numpy calls, most of this function's time on small plans)."""
    if unit_series.shape[1] == 1:
        placed = where >= 0
        return np.bincount(where[placed], weights=unit_series[placed, 0], minlength=n_nodes)[:, None]
    return _node_series_grouped(unit_series, where, n_nodes)


def _node_series_grouped(unit_series: np.ndarray, where: np.ndarray, n_nodes: int) -> np.ndarray:
    """`_node_series` for any number of windows: units grouped by node (one sort), each group summed."""
    placed = np.flatnonzero(where >= 0)
    order = placed[np.argsort(where[placed], kind="stable")]
    totals = np.zeros((n_nodes, unit_series.shape[1]))
    if len(order):
        nodes, starts = np.unique(where[order], return_index=True)
        totals[nodes] = np.add.reduceat(unit_series[order], starts, axis=0)
    return totals


def _variance(rows: np.ndarray, axis: int) -> np.ndarray:
    """rows.var(axis) by numpy's own steps (mean, deviations, mean square), without its Python wrapper (most of
    the cost on small arrays): the same numbers."""
    n = rows.shape[axis]
    deviation = rows - np.add.reduce(rows, axis=axis, keepdims=True) / n
    return np.add.reduce(deviation * deviation, axis=axis) / n


def _stats(
    unit_series: np.ndarray,
    unit_mean: np.ndarray,
    where: np.ndarray,
    capacity: np.ndarray,
    staying: np.ndarray,
) -> dict[str, Any]:
    """Statistics of one state, recomputed from the raw series: `where` holds each unit's node index (-1: none),
    `unit_mean` each unit's mean load, `staying` is a mask over the nodes. Linear in units x windows and nodes x
    windows. Reductions are called as ufunc methods: on small plans numpy's Python wrappers cost more than the
    sums."""
    n_nodes = len(capacity)
    totals = _node_series(unit_series, where, n_nodes)
    windows = unit_series.shape[1]
    total_load = float(np.add.reduce(unit_mean))
    node_mean = totals[:, 0] if windows == 1 else np.add.reduce(totals, axis=1) / windows
    util = 100.0 * node_mean / capacity
    mean_util = 100.0 * total_load / float(np.add.reduce(capacity[staying]))
    rows = totals[staying]
    util_staying = util[staying]
    per_window_variance = _variance(rows, 0)
    stats: dict[str, Any] = {
        "load_distance": float(np.maximum.reduce(np.abs(util_staying - mean_util))),
        "max_utilization": float(np.maximum.reduce(util)),
        "min_utilization": float(np.minimum.reduce(util_staying)),
        "imbalance": float(per_window_variance[-1]),
        "imbalance_total": float(np.add.reduce(per_window_variance)),
        "parallelism": int(np.count_nonzero(np.bincount(where[where >= 0], minlength=n_nodes))),
        "avg_load_correlation": None,
        "mean_node_load_variance": None,
        "min_mean_node_load_variance": None,
        # not a statistic of the plan: the size of the numbers, for the rounding tolerance of the comparisons
        "_peak_node_load": float(np.maximum.reduce(np.abs(totals), axis=None)) if totals.size else 0.0,
    }
    if windows >= 2:
        stats["avg_load_correlation"] = _average_correlations(rows, CONSTANT_SERIES)
        stats["mean_node_load_variance"] = float(np.add.reduce(_variance(rows, 1)) / len(rows))
        # Theorem 1 (Xing et al.): the mean node variance is at least var(total series) / n^2.
        stats["min_mean_node_load_variance"] = (
            float(_variance(np.add.reduce(rows, axis=0), 0)) / len(rows) ** 2
        )
    return stats


# Up to this many units, the statistics of single loads are recomputed on Python lists (`_single_load_stats`): numpy's
# per-call overhead would be most of the validator's time on such a plan.
SMALL_UNITS = 512


def _single_load_stats(
    unit_load: list[float],
    where_before: list[int],
    where_after: list[int],
    capacity: list[float],
    staying_before: list[bool],
    staying_after: list[bool],
) -> tuple[dict[str, Any], dict[str, Any], float]:
    """`_stats` of single loads before and after the plan on Python lists, and the total load: node sums unit by unit
    (both states in one pass), the other sums exact (math.fsum)."""
    n_nodes = len(capacity)
    # one slot more: a unit without a node (index -1) is summed into it, and it is dropped (counted nowhere)
    totals_before = [0.0] * (n_nodes + 1)
    totals_after = [0.0] * (n_nodes + 1)
    for node_before, node_after, load in zip(where_before, where_after, unit_load, strict=True):
        totals_before[node_before] += load
        totals_after[node_after] += load
    del totals_before[n_nodes], totals_after[n_nodes]
    total_load = math.fsum(unit_load)
    return (
        _single_load_state(totals_before, where_before, total_load, capacity, staying_before),
        _single_load_state(totals_after, where_after, total_load, capacity, staying_after),
        total_load,
    )


def _held_nodes(totals: list[float], where: list[int]) -> int:
    """How many nodes hold a unit (parallelism), given each node's sum and each unit's node (-1: none). A node whose
    sum is not 0.0 holds one (an empty node's sum stays the 0.0 it starts at): when every sum is, no pass over the
    units (most plans); else the set of their nodes."""
    if all(totals):
        return len(totals)
    held = set(where)
    held.discard(-1)
    return len(held)


def _single_load_state(
    totals: list[float], where: list[int], total_load: float, capacity: list[float], staying: list[bool]
) -> dict[str, Any]:
    """The statistics of one state from its node sums and the node each unit is on (-1: none)."""
    util = [100.0 * total / cap for total, cap in zip(totals, capacity, strict=True)]
    if all(staying):
        rows, util_staying, staying_capacity = totals, util, capacity
    else:
        rows, util_staying = list(compress(totals, staying)), list(compress(util, staying))
        staying_capacity = list(compress(capacity, staying))
    mean_util = 100.0 * total_load / math.fsum(staying_capacity)
    n_rows = len(rows)
    mean_row = math.fsum(rows) / n_rows
    variance = math.fsum([(row - mean_row) * (row - mean_row) for row in rows]) / n_rows
    peak_util, low_util = max(util_staying), min(util_staying)
    return {
        # the largest |u - mean| is at the largest or the smallest u (u - mean is monotone in u, and exact in sign)
        "load_distance": max(abs(peak_util - mean_util), abs(low_util - mean_util)),
        "max_utilization": max(util) if util_staying is not util else peak_util,
        "min_utilization": low_util,
        "imbalance": variance,
        "imbalance_total": variance,
        "parallelism": _held_nodes(totals, where),
        "avg_load_correlation": None,
        "mean_node_load_variance": None,
        "min_mean_node_load_variance": None,
        "_peak_node_load": max(max(totals), -min(totals)) if totals else 0.0,
        "_util": util,  # each node's utilization, for the capacity rule
    }


def _abs_close(reported: Any, computed: Any) -> bool:
    """Two floats within `_close`'s absolute tolerance (ABS_TOL x max(1, |computed|)): a sufficient test for
    `_matches` of a single number (it never accepts what `_matches` rejects), cheap enough to try first."""
    return (
        type(computed) is float
        and type(reported) is float
        and abs(reported - computed)
        <= ABS_TOL * max(1.0, abs(computed))
        < math.inf  # (an infinity: _close's call)
    )


def _matches(claimed: Any, computed: Any) -> bool:
    """A computed correlation is a list of values (see _average_correlations): the claim may lie anywhere between the
    first two (the two constant-series lines'), or match any of them."""
    if isinstance(computed, list):
        low, high = min(computed[:2]), max(computed[:2])
        return isinstance(claimed, float | int) and (
            low <= claimed <= high or any(_close(claimed, value) for value in computed)
        )
    return _close(claimed, computed, abs(computed) if isinstance(computed, float) else 1.0)


def _traffic_stats(
    request: Mapping[str, Any],
    total_load: float,
    unit_ids: list[str],
    where_before: Sequence[int] | np.ndarray,
    where_after: Sequence[int] | np.ndarray,
) -> tuple[dict[str, float | None], dict[str, float | None], float]:
    """Collocation factor (share of the traffic rate between units on one node) and load index (estimated load in
    percent of the state before, crossing traffic costing serialization_cost load units per unit of rate), before
    and after the plan, and how far another summation order of the crossing rates may put the load index (in
    points). One pass over the traffic (up to a million edges) to index it, then array operations."""
    traffic = request.get("traffic") or []
    if not traffic:  # no rate at all: no factor, nothing crosses (and no arrays to build)
        cost = request.get("serialization_cost")
        index = None if cost is None or total_load <= 0.0 else max(0.0, 100.0 * total_load / total_load)
        return (
            {"collocation_factor": None, "load_index": index},
            {"collocation_factor": None, "load_index": index},
            0.0,
        )
    position = dict(zip(unit_ids, range(len(unit_ids)), strict=True))
    nowhere = len(unit_ids)  # an unknown unit counts as placed nowhere
    src = np.array([position.get(t["src"], nowhere) for t in traffic], dtype=np.int64)
    dst = np.array([position.get(t["dst"], nowhere) for t in traffic], dtype=np.int64)
    rates = [float(t["rate"]) for t in traffic]
    rate = np.array(rates, dtype=np.float64)

    def crossing(where_known: Sequence[int] | np.ndarray) -> float:
        where = np.append(where_known, -1)
        apart = (where[src] < 0) | (where[src] != where[dst])
        return math.fsum(rate[apart].tolist())

    total_rate = math.fsum(rates)
    cost = request.get("serialization_cost")
    crossing_before = crossing(where_before)

    def stats(crossing_now: float) -> dict[str, float | None]:
        factor = None if total_rate <= 0.0 else 1.0 - crossing_now / total_rate
        index = None
        if cost is not None and total_load > 0.0:
            index = max(
                0.0, 100.0 * (total_load - float(cost) * (crossing_before - crossing_now)) / total_load
            )
        return {"collocation_factor": factor, "load_index": index}

    # The crossing rates are summed exactly here and pairwise (numpy) by the service: each of its two sums may be off
    # by (log2(edges) + 16) x eps x the total rate, which serialization_cost multiplies (a cost of 1e15 next to
    # rates of 7,000 and 1e-9 made 0.15 points; found by the red team).
    rounding = 0.0
    if cost is not None and total_load > 0.0:
        per_sum = (math.log2(max(len(rates), 2)) + 16.0) * 2.3e-16 * total_rate
        rounding = 100.0 * float(cost) * 2.0 * per_sum / total_load
    return stats(crossing_before), stats(crossing(where_after)), rounding


def _objects(values: list[Any]) -> np.ndarray:
    """A 1-d object array of exactly these values (np.array would read nested sequences as more dimensions)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


_MOVE_ROW = itemgetter("unit", "from", "to", "cost")


def _move_problems(
    moves: list[Any],
    unit_ids: list[str],
    unit_list: list[Any],
    all_nodes: list[str],
    after_list: list[int],
    moved_list: list[int],
    want_cost_list: list[float],
) -> list[str]:
    """The moves list against the diff of the assignment, move by move: a list that is not exactly the migrations'
    rows in unit order (another order, a field off within or beyond the tolerance, a missing, extra or repeated move)."""
    problems: list[str] = []
    reported_units = list(map(itemgetter("unit"), moves))
    expected_ids = [unit_ids[k] for k in moved_list]
    reported_set = set(reported_units)
    if len(reported_set) != len(moves):
        problems.append("a unit appears twice in moves")
    if reported_set != set(expected_ids):
        problems.append(
            f"moves list {sorted(reported_set)[:5]} does not match the diff of the assignment {sorted(expected_ids)[:5]}"
        )
    elif len(moves) == len(expected_ids):
        if reported_units != expected_ids:  # another order than the units': line the moves up with the units
            at = dict(zip(reported_units, moves, strict=True))
            moves = [at[u] for u in expected_ids]
        # Compared as whole columns (up to 250,000 moves): from, to, and the cost within _close's tolerance; as
        # lists first (exactly equal columns, the common case, in one C-level comparison each).
        src_list = list(map(dict.get, moves, repeat("from")))
        dst_list = list(map(itemgetter("to"), moves))
        cost_list = list(map(itemgetter("cost"), moves))
        want_src_list = [unit_list[k].get("node") for k in moved_list]
        want_dst_list = [all_nodes[after_list[k]] for k in moved_list]
        if src_list == want_src_list and dst_list == want_dst_list and cost_list == want_cost_list:
            wrong: list[int] = []
        else:
            want_cost = np.array(want_cost_list, dtype=np.float64).reshape(-1)
            cost = np.array(cost_list, dtype=np.float64).reshape(-1)
            tolerance = np.maximum(
                REL_TOL * np.maximum(np.abs(cost), np.abs(want_cost)), ABS_TOL * np.maximum(1.0, want_cost)
            )
            wrong = np.flatnonzero(
                (_objects(src_list) != _objects(want_src_list))
                | (_objects(dst_list) != _objects(want_dst_list))
                | ~(np.abs(cost - want_cost) <= tolerance)
            ).tolist()
        for j in wrong:
            k = moved_list[j]
            problems.append(
                f"move of {unit_ids[k]!r} reported as {(moves[j].get('from'), moves[j]['to'], float(moves[j]['cost']))}, "
                f"is {(unit_list[k].get('node'), all_nodes[after_list[k]], want_cost_list[j])}"
            )
    return problems


class UnitColumnLists(Protocol):
    """Each unit's value of one field (`id`, `node`, `load`), in the request's unit order."""

    def __getitem__(self, key: str) -> list[Any]: ...


def check_plan(
    request: Mapping[str, Any], plan: Mapping[str, Any], unit_columns: UnitColumnLists | None = None
) -> list[str]:
    """Every violation found, as sentences; an empty list means the plan is valid for the request.

    `unit_columns`: the units' ids, nodes and loads as lists, when the caller has listed them already from these very
    unit dicts (the service lists them for its cross-field checks: a C-level map each, as here; three lists of
    a small plan are 6 us of the validator's ~50). Only data is shared, no computation: the lists are read, never
    changed."""
    problems: list[str] = []
    nodes = {n["id"]: n for n in request["nodes"]}
    # Per-unit columns are read with map() over C-level getters: one pass each, no Python frame per unit (the
    # validator runs on every plan, up to 250,000 units).
    unit_list = list(request["units"])
    unit_ids = list(map(itemgetter("id"), unit_list)) if unit_columns is None else unit_columns["id"]
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

    # Per node, the request's then the added ones: its capacity, whether it stays before and after the plan (draining,
    # removed and marked nodes leave), whether it may receive a unit that moves, whether the plan removes it.
    if not (added or removed or marked):  # (most plans: the request's nodes only, fewer passes)
        all_nodes = list(nodes)
        capacity_list = list(map(float, map(dict.get, nodes.values(), repeat("capacity"), repeat(100.0))))
        blocked_mask = list(map(bool, map(dict.get, nodes.values(), repeat("draining"), repeat(False))))
        staying_before_list = staying_after_list = list(map(not_, blocked_mask))
        removed_mask = [False] * len(all_nodes)
    else:
        capacity = {n: float(nodes[n].get("capacity", 100.0)) for n in nodes}
        capacity.update(dict.fromkeys(added, new_capacity))
        all_nodes = list(nodes) + [n for n in added if n not in nodes]
        capacity_list = [capacity[n] for n in all_nodes]
        draining = {n for n in nodes if nodes[n].get("draining", False)}
        blocked_mask = [n in draining or n in marked for n in all_nodes]  # receive no unit that moves
        staying_before_list = [n in nodes and n not in draining for n in all_nodes]
        staying_after_list = [not (n in draining or n in removed or n in marked) for n in all_nodes]
        removed_mask = [n in removed for n in all_nodes]

    # Columns, one entry per unit in request order, each index looked up once. A plan of up to SMALL_UNITS units is
    # checked on Python lists (numpy's per-call overhead would be most of the time: 30 calls on 100 units); a larger
    # one with array operations, not a Python pass per unit (250,000 units). Both find the same units and rules.
    index = {n: i for i, n in enumerate(all_nodes)}
    n_all = len(all_nodes)
    assignment: Mapping[str, str] = plan.get("assignment", {})
    # Each unit's node after the plan; -2: not assigned, or to a node that does not exist (named below). An
    # assignment that names the units in request order (the service's) is read in that order, no lookup per unit;
    # its keys being distinct, so are the unit ids then.
    in_order = list(assignment) == unit_ids
    if in_order:
        after_list = list(map(index.get, assignment.values(), repeat(-2)))
    else:
        after_list = list(map(index.get, map(assignment.get, unit_ids), repeat(-2)))
    if -2 in after_list or (
        not in_order and (len(assignment) != len(unit_ids) or len(set(unit_ids)) != len(unit_ids))
    ):
        assigned_to = list(map(assignment.get, unit_ids))
        if None in assigned_to or len(assignment) != len(unit_ids) or len(set(unit_ids)) != len(unit_ids):
            units = dict(zip(unit_ids, unit_list, strict=True))
            missing = [u for u in units if u not in assignment]
            extra = [u for u in assignment if u not in units]
            if missing:
                problems.append(f"{len(missing)} units not assigned, e.g. {missing[:3]}")
            if extra:
                problems.append(f"{len(extra)} unknown units assigned, e.g. {extra[:3]}")
            if missing or extra:
                return problems
            # duplicate unit ids in the request (the service rejects those): check the last of each, as a dict keeps
            unit_list = list(units.values())
            unit_ids = list(units)
            unit_columns = None  # (listed for all the units: read again from the ones kept)
            assigned_to = list(map(assignment.get, unit_ids))
        after_list = list(map(index.get, assigned_to, repeat(-2)))
        if -2 in after_list:
            for k in [k for k, i in enumerate(after_list) if i == -2]:
                problems.append(f"unit {unit_ids[k]!r} assigned to unknown node {assigned_to[k]!r}")
            return problems
    n_units = len(unit_ids)
    # A unit without a node (None, or a node the request does not name) is nowhere before the plan. (Its node's
    # name is read again for the few units that move.)
    if unit_columns is not None:
        before_names = unit_columns["node"]
    else:
        try:
            before_names = list(map(itemgetter("node"), unit_list))
        except KeyError:  # (the wire form may leave a unit's node out)
            before_names = list(map(dict.get, unit_list, repeat("node")))
    before_list = list(map(index.get, before_names, repeat(-1)))
    small = n_units <= SMALL_UNITS
    where_before: Any = before_list
    where_after: Any = after_list
    if small:
        # the units on another node now (a C-level scan), then the rules on those few only
        changed_list = list(compress(range(n_units), map(ne, after_list, before_list)))
        broken = (any(removed_mask) and any(map(removed_mask.__getitem__, after_list))) or any(
            [unit_list[k].get("pinned", False) or blocked_mask[after_list[k]] for k in changed_list]
        )
    # As arrays: a plan too large for lists, or a broken one (named unit by unit below).
    if not small or broken:
        where_before = np.array(before_list, dtype=np.int64).reshape(n_units)
        where_after = np.array(after_list, dtype=np.int64).reshape(n_units)
        changed = where_after != where_before
        pinned = np.fromiter(
            map(dict.get, unit_list, repeat("pinned"), repeat(False)), dtype=bool, count=n_units
        )
    if not small:
        changed_list = np.flatnonzero(changed).tolist()
        # One test for the four rules first: a valid plan (every plan the service sends) breaks none.
        broken = bool(
            (
                np.array(removed_mask, dtype=bool)[where_after]
                | (changed & (pinned | np.array(blocked_mask, dtype=bool)[where_after]))
            ).any()
        )
    if broken:  # named unit by unit, as arrays whatever the size (only a broken plan gets here)
        removed_at = np.array(removed_mask, dtype=bool)[where_after]
        draining = {n for n in nodes if nodes[n].get("draining", False)}
        draining_mask = np.array([n in draining for n in all_nodes], dtype=bool)
        marked_mask = np.array([n in marked for n in all_nodes], dtype=bool)
        for k in np.flatnonzero(removed_at).tolist():
            problems.append(f"unit {unit_ids[k]!r} is on removed node {all_nodes[where_after[k]]!r}")
        for k in np.flatnonzero(changed & pinned).tolist():
            problems.append(
                f"pinned unit {unit_ids[k]!r} moved from {unit_list[k].get('node')!r} to "
                f"{all_nodes[where_after[k]]!r}"
            )
        for k in np.flatnonzero(changed & draining_mask[where_after]).tolist():
            problems.append(f"unit {unit_ids[k]!r} moved onto draining node {all_nodes[where_after[k]]!r}")
        for k in np.flatnonzero(changed & marked_mask[where_after]).tolist():
            problems.append(
                f"unit {unit_ids[k]!r} moved onto node {all_nodes[where_after[k]]!r} that the plan marks for removal"
            )
        return problems
    # Nodes that receive a unit; the units that migrate (placed before, elsewhere now) and their state sizes.
    receivers = {after_list[k] for k in changed_list}
    moved_list = [k for k in changed_list if before_list[k] >= 0]
    want_cost_list = [float(unit_list[k].get("state_size", 0.0)) for k in moved_list]
    moves = plan.get("moves", [])
    # The common case first: the moves in unit order, each exactly its migration's (unit, from, to, cost) row (one
    # C-level comparison; unit ids are distinct here, so no unit twice); any other list goes through the checks.
    try:
        exact = list(map(_MOVE_ROW, moves)) == [
            (unit_ids[k], unit_list[k].get("node"), all_nodes[after_list[k]], cost)
            for k, cost in zip(moved_list, want_cost_list, strict=True)
        ]
    except (KeyError, TypeError, IndexError):  # a move without a field, or not a mapping: named below
        exact = False
    if not exact:
        problems += _move_problems(
            list(moves), unit_ids, unit_list, all_nodes, after_list, moved_list, want_cost_list
        )
    count = len(moved_list)
    cost_total = math.fsum(want_cost_list)
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
    if plan.get("status") == "unchanged" and count:
        problems.append("status 'unchanged' but the plan moves units")
    # (A removed node that still holds units was named above, unit by unit.)

    # Loads: a single number is a series of one window.
    loads = list(map(itemgetter("load"), unit_list)) if unit_columns is None else unit_columns["load"]
    windows = len(loads[0]) if loads and isinstance(loads[0], list) else 1
    if windows == 1 and small and any(staying_before_list) and any(staying_after_list):
        # A small plan of single loads: on Python lists (numpy's per-call overhead would be most of the time). A
        # series of one window is a single load.
        if loads and isinstance(loads[0], list):
            loads = [series[0] for series in loads]
        before, after, total_load = _single_load_stats(
            loads, before_list, after_list, capacity_list, staying_before_list, staying_after_list
        )
        util_after: Any = after.pop("_util")
        before.pop("_util")
    else:
        # (arrays already for a plan of more than SMALL_UNITS units: no copy then)
        where_before = np.asarray(where_before, dtype=np.int64).reshape(n_units)
        where_after = np.asarray(where_after, dtype=np.int64).reshape(n_units)
        unit_series = np.array(loads, dtype=np.float64).reshape(n_units, windows)
        capacity_arr = np.array(capacity_list, dtype=np.float64)
        staying_before = np.array(staying_before_list, dtype=bool)
        staying_after = np.array(staying_after_list, dtype=bool)
        unit_mean = unit_series[:, 0] if windows == 1 else unit_series.mean(axis=1)
        before = _stats(unit_series, unit_mean, where_before, capacity_arr, staying_before)
        after = _stats(unit_series, unit_mean, where_after, capacity_arr, staying_after)
        total_load = math.fsum(unit_mean.tolist()) if n_units else 0.0
        util_after = 100.0 * np.bincount(where_after, weights=unit_mean, minlength=n_all) / capacity_arr
    # Added nodes hold nothing before the plan: they change no statistic of the before state.
    traffic_before, traffic_after, index_rounding = _traffic_stats(
        request, total_load, unit_ids, where_before, where_after
    )
    before.update(traffic_before)
    after.update(traffic_after)

    # Capacity: a receiving node may not end above 100 % or the peak before, whichever is higher.
    # (some unit on a node before the plan: parallelism before counts the nodes that hold one)
    # With no unit on any node before (an initial placement) the solvers' cap is 100 % or the mean utilization of
    # the staying nodes, whichever is higher (solvers.instance.utilization_cap): before 29 Nov this rule was off
    # then, and flux's plan that piled 2,000 units onto a few of 40 nodes (587 %) passed.
    if before["parallelism"] > 0:
        limit = max(100.0, before["max_utilization"])
    else:
        staying_capacity = math.fsum(compress(capacity_list, staying_before_list))
        limit = max(100.0, 100.0 * total_load / staying_capacity) if staying_capacity > 0 else math.inf
    over = limit * (1 + 1e-9) + 1e-9
    for i in sorted(receivers):
        if util_after[i] > over:
            problems.append(
                f"node {all_nodes[i]!r} receives units and ends at {util_after[i]:.3f}% utilization, over {limit:.3f}%"
            )
    # Further resources are hard caps on receiving nodes: a receiver ends within its capacity, or (a node already
    # over it before the plan, like the utilization rule above) not above its own usage before.
    usage: dict[tuple[int, str], float] = {}
    usage_before: dict[tuple[int, str], float] = {}
    # (only a node's capacity limits a resource: without one, no unit's usage needs reading; most snapshots)
    has_resources = any(map(dict.get, nodes.values(), repeat("resources"))) and any(
        map(dict.get, unit_list, repeat("resources"))
    )
    for k in [k for k, unit in enumerate(unit_list) if unit.get("resources")] if has_resources else []:
        for resource, amount in unit_list[k]["resources"].items():
            node_resource = (after_list[k], resource)
            usage[node_resource] = usage.get(node_resource, 0.0) + float(amount)
            if before_list[k] >= 0:
                was_held = (before_list[k], resource)
                usage_before[was_held] = usage_before.get(was_held, 0.0) + float(amount)
    for (i, resource), amount in usage.items():
        limit_r = (nodes.get(all_nodes[i], {}).get("resources") or {}).get(resource)
        if i not in receivers or limit_r is None:
            continue
        allowed = max(float(limit_r), usage_before.get((i, resource), 0.0))
        if amount > allowed * (1 + 1e-9) + 1e-9:
            problems.append(
                f"node {all_nodes[i]!r} uses {amount:g} of {resource!r}, over its capacity {limit_r:g}"
            )

    # Statistics are differences of large numbers (utilizations minus their mean, loads minus their mean): two
    # summation orders differ by rounding that grows with the size of the inputs, not of the result (nodes of 1e12
    # load with a variance of 0.12; found by the fuzz test). The tolerance follows the inputs' size.
    peak_util = max(abs(before["max_utilization"]), abs(after["max_utilization"]), 1.0)
    peak_load = max(before.pop("_peak_node_load"), after.pop("_peak_node_load"), 1.0)

    def rounding(key: str, value: Any) -> float | None:
        """How far two summation orders may put `key` apart, given the size of the inputs (None: no allowance)."""
        if key in ("load_distance", "max_utilization", "min_utilization"):
            return 1e-10 * peak_util
        if key == "load_index":
            return index_rounding
        summed = {"imbalance": 1, "mean_node_load_variance": 1, "imbalance_total": windows}.get(key)
        if summed is None or not isinstance(value, float | int):
            return None
        # (x - mean) carries an error of about eps x peak, squared next to a spread of sqrt(variance)
        spread = math.sqrt(abs(value) / summed)
        return 1e-13 * peak_load * (spread + 1e-13 * peak_load) * summed

    for label, computed in (("before", before), ("after", after)):
        claimed = plan.get(label) or {}
        for key, value in computed.items():
            reported = claimed.get(key, _MISSING)
            if reported == value:  # the common case, and cheaper than the tolerance (22 keys per plan)
                continue
            if _abs_close(reported, value):
                continue  # another summation order (most mismatches): cheaper than _matches and the allowance
            if reported is _MISSING:
                problems.append(f"{label}.{key} missing")
            elif not (
                _matches(reported, value)
                or (
                    (allowance := rounding(key, value)) is not None
                    and isinstance(reported, float | int)
                    and abs(reported - value) <= allowance
                )
            ):
                problems.append(f"{label}.{key} reported {reported}, recomputed {value}")
    floor, variance = after["min_mean_node_load_variance"], after["mean_node_load_variance"]
    # Both are variances of the same node series, recomputed here: where the nodes' fluctuations are alike the
    # theorem holds with equality, and each side carries a variance's `rounding` (loads of 2e13 fluctuating by 1.3
    # gave 1.67067 against 1.67177: a 500 on a valid plan, found by the fuzz test).
    if floor is not None and variance is not None:
        allowance = 1e-9 * floor + 1e-9 + (rounding("mean_node_load_variance", floor) or 0.0)
        if variance < floor - allowance:
            problems.append(f"mean node load variance {variance} is below the Theorem 1 minimum {floor}")
    bound = (plan.get("lower_bound") or {}).get("load_distance")
    # The load distance is a difference of utilizations: float rounding grows with their size (loads of 1e15 on a
    # node of 100 differ by several 0.01 points between two summation orders; found by the fuzz test).
    rounding = 1e-6 + 1e-10 * max(abs(after["max_utilization"] or 0.0), abs(before["max_utilization"] or 0.0))
    if bound is not None and bound > after["load_distance"] + rounding:
        problems.append(f"lower bound {bound} exceeds the plan's load distance {after['load_distance']}")
    return problems

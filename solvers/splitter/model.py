"""One call of the splitter model: counters in, new weights and the updated model out (Schneider et al., 3-5).

Pure: plain dataclasses and numpy arrays, no wire models. The caller (the service) keeps nothing; the returned
`SplitterMemory` goes back to the engine, which sends it with its next call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvers.instance import FloatArray, IntArray
from solvers.splitter.clustering import cluster_connections
from solvers.splitter.fox import fox_minimax
from solvers.splitter.functions import blocking_function

# Raw data points kept per connection; beyond that the least recently observed one is dropped, which bounds the
# model's size and forgets stale measurements first.
MAX_POINTS = 32
# Smoothing of a data point: the running mean of its first SMOOTHING_WINDOW observations, then an exponential moving
# average with gain 1/SMOOTHING_WINDOW. The rate at one weight is stable for a given load (paper Fig. 5) so averaging
# removes noise and averages the draft leader's high rate with the draftee's zero; the bounded window keeps a point
# following a change of load within a few intervals instead of being anchored to its whole history.
SMOOTHING_WINDOW = 4
AUTO_CLUSTERING_FROM = 16
MAX_NAMED_IN_NOTE = 5


def _ints() -> IntArray:
    return np.zeros(0, dtype=np.int64)


@dataclass
class ConnectionMemory:
    """A connection's raw data points, column by column: point k is (w[k], rate[k], n[k], seen[k])."""

    counter: float  # cumulative blocking seconds at the previous call
    w: IntArray = field(default_factory=_ints)  # weight of each point, 1..resolution, unique
    rate: FloatArray = field(default_factory=lambda: np.zeros(0))  # smoothed blocking rate there
    n: IntArray = field(default_factory=_ints)  # observations smoothed in (capped at SMOOTHING_WINDOW)
    seen: IntArray = field(default_factory=_ints)  # call number of the latest observation

    def smooth_in(self, w: int, rate: float, call: int) -> None:
        at = np.flatnonzero(self.w == w)
        if len(at):
            k = int(at[0])
            self.n[k] = min(int(self.n[k]) + 1, SMOOTHING_WINDOW)
            self.rate[k] += (rate - self.rate[k]) / self.n[k]
            self.seen[k] = call
        else:
            self.w = np.append(self.w, w)
            self.rate = np.append(self.rate, rate)
            self.n = np.append(self.n, 1)
            self.seen = np.append(self.seen, call)

    def keep(self, index: IntArray) -> None:
        self.w, self.rate, self.n, self.seen = (
            self.w[index],
            self.rate[index],
            self.n[index],
            self.seen[index],
        )


@dataclass
class SplitterMemory:
    resolution: int
    observed_at: float
    calls: int
    connections: dict[str, ConnectionMemory]


@dataclass(frozen=True)
class SplitterInput:
    ids: tuple[str, ...]
    weights: IntArray  # (N,) sum = resolution
    counters: FloatArray  # (N,) cumulative blocking seconds, >= 0
    observed_at: float
    resolution: int = 1000
    max_change: int | None = None
    exploration_decay: float = 0.1
    clustering: str = "auto"  # auto | on | off


@dataclass
class SplitterResult:
    weights: IntArray
    memory: SplitterMemory
    clusters: list[list[int]]  # connection indices per cluster
    predicted_max_blocking_rate: float
    notes: list[str]


def _named(ids: list[str]) -> str:
    shown = ", ".join(ids[:MAX_NAMED_IN_NOTE])
    return shown + (f" and {len(ids) - MAX_NAMED_IN_NOTE} more" if len(ids) > MAX_NAMED_IN_NOTE else "")


def blocking_rates(
    previous: FloatArray, current: FloatArray, elapsed_s: float
) -> tuple[FloatArray, np.ndarray]:
    """Blocking rate per connection over the last interval (Section 3) and which counters were reset.

    A counter that decreased was reset by the transport during the interval; the blocking accrued since the reset
    (its current value) is then the best available lower bound of the interval's blocking.
    """
    reset = current < previous
    delta = np.where(reset, current, current - previous)
    return delta / elapsed_s, reset


def rescale(memory: SplitterMemory, resolution: int) -> None:
    """Map the points of a model built at another resolution onto this one (merging points that coincide)."""
    for connection in memory.connections.values():
        w = np.clip(np.rint(connection.w * resolution / memory.resolution).astype(np.int64), 1, resolution)
        merged, group = np.unique(w, return_inverse=True)
        n = np.bincount(group, weights=connection.n)
        connection.rate = np.bincount(group, weights=connection.rate * connection.n) / n
        connection.n = np.minimum(n, SMOOTHING_WINDOW).astype(np.int64)
        seen = np.zeros(len(merged), dtype=np.int64)
        np.maximum.at(seen, group, connection.seen)
        connection.w, connection.seen = merged, seen
    memory.resolution = resolution


def even_split(total: int, lower: IntArray, upper: IntArray) -> IntArray:
    """Integers within [lower, upper] summing to `total`, as equal as the bounds allow (water-filling).

    The level L is the largest integer with sum(clip(L, lower, upper)) <= total; the units left over go one each to
    members sitting exactly at L, in order.
    """
    lo, hi = int(lower.min()), int(upper.max())
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if int(np.clip(mid, lower, upper).sum()) <= total:
            lo = mid
        else:
            hi = mid - 1
    shares = np.clip(lo, lower, upper)
    left = total - int(shares.sum())
    if left:
        room = np.flatnonzero((shares == lo) & (shares < upper))[:left]
        shares[room] += 1
    return shares


def update_weights(request: SplitterInput, memory: SplitterMemory | None) -> SplitterResult:
    """Learn from the interval since the previous call, then solve the minimax allocation for the next one."""
    n_connections = len(request.ids)
    resolution = request.resolution
    notes: list[str] = []
    weights = np.asarray(request.weights, dtype=np.int64)
    counters = np.asarray(request.counters, dtype=np.float64)

    if memory is None:
        memory = SplitterMemory(resolution, request.observed_at, 0, {})
    elif memory.resolution != resolution:
        notes.append(
            f"model built at resolution {memory.resolution}: its points were rescaled to {resolution}"
        )
        rescale(memory, resolution)
    call = memory.calls + 1

    vanished = [cid for cid in memory.connections if cid not in set(request.ids)]
    if vanished:
        notes.append(f"connections gone since the previous call, their data dropped: {_named(vanished)}")
    known = np.asarray([cid in memory.connections for cid in request.ids], dtype=bool)
    new_ids = [cid for cid, k in zip(request.ids, known, strict=True) if not k]
    if new_ids and memory.calls > 0:
        notes.append(f"new connections start with empty functions: {_named(new_ids)}")
    connections = [memory.connections.get(cid) or ConnectionMemory(counter=0.0) for cid in request.ids]

    elapsed = request.observed_at - memory.observed_at
    if memory.calls > 0 and elapsed <= 0:
        notes.append("observed_at is not after the previous call's: no blocking rates measured this call")
    if memory.calls > 0 and elapsed > 0 and known.any():
        previous = np.asarray([c.counter for c in connections])
        rates, reset = blocking_rates(previous, counters, elapsed)
        reset &= known
        if reset.any():
            ids = [cid for cid, r in zip(request.ids, reset, strict=True) if r]
            notes.append(f"blocking counter decreased (reset) on: {_named(ids)}")
        for measured in np.flatnonzero(known & (weights > 0)).tolist():
            connections[measured].smooth_in(int(weights[measured]), float(rates[measured]), call)

    # Exploration (Section 5.4): shrink the data above the current weight geometrically, so that F_j flattens there
    # over time and the optimisation tries higher weights again. The paper shrinks the function values; we shrink the
    # raw points they are built from, which with the monotone regression has the same effect and keeps the model
    # small (points, not a grid of R + 1 values per connection).
    keep = 1.0 - request.exploration_decay
    for j, connection in enumerate(connections):
        connection.counter = float(counters[j])
        connection.rate[connection.w > weights[j]] *= keep
        if len(connection.w) > MAX_POINTS:
            # Newest first; among equally recent points the ones nearest the current weight first.
            order = np.lexsort((np.abs(connection.w - weights[j]), -connection.seen))
            connection.keep(order[:MAX_POINTS])
        connection.keep(np.argsort(connection.w, kind="stable"))

    no_data = [cid for cid, c in zip(request.ids, connections, strict=True) if len(c.w) == 0]
    if no_data and memory.calls > 0:
        notes.append(f"no blocking data yet for: {_named(no_data)}")

    point_arrays = [np.vstack((c.w, c.rate, c.n)).astype(np.float64) for c in connections]
    values = np.empty((n_connections, resolution + 1))
    for j, (w, rate, count) in enumerate(point_arrays):
        values[j] = blocking_function(w, rate, count, resolution)

    if request.max_change is None:
        lower = np.zeros(n_connections, dtype=np.int64)
        upper = np.full(n_connections, resolution, dtype=np.int64)
    else:
        lower = np.maximum(weights - request.max_change, 0)
        upper = np.minimum(weights + request.max_change, resolution)

    use_clusters = request.clustering == "on" or (
        request.clustering == "auto" and n_connections >= AUTO_CLUSTERING_FROM
    )
    if use_clusters:
        max_point_rate = np.asarray([c.rate.max() if len(c.rate) else 0.0 for c in connections])
        labels = cluster_connections(values, max_point_rate)
    else:
        labels = np.arange(n_connections)
    n_clusters = int(labels.max()) + 1
    if n_clusters == n_connections:
        new_weights, predicted = fox_minimax(values, lower, upper, resolution, prefer=weights)
        clusters = [[j] for j in range(n_connections)]
    else:
        clusters = [np.flatnonzero(labels == c).tolist() for c in range(n_clusters)]
        new_weights, predicted = _solve_clustered(
            clusters, point_arrays, values, weights, lower, upper, resolution
        )

    memory.connections = dict(zip(request.ids, connections, strict=True))
    memory.observed_at = request.observed_at if memory.calls == 0 or elapsed > 0 else memory.observed_at
    memory.calls = call
    return SplitterResult(new_weights, memory, clusters, predicted, notes)


def _solve_clustered(
    clusters: list[list[int]],
    point_arrays: list[FloatArray],
    values: FloatArray,
    weights: IntArray,
    lower: IntArray,
    upper: IntArray,
    resolution: int,
) -> tuple[IntArray, float]:
    """Fox over one pooled function per cluster, then each cluster's weight shared evenly among its members.

    A cluster of n members holding W gives each about W/n, so its function G(W) is the members' blocking at W/n:
    the pooled points of all members, a member's point at weight w counting at W = n w.
    """
    cluster_values = np.empty((len(clusters), resolution + 1))
    for c, members in enumerate(clusters):
        if len(members) == 1:  # a singleton's pooled function is its own, already built
            cluster_values[c] = values[members[0]]
            continue
        w, rate, count = np.concatenate([point_arrays[j] for j in members], axis=1)
        cluster_values[c] = blocking_function(w * len(members), rate, count, resolution, pooled=True)
    index = [np.asarray(m) for m in clusters]
    cluster_weights, predicted = fox_minimax(
        cluster_values,
        np.asarray([lower[m].sum() for m in index]),
        np.asarray([upper[m].sum() for m in index]),
        resolution,
        prefer=np.asarray([weights[m].sum() for m in index]),
    )
    new_weights = np.zeros(len(weights), dtype=np.int64)
    for member_index, total in zip(index, cluster_weights.tolist(), strict=True):
        if len(member_index) == 1:  # a singleton takes its cluster's weight (Fox kept it within its bounds)
            new_weights[member_index[0]] = total
        else:
            new_weights[member_index] = even_split(total, lower[member_index], upper[member_index])
    return new_weights, predicted

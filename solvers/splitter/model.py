"""One call of the splitter model: counters in, new weights and the updated model out (Schneider et al., 3-5).

Pure: plain dataclasses and numpy arrays, no wire models. The caller (the service) keeps nothing; the returned
`SplitterMemory` goes back to the engine, which sends it with its next call.

Beyond the paper (issue 12: regions whose membership changes in production), each documented where it acts:
- evidence-limited steps: a connection's weight rises by at most an eighth of itself (or a probe share) per call,
  and its function keeps rising beyond the highest weight it has been observed at (functions.py);
- newcomers get a small probe share instead of waiting for a saturated region to hand them load;
- exploration backs off per connection (a re-exploration that blocked again halves that connection's decay) and the
  decay follows elapsed time, not the number of calls;
- steady weights: an interval that starts with a weight change counts only for the time after a transition
  allowance, and weights change only when the predicted gain exceeds the measurement noise;
- throughput evidence (optional tuple counts): a zero read while the worker took almost nothing (a stall, drafting,
  a buffer filling) is no evidence that the weight is safe, and a probe whose worker falls behind fails.
"""

from __future__ import annotations

import functools
import itertools
import math
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from solvers.instance import FloatArray, IntArray
from solvers.splitter.clustering import cluster_by_features, fitted_features, function_features
from solvers.splitter.fox import fox_minimax, minimax_at_least
from solvers.splitter.functions import FittedRows, blocking_functions_flat, fit_rows, select_rows, tabulate

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
# Calls saturate here (the largest integer JSON carries exactly), so a model never overflows its own counter.
MAX_CALLS = 2**53
# Intervals shorter than this measure nothing (counters and time carry over to the next call): a rate over a
# microsecond is noise, and over 1e-300 s it overflows to infinity.
MIN_INTERVAL_S = 1e-3
# One splitter thread cannot block longer than the elapsed time; counters that say otherwise (clock skew, a counter
# summed over threads) are clamped so that a point stays a finite number the next call accepts.
MAX_BLOCKING_RATE = 1e6
# The region's reference throughput (tuples/s) is clamped here, for the same reason.
MAX_TUPLE_RATE = 1e15
# The paper applies its 10% decay once per iteration with statistics every second; we apply it per second of
# elapsed time, so that an engine calling every 100 ms explores as often in time as one calling every second.
DECAY_REFERENCE_S = 1.0
# A re-exploration that blocked again halves the connection's decay, down to this fraction of exploration_decay; one
# that did not block restores it (doubling). A dead connection then costs a handful of stalls per hour, not one a
# minute.
MIN_DECAY_SCALE = 1.0 / 64
# A raise is judged clean (the decay restored) only after this long at the raised weight without blocking.
CLEAN_AFTER_S = 10.0
# A re-exploration from weight 0 that blocked again holds the connection at 0 for HOLD_S / decay_scale seconds,
# the scale halved first: 30 s, 60 s, ... 16 minutes at the floor. The decay alone re-explores as soon as the
# points above the weight sink below the region's current blocking level, and in a saturated region that level is
# high (someone always blocks), so a dead connection came back every ~20-80 s whatever its back-off (6-9 times in
# 300 s); the hold makes the back-off a time: about four stalls in the first five minutes, four an hour at the
# floor. Only from 0: a connection that holds load may be the only place for it (holding it would starve a fall
# elsewhere).
HOLD_S = 15.0
# "Blocked again": the rate measured at the raised weight exceeds the rate predicted there by this factor plus the
# noise floor.
BLOCKED_AGAIN_FACTOR = 2.0
# Measurement noise of a blocking rate (seconds per second): weights move only when the predicted maximum blocking
# rate improves by more than the noise: max(NOISE_RATE, NOISE_SHARE x the current maximum, the standard error of
# the point that attains it). The standard error counts at most half the current maximum: a point whose level just
# shifted (a dead connection measured after a re-exploration) has a large variance too, and halving the blocking
# is always worth a move. The paper re-optimises every call; in a saturated region blocking is bang-bang (the
# draft leader blocks ~100% of an interval, the others 0%), so most of those moves trade one noisy point against
# another and, with transition intervals, cause the swings of Fig. 11.
NOISE_RATE = 2e-3
NOISE_SHARE = 0.02
# The first TRANSITION_S seconds after a connection's weight changed measure the previous weight's backlog (a full
# send buffer draining at the difference of two rates), not the new weight: an interval counts for the new weight
# only with the share of its time after that.
TRANSITION_S = 0.5
# Tuples sent and in flight (optional, per connection; issue 12, Fig. 10). A zero blocking rate means "kept up with
# what it was sent", and in a stall (the splitter waits on one slow connection) every other connection is sent almost
# nothing: its zero is no evidence that its weight is safe (those zeros kept 100x workers at weights 60-80 in
# Fig. 10's first minute, and drafting followers' zeros kept them at 2-3 instead of 1 for good). With the tuples
# the worker took in the interval (sent minus the change of those in flight), a zero counts only when the worker
# took at least STALLED_SHARE of what its weight gets at the region's reference throughput: the highest it has
# taken (tuples/s), which halves every REFERENCE_HALF_LIFE_S without a new high so that a region that lost capacity
# for good re-learns its reference within minutes. Blocking is always evidence (it happened at that weight).
REFERENCE_HALF_LIFE_S = 600.0
STALLED_SHARE = 0.5
# A re-exploration from 0 also fails when its worker took less than half of what it was sent in the interval (at
# least BACKLOG_MIN_SENT sent): its buffer is filling and it will block once full (a dead worker's 16-tuple buffer
# takes seconds to fill at a probe share, and the stall it then causes shows on the healthy connections' counters,
# not its own).
BACKLOG_MIN_SENT = 2
# Probe share of a newcomer: 1/(8N) of the resolution, at most 2% (a 100x slow newcomer must never get a large
# share before it has been measured), at least one unit.
PROBE_SHARE_OF_EVEN = 1 / 8
# Evidence-limited steps: a weight rises by at most an eighth of itself (or a probe share) per call.
RISE_DIVISOR = 8
MAX_PROBE_SHARE = 0.02


def _ints() -> IntArray:
    return np.zeros(0, dtype=np.int64)


NEVER = float("-inf")  # "no time" for changed_at and held_until (null in the wire model)


@dataclass
class ConnectionMemory:
    """A connection's raw data points, column by column: point k is (w[k], rate[k], n[k], seen[k]), and the state of
    its weight: the weight returned at the previous call, the one before, when it changed, the blocking rate the
    model predicted at it, and its exploration back-off."""

    counter: float  # cumulative blocking seconds at the previous call
    w: IntArray = field(default_factory=_ints)  # weight of each point, 1..resolution, unique
    rate: FloatArray = field(default_factory=lambda: np.zeros(0))  # smoothed blocking rate there
    n: IntArray = field(default_factory=_ints)  # observations smoothed in (capped at SMOOTHING_WINDOW)
    seen: IntArray = field(default_factory=_ints)  # call number of the latest observation
    var: FloatArray = field(
        default_factory=lambda: np.zeros(0)
    )  # smoothed variance of the observations there
    weight: int = -1  # weight returned at the previous call (-1: none yet)
    previous_weight: int = -1  # the weight before that one (-1: none)
    changed_at: float = NEVER  # observed_at of the call that changed the weight
    expected_rate: float = 0.0  # F(weight) when the weight was changed to it
    decay_scale: float = 1.0  # this connection's share of exploration_decay
    # observed_at before which the weight stays 0 (a re-exploration from 0 that blocked again)
    held_until: float = NEVER
    sent: float = -1.0  # cumulative tuples sent, at the previous call (-1: not reported)
    taken: float = -1.0  # cumulative tuples its worker took (sent minus in flight), at the previous call
    failed_now: bool = False  # a raise judged failed in this call (not raised again in it; not in the model)

    def smooth_in(self, w: int, rate: float, call: int, credit: float = 1.0, at: int | None = None) -> None:
        """Smooth one measurement into the point at w; `credit` (0..1] is the share of the interval that was spent
        at w (a transition counts less). `at`: the index of the point at w if known (-1: none)."""
        if at is None:
            found = np.flatnonzero(self.w == w)
            at = int(found[0]) if len(found) else -1
        if at >= 0:
            k = at
            n = min(int(self.n[k]) + 1, SMOOTHING_WINDOW)
            self.n[k] = n
            # Python floats (the same IEEE operations as on numpy scalars, without their overhead).
            gain = credit / n
            before = float(self.rate[k])
            self.rate[k] = before + gain * (rate - before)
            # Exponentially weighted variance (West's update), same gain as the mean.
            self.var[k] = (1.0 - gain) * (float(self.var[k]) + gain * (rate - before) ** 2)
            self.seen[k] = call
        else:
            self.w = np.append(self.w, w)
            self.rate = np.append(self.rate, rate)
            self.n = np.append(self.n, 1)
            self.seen = np.append(self.seen, call)
            self.var = np.append(self.var, 0.0)

    def keep(self, index: IntArray) -> None:
        self.w, self.rate, self.n, self.seen, self.var = (
            self.w[index],
            self.rate[index],
            self.n[index],
            self.seen[index],
            self.var[index],
        )

    def standard_error(self, w: int) -> float:
        """Standard error of the smoothed rate at w (0 without a point or with one observation)."""
        at = np.flatnonzero(self.w == w)
        return float(np.sqrt(self.var[at[0]] / self.n[at[0]])) if len(at) else 0.0


@dataclass
class SplitterMemory:
    resolution: int
    observed_at: float
    calls: int
    connections: dict[str, ConnectionMemory]
    reference_rate: float = 0.0  # tuples/s the region's workers took at best recently (0: none yet)


@dataclass(frozen=True)
class SplitterInput:
    ids: tuple[str, ...]
    weights: IntArray  # (N,) sum = resolution
    counters: FloatArray  # (N,) cumulative blocking seconds, >= 0
    observed_at: float
    resolution: int = 1000
    max_change: int | None = None  # None: evidence-limited steps
    exploration_decay: float = 0.1  # per DECAY_REFERENCE_S of elapsed time
    clustering: str = "auto"  # auto | on | off
    steady: bool = (
        True  # False: the paper's variant (re-optimise every call, no noise gate, no transition credit)
    )
    sent: FloatArray | None = None  # (N,) cumulative tuples sent per connection (None: not reported)
    in_flight: FloatArray | None = None  # (N,) of those, not yet taken into service by the worker (None: 0)

    @functools.cached_property
    def taken(self) -> FloatArray | None:
        """(N,) cumulative tuples each worker took into service (sent minus in flight), or None: not reported."""
        if self.sent is None:
            return None
        return self.sent - (0.0 if self.in_flight is None else self.in_flight)


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
    (its current value) is then the best available lower bound of the interval's blocking. Rates are clamped to
    [0, MAX_BLOCKING_RATE] (finite whatever the counters and the interval).
    """
    reset = current < previous
    delta = np.where(reset, current, current - previous)
    with np.errstate(over="ignore", divide="ignore"):
        rates = delta / elapsed_s
    return np.minimum(rates, MAX_BLOCKING_RATE), reset


def rescale(memory: SplitterMemory, resolution: int) -> None:
    """Map the points of a model built at another resolution onto this one (merging points that coincide)."""
    for connection in memory.connections.values():
        w = np.clip(np.rint(connection.w * resolution / memory.resolution).astype(np.int64), 1, resolution)
        merged, group = np.unique(w, return_inverse=True)
        n = np.bincount(group, weights=connection.n)
        # Rate and variance both weighted by each point's own observations (before the counts are merged and
        # capped: the merged counts are fewer, one per merged point).
        connection.rate = np.bincount(group, weights=connection.rate * connection.n) / n
        connection.var = np.bincount(group, weights=connection.var * connection.n) / n
        connection.n = np.minimum(n, SMOOTHING_WINDOW).astype(np.int64)
        seen = np.zeros(len(merged), dtype=np.int64)
        np.maximum.at(seen, group, connection.seen)
        connection.w, connection.seen = merged, seen
        connection.weight = connection.previous_weight = -1  # weights at another resolution say nothing here
    memory.resolution = resolution


def even_split(total: int, lower: IntArray, upper: IntArray) -> IntArray:
    """Integers within [lower, upper] summing to `total`, as equal as the bounds allow (water-filling).

    The level L is the largest integer with sum(clip(L, lower, upper)) <= total; the units left over go one each to
    members sitting exactly at L, in order.
    """
    members = len(lower)
    base, extra = divmod(total, members)
    if int(lower.max()) <= base and int(upper.min()) >= base + (
        extra > 0
    ):  # the bounds do not bind: closed form
        shares = np.full(members, base, dtype=np.int64)
        shares[:extra] += 1
        return shares
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


def probe_share(n_connections: int, resolution: int) -> int:
    """A newcomer's first weight: small enough that a very slow newcomer costs little before it is measured."""
    return max(
        1, min(int(resolution * PROBE_SHARE_OF_EVEN / n_connections), int(resolution * MAX_PROBE_SHARE))
    )


def _measure(
    request: SplitterInput,
    memory: SplitterMemory,
    connections: list[ConnectionMemory],
    known: np.ndarray,
    call: int,
    notes: list[str],
) -> bool:
    """Smooth the interval's blocking rates into the points at the weights in force; adjust each connection's
    exploration back-off. Returns whether the interval was measured (else counters and time carry over)."""
    elapsed = request.observed_at - memory.observed_at
    weights, counters = request.weights, request.counters
    if memory.calls == 0 or not known.any():
        return True
    if elapsed <= 0:
        notes.append("observed_at is not after the previous call's: no blocking rates measured this call")
        return False
    if elapsed < MIN_INTERVAL_S:
        notes.append(
            f"interval shorter than {MIN_INTERVAL_S * 1000:g} ms: measured together with the next one"
        )
        return False
    previous = np.asarray([c.counter for c in connections])
    rates, reset = blocking_rates(previous, counters, elapsed)
    reset &= known
    if reset.any():
        notes.append(
            f"blocking counter decreased (reset) on: {_named([request.ids[j] for j in np.flatnonzero(reset)])}"
        )
    clamped = known & (rates >= MAX_BLOCKING_RATE)
    if clamped.any():
        notes.append(
            f"blocking rate above {MAX_BLOCKING_RATE:g} s/s clamped on: "
            f"{_named([request.ids[j] for j in np.flatnonzero(clamped)])}"
        )
    stalled_zero, backlogged = _throughput_evidence(request, memory, connections, known, rates, elapsed)
    point_at = _point_at_weight(connections, weights).tolist()
    # Python lists: the loop reads one element of each per connection (numpy scalars cost more than the work).
    weight_list, rate_list = weights.tolist(), rates.tolist()
    stalled_list, backlogged_list = stalled_zero.tolist(), backlogged.tolist()
    for j in np.flatnonzero(known & (weights > 0)).tolist():
        connection, w, rate = connections[j], weight_list[j], rate_list[j]
        # Time at each weight inside the interval: the weight we returned at the previous call came into force
        # then; its first TRANSITION_S seconds belong to the change, not to w.
        changed_now = (
            connection.weight == w
            and connection.previous_weight != w
            and connection.changed_at >= memory.observed_at
        )
        credit = 1.0
        if changed_now and request.steady:
            credit = min(max((elapsed - TRANSITION_S) / elapsed, 0.0), 1.0)
        # A raised weight is on probation until judged: blocked again (any interval at it) halves the decay; clean
        # CLEAN_AFTER_S after the raise restores it. Judged, the raise is closed (previous = current). Not judged
        # clean sooner: a stall in progress is on no counter yet (select() returns first), and a small probe on a
        # dead worker blocks only once its send buffer is full (seconds later).
        on_probation = connection.weight == w and w > connection.previous_weight >= 0
        if on_probation:
            noise = max(NOISE_RATE, NOISE_SHARE * connection.expected_rate)
            if rate > BLOCKED_AGAIN_FACTOR * connection.expected_rate + noise or (
                backlogged_list[j] and connection.previous_weight == 0
            ):
                connection.decay_scale = max(connection.decay_scale / 2, MIN_DECAY_SCALE)
                if request.steady:
                    connection.failed_now = True
                    if connection.previous_weight == 0 and request.exploration_decay > 0:
                        connection.held_until = request.observed_at + HOLD_S / connection.decay_scale
                connection.previous_weight = w
            elif (
                request.observed_at - connection.changed_at >= CLEAN_AFTER_S
                and rate <= connection.expected_rate + noise
            ):
                connection.decay_scale = min(connection.decay_scale * 2, 1.0)
                connection.previous_weight = w
        if not stalled_list[j] and (credit > 0.0 or point_at[j] < 0):
            connection.smooth_in(w, rate, call, max(credit, 1e-3), point_at[j])
    return True


def _point_at_weight(connections: list[ConnectionMemory], weights: IntArray) -> IntArray:
    """Per connection, the index of its point at its weight (one connection's points never share a weight), or -1:
    for all connections in one vectorised pass."""
    sizes = np.fromiter((len(c.w) for c in connections), dtype=np.int64, count=len(connections))
    found = np.full(len(connections), -1, dtype=np.int64)
    if not sizes.any():
        return found
    owner = np.repeat(np.arange(len(connections)), sizes)
    hits = np.flatnonzero(np.concatenate([c.w for c in connections]) == weights[owner])
    found[owner[hits]] = hits - (np.cumsum(sizes) - sizes)[owner[hits]]
    return found


def _throughput_evidence(
    request: SplitterInput,
    memory: SplitterMemory,
    connections: list[ConnectionMemory],
    known: np.ndarray,
    rates: FloatArray,
    elapsed: float,
) -> tuple[np.ndarray, np.ndarray]:
    """From the tuples sent and in flight (when reported): which connections read a zero that is no evidence (a
    stall, see STALLED_SHARE) and which fell behind what they were sent (BACKLOG_MIN_SENT). Updates the region's
    reference throughput."""
    nothing = np.zeros(len(request.weights), dtype=bool)
    sent, taken = request.sent, request.taken
    if sent is None or taken is None:
        return nothing, nothing
    taken_before = np.fromiter((c.taken for c in connections), dtype=np.float64, count=len(connections))
    sent_before = np.fromiter((c.sent for c in connections), dtype=np.float64, count=len(connections))
    taken_now, sent_now = taken - taken_before, sent - sent_before
    # Not reported before by every connection, or a counter reset: no region total this interval.
    if not np.all((sent_before[known] >= 0) & (taken_before[known] >= 0) & (taken_now[known] >= 0)):
        return nothing, nothing
    backlogged = known & (sent_now >= BACKLOG_MIN_SENT) & (taken_now < sent_now / 2)
    taken_rate = taken_now / elapsed
    reference = max(
        float(taken_rate[known].sum()), memory.reference_rate * 0.5 ** (elapsed / REFERENCE_HALF_LIFE_S)
    )
    memory.reference_rate = reference = min(reference, MAX_TUPLE_RATE)
    share = taken_rate * request.resolution / reference if reference > 0 else request.weights
    stalled_zero = known & (rates <= 0) & (share < STALLED_SHARE * request.weights)
    return stalled_zero, backlogged


def _bounds(
    request: SplitterInput, connections: list[ConnectionMemory], newcomers: np.ndarray
) -> tuple[IntArray, IntArray]:
    """Per-connection bounds m_j <= w_j <= M_j (Section 5.2).

    Given `max_change`, the paper's symmetric bounds. By default (evidence-limited steps) a connection may fall
    freely (taking load away is what relieves blocking) but rise by at most max(probe, w_j / RISE_DIVISOR) per call:
    above its current weight its function is an extrapolation or decayed old data, and one call must not bet the
    region on it (a 100x newcomer jumped from weight 2 to 335 in one call; Fig. 11 re-explorations jumped 18 points).
    A connection that keeps up grows geometrically, so a fast newcomer reaches its fair share in a few calls.
    A newcomer starts at a probe share."""
    resolution = request.resolution
    weights = request.weights
    probe = probe_share(len(connections), resolution)
    if request.max_change is not None:
        step = min(request.max_change, resolution)
        lower = np.maximum(weights - step, 0)
        upper = np.minimum(weights + step, resolution)
    else:
        lower = np.zeros(len(connections), dtype=np.int64)
        upper = np.minimum(weights + np.maximum(probe, weights // RISE_DIVISOR), resolution)
    # A raise that failed is not raised again in the call that judged it; a connection re-explored from no load
    # that failed stays at none while held (HOLD_S). Neither ever makes the bounds infeasible.
    failed = np.fromiter((c.failed_now for c in connections), dtype=bool, count=len(weights))
    held = np.fromiter(
        (request.observed_at < c.held_until for c in connections), dtype=bool, count=len(weights)
    )
    held_upper = np.where(held, 0, np.where(failed, np.minimum(upper, weights), upper))
    if int(held_upper.sum()) >= resolution and np.all(held_upper >= lower):
        upper = held_upper
    if newcomers.any():
        probe_lower = np.where(newcomers, np.minimum(probe, upper), lower)
        if int(probe_lower.sum()) <= resolution:
            lower = probe_lower
    return lower, upper


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
    call = min(memory.calls + 1, MAX_CALLS)

    present = set(request.ids)
    vanished = [cid for cid in memory.connections if cid not in present]
    if vanished:
        notes.append(f"connections gone since the previous call, their data dropped: {_named(vanished)}")
    known = np.asarray([cid in memory.connections for cid in request.ids], dtype=bool)
    new_ids = [cid for cid, k in zip(request.ids, known, strict=True) if not k]
    connections = [memory.connections.get(cid) or ConnectionMemory(counter=0.0) for cid in request.ids]
    # A newcomer: joined at weight 0 after the first call, nothing measured yet. It gets a probe share.
    newcomers = np.asarray(
        [
            memory.calls > 0 and len(c.w) == 0 and w == 0
            for c, w in zip(connections, weights.tolist(), strict=True)
        ]
    )
    if new_ids and memory.calls > 0:
        notes.append(f"new connections start with empty functions: {_named(new_ids)}")

    for connection in connections:
        connection.failed_now = False
    measured = _measure(request, memory, connections, known, call, notes)
    elapsed = request.observed_at - memory.observed_at if measured and memory.calls > 0 else 0.0

    # Exploration (Section 5.4): shrink the data above the current weight geometrically, so that F_j flattens there
    # over time and the optimisation tries higher weights again. The paper shrinks the function values; we shrink the
    # raw points they are built from, which with the monotone regression has the same effect and keeps the model
    # small (points, not a grid of R + 1 values per connection). Per second of elapsed time and per connection's
    # back-off (see DECAY_REFERENCE_S, MIN_DECAY_SCALE).
    sizes = np.fromiter((len(c.w) for c in connections), dtype=np.int64, count=n_connections)
    owner = np.repeat(np.arange(n_connections), sizes)
    points: tuple[IntArray, FloatArray, IntArray] | None = None  # every connection's (w, rate, n) end to end
    if elapsed > 0 and request.exploration_decay > 0 and sizes.any():
        # All connections' points at once (one concatenation, written back as views into it).
        w_all = np.concatenate([c.w for c in connections])
        above = w_all > weights[owner]
        decaying = np.flatnonzero(np.bincount(owner[above], minlength=n_connections)).tolist()
        factor = np.ones(n_connections)
        base, span = 1.0 - request.exploration_decay, min(elapsed, 1e6)
        # Scalar powers, as per connection before (same rounding).
        factor[decaying] = [base ** (connections[j].decay_scale * span / DECAY_REFERENCE_S) for j in decaying]
        rate_all = np.concatenate([c.rate for c in connections])
        n_all = np.concatenate([c.n for c in connections])
        rate_all[above] *= factor[owner[above]]
        # A decayed point is a guess, not a measurement: the next measurement there counts as the second of the
        # point (gain 1/2), so a re-exploration that blocks again shows at once.
        n_all[above & (n_all > 1)] = 1
        ends = np.cumsum(sizes).tolist()
        size_list = sizes.tolist()
        for j in decaying:
            connection, start = connections[j], ends[j] - size_list[j]
            connection.rate, connection.n = rate_all[start : ends[j]], n_all[start : ends[j]]
        points = w_all, rate_all, n_all
    for j in np.flatnonzero(sizes > MAX_POINTS).tolist():
        connection = connections[j]
        # Newest first; among equally recent points the ones nearest the current weight first.
        order = np.lexsort((np.abs(connection.w - weights[j]), -connection.seen))
        connection.keep(np.sort(order[:MAX_POINTS]))
        points = None
    sent = taken = None
    if request.sent is not None and request.taken is not None:
        sent, taken = request.sent.tolist(), request.taken.tolist()
    for j, (connection, counter, was_known) in enumerate(
        zip(connections, counters.tolist(), known.tolist(), strict=True)
    ):
        if measured or not was_known:
            connection.counter = counter
            connection.sent = connection.taken = -1.0
            if sent is not None and taken is not None:
                connection.sent, connection.taken = sent[j], taken[j]

    no_data = [cid for cid, c in zip(request.ids, connections, strict=True) if len(c.w) == 0]
    if no_data and memory.calls > 0:
        notes.append(f"no blocking data yet for: {_named(no_data)}")

    # Every connection's points end to end (row j's are the next sizes[j]): its function, its cluster's pool. The
    # decay's concatenation when no connection was trimmed since (the connections' columns are views into it or
    # hold the same values).
    if points is None:
        sizes = np.fromiter((len(c.w) for c in connections), dtype=np.int64, count=n_connections)
        points = (
            np.concatenate([c.w for c in connections]),
            np.concatenate([c.rate for c in connections]),
            np.concatenate([c.n for c in connections]),
        )
    point_w, point_rate, point_n = points
    fit = fit_rows(point_w.astype(np.float64), point_rate, point_n.astype(np.float64), sizes, resolution)
    table: FloatArray | None = None

    def connection_values() -> FloatArray:
        # The connections' own table, built only when it is solved over (no clusters); the clustering reads its
        # features off the fitted points, and the cluster table tabulates only the singletons' fitted rows.
        nonlocal table
        if table is None:
            table = tabulate(fit, resolution)
        return table

    lower, upper = _bounds(request, connections, newcomers)
    if newcomers.any():
        notes.append(
            f"newcomers get a probe share: {_named([request.ids[j] for j in np.flatnonzero(newcomers)])}"
        )

    use_clusters = request.clustering == "on" or (
        request.clustering == "auto" and n_connections >= AUTO_CLUSTERING_FROM
    )
    if use_clusters:
        max_point_rate = np.zeros(n_connections)
        np.maximum.at(max_point_rate, np.repeat(np.arange(n_connections), sizes), point_rate)
        features = fitted_features(fit, resolution)
        if features is None:  # an F(knee) underflowed: the table's features
            features = function_features(connection_values())
        labels = cluster_by_features(features, max_point_rate)
    else:
        labels = np.arange(n_connections)
    # Members of each cluster in index order (a stable sort by label, cut where the label changes).
    by_label = np.argsort(labels, kind="stable")
    cuts = [0, *(np.flatnonzero(np.diff(labels[by_label])) + 1).tolist(), n_connections]
    members = by_label.tolist()
    clusters = [members[a:b] for a, b in itertools.pairwise(cuts)]

    cluster_values: FloatArray | None = None

    def fox(table: FloatArray, lo: IntArray, up: IntArray, prefer: IntArray) -> tuple[IntArray, float]:
        return fox_minimax(table, lo, up, resolution, prefer=prefer)

    def solve(lo: IntArray, up: IntArray) -> tuple[IntArray, float, FloatArray, FloatArray]:
        if len(clusters) == n_connections:
            rows = np.arange(n_connections)
            values = connection_values()
            solved, optimum = fox(values, lo, up, weights)
            return solved, optimum, values[rows, solved], values[rows, weights]
        return _solve_clustered(clusters, labels, clustered_values(), weights, lo, up, fox)

    def clustered_values() -> FloatArray:
        nonlocal cluster_values
        if cluster_values is None:  # built once: the gate's solves and the bounded one share it
            cluster_values = _cluster_functions(
                clusters, labels, (point_w, point_rate, point_n, sizes), fit, resolution
            )
        return cluster_values

    def rates_now() -> FloatArray:
        """Per connection, the predicted blocking rate at the current weights (its cluster's at the cluster's
        current total), as `solve` returns it."""
        if len(clusters) == n_connections:
            return connection_values()[np.arange(n_connections), weights]
        totals = np.bincount(labels, weights=weights, minlength=len(clusters)).astype(np.int64)
        return clustered_values()[np.arange(len(clusters)), totals][labels]

    def free_within_noise(up: IntArray, now: float, noise: float) -> bool:
        """now - (the optimum within lower..up) <= noise, as the solve would decide it, without solving: the
        optimum is compared with the least float x for which now - x <= noise (minimax_at_least)."""
        least = _least_within(now, noise)
        if least is None:  # not finite: solve
            return now - solve(lower, up)[1] <= noise
        if len(clusters) == n_connections:
            return minimax_at_least(connection_values(), lower, up, resolution, least)
        per_cluster = functools.partial(np.bincount, labels, minlength=len(clusters))
        return minimax_at_least(
            clustered_values(),
            per_cluster(weights=lower).astype(np.int64),
            per_cluster(weights=up).astype(np.int64),
            resolution,
            least,
        )

    # Steady weights: keep the current ones unless the model's optimum is better by more than the noise (and they
    # are within the bounds: no newcomer waits for its probe). The gain is judged without the evidence limit on
    # rises (a probe-sized step toward a much better split is worth taking; it is the size of the step, not the
    # decision to move, that evidence limits), and the weights then move to the bounded optimum. The free optimum
    # is never worse than the bounded one, so the bounded solve runs first: a gain beyond the noise there is one in
    # the free problem, and the free solve runs only when it is not (a quarter to a third of the calls, and it is
    # the costlier one: every weight up to the resolution is a candidate).
    solved = None
    if request.steady and memory.calls > 0 and np.all((weights >= lower) & (weights <= upper)):
        current = rates_now()
        now = float(current.max())
        worst = int(current.argmax())
        spread = min(connections[worst].standard_error(int(weights[worst])), now / 2)
        noise = max(NOISE_RATE, NOISE_SHARE * now, spread)
        solved = solve(lower, upper)
        if now - solved[1] <= noise and (
            request.max_change is not None  # the bounds are the free ones
            or free_within_noise(np.where(upper > weights, resolution, upper), now, noise)  # a held one stays
        ):
            solved = (weights.copy(), now, current, current)
    new_weights, predicted, expected, _ = solved if solved is not None else solve(lower, upper)

    for connection, w, before, rate in zip(
        connections, new_weights.tolist(), weights.tolist(), expected.tolist(), strict=True
    ):
        if w != before or connection.weight < 0:
            connection.previous_weight = before
            connection.changed_at = request.observed_at
            connection.expected_rate = min(rate, MAX_BLOCKING_RATE)
        connection.weight = w

    memory.connections = dict(zip(request.ids, connections, strict=True))
    if memory.calls == 0 or measured:
        memory.observed_at = request.observed_at
    memory.calls = call
    return SplitterResult(new_weights, memory, clusters, min(predicted, MAX_BLOCKING_RATE), notes)


def _least_within(now: float, noise: float) -> float | None:
    """The least float x with now - x <= noise (floating-point subtraction is monotone in x, so those x are all
    floats from it up), or None when there is none to find (now or noise not finite, noise negative)."""
    if not (math.isfinite(now) and math.isfinite(noise)) or not now - now <= noise:
        return None
    guess = now - noise
    if now - guess <= noise and not now - math.nextafter(guess, -math.inf) <= noise:
        return guess  # the rounding of now - noise is usually exact enough
    # Bisection over the floats in order (their bit patterns, negatives mirrored) between a float outside and now.
    outside = now - 2.0 * noise if math.isfinite(now - 2.0 * noise) else -sys.float_info.max
    if now - outside <= noise:
        return None
    low, high = _float_order(outside), _float_order(now)
    while high - low > 1:
        middle = (low + high) // 2
        if now - _order_float(middle) <= noise:
            high = middle
        else:
            low = middle
    return _order_float(high)


def _float_order(x: float) -> int:
    """An integer that orders floats as their values (-0.0 and 0.0 alike)."""
    bits = int.from_bytes(struct.pack("<d", x), "little", signed=True)
    return bits if bits >= 0 else -(bits & (2**63 - 1))


def _order_float(order: int) -> float:
    bits = order if order >= 0 else -order | -(2**63)
    return float(struct.unpack("<d", bits.to_bytes(8, "little", signed=True))[0])


def _cluster_functions(
    clusters: list[list[int]],
    labels: IntArray,
    points: tuple[IntArray, FloatArray, IntArray, IntArray],
    fit: FittedRows,
    resolution: int,
) -> FloatArray:
    """One function per cluster: a singleton's own (its fitted row, tabulated); a cluster of n members holding W
    gives each about W/n, so its function G(W) is the members' blocking at W/n: the pooled points of all members, a
    member's point at weight w counting at W = n w. `points`: every connection's (w, rate, n) end to end and how many
    each has; `fit`: the connections' fitted rows."""
    point_w, point_rate, point_n, sizes = points
    members = np.bincount(labels, minlength=len(clusters))
    multi = members > 1
    cluster_values = np.empty((len(clusters), resolution + 1))
    singletons = np.asarray([m[0] for m in clusters if len(m) == 1], dtype=np.int64)
    if len(singletons):
        cluster_values[~multi] = tabulate(select_rows(fit, singletons), resolution)
    if multi.any():
        point_cluster = labels[np.repeat(np.arange(len(labels)), sizes)]
        pooled = multi[point_cluster]
        # Each multi cluster's points in a row of its own: its members in index order, each member's in order
        # (a stable sort keeps the connections' order).
        order = np.argsort(point_cluster[pooled], kind="stable")
        in_cluster = point_cluster[pooled][order]
        cluster_values[multi] = blocking_functions_flat(
            (point_w[pooled][order] * members[in_cluster]).astype(np.float64),
            point_rate[pooled][order],
            point_n[pooled][order].astype(np.float64),
            np.bincount(in_cluster, minlength=len(clusters))[multi],
            resolution,
        )
    return cluster_values


def _solve_clustered(
    clusters: list[list[int]],
    labels: IntArray,
    cluster_values: FloatArray,
    weights: IntArray,
    lower: IntArray,
    upper: IntArray,
    fox: Callable[[FloatArray, IntArray, IntArray, IntArray], tuple[IntArray, float]],
) -> tuple[IntArray, float, FloatArray, FloatArray]:
    """Fox (`fox(table, lower, upper, prefer)`) over one function per cluster (`_cluster_functions`), then each cluster's weight shared evenly among its
    members (`labels[j]`: connection j's cluster). Returns the weights, the optimum, and per member the predicted
    rate at the new and at the current weights (its cluster's).
    """
    n_clusters = len(clusters)

    def per_cluster(column: IntArray) -> IntArray:
        # Integer sums (exact in float64 far beyond any weight total).
        return np.bincount(labels, weights=column, minlength=n_clusters).astype(np.int64)

    current_totals = per_cluster(weights)
    cluster_lower, cluster_upper = per_cluster(lower), per_cluster(upper)
    cluster_weights, predicted = fox(cluster_values, cluster_lower, cluster_upper, current_totals)
    rows = np.arange(n_clusters)
    at_new = cluster_values[rows, cluster_weights]
    at_current = cluster_values[rows, current_totals]
    # A singleton takes its cluster's weight (Fox kept it within its bounds); a larger cluster's is split evenly.
    new_weights = cluster_weights[labels]
    # even_split's closed form for every cluster whose bounds do not bind, at once: base each, one more for the
    # first `extra` members in index order; even_split itself for the others.
    size = np.bincount(labels, minlength=n_clusters)
    base, extra = np.divmod(cluster_weights, size)
    highest_lower = np.zeros(n_clusters, dtype=np.int64)
    np.maximum.at(highest_lower, labels, lower)
    lowest_upper = np.full(n_clusters, np.iinfo(np.int64).max)
    np.minimum.at(lowest_upper, labels, upper)
    closed = (size > 1) & (highest_lower <= base) & (lowest_upper >= base + (extra > 0))
    by_label = np.argsort(labels, kind="stable")
    position = np.empty(len(labels), dtype=np.int64)  # a member's place in its cluster (index order)
    position[by_label] = np.arange(len(labels)) - (np.cumsum(size) - size)[labels[by_label]]
    member_closed = closed[labels]
    new_weights[member_closed] = (base[labels] + (position < extra[labels]))[member_closed]
    for c in np.flatnonzero((size > 1) & ~closed).tolist():
        member_index = np.asarray(clusters[c])
        new_weights[member_index] = even_split(
            int(cluster_weights[c]), lower[member_index], upper[member_index]
        )
    return new_weights, predicted, at_new[labels], at_current[labels]

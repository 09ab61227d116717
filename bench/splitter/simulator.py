"""A tuple-level simulator of an ordered data-parallel region (Schneider et al., Sections 2 and 4).

One splitter thread sends tuples by weighted round-robin over N connections; each connection buffers at most
`send_buffer` tuples not yet taken into service (the splitter's TCP send buffer, the network and the worker's
receive buffer together); worker j serves its tuples in order, taking `service_s[j] * slowdown` seconds each; a
finished tuple waits in the in-order merger's queue for j (at most `merge_buffer` tuples; a worker whose merger
queue is full cannot emit and stalls); the merger releases tuples in the global order in which they were split.

When the next tuple's connection has no buffer space, the splitter blocks until it has, and adds the time it
blocked to THAT connection's cumulative blocking counter once the send succeeds (the paper's select() accounting).
Nothing else is modelled on purpose: drafting (Section 4.2), back pressure through the merge (4.1, 4.3) and the
rarity of blocking (4.4) all emerge from these rules.

The region is event-driven in split order: every time of a tuple (send, service start, finish, merge output) depends
only on earlier tuples, so one pass with O(1) work per tuple computes the exact schedule (max-plus recurrences)
without an event queue.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from solvers.instance import FloatArray, IntArray

# policy(time, weights, cumulative blocking counters, load changed yet, cumulative tuples sent per connection, tuples
# in flight per connection) -> new weights (summing to the resolution) or None to keep them
Policy = Callable[[float, IntArray, FloatArray, bool, IntArray, IntArray], IntArray | None]


@dataclass(frozen=True)
class Region:
    service_s: FloatArray  # (N,) seconds per tuple of each worker without external load
    slowdown: FloatArray  # (N,) external load factor at the start (100 = 100x more expensive)
    slowdown_after: FloatArray | None = None  # (N,) the factor once the load changes
    change_after_tuples: int | None = None  # the load changes once this many tuples were sent
    # Load changes in time: from each (time_s, slowdown) on, the workers run at that slowdown (a "dead" worker is
    # one whose slowdown is huge; it recovers when a later phase sets it back).
    phases: tuple[tuple[float, FloatArray], ...] = ()
    splitter_s: float = 0.0  # the splitter's own cost per tuple (bounds the region's throughput)
    send_buffer: int = 16
    merge_buffer: int = 16

    @property
    def n(self) -> int:
        return len(self.service_s)


@dataclass
class Trace:
    times: list[float] = field(default_factory=list)  # call times
    weights: list[IntArray] = field(default_factory=list)  # weights in force after each call
    blocking_rates: list[FloatArray] = field(default_factory=list)  # per connection, over the interval before
    clusters: list[list[list[int]]] = field(default_factory=list)
    sent: list[IntArray] = field(default_factory=list)  # tuples sent per connection so far, at each call


@dataclass
class RunResult:
    total_time_s: float  # when the merger released the last tuple
    final_throughput: float  # tuples/s over the last 10% of the tuples
    output_times: FloatArray
    trace: Trace
    change_time_s: float | None


def wrr_schedule(weights: IntArray) -> list[int]:
    """One cycle of smooth weighted round-robin: connection j appears weights[j] times, evenly spread."""
    total = int(weights.sum())
    owners = np.repeat(np.arange(len(weights)), weights)
    ranks = np.concatenate([np.arange(w) for w in weights]) if total else np.zeros(0)
    positions = (ranks + 0.5) * total / np.maximum(weights[owners], 1) + owners * 1e-9
    return owners[np.argsort(positions, kind="stable")].tolist()


def simulate(
    region: Region,
    total_tuples: int,
    initial_weights: IntArray,
    policy: Policy | None = None,
    interval_s: float = 1.0,
) -> RunResult:
    n = region.n
    base = region.service_s.tolist()
    factor = region.slowdown.tolist()
    after = (region.slowdown_after if region.slowdown_after is not None else region.slowdown).tolist()
    change_at = region.change_after_tuples if region.change_after_tuples is not None else total_tuples + 1
    change_time: float | None = None
    send_buffer, merge_buffer = region.send_buffer, region.merge_buffer
    splitter_s = region.splitter_s

    # Ring buffers per connection: service start of each of its last `send_buffer` tuples (a slot frees when the
    # tuple sent `send_buffer` earlier on that connection entered service) and merge release time of its last
    # `merge_buffer` tuples (the merger queue has room when the tuple `merge_buffer` earlier was released).
    start_ring = [[0.0] * send_buffer for _ in range(n)]
    release_ring = [[0.0] * merge_buffer for _ in range(n)]
    sent = [0] * n
    worker_free = [0.0] * n
    blocked = [0.0] * n
    output = array("d", bytes(8 * total_tuples))

    weights = np.asarray(initial_weights, dtype=np.int64).copy()
    schedule = wrr_schedule(weights)
    cycle = len(schedule)
    position = 0
    send_time = 0.0
    last_release = 0.0
    next_call = interval_s
    trace = Trace()
    last_counters = np.zeros(n)
    last_call = 0.0

    phases = sorted(region.phases, key=lambda phase: phase[0])
    next_phase = 0
    next_phase_at = phases[0][0] if phases else float("inf")
    for k in range(total_tuples):
        if k == change_at:
            change_time = send_time
            factor = after
        while send_time >= next_phase_at:
            factor = np.asarray(phases[next_phase][1], dtype=np.float64).tolist()
            if change_time is None:
                change_time = next_phase_at
            next_phase += 1
            next_phase_at = phases[next_phase][0] if next_phase < len(phases) else float("inf")
        j = schedule[position]
        position += 1
        if position == cycle:
            position = 0
        p = sent[j]
        sent[j] = p + 1
        ready = send_time + splitter_s
        slot = p % send_buffer
        space = start_ring[j][slot]
        if space > ready:
            send_time = space
            block = space - ready
        else:
            send_time = ready
            block = 0.0
        if policy is not None and send_time >= next_call:
            # Statistics are read every interval; a block in progress is not yet on the counter (select() returns
            # first), so it is added after the calls that fall inside it.
            while next_call <= send_time:
                counters = np.asarray(blocked)
                # Tuples sent but not yet taken into service by their worker (in the send buffer), per connection.
                in_flight = np.asarray(
                    [sum(1 for started in ring if started > next_call) for ring in start_ring]
                )
                new = policy(
                    next_call, weights, counters, change_time is not None, np.asarray(sent), in_flight
                )
                elapsed = next_call - last_call
                trace.times.append(next_call)
                trace.blocking_rates.append((counters - last_counters) / elapsed)
                trace.sent.append(np.asarray(sent))
                last_counters, last_call = counters, next_call
                if new is not None and not np.array_equal(new, weights):
                    weights = np.asarray(new, dtype=np.int64)
                    # Continue at the same fraction of the cycle: restarting it at every change would favour
                    # the connections at its head whenever calls come more often than a cycle completes.
                    schedule = wrr_schedule(weights)
                    position = position * len(schedule) // cycle
                    cycle = len(schedule)
                trace.weights.append(weights.copy())
                next_call += interval_s
        blocked[j] += block
        start = send_time if send_time > worker_free[j] else worker_free[j]
        start_ring[j][slot] = start
        finish = start + base[j] * factor[j]
        mslot = p % merge_buffer
        room = release_ring[j][mslot]
        emitted = finish if finish > room else room
        worker_free[j] = emitted
        release = emitted if emitted > last_release else last_release
        last_release = release
        release_ring[j][mslot] = release
        output[k] = release

    out = np.frombuffer(output, dtype=np.float64)
    tail = max(total_tuples // 10, 1)
    window = out[-1] - out[-tail - 1] if total_tuples > tail else out[-1]
    return RunResult(
        total_time_s=float(out[-1]),
        final_throughput=tail / window if window > 0 else float("inf"),
        output_times=out,
        trace=trace,
        change_time_s=change_time,
    )

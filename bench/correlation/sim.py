"""A compact, vectorised simulator of Xing, Zdonik & Hwang's experiments (Section 5, Table 2).

The paper used a CSIM discrete-event simulator; this one is a time-stepped queueing model in numpy, fast enough for
all the experiments on a shared 2-core machine:
- Queries: independent chains of operators; operator j of a chain sees f_j = s_1 ... s_{j-1} tuples per input tuple
  (selectivities U(0.8, 1.2)) and spends p = 1 ms per tuple.
- Workload (5.1.2): per chain, Poisson arrivals per time step dt = 1 ms whose rate alternates high/low (ratio 4,
  period 10 s, half the period each) with a per-chain phase offset, base rates U(0.8, 1.2) scaled so that the system
  load level (busy time / (n x duration)) is the requested one; or the simplified on-off model (exponential active /
  idle periods, periodic arrivals while active, streams that are opposites or time-shifted copies of others).
- Nodes: each node is one CPU with a FIFO queue. The work arriving at a node in a step is the sum over its operators
  of (tuples of the chain in that step) x f_j x p; its backlog follows Lindley's recursion
  B_t = max(0, B_{t-1} + A_t - dt), computed for all steps at once as S_t - min(0, min_{s<=t} S_s), S = cumsum(A - dt).
- Latency: a tuple entering chain c at time t visits its operators in order; at operator j (on node n at that time) it
  waits the backlog B_n plus half of the work arriving in the same step, then 1 ms of processing. The latency ratio is
  the mean end-to-end latency over the processing delay (chain length x 1 ms).
- Migration (Table 2: 200 ms): a moved operator's tuples wait until it resumes; its work arrives at the new node when
  the pause ends.

Simplifications (deviations from the paper's CSIM model, stated): downstream operators receive the chain's work in
the same step as the input (the "ideal" rates of Section 2.2, not delayed by upstream queues), and the warm-up period
does not offload overloaded nodes: it only collects statistics, and the queues start empty when the algorithms start
(the measured period).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from solvers.instance import AssignmentInstance

DT = 0.001  # time step (s)
PROCESSING_S = 0.001  # Table 2: 1 ms per tuple per operator
MIGRATION_S = 0.2  # Table 2: operator migration time
SAMPLE_S = 1.0  # statistics sample length: 10 s window / k = 10 samples


@dataclass
class Workload:
    counts: np.ndarray  # (chains, steps) tuples entering each chain per step
    fanout: np.ndarray  # (chains, chain_len) tuples reaching operator j per input tuple
    n_nodes: int
    dt: float = DT

    @property
    def n_chains(self) -> int:
        return int(self.counts.shape[0])

    @property
    def chain_len(self) -> int:
        return int(self.fanout.shape[1])

    @property
    def n_ops(self) -> int:
        return self.n_chains * self.chain_len

    @property
    def steps(self) -> int:
        return int(self.counts.shape[1])

    def op_samples(self) -> np.ndarray:
        """Load of each operator (percent of a node) in each 1 s sample: (ops, seconds). Operator id = c * J + j."""
        per = round(SAMPLE_S / self.dt)
        seconds = self.steps // per
        tuples = self.counts[:, : seconds * per].reshape(self.n_chains, seconds, per).sum(axis=2)
        load = tuples[:, None, :] * self.fanout[:, :, None] * PROCESSING_S / SAMPLE_S * 100.0
        return load.reshape(self.n_ops, seconds)


def _scale_to_level(
    shape: np.ndarray, fanout: np.ndarray, level: float, n_nodes: int, dt: float
) -> np.ndarray:
    """Multiply per-chain rate shapes so the expected busy time over n x duration equals `level`."""
    work_per_tuple = fanout.sum(axis=1) * PROCESSING_S
    busy = float((shape.sum(axis=1) * dt * work_per_tuple).sum())
    duration = shape.shape[1] * dt
    return shape * (level * n_nodes * duration / busy)


def chain_fanout(rng: np.random.Generator, n_chains: int, chain_len: int) -> np.ndarray:
    """Work per input tuple at each operator of each chain: the product of the selectivities U(0.8, 1.2) before it
    (Table 2); the first operator sees every input tuple."""
    return np.cumprod(
        np.concatenate([np.ones((n_chains, 1)), rng.uniform(0.8, 1.2, (n_chains, chain_len - 1))], axis=1),
        axis=1,
    )


def periodic_workload(
    rng: np.random.Generator,
    level: float,
    n_nodes: int = 20,
    n_chains: int = 20,
    chain_len: int = 10,
    duration_s: float = 80.0,
    period_s: float = 10.0,
    ratio: float = 4.0,
) -> Workload:
    """5.1.2, first workload: rates alternate high/low (ratio 4, period 10 s) with a random phase per chain."""
    steps = round(duration_s / DT)
    t = np.arange(steps) * DT
    fanout = chain_fanout(rng, n_chains, chain_len)
    offset = rng.uniform(0.0, period_s, n_chains)
    base = rng.uniform(0.8, 1.2, n_chains)
    high = ((t[None, :] + offset[:, None]) % period_s) < period_s / 2
    shape = base[:, None] * np.where(high, ratio, 1.0)
    rate = _scale_to_level(shape, fanout, level, n_nodes, DT)
    return Workload(counts=rng.poisson(rate * DT).astype(np.float64), fanout=fanout, n_nodes=n_nodes)


def onoff_workload(
    rng: np.random.Generator,
    level: float,
    n_nodes: int = 20,
    n_chains: int = 20,
    chain_len: int = 10,
    duration_s: float = 80.0,
    mean_period_s: float = 5.0,
) -> Workload:
    """5.1.2, second workload: on-off streams (exponential active / idle periods, periodic arrivals while active).
    Half the streams are independent; each other one is the opposite of an independent stream or a copy of it
    whose first active period starts at another time."""
    steps = round(duration_s / DT)
    fanout = chain_fanout(rng, n_chains, chain_len)

    def on_off(horizon: int) -> np.ndarray:
        out = np.zeros(horizon, dtype=bool)
        pos, active = 0, bool(rng.integers(2))
        while pos < horizon:
            length = max(1, int(rng.exponential(mean_period_s) / DT))
            out[pos : pos + length] = active
            pos += length
            active = not active
        return out

    n_free = (n_chains + 1) // 2
    free = [on_off(steps + int(20 / DT)) for _ in range(n_free)]
    active = [f[:steps] for f in free]
    for _ in range(n_chains - n_free):
        src = free[int(rng.integers(n_free))]
        if rng.integers(2):
            active.append(~src[:steps])
        else:
            shift = int(rng.uniform(0, 10) / DT)
            active.append(src[shift : shift + steps])
    base = rng.uniform(0.8, 1.2, n_chains)
    shape = base[:, None] * np.array(active, dtype=np.float64)
    rate = _scale_to_level(shape, fanout, level, n_nodes, DT)
    # Periodic arrivals while active: the expected count per step, no Poisson noise.
    return Workload(counts=rate * DT, fanout=fanout, n_nodes=n_nodes)


@dataclass
class Timeline:
    """Placements over time: placement i holds from second starts[i] on (operator id -> node)."""

    starts: list[int] = field(default_factory=list)  # in seconds
    placements: list[np.ndarray] = field(default_factory=list)
    load_moved: list[float] = field(default_factory=list)  # per change, in percent of a node

    def add(self, second: int, placement: np.ndarray, moved: float) -> None:
        self.starts.append(second)
        self.placements.append(placement.copy())
        self.load_moved.append(moved)


@dataclass
class SimResult:
    latency_ratio: float
    latency_ratio_per_second: np.ndarray  # by entry second over the measured period
    node_series: np.ndarray  # (nodes, seconds) node loads (percent) over the measured period


def simulate(wl: Workload, timeline: Timeline, measure_from_s: float, measure_to_s: float) -> SimResult:
    """Backlogs of every node and latencies of the tuples entering during [measure_from_s, measure_to_s)."""
    n, steps, J = wl.n_nodes, wl.steps, wl.chain_len
    per_s = round(1.0 / wl.dt)
    pause = round(MIGRATION_S / wl.dt)
    work_per_op = wl.fanout.reshape(-1) * PROCESSING_S  # seconds of CPU per input tuple of the chain
    chain_of_op = np.repeat(np.arange(wl.n_chains), J)
    arrivals = np.zeros((n, steps))
    starts = [s * per_s for s in timeline.starts] + [steps]
    previous: np.ndarray | None = None
    for i, placement in enumerate(timeline.placements):
        t0, t1 = starts[i], starts[i + 1]
        weights = np.zeros((n, wl.n_chains))
        np.add.at(weights, (placement, chain_of_op), work_per_op)
        arrivals[:, t0:t1] += weights @ wl.counts[:, t0:t1]
        if previous is not None:
            moved = np.flatnonzero(previous != placement)
            t_end = min(t0 + pause, t1)
            for op in moved.tolist():
                # Paused: its work of [t0, t_end) is withheld from the new node and arrives when it resumes.
                held = wl.counts[chain_of_op[op], t0:t_end] * work_per_op[op]
                arrivals[placement[op], t0:t_end] -= held
                arrivals[placement[op], min(t_end, steps - 1)] += held.sum()
        previous = placement
    m0, m1 = int(measure_from_s * per_s), int(measure_to_s * per_s)
    # The warm-up only collects statistics: queues start empty when the algorithms start (see module notes).
    arrivals[:, :m0] = 0.0
    drift = np.cumsum(arrivals - wl.dt, axis=1)
    backlog = drift - np.minimum(np.minimum.accumulate(drift, axis=1), 0.0)
    backlog_before = np.concatenate([np.zeros((n, 1)), backlog[:, :-1]], axis=1)
    wait_at = backlog_before + arrivals / 2.0

    chain, step = np.nonzero(wl.counts[:, m0:m1] > 0)
    step = step + m0
    weight = wl.counts[chain, step]
    t = step * wl.dt
    start_steps = np.array(starts[:-1])
    placements = np.array(timeline.placements)
    for j in range(J):
        idx = np.minimum((t / wl.dt).astype(np.int64), steps - 1)
        seg = np.searchsorted(start_steps, idx, side="right") - 1
        op = chain * J + j
        node = placements[seg, op]
        # Tuples reaching a paused operator wait for it to resume.
        if seg.max(initial=0) > 0:
            prev_node = placements[np.maximum(seg - 1, 0), op]
            paused = (seg > 0) & (prev_node != node) & (idx < start_steps[seg] + pause)
            t = np.where(paused, (start_steps[seg] + pause) * wl.dt, t)
            idx = np.minimum((t / wl.dt).astype(np.int64), steps - 1)
        t = t + wait_at[node, idx] + PROCESSING_S
    latency = t - step * wl.dt
    ratio = latency / (J * PROCESSING_S)
    seconds = (step - m0) // per_s
    n_sec = (m1 - m0) // per_s
    per_second = np.bincount(seconds, weights=ratio * weight, minlength=n_sec) / np.maximum(
        np.bincount(seconds, weights=weight, minlength=n_sec), 1e-12
    )
    samples = wl.op_samples()
    node_series = np.zeros((n, n_sec))
    for s in range(n_sec):
        second = int(measure_from_s) + s
        seg = int(np.searchsorted(np.array(timeline.starts), second, side="right") - 1)
        node_series[:, s] = np.bincount(placements[seg], weights=samples[:, second], minlength=n)
    return SimResult(
        latency_ratio=float(np.average(ratio, weights=weight)),
        latency_ratio_per_second=per_second,
        node_series=node_series,
    )


Policy = Callable[[AssignmentInstance], np.ndarray]


def instance_for(wl: Workload, placement: np.ndarray, stats: np.ndarray) -> AssignmentInstance:
    n = wl.n_nodes
    return AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n)),
        capacity=np.full(n, 100.0),
        draining=np.zeros(n, dtype=bool),
        unit_ids=tuple(f"o{k}" for k in range(wl.n_ops)),
        current=placement.astype(np.int64),
        series=stats,
        state_size=np.ones(wl.n_ops),
        pinned=np.zeros(wl.n_ops, dtype=bool),
    )


def run_controller(
    wl: Workload,
    initial: np.ndarray,
    warm_s: int,
    once: Policy | None,
    periodic: Policy | None,
    k: int = 10,
) -> Timeline:
    """The initial placement until the warm-up ends; then `once` (a global algorithm) at the end of the warm-up and
    `periodic` (a pair-wise algorithm) every load distribution period (1 s), each on the last k 1-s samples."""
    samples = wl.op_samples()
    timeline = Timeline()
    timeline.add(0, initial, 0.0)
    placement = initial.copy()
    mean_load = None
    for second in range(warm_s, samples.shape[1]):
        stats = samples[:, second - k : second]
        policy = once if second == warm_s and once is not None else periodic
        if policy is None:
            continue
        new = policy(instance_for(wl, placement, stats))
        moved = new != placement
        if moved.any():
            mean_load = stats.mean(axis=1)
            timeline.add(second, new, float(mean_load[moved].sum()))
            placement = new
    return timeline

"""Reproductions of Schneider et al.'s Figs. 8-12 on the simulated ordered region, driven through the real endpoint.

Time scale: the paper's tuples cost 1,000 to 60,000 integer multiplies on workers that process tens of thousands of
tuples per second; a Python simulation cannot split millions of tuples per experiment. What the dynamics depend on is
kept instead: the load ratios between workers, statistics every second, a few thousand tuples per interval at most
(so that a 0.1% weight still means something), buffers that take seconds to drain on a loaded worker, and a splitter
that about 8 unloaded workers of the cheapest tuple cost saturate (Fig. 9 stops scaling at 8 PEs). Each experiment
states the per-tuple time of an unloaded worker it uses. Every experiment is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.splitter.policies import (
    EndpointPolicy,
    JsonPoster,
    OraclePolicy,
    even_weights,
    offline_best_weights,
)
from bench.splitter.simulator import Region, RunResult, simulate
from solvers.instance import FloatArray, IntArray

MULT_S = 0.001  # seconds per tuple of 1,000 integer multiplies on an unloaded worker (Figs. 8 top, 9)
SPLITTER_S = MULT_S / 8
SEND_BUFFER = 16  # tuples a connection holds before the splitter blocks on it (TCP send + receive buffers)
# The merger reads every connection eagerly into memory, so its queues are far longer than a TCP buffer; with short
# merger queues the fast workers' buffers fill behind the slow one and the splitter would block on them instead.
MERGE_BUFFER = 4096


def region(
    tuple_s: float,
    slowdown: list[float] | FloatArray,
    after: list[float] | FloatArray | None = None,
    change_after: int | None = None,
    speed: list[float] | FloatArray | None = None,
) -> Region:
    n = len(slowdown)
    speeds = np.ones(n) if speed is None else np.asarray(speed, dtype=np.float64)
    return Region(
        service_s=np.full(n, tuple_s) / speeds,
        slowdown=np.asarray(slowdown, dtype=np.float64),
        slowdown_after=None if after is None else np.asarray(after, dtype=np.float64),
        change_after_tuples=change_after,
        splitter_s=SPLITTER_S,
        send_buffer=SEND_BUFFER,
        merge_buffer=MERGE_BUFFER,
    )


def lb_policy(client: JsonPoster, n: int, adaptive: bool = True, clustering: str = "auto") -> EndpointPolicy:
    return EndpointPolicy(
        client,
        [f"c{j + 1}" for j in range(n)],
        exploration_decay=0.1 if adaptive else 0.0,
        clustering=clustering,
    )


def run_lb(client: JsonPoster, reg: Region, tuples: int, **kw: Any) -> tuple[RunResult, EndpointPolicy]:
    policy = lb_policy(client, reg.n, **kw)
    return simulate(reg, tuples, even_weights(reg.n), policy), policy


def weight_matrix(result: RunResult) -> tuple[FloatArray, IntArray]:
    return np.asarray(result.trace.times), np.asarray(result.trace.weights)


def settle_time(times: FloatArray, series: IntArray, limit: int, until: float) -> float | None:
    """First call time after which `series` stays at or below `limit` until `until`."""
    inside = times <= until
    above = np.flatnonzero((series > limit) & inside)
    first = 0 if len(above) == 0 else above[-1] + 1
    return float(times[first]) if first < inside.sum() else None


# ------------------------------------------------------------------------------------------------ Fig. 8


@dataclass
class Fig8Top:
    result: RunResult
    settle_s: float | None  # loaded connection at or below 2% for good
    loaded_weight_median: float  # while loaded (after settling)
    recovered_s: float | None  # after removal, until the loaded connection gets 75% of an even share
    final_weights: FloatArray  # mean over the last quarter


def fig8_top(client: JsonPoster, tuples: int = 1_200_000) -> Fig8Top:
    reg = region(MULT_S, [100, 1, 1], after=[1, 1, 1], change_after=tuples // 8)
    result, _ = run_lb(client, reg, tuples)
    times, weights = weight_matrix(result)
    change = result.change_time_s or times[-1]
    settle = settle_time(times, weights[:, 0], 20, change)
    loaded = weights[(times >= (settle or 0)) & (times < change), 0]
    recovered = np.flatnonzero((times > change) & (weights[:, 0] >= 0.75 * 1000 / 3))
    return Fig8Top(
        result,
        settle,
        float(np.median(loaded)) if len(loaded) else float("nan"),
        float(times[recovered[0]] - change) if len(recovered) else None,
        weights[-len(times) // 4 :].mean(axis=0),
    )


@dataclass
class Fig8Bottom:
    result: RunResult
    final_weights: FloatArray  # mean over the last quarter
    drafting_leader_changes: int  # how often the connection with the most blocking changed


def fig8_bottom(client: JsonPoster, tuples: int = 150_000) -> Fig8Bottom:
    reg = region(10 * MULT_S, [1, 1, 1])  # 10,000 multiplies
    result, _ = run_lb(client, reg, tuples)
    _, weights = weight_matrix(result)
    rates = np.asarray(result.trace.blocking_rates)
    leader = rates.argmax(axis=1)[rates.max(axis=1) > 0]
    return Fig8Bottom(
        result, weights[-len(weights) // 4 :].mean(axis=0), int(np.count_nonzero(np.diff(leader)))
    )


# ------------------------------------------------------------------------------------------------ Fig. 11


@dataclass
class Fig11:
    result: RunResult
    fast_share: float  # mean weight of the fast host's connection over the second half, in percent
    settle_s: float | None  # from then on within 10 points of the final share
    within_10_after_30s: float  # share of the calls after 30 s within 10 points of the final share


# Host speeds from the paper's setup (Section 6 and 6.5), not from its answer. The workload is a chain of integer
# multiplies, each depending on the previous one, so a thread runs at one multiply per IMUL latency:
# - "slow" hosts: 2 x Xeon X5365 (Clovertown, Core microarchitecture), 3.0 GHz, 8 cores, no SMT; 64-bit IMUL latency
#   5 cycles (Agner Fog, instruction tables: Merom);
# - "fast" hosts: 2 x Xeon X5687 (Westmere-EP), 3.6 GHz, 8 cores x 2 SMT threads; 64-bit IMUL latency 3 cycles
#   (Nehalem/Westmere).
# Per thread: fast / slow = (3.6 / 3.0) x (5 / 3) = 2.0, i.e. a 66.7% / 33.3% split (the paper observes ~65/35).
# Two SMT threads interleave two latency-bound chains on one pipelined multiplier at full speed each, so the fast
# host runs 16 such threads without slowing down and time-shares beyond; the slow host runs 8.
SLOW_GHZ, SLOW_IMUL_CYCLES, SLOW_THREADS = 3.0, 5, 8
FAST_GHZ, FAST_IMUL_CYCLES, FAST_THREADS = 3.6, 3, 16
FAST_HOST_SPEEDUP = (FAST_GHZ / FAST_IMUL_CYCLES) / (SLOW_GHZ / SLOW_IMUL_CYCLES)
FIG11_TUPLE_S = 20 * MULT_S  # 20,000 multiplies on a slow-host thread


def host_speeds(on_fast: int, on_slow: int) -> FloatArray:
    """Speed of each PE (1 = a slow-host thread alone) with `on_fast` PEs on the fast host, then `on_slow` on the
    slow one: each host time-shares its hardware threads beyond their number."""
    fast = FAST_HOST_SPEEDUP * min(1.0, FAST_THREADS / max(on_fast, 1))
    slow = min(1.0, SLOW_THREADS / max(on_slow, 1))
    return np.concatenate((np.full(on_fast, fast), np.full(on_slow, slow)))


def fig11(client: JsonPoster, tuples: int = 60_000) -> Fig11:
    reg = region(FIG11_TUPLE_S, [1, 1], speed=host_speeds(1, 1))
    result, _ = run_lb(client, reg, tuples)
    times, weights = weight_matrix(result)
    share = float(weights[len(weights) // 2 :, 0].mean()) / 10
    near = np.abs(weights[:, 0] / 10 - share) <= 10
    off = np.flatnonzero(~near)
    settle = (
        float(times[off[-1] + 1])
        if len(off) and off[-1] + 1 < len(times)
        else (0.0 if not len(off) else None)
    )
    after_30 = near[times >= 30.0]
    return Fig11(result, share, settle, float(after_30.mean()) if len(after_30) else float("nan"))


@dataclass
class Fig11Row:
    pes: int
    placement: dict[str, tuple[int, int]]  # alternative -> (PEs on the fast host, on the slow host)
    time_vs_even_rr: dict[str, float]
    throughput: dict[str, float]  # tuples/s over the run


FIG11_ALTERNATIVES = ("All-Fast", "All-Slow", "Even-RR", "Even-LB")


def fig11_bottom(client: JsonPoster, pes: int, seconds: float = 100.0) -> Fig11Row:
    """Fig. 11 bottom: `pes` PEs all on the fast host, all on the slow host, or split between them (round-robin or
    our load balancing). The paper's 24-PE Even configuration is 16 on the fast host and 8 on the slow one (its
    text); below that, half and half. Every alternative processes the same tuples: those Even-LB's ideal rate
    processes in `seconds`."""
    even = (16, 8) if pes == 24 else (pes - pes // 2, pes // 2)
    placement = {"All-Fast": (pes, 0), "All-Slow": (0, pes), "Even-RR": even, "Even-LB": even}
    regions = {
        name: region(FIG11_TUPLE_S, np.ones(pes), speed=host_speeds(*where))
        for name, where in placement.items()
    }
    ideal = min(float((1.0 / regions["Even-LB"].service_s).sum()), 1.0 / SPLITTER_S)
    tuples = int(seconds * ideal)
    results = {
        name: run_lb(client, reg, tuples)[0]
        if name == "Even-LB"
        else simulate(reg, tuples, even_weights(pes))
        for name, reg in regions.items()
    }
    base = results["Even-RR"].total_time_s
    return Fig11Row(
        pes,
        placement,
        {name: r.total_time_s / base for name, r in results.items()},
        {name: tuples / r.total_time_s for name, r in results.items()},
    )


# ------------------------------------------------------------------------------------------------ Fig. 12

FIG12_CLASSES = (100.0,) * 20 + (5.0,) * 20 + (1.0,) * 24


@dataclass
class Fig12:
    result: RunResult
    policy: EndpointPolicy
    labels: IntArray  # (calls, 64) cluster label per connection per call
    mixed_share: float  # share of calls whose clustering mixes load classes in one cluster
    mixed_last_quarter: float
    last_mixed_s: float | None
    class_weights: dict[float, float]  # mean weight per class over the last quarter, in 0.1% units


def fig12(client: JsonPoster, tuples: int = 1_800_000) -> Fig12:
    classes = np.asarray(FIG12_CLASSES)
    # 60,000 multiplies, scaled to 4 tuple-ms: the region passes ~7,000 tuples/s at best and a 100x worker drains
    # its 16-tuple buffer in 6.4 s. (At 10 ms it takes 16 s, and every re-exploration of one of the twenty 100x
    # connections stalls the whole region long enough that the weights never settle.)
    reg = region(4 * MULT_S, classes)
    result, policy = run_lb(client, reg, tuples)
    times, weights = weight_matrix(result)
    labels = np.zeros((len(policy.clusters), len(classes)), dtype=np.int64)
    for t, clusters in enumerate(policy.clusters):
        for c, members in enumerate(clusters):
            labels[t, members] = c
    mixed = np.asarray(
        [any(len(set(classes[m].tolist())) > 1 for m in clusters) for clusters in policy.clusters]
    )
    quarter = len(mixed) // 4
    last = np.flatnonzero(mixed)
    tail = weights[-quarter:]
    return Fig12(
        result,
        policy,
        labels,
        float(mixed.mean()),
        float(mixed[-quarter:].mean()),
        float(times[last[-1]]) if len(last) else None,
        {float(c): float(tail[:, classes == c].mean()) for c in np.unique(classes)},
    )


# ------------------------------------------------------------------------------------------------ Figs. 9 and 10

ALTERNATIVES = ("Oracle*", "LB-static", "LB-adaptive", "RR")


@dataclass
class ScalingRow:
    pes: int
    dynamic: bool
    time_vs_oracle: dict[str, float]
    final_throughput: dict[str, float]  # tuples/s


def scaling_experiment(
    client: JsonPoster, tuple_s: float, load: float, pes: int, dynamic: bool, oracle_seconds: float = 150.0
) -> ScalingRow:
    slowdown = np.where(np.arange(pes) < pes // 2, load, 1.0)
    unloaded = np.ones(pes)
    probe = region(tuple_s, slowdown)
    oracle_rate = min(float((1.0 / (probe.service_s * slowdown)).sum()), 1.0 / SPLITTER_S)
    tuples = int(oracle_seconds * oracle_rate)
    change = tuples // 8 if dynamic else None
    reg = region(tuple_s, slowdown, after=unloaded if dynamic else None, change_after=change)
    probe_tuples = min(tuples, 50_000)
    before = offline_best_weights(reg, slowdown, probe_tuples)
    after = offline_best_weights(reg, unloaded, probe_tuples) if dynamic else before
    runs: dict[str, Callable[[], RunResult]] = {
        "Oracle*": lambda: simulate(reg, tuples, before, OraclePolicy(before, after)),
        "LB-static": lambda: run_lb(client, reg, tuples, adaptive=False)[0],
        "LB-adaptive": lambda: run_lb(client, reg, tuples, adaptive=True)[0],
        "RR": lambda: simulate(reg, tuples, even_weights(pes)),
    }
    results = {name: run() for name, run in runs.items()}
    oracle = results["Oracle*"].total_time_s
    return ScalingRow(
        pes,
        dynamic,
        {name: r.total_time_s / oracle for name, r in results.items()},
        {name: r.final_throughput for name, r in results.items()},
    )


# ------------------------------------------------------------------------------------------------ membership changes

# A "dead" worker: 1,000x slower (1 s per 1,000-multiply tuple). Tuples are never lost in an ordered region, so
# whatever it is sent stalls the merge for its buffer's drain time (16 s); a slower "dead" worker only lengthens that.
DEAD = 1e3
MEMBERSHIP_EVENT_S = 30.0
REEXPLORATION_WINDOW_CALLS = 300


@dataclass
class MembershipRun:
    name: str
    result: RunResult
    subject: int  # the connection that joins, dies or recovers
    event_s: float
    fair_share: float  # the subject's weight in the offline best split of the final phase
    calls_to_90: int | None  # calls after the event until the subject holds >= 90% of its fair share for good
    max_tuple_share: (
        float  # the largest share of any interval's tuples that went to the subject after the event
    )
    reexplorations: (
        int  # calls among the first 300 after the event at which a weight-0 subject got weight again
    )
    calls_after_event: int
    throughput_vs_best: float  # final throughput / the offline best split's, for the final phase


def membership_run(
    client: JsonPoster,
    name: str,
    final_slowdown: list[float],
    phases: tuple[tuple[float, list[float]], ...] = (),
    join: bool = False,
    duration_s: float = 150.0,
    steady_weights: bool = True,
) -> MembershipRun:
    """Four 1,000-multiply workers; connection 4 joins at MEMBERSHIP_EVENT_S (weight 0, as an engine adds a
    channel) or the workers' speeds change at the phase times."""
    n, subject = len(final_slowdown), len(final_slowdown) - 1
    start = np.ones(n) if join else np.asarray(phases[0][1] if not phases else np.ones(n))
    reg = Region(
        service_s=np.full(n, MULT_S),
        slowdown=np.ones(n) if join else start,
        phases=tuple((t, np.asarray(s, dtype=np.float64)) for t, s in phases)
        + (((MEMBERSHIP_EVENT_S, np.asarray(final_slowdown, dtype=np.float64)),) if join else ()),
        splitter_s=SPLITTER_S,
        send_buffer=SEND_BUFFER,
        merge_buffer=MERGE_BUFFER,
    )
    final = np.asarray(final_slowdown, dtype=np.float64)
    best = offline_best_weights(reg, final, 50_000)
    best_rate = simulate(
        Region(
            reg.service_s, final, splitter_s=SPLITTER_S, send_buffer=SEND_BUFFER, merge_buffer=MERGE_BUFFER
        ),
        50_000,
        best,
    ).final_throughput
    ids = [f"c{j + 1}" for j in range(n)]
    policy = EndpointPolicy(
        client, ids, steady_weights=steady_weights, joins={ids[subject]: MEMBERSHIP_EVENT_S} if join else {}
    )
    initial = np.concatenate([even_weights(n - 1), [0]]) if join else even_weights(n)
    tuples = int(duration_s * min(float((1.0 / (reg.service_s * final)).sum()), 1.0 / SPLITTER_S))
    result = simulate(reg, tuples, initial, policy)
    times, weights = weight_matrix(result)
    event = phases[0][0] if phases else MEMBERSHIP_EVENT_S
    after = times >= event
    subject_w = weights[after, subject]
    fair = float(best[subject])
    below = np.flatnonzero(subject_w < 0.9 * fair)
    calls_to_90 = (0 if not len(below) else int(below[-1]) + 1) if fair > 0 else None
    if calls_to_90 is not None and calls_to_90 >= len(subject_w):
        calls_to_90 = None
    sent = np.diff(np.asarray(result.trace.sent), axis=0, prepend=0)[after]
    share = sent[:, subject] / np.maximum(sent.sum(axis=1), 1)
    window = subject_w[:REEXPLORATION_WINDOW_CALLS]
    zero_then_up = (window[1:] > 0) & (window[:-1] == 0)
    return MembershipRun(
        name,
        result,
        subject,
        event,
        fair,
        calls_to_90,
        float(share.max()) if len(share) else 0.0,
        int(zero_then_up.sum()),
        int(after.sum()),
        result.final_throughput / best_rate,
    )


def membership_scenarios(
    client: JsonPoster, steady_weights: bool = True, joins_only: bool = False, join_duration_s: float = 150.0
) -> list[MembershipRun]:
    """Join fast, join 100x slow, die (for good), die and recover 90 s later; 4 workers, events at 30 s."""
    alive, dead = [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, DEAD]
    t = MEMBERSHIP_EVENT_S
    runs = [
        membership_run(
            client, "join fast", alive, join=True, duration_s=join_duration_s, steady_weights=steady_weights
        ),
        membership_run(
            client,
            "join 100x slow",
            [1.0, 1.0, 1.0, 100.0],
            join=True,
            duration_s=join_duration_s,
            steady_weights=steady_weights,
        ),
    ]
    if joins_only:
        return runs
    return [
        *runs,
        membership_run(
            client, "die", dead, phases=((t, dead),), duration_s=t + 300.0, steady_weights=steady_weights
        ),
        membership_run(
            client,
            "die, recover after 90 s",
            alive,
            phases=((t, dead), (t + 90.0, alive)),
            duration_s=t + 240.0,
            steady_weights=steady_weights,
        ),
    ]


# ------------------------------------------------------------------------------------------------ Fig. 13

FIG13_PES = (16, 32, 64)


def fig13(client: JsonPoster, pes: int) -> ScalingRow:
    """Fig. 13: clustering on (auto from 16 connections), half the PEs 100x until 1/8 of the tuples.

    The paper's base cost is 60,000 multiplies; scaled like Fig. 10's 10,000 (10 ms per tuple) so that 64 unloaded
    workers (6,400 tuples/s) stay below the splitter's 8,000 tuples/s: at 60 ms the run would take 6x as many calls
    for the same dynamics, and at 4 ms (Fig. 12's scale) 64 workers would make the region splitter-bound."""
    return scaling_experiment(client, 10 * MULT_S, 100.0, pes, dynamic=True)

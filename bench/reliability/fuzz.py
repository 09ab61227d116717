"""The fuzz run of issue 9 at benchmark size: generated cases (10,000 by default; plan requests for every algorithm, valid and
invalid, and splitter call chains) with fresh randomness, through the app in process, driven from its main thread as uvicorn drives it (the same checks as
tests/test_fuzz_service.py: zero 5xx, zero hangs, every 200 plan valid, returned splitter models accepted). A float
warning (overflow, invalid value) raised in a request is an error there, answered 500: a failure, as in the test.

    python -m bench.reliability.fuzz [--examples 10000] 2> fuzz.log

A failing run writes every failure in full to bench/out/fuzz_failures.txt; a 500's traceback is the server's
"unhandled error" record in its log (stderr).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

from service.main import create_app
from service.settings import Settings
from tests.test_fuzz_service import MainThreadClient, run_fuzz

REQUESTS_TARGET = 10_000


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument(
        "--derandomize", action="store_true", help="the same cases every run (make bench-quick)"
    )
    args = parser.parse_args()
    warnings.simplefilter("error", RuntimeWarning)  # (as the test's filterwarnings mark)
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    # As uvicorn drives the app (its main thread): small plans inline, the rest in solver workers.
    client = MainThreadClient(create_app(Settings()))
    try:
        report = run_fuzz(client, args.examples, derandomize=args.derandomize)
    finally:
        client.close()
    seconds = time.monotonic() - started
    print(f"load average {load_before:.1f} -> {os.getloadavg()[0]:.1f} (2 cores); {seconds:.0f} s")
    print(f"cases {args.examples}, requests {report.requests}")
    print("statuses:", ", ".join(f"{k}: {v}" for k, v in sorted(report.statuses.items())))
    print(f"slowest answer minus its time_limit_s: {report.slowest_over_limit_s:.2f} s (deadline slack 1 s)")
    print(f"failures (5xx, hangs, invalid plans, rejected models): {len(report.failures)}")
    for failure in report.failures[:20]:
        print("  ", failure[:400])
    if report.failures:
        # Every failure in full (each with up to 3,000 characters of its body): the printed lines are cut, and a
        # rare failure may not come back in the next run (1 Dec: 4 x milp 500 seen once, never again). The
        # server's traceback of a 500 is its "unhandled error" record on stderr: keep stderr too (2> fuzz.log).
        kept = Path(__file__).resolve().parents[1] / "out" / "fuzz_failures.txt"
        kept.parent.mkdir(exist_ok=True)
        kept.write_text("\n".join(report.failures) + "\n", encoding="utf-8")
        print(f"every failure in full: {kept}; the server's tracebacks: its error records on stderr")
    from bench import results  # the report's rows (a no-op outside `make bench`)

    # Issue 9 counts 10,000 requests in a benchmark run; the derandomized quick run is a smoke test of the same checks.
    enough = args.derandomize or report.requests >= REQUESTS_TARGET
    results.record(
        "reliability",
        f"fuzz: failures over {args.examples:,} generated cases ({report.requests:,} requests)",
        len(report.failures),
        baselines={"slowest over its limit": f"{report.slowest_over_limit_s:.2f} s"},
        target=f"0 (no 5xx, hang, invalid plan, rejected model) over >= {REQUESTS_TARGET:,} requests",
        ok=not report.failures and enough,
        note="issue 9",
    )
    return 1 if report.failures or not enough else 0


if __name__ == "__main__":
    sys.exit(main())

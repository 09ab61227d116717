"""Run every benchmark in one go and write the report (`make bench`, `make bench-quick`).

    python -m bench.run_all [--quick] [--only MODULE,...] [--report docs/benchmarks.md] [--no-report]

Each benchmark runs in its own interpreter with TRIMTAB_BENCH_RESULTS naming a JSON-lines file: what it records
through `bench/results.py` becomes the tables of the report; its printed output is kept beside them (collapsed).
PNGs a benchmark writes to bench/out/ during its run are copied next to the report (docs/img/ for docs/benchmarks.md).
The load average is sampled before and after every benchmark: the machine may be shared.

--quick runs reduced settings, two benchmarks at a time (--jobs; about 1.5 minutes on 2 quiet cores); the full run
one at a time, 9-16 minutes. A benchmark that
fails or overruns its time cap is reported as failed and the exit code is 1 (the report is written anyway).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from bench import report
from bench.results import MODULE_ENV, RESULTS_ENV

ROOT = Path(__file__).resolve().parents[1]
PLOTS = ROOT / "bench" / "out"


@dataclass(frozen=True)
class Benchmark:
    module: str
    family: str
    full: tuple[str, ...]
    quick: tuple[str, ...]
    # Expected wall on this machine (s), full and quick: the progress bar's weights, and 3x of it (at least 60 s)
    # is the time cap of one benchmark, so a hang fails the run instead of stalling it.
    full_s: float
    quick_s: float
    # Writes PNGs to bench/out/. With --jobs 2 these run one after another in one lane (the other lane runs the
    # benchmarks that write none), so a plot is attributed to the benchmark running when it was written.
    plots: bool = False

    def args(self, quick: bool) -> list[str]:
        return list(self.quick if quick else self.full)

    def cap_s(self, quick: bool) -> float:
        return max(60.0, 3 * (self.quick_s if quick else self.full_s))


BENCHMARKS: tuple[Benchmark, ...] = (
    # The full settings are cut so that the whole run fits 20 minutes on the shared 2 cores (measured: see
    # docs/benchmarks.md); each benchmark's own defaults are larger where it has them.
    Benchmark("bench.milp_quality", "milp", ("--seeds", "2"), ("--seeds", "1", "--time-limit", "0.2"), 60, 6),
    Benchmark("bench.milp_skew", "milp", (), ("--only", "flights-day 20n", "--times", "1"), 70, 4),
    Benchmark(
        "bench.milp_scale", "scale", (), ("--nodes", "100", "--groups", "10000", "--budget", "100"), 30, 4
    ),
    Benchmark("bench.albic.experiments", "albic", (), ("--quick",), 190, 20, plots=True),
    Benchmark("bench.splitter.run", "splitter", ("--quick",), ("--quick",), 140, 140, plots=True),
    Benchmark("bench.splitter.speed", "scale", (), (), 40, 40),
    Benchmark("bench.stateful.experiments", "stateful", ("--n", "10"), ("--quick",), 80, 10, plots=True),
    Benchmark("bench.stateful.elb_range", "stateful", (), ("--windows", "10"), 20, 4),
    Benchmark("bench.stateful.clb_guard", "stateful", (), ("--seeds", "2", "--time-limit", "0.1"), 40, 5),
    Benchmark("bench.stateful.speed", "stateful", ("--repeats", "20"), ("--repeats", "5"), 40, 8),
    Benchmark(
        "bench.correlation.experiments", "correlation", ("--seeds", "1"), ("--quick",), 150, 20, plots=True
    ),
    Benchmark(
        "bench.correlation.limits", "correlation", (), ("--sizes", "100x1000x200", "--limits", "0.1"), 60, 5
    ),
    Benchmark("bench.spark.main_job", "spark", (), ("--quick",), 150, 60, plots=True),
    Benchmark("bench.spark.stats_speed", "spark", ("--repeats", "1"), ("--quick",), 60, 25),
    Benchmark(
        "bench.reliability.throughput", "reliability", (), ("--rounds", "1", "--duration", "2"), 170, 20
    ),
    Benchmark(
        "bench.reliability.deadlines",
        "reliability",
        # every maximum shape at the default time_limit_s 10 (a smaller limit is all 503s): the units, the windows
        # and the nodes x windows caps each stress another part of the answer
        ("--shapes", "units,windows,nodes"),
        ("--shapes", "units/10", "--time-limit", "1"),
        240,
        20,
    ),
    Benchmark(
        "bench.reliability.fuzz",
        "reliability",
        ("--examples", "8000"),  # about 10,400 requests: issue 9 counts 10,000 in a benchmark run
        ("--examples", "200", "--derandomize"),
        200,
        15,
    ),
)


@dataclass
class Outcome:
    module: str
    family: str
    args: list[str]
    code: int
    wall_s: float
    load_before: float
    load_after: float
    log: str
    plots: list[str]
    timed_out: bool = False


def _is_access_log(line: str) -> bool:
    return line.startswith('{"ts"') and '"level": "info"' in line


def _pump(stream: object, log: list[str], console: Console, echo: bool) -> None:
    for line in stream:  # type: ignore[attr-defined]
        if _is_access_log(line):
            continue
        log.append(line)
        if echo:
            console.print(line.rstrip("\n"), markup=False, highlight=False, style="dim")


def run_one(
    bench: Benchmark, quick: bool, results: Path, console: Console, echo: bool, parallel: bool = False
) -> Outcome:
    """Run one benchmark module in its own interpreter, its output kept (and echoed), within its time cap.

    `results` is this benchmark's own JSON-lines file. With `parallel`, only a benchmark marked `plots` claims the
    PNGs written during its run (the other lane writes none)."""
    env = {**os.environ, RESULTS_ENV: str(results), MODULE_ENV: bench.module, "PYTHONUNBUFFERED": "1"}
    if not bench.module.startswith("bench.reliability."):
        # One access-log line per request would bury the tables; the reliability benchmarks measure the service as
        # deployed (default log level), so they keep theirs (and the report drops those lines).
        env.setdefault("TRIMTAB_LOG_LEVEL", "warning")
    args = bench.args(quick)
    load_before = os.getloadavg()[0]
    started_wall = time.time()
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", bench.module, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: a timed-out benchmark is stopped with its servers
    )
    log: list[str] = []
    reader = threading.Thread(target=_pump, args=(process.stdout, log, console, echo), daemon=True)
    reader.start()
    timed_out = False
    try:
        code = process.wait(timeout=bench.cap_s(quick))
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(process.pid, 9)
        code = process.wait()
    reader.join(timeout=5)
    wall = time.perf_counter() - started
    plots = (
        sorted(str(p) for p in PLOTS.glob("*.png") if p.stat().st_mtime >= started_wall - 1)
        if PLOTS.is_dir() and (bench.plots or not parallel)
        else []
    )
    return Outcome(
        bench.module,
        bench.family,
        args,
        code,
        wall,
        load_before,
        os.getloadavg()[0],
        "".join(log),
        plots,
        timed_out,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="reduced settings (a smoke run of a few minutes)"
    )
    parser.add_argument(
        "--only", help="comma-separated module names to run (the report then says what is missing)"
    )
    parser.add_argument(
        "--report", type=Path, default=ROOT / "docs" / "benchmarks.md", help="where to write it"
    )
    parser.add_argument("--no-report", action="store_true", help="run and print only")
    parser.add_argument("--echo", action="store_true", help="print every benchmark's output as it runs")
    parser.add_argument(
        "--jobs",
        type=int,
        choices=(1, 2),
        help="benchmarks at once: 2 runs the plot-writing ones in one lane and the rest in another "
        "(default: 2 with --quick, whose numbers are a smoke test; 1 for the full run, whose timings must not "
        "compete with each other)",
    )
    args = parser.parse_args(argv)
    jobs = args.jobs or (2 if args.quick else 1)
    chosen = set(args.only.split(",")) if args.only else None
    todo = [b for b in BENCHMARKS if chosen is None or b.module in chosen]
    if chosen and (unknown := chosen - {b.module for b in BENCHMARKS}):
        parser.error(f"unknown modules: {', '.join(sorted(unknown))}")
    console = Console(stderr=True)
    measured = report.Run(
        quick=args.quick, wall_s=0.0, outcomes=[], records=[]
    )  # the commit and time at the start
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="trimtab-bench-") as scratch:
        weights = {b.module: (b.quick_s if args.quick else b.full_s) for b in todo}
        lanes = [todo] if jobs == 1 else [[b for b in todo if b.plots], [b for b in todo if not b.plots]]
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            task = progress.add_task("benchmarks", total=sum(weights.values()))
            done: dict[str, Outcome] = {}
            lock = threading.Lock()

            def run_lane(lane: list[Benchmark]) -> None:
                for bench in lane:
                    with lock:
                        progress.update(task, description=f"{bench.module} ({len(done) + 1}/{len(todo)})")
                    results = Path(scratch) / f"{bench.module}.jsonl"
                    outcome = run_one(bench, args.quick, results, progress.console, args.echo, jobs > 1)
                    status = (
                        "timed out"
                        if outcome.timed_out
                        else ("ok" if outcome.code == 0 else f"exit {outcome.code}")
                    )
                    with lock:
                        done[bench.module] = outcome
                        progress.console.print(
                            f"{bench.module}: {status}, {outcome.wall_s:.0f} s, load {outcome.load_after:.2f}",
                            style="green" if outcome.code == 0 else "bold red",
                        )
                        if outcome.code and not args.echo:
                            progress.console.print(outcome.log[-3000:], markup=False, highlight=False)
                        progress.advance(task, weights[bench.module])

            threads = [threading.Thread(target=run_lane, args=(lane,)) for lane in lanes if lane]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        # A plot written just before a benchmark started (mtime granularity) is the earlier benchmark's, not both.
        claimed: set[str] = set()
        for outcome in done.values():  # in the order they finished: within a lane, the order they ran
            outcome.plots = [p for p in outcome.plots if p not in claimed]
            claimed.update(outcome.plots)
        outcomes = [done[b.module] for b in todo]  # the report keeps the table's order
        records = [
            json.loads(line)
            for b in todo
            if (Path(scratch) / f"{b.module}.jsonl").is_file()
            for line in (Path(scratch) / f"{b.module}.jsonl").read_text().splitlines()
            if line.strip()
        ]
    total = time.perf_counter() - started
    failed = [o.module for o in outcomes if o.code]
    run = report.Run(
        quick=args.quick,
        wall_s=total,
        outcomes=[o.__dict__ for o in outcomes],
        records=records,
        commit=measured.commit,
        dirty=measured.dirty,
        when=measured.when,
    )
    if not args.no_report:
        report.write(run, args.report)
        console.print(f"report: {args.report} ({total:.0f} s)")
    if failed:
        console.print(f"failed: {', '.join(failed)}", style="bold red")
    # A family that recorded nothing fails a whole run (a benchmark that stopped reporting is as bad as a failure).
    missing = [] if chosen else report.missing_families(run)
    if missing:
        console.print(f"no results from: {', '.join(missing)}", style="bold red")
    return 1 if failed or missing else 0


if __name__ == "__main__":
    sys.exit(main())

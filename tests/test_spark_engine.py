"""The PySpark client on a real local SparkSession (one per test session, local[2], small shuffles, UI off): key groups
identical on the driver, the executors and in plain Python; `apply_plan` routing every key group to its planned
partition (checked with spark_partition_id()); window statistics equal to pandas; statistics of a streaming query
through foreachBatch; the progress listener; the main job end to end against a real trimtab server."""

from __future__ import annotations

import datetime
import os
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from clients.demo import free_port, uvicorn_server
from clients.spark.job import JobOptions, find_java, run_job, ship_library, spark_session
from clients.spark.keygroups import key_group, key_group_column, spark_xxhash64
from clients.spark.placement import Placement, apply_plan
from clients.spark.progress import QueryProgressSeries
from clients.spark.statistics import (
    KeyGroupTally,
    StatisticsSpec,
    StreamingStatistics,
    WindowSeries,
    collect_event_time_statistics,
    collect_window_statistics,
)

pytestmark = [
    pytest.mark.skipif(
        find_java() is None, reason="PySpark needs Java (a JDK 17+) and none was found; CI has one"
    ),
    pytest.mark.slow,
]

GROUPS = 4096
sf = pytest.importorskip("pyspark.sql.functions")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    session = spark_session("local[2]", partitions=2, app_name="trimtab-tests")
    ship_library(session, tmp_path_factory.mktemp("pyfiles"))  # as spark-submit --py-files would
    yield session
    session.stop()


def _random_text(rng: random.Random) -> str:
    alphabet = "abcXYZ019 -_é߷中文😀\u0301ß\u00a0"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


def _keys(n: int = 3000, seed: int = 11) -> list[tuple[Any, ...]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        text = None if i % 17 == 0 else _random_text(rng)
        small = (
            None if i % 13 == 0 else rng.choice([0, -1, 2**31 - 1, -(2**31), rng.randint(-(10**6), 10**6)])
        )
        big = None if i % 11 == 0 else rng.choice([2**63 - 1, -(2**63), rng.randint(-(2**62), 2**62)])
        real = None if i % 7 == 0 else rng.choice([0.0, -0.0, float("nan"), rng.uniform(-1e9, 1e9)])
        rows.append((text, small, big, real))
    return rows


KEY_SCHEMA = "s string, i int, l long, d double"
KEY_TYPES = {"s": "string", "i": "int", "l": "long", "d": "double"}
COMBINATIONS = [("s",), ("i",), ("l",), ("d",), ("s", "i"), ("i", "l", "s"), ("s", "d", "l")]


def test_key_groups_identical_on_driver_executors_and_plain_python(spark: Any) -> None:
    rows = _keys()
    df = spark.createDataFrame(rows, KEY_SCHEMA)
    names = ["kg_" + "_".join(cols) for cols in COMBINATIONS]
    spark_groups = df.select(
        "*",
        *(
            key_group_column(*cols, groups=GROUPS).alias(name)
            for cols, name in zip(COMBINATIONS, names, strict=True)
        ),
    )

    def python_key(record: dict[str, Any], cols: tuple[str, ...]) -> list[Any]:
        # pandas turns null ints into NaN floats (and cannot tell a null double from NaN): use the null flags and
        # the exact decimal strings of the integers
        return [
            None if record[f"null_{c}"] else (int(record[f"text_{c}"]) if c in ("i", "l") else record[c])
            for c in cols
        ]

    def on_executors(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            mismatches = sum(
                key_group(python_key(record, cols), GROUPS, [KEY_TYPES[c] for c in cols]) != record[name]
                for record in batch.to_dict("records")
                for cols, name in zip(COMBINATIONS, names, strict=True)
            )
            yield pd.DataFrame({"mismatches": [mismatches], "rows": [len(batch)]})

    flags = [spark_groups[c].isNull().alias(f"null_{c}") for c in KEY_TYPES]
    texts = [spark_groups[c].cast("string").alias(f"text_{c}") for c in ("i", "l")]
    checked = spark_groups.select("*", *flags, *texts).mapInPandas(on_executors, "mismatches long, rows long")
    totals = checked.groupBy().sum("mismatches", "rows").collect()[0]
    assert totals["sum(rows)"] == len(rows)
    assert totals["sum(mismatches)"] == 0
    on_driver = spark_groups.collect()
    for row in on_driver:
        for cols, name in zip(COMBINATIONS, names, strict=True):
            assert row[name] == key_group([row[c] for c in cols], GROUPS, [KEY_TYPES[c] for c in cols]), (
                row,
                cols,
            )
    all_null = [row for row in on_driver if row["s"] is None and row["i"] is None]
    assert all_null and all(row["kg_s_i"] == 42 % GROUPS for row in all_null)


def test_the_other_spark_types_hash_as_in_plain_python(spark: Any) -> None:
    """float (4 bytes, -0.0 and NaN normalized), short, byte, boolean, binary, date, and a composite of them."""
    rows = [
        (1.5, 3, 4, True, bytearray(b"\x00\xffab"), datetime.date(2013, 5, 1)),
        (-0.0, -7, -1, False, bytearray(b""), datetime.date(1969, 12, 31)),
        (float("nan"), 0, 127, None, None, None),
        (0.0, None, None, True, bytearray(b"x"), datetime.date(2000, 1, 1)),
    ]
    schema = "f float, s short, b byte, t boolean, bin binary, dt date"
    types = {"f": "float", "s": "short", "b": "byte", "t": "boolean", "bin": "binary", "dt": "date"}
    keys = [(c,) for c in types] + [("f", "s", "t", "dt")]
    df = spark.createDataFrame(rows, schema)
    hashed = df.select("*", *(sf.xxhash64(*cols).alias("h_" + "_".join(cols)) for cols in keys)).collect()
    for row in hashed:
        for cols in keys:
            values = [bytes(row[c]) if c == "bin" and row[c] is not None else row[c] for c in cols]
            assert row["h_" + "_".join(cols)] == spark_xxhash64(values, [types[c] for c in cols]), (row, cols)


def test_apply_plan_routes_each_key_group_to_its_planned_partition(spark: Any) -> None:
    rng = random.Random(4)
    groups, partitions = 64, 5
    placement = Placement(tuple(rng.randrange(partitions) for _ in range(groups)), partitions)
    df = spark.range(20_000).selectExpr("concat('user-', id % 997) AS user")
    df = df.withColumn("kg", key_group_column("user", groups=groups))
    routed = apply_plan(df, placement, "kg").select("kg", sf.spark_partition_id().alias("pid"))
    pairs = routed.groupBy("kg", "pid").count().collect()
    assert {row["kg"] for row in pairs} == set(range(groups))
    for row in pairs:
        assert row["pid"] == placement.partition_of[row["kg"]], row
    assert routed.rdd.getNumPartitions() == partitions


def _events(n: int = 4000, seed: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "user": [f"u{int(x)}" for x in rng.zipf(1.5, n) % 500],
            "region": rng.choice(["eu", "us", "ap"], n),
            "peer": [f"u{int(x)}" for x in rng.integers(0, 50, n)],
            "cost": rng.uniform(0, 3, n).round(3),
            "bytes": rng.integers(10, 100, n),
            "ts": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 21 * 24 * 3600, n), unit="s"),
        }
    )


def _expected(events: pd.DataFrame, groups: int) -> pd.DataFrame:
    keys = zip(events["user"], events["region"], strict=True)
    return events.assign(kg=[key_group([u, r], groups) for u, r in keys])


def test_window_statistics_equal_a_pandas_computation(spark: Any) -> None:

    groups = 32
    events = _events()
    df = spark.createDataFrame(events)
    frame = _expected(events, groups)
    exact = StatisticsSpec(["user", "region"], groups, load=sf.col("cost"), state=sf.col("bytes"))
    window = collect_window_statistics(df, exact)
    np.testing.assert_allclose(
        window.load, frame.groupby("kg")["cost"].sum().reindex(range(groups), fill_value=0)
    )
    np.testing.assert_allclose(
        window.state_bytes, frame.groupby("kg")["bytes"].sum().reindex(range(groups), fill_value=0)
    )

    approx = StatisticsSpec(
        ["user", "region"],
        groups,
        bytes_per_key=10.0,
        traffic_columns=(["user", "region"], ["peer", "region"]),
    )
    counted = collect_window_statistics(df, approx)
    np.testing.assert_array_equal(
        counted.load, frame.groupby("kg").size().reindex(range(groups), fill_value=0)
    )
    distinct = (
        frame.drop_duplicates(["user", "region"]).groupby("kg").size().reindex(range(groups), fill_value=0)
    )
    np.testing.assert_allclose(counted.state_bytes, 10.0 * distinct, rtol=0.15)  # HyperLogLog++, rsd 5 %
    dst = [key_group([p, r], groups) for p, r in zip(events["peer"], events["region"], strict=True)]
    pairs = pd.Series(1, index=pd.MultiIndex.from_arrays([frame["kg"], dst])).groupby(level=[0, 1]).sum()
    expected_traffic = {(int(a), int(b)): float(c) for (a, b), c in pairs.items() if a != b}
    assert counted.traffic == expected_traffic

    weekly = collect_event_time_statistics(df, StatisticsSpec(["user", "region"], groups), "ts", "7 days")
    frame["week"] = (frame["ts"] - pd.Timestamp(0)) // pd.Timedelta(
        days=7
    )  # Spark's windows start at the epoch
    by_week = frame.groupby("week")
    assert len(weekly) == by_week.ngroups
    for window_stats, (_, rows) in zip(weekly, by_week, strict=True):
        np.testing.assert_array_equal(
            window_stats.load, rows.groupby("kg").size().reindex(range(groups), fill_value=0)
        )


def test_tally_in_a_partition_pass_equals_the_exact_statistics(spark: Any) -> None:
    groups = 16
    events = _events(seed=5)
    frame = _expected(events, groups)
    tally = KeyGroupTally(spark.sparkContext, groups, bytes_per_key=2.0)
    df = spark.createDataFrame(events).withColumn("kg", key_group_column("user", "region", groups=groups))

    def count(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        rows = pd.concat(list(batches), ignore_index=True)
        if len(rows):
            tally.add(rows["kg"].to_numpy(), keys=rows[["user", "region"]], load=rows["cost"].to_numpy())
        yield pd.DataFrame({"n": [len(rows)]})

    placement = Placement.contiguous_ranges(groups, 3)
    assert apply_plan(df, placement, "kg").mapInPandas(count, "n long").groupBy().sum("n").first()[0] == len(
        events
    )
    window, task_seconds = tally.window()
    np.testing.assert_allclose(
        window.load, frame.groupby("kg")["cost"].sum().reindex(range(groups), fill_value=0)
    )
    distinct = (
        frame.drop_duplicates(["user", "region"]).groupby("kg").size().reindex(range(groups), fill_value=0)
    )
    np.testing.assert_array_equal(window.state_bytes, 2.0 * distinct)
    assert task_seconds > 0
    again, _ = tally.window()
    assert again.load.sum() == 0  # read and reset


def test_foreach_batch_statistics_and_progress_listener_on_a_streaming_query(
    spark: Any, tmp_path: Path
) -> None:
    groups = 8
    events = _events(1500, seed=9)
    source = tmp_path / "in"
    source.mkdir()
    columns = events[["user", "region", "cost"]]
    parts = [columns.iloc[k * 500 : (k + 1) * 500] for k in range(3)]  # 1,500 events in 3 files
    for i, part in enumerate(parts):
        path = source / f"part-{i}.csv"
        part.to_csv(path, index=False)
        mtime = time.time() - 100 + 10 * i
        os.utime(path, (mtime, mtime))
    listener = QueryProgressSeries(history=8)
    spark.streams.addListener(listener)
    try:
        stream = (
            spark.readStream.schema("user string, region string, cost double")
            .option("header", "true")
            .option("maxFilesPerTrigger", 1)
            .csv(str(source))
        )
        series = WindowSeries(capacity=8)
        collector = StreamingStatistics(StatisticsSpec(["user", "region"], groups), series)
        stats_query = (
            stream.writeStream.queryName("stats")
            .foreachBatch(collector)
            .option("checkpointLocation", str(tmp_path / "cp1"))
            .trigger(availableNow=True)
            .start()
        )
        counts = (
            stream.groupBy("region")
            .count()
            .writeStream.queryName("counts")
            .outputMode("complete")
            .format("memory")
            .option("checkpointLocation", str(tmp_path / "cp2"))
            .trigger(availableNow=True)
            .start()
        )
        stats_query.awaitTermination(300)
        counts.awaitTermination(300)
        deadline = time.monotonic() + 60  # listener events arrive asynchronously
        while time.monotonic() < deadline and min(
            len(listener.points("stats")), len(listener.points("counts"))
        ) < len(parts):
            time.sleep(0.5)
    finally:
        spark.streams.removeListener(listener)
    assert len(series) == len(parts)
    for window, part in zip(series.windows, parts, strict=True):
        frame = _expected(part, groups)
        np.testing.assert_array_equal(
            window.load, frame.groupby("kg").size().reindex(range(groups), fill_value=0)
        )
    assert series.load_series().shape == (groups, len(parts))

    stats_points = listener.points("stats")
    assert [p.input_rows for p in stats_points[-3:]] == [len(p) for p in parts]
    assert all(p.batch_duration_ms > 0 for p in stats_points)
    state_points = listener.points("counts")
    assert state_points[-1].state_rows == 3  # three regions in the state store
    assert state_points[-1].state_memory_bytes > 0
    units = listener.units({"stats": "exec-1", "counts": "exec-2"}, metric="input_rows")
    assert [u["load"] for u in units] == [[len(p) for p in parts]] * 2


def test_main_job_end_to_end_against_a_real_server(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = JobOptions(
        groups=32, partitions=4, window_days=28, period=1, max_migrations=8, max_windows=2, png=None
    )
    with uvicorn_server("127.0.0.1", free_port("127.0.0.1"), startup_timeout_s=180.0) as url:
        result = run_job(spark, url, options, tmp_path)
    out = capsys.readouterr().out
    assert len(result.windows) == 2
    assert all(w.hash_rows.sum() == w.trimtab_rows.sum() == w.rows for w in result.windows)
    first, *later = result.windows
    np.testing.assert_array_equal(first.hash_rows, first.trimtab_rows)  # no plan yet: the same ranges
    assert all(w.trimtab_distance < w.hash_distance for w in later)
    assert 0 < sum(w.migrations for w in result.windows) <= 8
    assert re.fullmatch(
        r"summary: windows=2 hash_load_distance=\d+\.\d\d trimtab_load_distance=\d+\.\d\d migrations=\d+ "
        r"stats_overhead=\d+\.\d%",
        result.summary(),
    )
    assert "hash max/mean" in out and ("feasible" in out or "optimal" in out)

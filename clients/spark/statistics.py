"""Window statistics per key group, computed by Spark: only per-key-group aggregates reach the driver.

Per statistics window and key group g:
- load[g]: the row count, or the sum of a user cost expression;
- state_bytes[g]: approximate distinct keys (HyperLogLog++ over the keys' xxhash64) times `bytes_per_key`, or the sum
  of a user state-size column;
- traffic[(a, b)]: rows (or cost) whose first key column set falls in key group a and second in b, for `albic`.

`collect_window_statistics` takes any DataFrame (one window: a micro-batch in `foreachBatch`, or a slice of history);
`collect_event_time_statistics` cuts a batch DataFrame into event-time windows (history, for an initial placement);
`StreamingStatistics` is a `foreachBatch` function that collects one window per micro-batch. `WindowSeries` keeps the
last windows as series in bounded memory.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from clients.spark.keygroups import key_group_column

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

KeyColumns = Sequence["str | Column"]
DEFAULT_BYTES_PER_KEY = 64.0
_KG = "__trimtab_kg"
_KG_DST = "__trimtab_kg_dst"


@dataclass(frozen=True)
class WindowStatistics:
    """One statistics window of G key groups (numpy arrays of length G)."""

    load: np.ndarray
    state_bytes: np.ndarray
    traffic: dict[tuple[int, int], float] = field(default_factory=dict)
    label: str | None = None

    @property
    def groups(self) -> int:
        return int(self.load.shape[0])

    @property
    def total_load(self) -> float:
        return float(self.load.sum())


@dataclass
class StatisticsSpec:
    """What to measure. `key_columns` define the key (and its key group); `load` a per-row cost expression (None:
    each row costs 1); `state` a per-row state-size column summed per key group (None: approximate distinct keys x
    `bytes_per_key`); `traffic_columns` two key column lists whose key groups exchange traffic (None: no traffic);
    `relative_sd` the HyperLogLog++ relative standard deviation."""

    key_columns: KeyColumns
    groups: int
    load: Column | None = None
    state: Column | None = None
    bytes_per_key: float = DEFAULT_BYTES_PER_KEY
    traffic_columns: tuple[KeyColumns, KeyColumns] | None = None
    relative_sd: float = 0.05

    def __post_init__(self) -> None:
        if self.groups < 1:
            raise ValueError(f"groups must be >= 1, got {self.groups}")
        if not self.key_columns:
            raise ValueError("key_columns must name at least one column")
        if self.bytes_per_key < 0:
            raise ValueError("bytes_per_key must be >= 0")

    def key_group(self) -> Column:
        return key_group_column(*self.key_columns, groups=self.groups)

    def aggregations(self) -> list[Column]:
        from pyspark.sql import functions as sf

        load = sf.count(sf.lit(1)) if self.load is None else sf.sum(self.load)
        if self.state is None:
            # HLL++ over the 64-bit key hash: one long per row instead of the key columns (collisions negligible).
            state = sf.approx_count_distinct(sf.xxhash64(*self.key_columns), self.relative_sd) * sf.lit(
                self.bytes_per_key
            )
        else:
            state = sf.sum(self.state)
        return [load.cast("double").alias("load"), state.cast("double").alias("state")]


def _window_from_rows(rows: Sequence[Any], groups: int, label: str | None) -> WindowStatistics:
    load = np.zeros(groups)
    state = np.zeros(groups)
    for row in rows:
        load[row[_KG]] = row["load"] or 0.0
        state[row[_KG]] = row["state"] or 0.0
    return WindowStatistics(load, state, {}, label)


def _traffic(df: DataFrame, spec: StatisticsSpec) -> dict[tuple[int, int], float]:
    from pyspark.sql import functions as sf

    assert spec.traffic_columns is not None
    src, dst = spec.traffic_columns
    cost = sf.count(sf.lit(1)) if spec.load is None else sf.sum(spec.load)
    rows = (
        df.select(
            key_group_column(*src, groups=spec.groups).alias(_KG),
            key_group_column(*dst, groups=spec.groups).alias(_KG_DST),
            *([] if spec.load is None else [spec.load.alias("__trimtab_cost")]),
        )
        .where(sf.col(_KG) != sf.col(_KG_DST))
        .groupBy(_KG, _KG_DST)
        .agg((cost if spec.load is None else sf.sum("__trimtab_cost")).cast("double").alias("rate"))
        .collect()
    )
    return {(int(r[_KG]), int(r[_KG_DST])): float(r["rate"]) for r in rows if r["rate"]}


def collect_window_statistics(
    df: DataFrame, spec: StatisticsSpec, label: str | None = None
) -> WindowStatistics:
    """The statistics of one window: all of `df`. One aggregation job (two with traffic); at most G rows (plus the
    traffic pairs) reach the driver."""
    rows = df.groupBy(spec.key_group().alias(_KG)).agg(*spec.aggregations()).collect()
    window = _window_from_rows(rows, spec.groups, label)
    if spec.traffic_columns is None:
        return window
    return WindowStatistics(window.load, window.state_bytes, _traffic(df, spec), label)


def collect_event_time_statistics(
    df: DataFrame, spec: StatisticsSpec, time_column: str | Column, window_duration: str
) -> list[WindowStatistics]:
    """A batch DataFrame (history) cut into tumbling event-time windows of `window_duration` (a Spark interval such
    as "7 days"), oldest first; windows without rows are absent. Traffic is not collected here."""
    from pyspark.sql import functions as sf

    rows = (
        df.groupBy(
            sf.window(time_column, window_duration).start.alias("__start"), spec.key_group().alias(_KG)
        )
        .agg(*spec.aggregations())
        .collect()
    )
    by_start: dict[Any, list[Any]] = {}
    for row in rows:
        by_start.setdefault(row["__start"], []).append(row)
    return [_window_from_rows(by_start[start], spec.groups, str(start)) for start in sorted(by_start)]


class WindowSeries:
    """The last `capacity` windows, oldest first, as series per key group, in bounded memory.

    A window is *undelivered* until `mark_delivered` (the planner calls it when a snapshot carrying it was answered);
    appending beyond the capacity evicts the oldest window and counts it in `dropped` if it was undelivered."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._windows: deque[WindowStatistics] = deque()
        self._undelivered = 0
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._windows)

    @property
    def undelivered(self) -> int:
        return self._undelivered

    @property
    def windows(self) -> list[WindowStatistics]:
        return list(self._windows)

    def append(self, window: WindowStatistics) -> None:
        if self._windows and window.groups != self._windows[0].groups:
            raise ValueError(
                f"window of {window.groups} key groups after windows of {self._windows[0].groups}"
            )
        if len(self._windows) == self.capacity:
            self._windows.popleft()
            if self._undelivered == self.capacity:
                self._undelivered -= 1
                self.dropped += 1
        self._windows.append(window)
        self._undelivered += 1

    def mark_delivered(self, keep: int) -> None:
        """Every window is delivered; only the newest `keep` stay (as history for the next series)."""
        self._undelivered = 0
        while len(self._windows) > max(keep, 0):
            self._windows.popleft()

    def load_series(self) -> np.ndarray:
        """(G, windows) loads, oldest window first."""
        return np.stack([w.load for w in self._windows], axis=1)


class StreamingStatistics:
    """A `foreachBatch` function: every micro-batch is one statistics window, appended to `series`; `then(batch_df,
    batch_id, window)` runs afterwards (the job's own work, planning...).

        query = stream.writeStream.foreachBatch(StreamingStatistics(spec, WindowSeries(16))).start()
    """

    def __init__(
        self,
        spec: StatisticsSpec,
        series: WindowSeries,
        then: Callable[[DataFrame, int, WindowStatistics], None] | None = None,
    ) -> None:
        self.spec = spec
        self.series = series
        self.then = then

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        window = collect_window_statistics(batch_df, self.spec, label=f"batch {batch_id}")
        self.series.append(window)
        if self.then is not None:
            self.then(batch_df, batch_id, window)


class _ArrayAccumulator:
    """AccumulatorParam of float numpy arrays (element-wise sums)."""

    def zero(self, value: np.ndarray) -> np.ndarray:
        return np.zeros_like(value)

    def addInPlace(self, total: np.ndarray, more: np.ndarray) -> np.ndarray:  # noqa: N802 (Spark names it)
        total += more
        return total


class KeyGroupTally:
    """Window statistics gathered inside a per-partition pass the job makes anyway: no extra Spark job.

    After `apply_plan` every key group lives in exactly one partition, so a task sees all rows of its key groups:
    it counts rows (or sums a cost) and distinct keys per key group exactly and adds a G-vector to a Spark
    accumulator; only those vectors reach the driver. `window()` on the driver reads and resets the sums (call it
    once per micro-batch, after the action). The seconds tasks spend in `add` are summed too (`task_seconds`), so
    the overhead can be measured. Spark may apply an accumulator update twice when a task is retried inside a
    transformation; a retried task therefore inflates one window's numbers (rare; the next window is clean).
    """

    def __init__(self, spark_context: Any, groups: int, bytes_per_key: float = DEFAULT_BYTES_PER_KEY) -> None:
        if groups < 1:
            raise ValueError(f"groups must be >= 1, got {groups}")
        self.groups = groups
        self.bytes_per_key = bytes_per_key
        # rows 0: load, 1: distinct keys, 2: seconds spent in add (element 0)
        self._accumulator = spark_context.accumulator(np.zeros((3, groups)), _ArrayAccumulator())

    def add(self, key_groups: np.ndarray, keys: Any = None, load: np.ndarray | None = None) -> None:
        """In a task: `key_groups` of the rows of a pandas batch, their `keys` (a pandas Series or DataFrame of the
        key columns; None: no state estimate) and per-row `load` (None: 1 per row)."""
        started = time.perf_counter()
        update = np.zeros((3, self.groups))
        groups = np.asarray(key_groups, dtype=np.int64)
        update[0] = np.bincount(groups, weights=load, minlength=self.groups)
        if keys is not None:
            distinct = (
                keys.assign(__kg=groups) if hasattr(keys, "assign") else keys.to_frame().assign(__kg=groups)
            )
            per_group = distinct.drop_duplicates()["__kg"].to_numpy()
            update[1] = np.bincount(per_group, minlength=self.groups)
        update[2, 0] = time.perf_counter() - started
        self._accumulator.add(update)

    def window(self, label: str | None = None) -> tuple[WindowStatistics, float]:
        """On the driver: the window gathered since the last call, and the task seconds spent gathering it."""
        value = np.array(self._accumulator.value, dtype=np.float64)
        self._accumulator.value = np.zeros((3, self.groups))
        return WindowStatistics(value[0], value[1] * self.bytes_per_key, {}, label), float(value[2, 0])

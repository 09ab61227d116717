"""Query progress as load series: a `StreamingQueryListener` that keeps, per streaming query, the last progress
events (processed rows per second, batch duration, input rows, state-operator rows and memory) in bounded memory.

Several queries sharing executors are the units of `correlation-global` / `correlation-pairwise` (Xing et al.): each
query's series of processed rows per second (or batch durations) is its load series, its executor its node.

    listener = QueryProgressSeries(history=32)
    spark.streams.addListener(listener)
    ...
    body = {"nodes": [...], "units": listener.units({"orders": "exec-1", "clicks": "exec-2"}),
            "algorithm": {"name": "correlation-global"}}
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

LOAD_METRICS = ("processed_rows_per_s", "batch_duration_ms", "input_rows", "state_rows", "state_memory_bytes")


@dataclass(frozen=True)
class ProgressPoint:
    batch_id: int
    input_rows: int
    processed_rows_per_s: float
    batch_duration_ms: float
    state_rows: int
    state_memory_bytes: int


def progress_point(progress: Any) -> ProgressPoint:
    """The numbers of one StreamingQueryProgress (pyspark's object; its JSON form has the same names)."""
    operators = list(progress.stateOperators or [])
    return ProgressPoint(
        batch_id=int(progress.batchId),
        input_rows=int(progress.numInputRows or 0),
        processed_rows_per_s=float(progress.processedRowsPerSecond or 0.0),
        batch_duration_ms=float(progress.batchDuration or 0.0),
        state_rows=sum(int(op.numRowsTotal or 0) for op in operators),
        state_memory_bytes=sum(int(op.memoryUsedBytes or 0) for op in operators),
    )


class QueryProgressSeries(StreamingQueryListener):
    """Per query (its name, or its id when unnamed) the last `history` progress points. Thread-safe: Spark calls
    listeners from its listener-bus thread."""

    def __init__(self, history: int = 64) -> None:
        if history < 1:
            raise ValueError(f"history must be >= 1, got {history}")
        self.history = history
        self._points: dict[str, deque[ProgressPoint]] = {}
        self._lock = threading.Lock()
        self.terminated: dict[str, str | None] = {}

    @staticmethod
    def _query_key(progress: Any) -> str:
        return str(progress.name or progress.id)

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 (Spark names it)
        pass

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802 (Spark names it)
        progress = event.progress
        point = progress_point(progress)
        with self._lock:
            self._points.setdefault(self._query_key(progress), deque(maxlen=self.history)).append(point)

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802 (Spark names it)
        pass

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802 (Spark names it)
        with self._lock:
            self.terminated[str(event.id)] = event.exception

    def queries(self) -> list[str]:
        with self._lock:
            return sorted(self._points)

    def points(self, query: str) -> list[ProgressPoint]:
        with self._lock:
            return list(self._points.get(query, ()))

    def series(self, query: str, metric: str = "processed_rows_per_s") -> list[float]:
        """One metric of a query, oldest batch first."""
        if metric not in LOAD_METRICS:
            raise ValueError(f"unknown metric {metric!r}; one of {', '.join(LOAD_METRICS)}")
        return [float(getattr(p, metric)) for p in self.points(query)]

    def units(
        self,
        node_of_query: Mapping[str, str],
        metric: str = "processed_rows_per_s",
        windows: int | None = None,
    ) -> list[dict[str, Any]]:
        """`units` of a /v1/assignment/plan request: one per query in `node_of_query`, its load the last `windows`
        values of `metric` (all queries cut to the shortest series, as the contract wants equal lengths) and its
        state size the latest state memory."""
        chosen = {q: self.points(q) for q in node_of_query}
        empty = [q for q, points in chosen.items() if not points]
        if empty:
            raise ValueError(f"no progress yet for queries {empty}")
        length = min(len(points) for points in chosen.values())
        if windows is not None:
            length = min(length, windows)
        return [
            {
                "id": query,
                "node": node_of_query[query],
                "load": [float(getattr(p, metric)) for p in points[-length:]],
                "state_size": float(points[-1].state_memory_bytes),
            }
            for query, points in chosen.items()
        ]

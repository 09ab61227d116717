"""The structured results channel of the benchmarks: what `bench/report.py` turns into docs/benchmarks.md.

A benchmark calls these at the end of its main(); each call appends one JSON line to the file named by the
environment variable TRIMTAB_BENCH_RESULTS (set by `bench/run_all.py`). Run on its own, a benchmark has no such
file and every call is a no-op, so the benchmarks stay plain scripts that print their tables.

- `record(family, name, ours, ...)`: one headline row: the paper's figure, ours, the baselines' (measured in the
  same run), the target and whether it is met.
- `table(family, title, columns, rows)`: a whole table (e.g. one row per cluster size).
- `setup(family, text)`: how the family was measured (sizes, seeds, time limits); the load average is added by run_all.
- `image(family, path, caption)`: a PNG to show in the report (PNGs a benchmark writes to bench/out/ are collected
  anyway; this adds a caption and an order).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RESULTS_ENV = "TRIMTAB_BENCH_RESULTS"
MODULE_ENV = "TRIMTAB_BENCH_MODULE"

# The families of the report, in the order it shows them, with their headings.
FAMILIES: dict[str, str] = {
    "milp": "Key-group rebalancing: MILP vs Flux vs HiGHS (Madsen et al., Figs. 2-4, 6-7) and real skew",
    "albic": "ALBIC vs COLA vs plain MILP (Madsen et al., Figs. 5, 10-11)",
    "splitter": "Splitter weights vs round-robin and the offline best (Schneider et al., Figs. 8-12)",
    "stateful": "ELB / CLB vs PKG and universal hashing (Guo & Zhou, Table 1, Fig. 4)",
    "correlation": "Correlation placement vs LLF and random (Xing et al., Figs. 3-8, Table 3)",
    "scale": "Scale: MILP at 1,000 x 100,000, Fox at N = 1,024, the largest requests",
    "spark": "The PySpark main job: hash partitioning vs trimtab, statistics overhead",
    "reliability": "Service: throughput ratio against a bare FastAPI endpoint, deadlines, fuzz",
}


def _clean(value: Any) -> Any:
    """JSON-safe: numpy scalars to Python numbers, NaN and infinities to None, containers recursively."""
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _emit(kind: str, family: str, payload: dict[str, Any]) -> None:
    target = os.environ.get(RESULTS_ENV)
    if not target:
        return
    if family not in FAMILIES:
        raise ValueError(f"unknown benchmark family {family!r}; one of {sorted(FAMILIES)}")
    line = {"kind": kind, "family": family, "module": os.environ.get(MODULE_ENV, ""), **_clean(payload)}
    with Path(target).open("a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def enabled() -> bool:
    """Whether a run collects results (benchmarks may skip building rows they would only record)."""
    return bool(os.environ.get(RESULTS_ENV))


def record(
    family: str,
    name: str,
    ours: Any,
    *,
    unit: str = "",
    paper: Any = None,
    baselines: Mapping[str, Any] | None = None,
    target: str | None = None,
    ok: bool | None = None,
    note: str = "",
) -> None:
    """One headline row. `paper` is the paper's figure (a number or a short text, typed in from the paper with its
    figure or table in `note`); `baselines` maps a baseline's name to its value measured in the same run; `ok` says
    whether `target` is met (None: no target)."""
    _emit(
        "record",
        family,
        {
            "name": name,
            "ours": ours,
            "unit": unit,
            "paper": paper,
            "baselines": dict(baselines or {}),
            "target": target,
            "ok": ok,
            "note": note,
        },
    )


def table(
    family: str, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], note: str = ""
) -> None:
    """A whole table: `rows` of cells in the order of `columns`."""
    _emit(
        "table",
        family,
        {"title": title, "columns": list(columns), "rows": [list(r) for r in rows], "note": note},
    )


def setup(family: str, text: str) -> None:
    """How the family was measured: sizes, seeds, time limits (one sentence per call)."""
    _emit("setup", family, {"text": text})


def image(family: str, path: str | os.PathLike[str], caption: str) -> None:
    """A PNG written by the benchmark, with the caption the report shows under it."""
    _emit("image", family, {"path": str(Path(path).resolve()), "caption": caption})

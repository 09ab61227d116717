"""The benchmarks never rot: `make bench-quick` (every benchmark at reduced settings) runs here and must pass,
report every family, and leave docs/ alone; plus the results channel and the report generator on their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import report, results
from bench.results import FAMILIES, RESULTS_ENV

ROOT = Path(__file__).resolve().parents[1]


def test_results_are_a_no_op_outside_a_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(RESULTS_ENV, raising=False)
    results.record("milp", "x", 1.0)  # nothing to write to, nothing raised
    assert not results.enabled()
    assert list(tmp_path.iterdir()) == []


def test_results_write_json_lines_and_reject_unknown_families(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    target = tmp_path / "results.jsonl"
    monkeypatch.setenv(RESULTS_ENV, str(target))
    results.record("milp", "load distance", float("nan"), unit="points", paper=0.5, baselines={"flux": 1})
    results.table("stateful", "t", ["a", "b"], [[1, None]])
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert [line["kind"] for line in lines] == ["record", "table"]
    assert lines[0]["ours"] is None  # NaN is not JSON: recorded as missing
    assert lines[0]["baselines"] == {"flux": 1}
    with pytest.raises(ValueError, match="unknown benchmark family"):
        results.record("no-such-family", "x", 1)


def test_a_family_without_rows_is_missing() -> None:
    records = [{"kind": "record", "family": f, "name": "x", "ours": 1} for f in FAMILIES if f != "albic"]
    run = report.Run(quick=True, wall_s=1.0, outcomes=[], records=records)
    assert report.missing_families(run) == ["albic"]


def test_bench_quick_runs_every_benchmark_and_reports_every_family(tmp_path: Path) -> None:
    docs_report = ROOT / "docs" / "benchmarks.md"
    before = docs_report.stat().st_mtime_ns if docs_report.exists() else None
    target = tmp_path / "benchmarks.md"
    done = subprocess.run(
        [sys.executable, "-m", "bench.run_all", "--quick", "--report", str(target)],
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:] + done.stdout[-4000:]
    text = target.read_text()
    for title in FAMILIES.values():
        section = text.split(f"## {title}", 1)
        assert len(section) == 2, f"no section for {title}"
        assert "_Not run in this run._" not in section[1].split("\n## ", 1)[0]
    assert "failed" not in text.split("## Summary", 1)[0].replace("0 failed", "")
    assert (tmp_path / "img").is_dir() and any((tmp_path / "img").glob("bench_*.png"))
    after = docs_report.stat().st_mtime_ns if docs_report.exists() else None
    assert after == before, "bench-quick must not overwrite docs/benchmarks.md"

"""The `trimtab` command line: every command with good and bad input; bad files get one line and exit code 2."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner, Result

from clients.demo import free_port
from service.cli import EXIT_BAD_INPUT, EXIT_VIOLATION, app
from solvers.plan_check import check_plan
from tests.conftest import make_snapshot

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def assert_one_line_error(result: Result, code: int, *words: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    body = make_snapshot(n_nodes=4, units_per_node=5, budget={"max_migrations": 3}, time_limit_s=1.0)
    body["algorithm"] = {"name": "flux"}
    return write(tmp_path / "snapshot.json", body)


def test_plan_in_process_prints_moves_and_metrics_and_writes_a_valid_plan(
    snapshot: Path, tmp_path: Path
) -> None:
    plan_path = tmp_path / "plan.json"
    result = invoke("plan", snapshot, "--output", plan_path)
    assert result.exit_code == 0, result.output
    plan = json.loads(plan_path.read_text())
    assert plan["algorithm"] == "flux" and 0 < plan["migrations"] <= 3
    assert check_plan(json.loads(snapshot.read_text()), plan) == []
    for move in plan["moves"]:
        assert move["unit"] in result.stdout
    assert "load_distance" in result.stdout and "independent validator: ok" in result.stdout
    assert f"{plan['before']['load_distance']:,.4g}" in result.stdout


def test_algorithm_option_overrides_the_snapshot_and_json_output(snapshot: Path) -> None:
    result = invoke("plan", snapshot, "--algorithm", "largest-load-first", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["algorithm"] == "largest-load-first"


def test_long_move_lists_are_cut_in_the_table_only(snapshot: Path) -> None:
    result = invoke("plan", snapshot, "--max-moves", "1")
    assert result.exit_code == 0, result.output
    plan = json.loads(invoke("plan", snapshot, "--json").stdout)
    assert plan["migrations"] >= 2
    assert f"... {plan['migrations'] - 1} more" in result.stdout


def test_unknown_algorithm_is_bad_input_named_by_the_service(snapshot: Path) -> None:
    assert_one_line_error(
        invoke("plan", snapshot, "--algorithm", "no-such"), EXIT_BAD_INPUT, "422", "algorithm"
    )


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, ("no such file",)),
        ('{"nodes": [', ("not valid JSON", "line 1")),
        ("[1, 2]", ("top level must be a JSON object",)),
        ({"nodes": [{"id": "n0"}], "units": [{"id": "u", "node": "n9", "load": 1}]}, ("422", "n9")),
    ],
    ids=["missing", "not-json", "not-an-object", "invalid-snapshot"],
)
def test_plan_bad_files(tmp_path: Path, content: Any, words: tuple[str, ...]) -> None:
    path = tmp_path / "snapshot.json"
    if content is not None:
        write(path, content)
    assert_one_line_error(invoke("plan", path), EXIT_BAD_INPUT, *words)


def test_plan_of_a_directory_is_a_bad_file(tmp_path: Path) -> None:
    assert_one_line_error(invoke("plan", tmp_path), EXIT_BAD_INPUT, "is a directory")


def test_unreachable_service_is_one_line_exit_1(snapshot: Path) -> None:
    url = f"http://127.0.0.1:{free_port('127.0.0.1')}"  # nothing listens there
    assert_one_line_error(invoke("plan", snapshot, "--url", url), EXIT_VIOLATION, "cannot reach", url)


def plan_for(snapshot: Path, tmp_path: Path) -> Path:
    plan_path = tmp_path / "plan.json"
    assert invoke("plan", snapshot, "-o", plan_path).exit_code == 0
    return plan_path


def test_validate_accepts_the_plan_and_rejects_a_tampered_one(snapshot: Path, tmp_path: Path) -> None:
    plan_path = plan_for(snapshot, tmp_path)
    ok = invoke("validate", snapshot, plan_path)
    assert ok.exit_code == 0, ok.output
    assert "valid" in ok.stdout
    plan = json.loads(plan_path.read_text())
    moved = plan["moves"][0]
    plan["assignment"][moved["unit"]] = moved["from"]  # the assignment no longer matches the moves list
    tampered = write(tmp_path / "tampered.json", plan)
    bad = invoke("validate", snapshot, tampered)
    assert bad.exit_code == EXIT_VIOLATION, bad.output
    assert "violation:" in bad.stdout and "Traceback" not in bad.output
    assert bad.stderr.strip().endswith("violations")


def test_validate_a_plan_that_breaks_the_budget(snapshot: Path, tmp_path: Path) -> None:
    plan_path = plan_for(snapshot, tmp_path)
    body = json.loads(snapshot.read_text())
    body["budget"] = {"max_migrations": 0}
    stricter = write(tmp_path / "stricter.json", body)
    result = invoke("validate", stricter, plan_path)
    assert result.exit_code == EXIT_VIOLATION, result.output
    assert "budget" in result.stdout or "migrations" in result.stdout


@pytest.mark.parametrize("which", ["snapshot", "plan"])
def test_validate_bad_files(snapshot: Path, tmp_path: Path, which: str) -> None:
    plan_path = plan_for(snapshot, tmp_path)
    not_a_plan = write(tmp_path / "other.json", {"status": "optimal", "moves": []})
    if which == "snapshot":
        result = invoke("validate", not_a_plan, plan_path)
        assert_one_line_error(result, EXIT_BAD_INPUT, "other.json", "not a valid snapshot", "nodes")
    else:
        result = invoke("validate", snapshot, not_a_plan)
        assert_one_line_error(result, EXIT_BAD_INPUT, "other.json", "not a valid plan")
    garbage = write(tmp_path / "garbage.json", "{]")
    assert_one_line_error(
        invoke("validate", snapshot, garbage), EXIT_BAD_INPUT, "garbage.json", "not valid JSON"
    )


def test_algorithms_lists_the_registry() -> None:
    result = invoke("algorithms")
    assert result.exit_code == 0, result.output
    for name in ("milp", "flux", "round-robin"):
        assert name in result.stdout


@pytest.mark.e2e
def test_serve_then_plan_and_algorithms_over_http_with_json_logs(snapshot: Path) -> None:
    """`trimtab serve` (a real uvicorn) answers `plan --url` and `algorithms --url`; its stderr is JSON lines only,
    the access line of each request carrying the request id the caller sent (echoed in the response header)."""
    port = free_port("127.0.0.1")
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "TRIMTAB_WORKERS": "1", "TRIMTAB_PORT": str(port), "TRIMTAB_LOG_LEVEL": "info"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        answer = None
        while answer is None and time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(httpx.TransportError):
                answer = httpx.get(f"{url}/healthz", timeout=1)
            time.sleep(0.2)
        assert answer is not None and answer.status_code == 200, proc.poll()
        catalog = httpx.get(f"{url}/v1/algorithms", headers={"X-Request-ID": "probe-1"}, timeout=30)
        assert catalog.headers["x-request-id"] == "probe-1"
        plan = invoke("plan", snapshot, "--url", url, "--json")
        assert plan.exit_code == 0, plan.output
        assert check_plan(json.loads(snapshot.read_text()), json.loads(plan.stdout)) == []
        listed = invoke("algorithms", "--url", url)
        assert listed.exit_code == 0 and "milp" in listed.stdout
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=15)
    records = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert not [line for line in stderr.splitlines() if line.strip() and not line.startswith("{")], stderr
    assert all(set(r) >= {"ts", "level", "logger", "msg"} for r in records)
    probe = [r for r in records if r.get("request_id") == "probe-1"]
    assert probe and probe[0]["path"] == "/v1/algorithms" and probe[0]["status"] == 200, records
    assert not [r for r in records if r.get("path") == "/healthz"]  # probes log at debug
    planned = [r for r in records if r.get("path") == "/v1/assignment/plan"]
    assert planned and planned[0]["status"] == 200 and planned[0]["request_bytes"] > 0, records
    assert len({r["request_id"] for r in records if "request_id" in r}) >= 3  # a fresh id per request

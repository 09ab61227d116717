"""The PySpark client's pure parts (no Spark, no Java): Spark's xxhash64 in Python, placements, the HTTP client's
retries / backoff / jitter / bearer token, the planner's bounded window buffer against a real uvicorn server stopped
and restarted mid-stream, and the client-side plan check."""

from __future__ import annotations

import random
from typing import Any

import httpx
import numpy as np
import pytest

from clients.demo import free_port, uvicorn_server
from clients.spark.client import RetryPolicy, ServiceRejected, ServiceUnavailable, TrimtabClient
from clients.spark.keygroups import key_group, spark_xxhash64
from clients.spark.placement import Placement
from clients.spark.planner import Budget, Planner, PlanRefused, check_plan
from clients.spark.statistics import WindowSeries, WindowStatistics

STARTUP_S = 180.0  # a loaded 2-core CI machine needs long to import the solvers


def test_xxhash64_matches_sparks_documented_examples() -> None:
    # pyspark.sql.functions.xxhash64 docs: xxhash64('ABC') and xxhash64('ABC', 'DEF') with seed 42
    assert spark_xxhash64(["ABC"]) == 4105715581806190027
    assert spark_xxhash64(["ABC", "DEF"]) == 3233247871021311208


def test_nulls_are_skipped_and_an_all_null_key_keeps_the_seed() -> None:
    assert spark_xxhash64([None]) == 42
    assert spark_xxhash64([None, None]) == 42
    assert key_group([None], 16) == 42 % 16
    assert spark_xxhash64(["ABC", None]) == spark_xxhash64(["ABC"])
    assert spark_xxhash64([None, "ABC"]) == spark_xxhash64(["ABC"])


def test_int_and_long_hash_differently_and_types_are_checked() -> None:
    assert spark_xxhash64([7], ["int"]) != spark_xxhash64([7], ["long"])
    assert spark_xxhash64([7]) == spark_xxhash64([7], ["long"])  # Python ints are LongType by default
    assert spark_xxhash64([True]) == spark_xxhash64([1], ["int"])
    assert spark_xxhash64([-0.0]) == spark_xxhash64([0.0])
    with pytest.raises(ValueError, match="unsupported Spark type"):
        spark_xxhash64([1], ["decimal"])
    with pytest.raises(TypeError, match="cannot hash"):
        spark_xxhash64([object()])
    with pytest.raises(ValueError, match="types has 1 entries for 2"):
        spark_xxhash64([1, 2], ["int"])


def test_key_groups_are_in_range_and_use_pmod() -> None:
    rng = random.Random(5)
    for _ in range(2000):
        value = rng.randint(-(2**63), 2**63 - 1)
        g = key_group([value], 37)
        assert 0 <= g < 37
        assert g == spark_xxhash64([value]) % 37


def test_contiguous_ranges_are_flinks_assignment() -> None:
    placement = Placement.contiguous_ranges(10, 3)
    assert placement.partition_of == (0, 0, 0, 0, 1, 1, 1, 2, 2, 2)
    assert list(placement.rows_per_partition([1.0] * 10)) == [4.0, 3.0, 3.0]
    with pytest.raises(ValueError, match="outside"):
        Placement((0, 3), 3)


# ------------------------------------------------------------------------------------------ HTTP client


def _client(handler: Any, attempts: int = 4, **kwargs: Any) -> tuple[TrimtabClient, list[float]]:
    sleeps: list[float] = []
    client = TrimtabClient(
        "http://trimtab.test",
        retry=RetryPolicy(attempts=attempts, base_backoff_s=0.5, max_backoff_s=4.0),
        sleep=sleeps.append,
        rng=random.Random(1),
        transport=httpx.MockTransport(handler),
        **kwargs,
    )
    return client, sleeps


def test_retries_5xx_and_transport_errors_with_jittered_backoff_then_succeeds() -> None:
    answers = iter(["down", 503, 500, 200])

    def handler(request: httpx.Request) -> httpx.Response:
        answer = next(answers)
        if answer == "down":
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(int(answer), json={"ok": answer == 200})

    client, sleeps = _client(handler)
    assert client.plan({"units": []}) == {"ok": True}
    assert client.attempts_made == 4
    assert len(sleeps) == 3
    for attempt, delay in enumerate(sleeps):
        assert 0.0 <= delay <= min(4.0, 0.5 * 2**attempt)
    assert len(set(sleeps)) == 3  # jittered, not a fixed ladder


def test_retry_after_is_honoured_up_to_the_cap() -> None:
    answers = iter([httpx.Response(503, headers={"retry-after": "3"}), httpx.Response(200, json={})])
    client, sleeps = _client(lambda request: next(answers))
    client.plan({})
    assert sleeps and 3.0 <= sleeps[0] <= 4.0


def test_gives_up_after_the_attempts_with_a_clear_error() -> None:
    client, sleeps = _client(lambda request: httpx.Response(502), attempts=3)
    with pytest.raises(ServiceUnavailable, match="after 3 attempts"):
        client.plan({})
    assert len(sleeps) == 2


def test_a_422_is_not_retried_and_names_the_problem() -> None:
    problem = {"title": "Invalid snapshot", "status": 422, "detail": "body.units.0.node: unknown node 'n9'"}
    client, sleeps = _client(lambda request: httpx.Response(422, json=problem))
    with pytest.raises(ServiceRejected, match="unknown node 'n9'") as caught:
        client.plan({})
    assert caught.value.status == 422 and not sleeps and client.attempts_made == 1


def test_bearer_token_is_sent() -> None:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={})

    client, _ = _client(handler, token="s3cret")
    client.splitter_weights({})
    assert seen == ["Bearer s3cret"]


# ------------------------------------------------------------------------------------------ plan check


def _window(loads: list[float]) -> WindowStatistics:
    return WindowStatistics(np.asarray(loads, dtype=float), np.full(len(loads), 10.0))


class _FixedPlans:
    """A stand-in service answering the given plans in turn (to feed the planner broken plans)."""

    def __init__(self, *plans: dict[str, Any]) -> None:
        self.plans = list(plans)

    def plan(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        return self.plans.pop(0)


def _planner(client: Any, **kwargs: Any) -> Planner:
    planner = Planner(client, groups=4, partitions=2, **kwargs)
    planner.add_window(_window([5, 1, 1, 1]))
    return planner


def test_a_plan_missing_a_key_group_is_refused_and_the_old_plan_stays() -> None:
    plan = {"assignment": {"kg-0": "p0", "kg-1": "p1", "kg-2": "p1"}, "scaling": {}}
    planner = _planner(_FixedPlans(plan))
    before = planner.placement
    with pytest.raises(PlanRefused, match=r"1 key groups missing .*kg-3"):
        planner.request_plan()
    assert planner.placement == before and planner.series.undelivered == 1


def test_a_plan_breaking_the_budget_or_naming_unknown_partitions_is_refused() -> None:
    over_budget = {"assignment": {"kg-0": "p1", "kg-1": "p1", "kg-2": "p0", "kg-3": "p0"}, "scaling": {}}
    planner = _planner(_FixedPlans(over_budget), budget=Budget(max_migrations=1))
    with pytest.raises(PlanRefused, match="4 key groups move, budget max_migrations=1"):
        planner.request_plan()
    unknown = {"assignment": {"kg-0": "p7", "kg-1": "p0", "kg-2": "p1", "kg-3": "p1", "kg-9": "p0"}}
    problems = check_plan(
        unknown, ["kg-0", "kg-1", "kg-2", "kg-3"], dict.fromkeys(["kg-0", "kg-1"], "p0") | {"kg-2": "p1", "kg-3": "p1"},
        dict.fromkeys(["kg-0", "kg-1", "kg-2", "kg-3"], 5.0), ["p0", "p1"], Budget(max_migration_cost=4.0),
    )  # fmt: skip
    assert any("unknown partitions ['p7']" in p for p in problems)
    assert any("unknown units" in p for p in problems)
    assert any("migration cost 5 exceeds" in p for p in problems)


def test_window_series_is_bounded_and_counts_only_undelivered_drops() -> None:
    series = WindowSeries(3)
    for i in range(3):
        series.append(_window([i, 0]))
    series.mark_delivered(keep=2)
    assert len(series) == 2 and series.undelivered == 0
    for i in range(3):
        series.append(_window([10 + i, 0]))
    assert len(series) == 3 and series.dropped == 0  # the two delivered ones made room
    series.append(_window([20, 0]))
    assert series.dropped == 1 and series.undelivered == 3
    assert list(series.load_series()[0]) == [11, 12, 20]


# ------------------------------------------------------------------------------------------ real server


@pytest.fixture
def port() -> int:
    return free_port("127.0.0.1")


@pytest.mark.e2e
def test_planner_buffers_windows_while_the_server_is_down(port: int) -> None:
    """A real uvicorn stopped and restarted mid-stream: the windows of the outage arrive with the next snapshot
    (none lost within the bound); beyond the bound the oldest are dropped and counted."""
    url = f"http://127.0.0.1:{port}"
    client = TrimtabClient(
        url, timeout_s=10, retry=RetryPolicy(attempts=2, base_backoff_s=0.05, max_backoff_s=0.1)
    )
    planner = Planner(client, groups=16, partitions=4, budget=Budget(max_migrations=4), buffer_windows=4)
    rng = np.random.default_rng(3)

    def add_windows(count: int) -> None:
        for _ in range(count):
            planner.add_window(_window(list(rng.uniform(1, 10, 16) * (1 + 3 * (np.arange(16) < 3)))))

    with uvicorn_server("127.0.0.1", port, STARTUP_S):
        add_windows(2)
        first = planner.request_plan()
        assert first.windows_sent == 2 and 0 < len(first.moved) <= 4
    placement = planner.placement
    add_windows(3)
    with pytest.raises(ServiceUnavailable):
        planner.request_plan()
    assert planner.placement == placement and planner.series.undelivered == 3
    with uvicorn_server("127.0.0.1", port, STARTUP_S):
        second = planner.request_plan()
    assert second.windows_sent == 3 and planner.dropped_windows == 0
    add_windows(6)  # down again (nothing listens on the port): 6 windows into a buffer of 4
    with pytest.raises(ServiceUnavailable):
        planner.request_plan()
    assert planner.dropped_windows == 2 and planner.series.undelivered == 4
    assert len(planner.snapshot()["units"][0]["load"]) == 4  # the next snapshot carries the 4 newest windows


def test_the_main_job_explains_a_missing_java(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from clients.spark import job

    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert job.find_java() is None
    assert job.main(["--spawn-server"]) == 2
    err = capsys.readouterr().err
    assert "needs Java" in err and "JAVA_HOME" in err and "make demo" in err


def test_an_initial_placement_ignores_the_budget_and_sends_no_current_nodes() -> None:
    plan = {"assignment": {"kg-0": "p0", "kg-1": "p1", "kg-2": "p1", "kg-3": "p1"}, "scaling": {}}
    planner = _planner(_FixedPlans(plan), budget=Budget(max_migrations=0))
    assert {u["node"] for u in planner.snapshot(initial=True)["units"]} == {None}
    outcome = planner.request_plan(initial=True)
    assert planner.placement.partition_of == (0, 1, 1, 1) and outcome.moved == [1]


def test_dates_hash_as_days_since_the_epoch() -> None:
    import datetime

    assert spark_xxhash64([datetime.date(2013, 5, 1)]) == spark_xxhash64([15826], ["date"])
    assert spark_xxhash64([datetime.date(1969, 12, 31)]) == spark_xxhash64([-1], ["int"])
    with pytest.raises(TypeError, match="not a datetime"):
        spark_xxhash64([datetime.datetime(2013, 5, 1)], ["date"])

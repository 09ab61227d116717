"""albic and cola through the wire: every plan passes the independent validator (hypothesis), bad traffic is a 422
naming the field, the scaling decision is reported, the collocation statistics are checked independently."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.assignment import MAX_TRAFFIC
from solvers.plan_check import check_plan
from tests.conftest import PLAN, assert_problem, make_snapshot
from tests.snapshots import Body, snapshots, solve

SETTINGS = settings(
    max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def snapshots_with_traffic(draw: st.DrawFn) -> Body:
    body = draw(snapshots(max_nodes=5, max_units=14))
    units = body["units"]
    n_ops = draw(st.integers(1, 3))
    for unit in units:
        unit["operator"] = f"op{draw(st.integers(0, n_ops - 1))}"
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, len(units) - 1), st.integers(0, len(units) - 1)).filter(
                lambda p: p[0] != p[1]
            ),
            max_size=20,
            unique=True,
        )
    )
    rates = draw(st.lists(st.sampled_from([0.0, 1.0, 5.0, 1e6]), min_size=len(pairs), max_size=len(pairs)))
    body["traffic"] = [
        {"src": units[a]["id"], "dst": units[b]["id"], "rate": r}
        for (a, b), r in zip(pairs, rates, strict=True)
    ]
    if draw(st.booleans()):
        body["serialization_cost"] = draw(st.sampled_from([0.0, 0.01, 1.0]))
    return body


@pytest.mark.parametrize(
    "algorithm",
    [
        {"name": "albic"},
        {"name": "albic", "pairs": "budget", "balance_reserve": 0.0},
        {"name": "albic", "pairs": "budget", "max_load_distance": 2.0},
        {"name": "albic", "max_load_distance": 0.5, "step_partition_load": 10},
        {"name": "albic", "target_nodes": 2},
        {"name": "albic", "target_utilization": [5, 20]},
        {"name": "cola"},
    ],
    ids=[
        "albic",
        "albic-pairs-budget",
        "albic-pairs-budget-tight-maxld",
        "albic-tight-maxld",
        "albic-target-nodes",
        "albic-target-util",
        "cola",
    ],
)
@SETTINGS
@given(body=snapshots_with_traffic())
def test_every_plan_passes_the_validator(algorithm: dict[str, Any], body: Body) -> None:
    body = {**body, "algorithm": algorithm}
    plan = solve(body, time_limit_s=0.3)
    assert check_plan(body, plan) == []
    budget = body.get("budget") or {}
    units = {u["id"]: u for u in body["units"]}
    migrated = [u for u, n in plan["assignment"].items() if units[u]["node"] not in (None, n)]
    if budget.get("max_migrations") is not None:
        assert len(migrated) <= budget["max_migrations"]
    assert (plan["after"]["collocation_factor"] is None) == (sum(t["rate"] for t in body["traffic"]) == 0)


def _traffic_body() -> Body:
    body = make_snapshot(budget={"max_migrations": 3}, time_limit_s=0.5)
    for unit in body["units"]:
        unit["operator"] = "a" if unit["id"].endswith(("-0", "-1", "-2")) else "b"
    body["traffic"] = [
        {"src": "u0-0", "dst": "u1-3", "rate": 50.0},
        {"src": "u0-0", "dst": "u2-4", "rate": 1.0},
        {"src": "u2-1", "dst": "u3-5", "rate": 40.0},
    ]
    return body


@pytest.mark.parametrize(
    ("traffic", "loc"),
    [
        ([{"src": "u0-0", "dst": "u0-0", "rate": 1.0}], ("body", "traffic", 0, "dst")),
        (
            [{"src": "u0-0", "dst": "u1-0", "rate": 1.0}, {"src": "u0-0", "dst": "u1-0", "rate": 2.0}],
            ("body", "traffic", 1),
        ),
        ([{"src": "ghost", "dst": "u1-0", "rate": 1.0}], ("body", "traffic", 0, "src")),
        ([{"src": "u0-0", "dst": "u1-0", "rate": -1.0}], ("body", "traffic", 0, "rate")),
        ([{"src": "u0-0", "dst": "u1-0", "rate": 1e300}], ("body", "traffic", 0, "rate")),
        ([{"src": "u0-0", "dst": "u1-0"}], ("body", "traffic", 0, "rate")),
    ],
    ids=["self-loop", "duplicate-edge", "unknown-unit", "negative-rate", "overflowing-rate", "missing-rate"],
)
def test_bad_traffic_is_a_422_naming_the_field(
    client: TestClient, traffic: list[dict[str, Any]], loc: tuple[str | int, ...]
) -> None:
    body = {**_traffic_body(), "traffic": traffic, "algorithm": {"name": "albic"}}
    assert_problem(client.post(PLAN, json=body), 422, loc)


def test_non_finite_rate_is_a_422(client: TestClient) -> None:
    body = _traffic_body()
    body["traffic"] = [{"src": "u0-0", "dst": "u1-0", "rate": 1.0}]
    text = json.dumps(body).replace('"rate": 1.0', '"rate": NaN')
    response = client.post(PLAN, content=text, headers={"content-type": "application/json"})
    assert_problem(response, 422, ("body", "traffic", 0, "rate"))


def test_traffic_is_capped_in_the_schema(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()["components"]["schemas"]["AssignmentRequest"]
    assert schema["properties"]["traffic"]["maxItems"] == MAX_TRAFFIC


@pytest.mark.parametrize(
    ("params", "loc"),
    [
        ({"target_nodes": 3, "target_utilization": [40, 60]}, ("body", "algorithm", "albic")),
        ({"target_utilization": [60, 40]}, ("body", "algorithm", "albic", "target_utilization")),
        ({"target_utilization": [40]}, ("body", "algorithm", "albic", "target_utilization")),
        ({"step_partition_load": 0}, ("body", "algorithm", "albic", "step_partition_load")),
        ({"pairs": "all"}, ("body", "algorithm", "albic", "pairs")),
        ({"pairs": "budget", "balance_reserve": 1.5}, ("body", "algorithm", "albic", "balance_reserve")),
        ({"pairs": "budget", "balance_reserve": -0.1}, ("body", "algorithm", "albic", "balance_reserve")),
    ],
)
def test_bad_albic_parameters_are_a_422(
    client: TestClient, params: dict[str, Any], loc: tuple[str, ...]
) -> None:
    body = {**_traffic_body(), "algorithm": {"name": "albic", **params}}
    assert_problem(client.post(PLAN, json=body), 422, loc)


def test_albic_collocates_and_reports_the_statistics(client: TestClient) -> None:
    body = {**_traffic_body(), "algorithm": {"name": "albic"}, "serialization_cost": 0.1}
    response = client.post(PLAN, json=body)
    assert response.status_code == 200, response.text
    plan = response.json()
    assert check_plan(body, plan) == []
    assert plan["assignment"]["u0-0"] == plan["assignment"]["u1-3"]  # the pair with the most traffic
    assert plan["after"]["collocation_factor"] > plan["before"]["collocation_factor"]
    assert plan["before"]["load_index"] == pytest.approx(100.0)
    assert plan["after"]["load_index"] < 100.0
    # The independent validator recomputes them: a wrong number is caught.
    tampered = copy.deepcopy(plan)
    tampered["after"]["collocation_factor"] += 0.01
    assert any("collocation_factor" in p for p in check_plan(body, tampered))


def test_albic_without_traffic_is_the_milp_and_says_so(client: TestClient) -> None:
    body = make_snapshot(budget={"max_migrations": 2}, time_limit_s=0.5, algorithm={"name": "albic"})
    plan = client.post(PLAN, json=body).json()
    assert any("plain milp" in note for note in plan["notes"])
    assert plan["after"]["collocation_factor"] is None and plan["after"]["load_index"] is None


def test_scale_in_is_reported_in_drain_nodes(client: TestClient) -> None:
    body = {**_traffic_body(), "algorithm": {"name": "albic", "target_nodes": 3}}
    plan = client.post(PLAN, json=body).json()
    assert len(plan["scaling"]["drain_nodes"]) == 1
    assert check_plan(body, plan) == []
    # The validator refuses a plan that moves a unit onto a node it marks for removal.
    marked = plan["scaling"]["drain_nodes"][0]
    tampered = copy.deepcopy(plan)
    unit = next(u for u, n in plan["assignment"].items() if n != marked)
    tampered["assignment"][unit] = marked
    assert any("marks for removal" in p for p in check_plan(body, tampered))


def test_scale_out_is_reported_in_add_nodes(client: TestClient) -> None:
    body = {**_traffic_body(), "algorithm": {"name": "albic", "target_nodes": 6}}
    plan = client.post(PLAN, json=body).json()
    assert plan["scaling"]["add_nodes"] == ["albic-new-1", "albic-new-2"]
    assert check_plan(body, plan) == []


def test_cola_plans_from_scratch_within_the_budget(client: TestClient) -> None:
    body = {**_traffic_body(), "algorithm": {"name": "cola"}}
    plan = client.post(PLAN, json=body).json()
    assert check_plan(body, plan) == []
    assert plan["migrations"] <= 3

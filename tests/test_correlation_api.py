"""correlation-global / correlation-pairwise through POST /v1/assignment/plan: bad input and report fields."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from solvers.plan_check import check_plan
from tests.conftest import make_snapshot

ALGORITHMS: list[dict[str, Any]] = [
    {"name": "correlation-global"},
    *(
        {"name": "correlation-pairwise", "variant": v}
        for v in (
            "one-way",
            "two-way",
            "selective-exchange",
            "improved-two-way",
            "improved-selective-exchange",
        )
    ),
]


def _post(client: TestClient, body: dict[str, Any]) -> Any:
    return client.post("/v1/assignment/plan", json=body)


@pytest.mark.parametrize("algorithm", ALGORITHMS, ids=lambda a: a.get("variant", a["name"]))
def test_plan_is_valid_and_reports_correlation_fields(client: TestClient, algorithm: dict[str, Any]) -> None:
    body = make_snapshot(
        n_nodes=5, units_per_node=6, windows=10, algorithm=algorithm, budget={"max_migrations": 6}
    )
    response = _post(client, body)
    assert response.status_code == 200, response.text
    plan = response.json()
    assert check_plan(body, plan) == []
    for label in ("before", "after"):
        stats = plan[label]
        assert stats["avg_load_correlation"] is not None
        assert stats["min_mean_node_load_variance"] <= stats["mean_node_load_variance"] + 1e-9
    assert plan["migrations"] <= 6
    assert plan["load_moved"] >= 0.0


@pytest.mark.parametrize("algorithm", ALGORITHMS[:2], ids=lambda a: a.get("variant", a["name"]))
def test_series_shorter_than_two_windows_is_a_422_naming_the_load(
    client: TestClient, algorithm: dict[str, Any]
) -> None:
    body = make_snapshot(n_nodes=3, algorithm=algorithm)  # single mean loads: no series
    response = _post(client, body)
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")
    errors = response.json()["errors"]
    assert errors[0]["loc"] == ["body", "units", 0, "load"]
    assert "at least 2 windows" in errors[0]["msg"]


def test_unequal_series_lengths_are_a_422(client: TestClient) -> None:
    body = make_snapshot(n_nodes=3, windows=5, algorithm={"name": "correlation-global"})
    body["units"][4]["load"] = body["units"][4]["load"][:3]
    response = _post(client, body)
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "units", 4, "load"]


@pytest.mark.parametrize(
    ("algorithm", "field"),
    [
        ({"name": "correlation-global", "theta": 1.5}, "theta"),
        ({"name": "correlation-global", "epsilon": -0.1}, "epsilon"),
        ({"name": "correlation-pairwise", "delta": 0.0}, "delta"),
        ({"name": "correlation-pairwise", "delta": 1.2}, "delta"),
        ({"name": "correlation-pairwise", "theta": -2}, "theta"),
        ({"name": "correlation-pairwise", "epsilon": 3}, "epsilon"),
        ({"name": "correlation-pairwise", "variant": "three-way"}, "variant"),
        ({"name": "correlation-pairwise", "delta": "NaN"}, "delta"),
        ({"name": "correlation-global", "max_spread": -1}, "max_spread"),
        ({"name": "correlation-global", "max_spread": "Infinity"}, "max_spread"),
        ({"name": "correlation-global", "variant": "two-way"}, "variant"),
        ({"name": "correlation-pairwise", "max_spread": 101}, "max_spread"),
    ],
)
def test_thresholds_out_of_range_are_a_422_naming_the_field(
    client: TestClient, algorithm: dict[str, Any], field: str
) -> None:
    body = make_snapshot(n_nodes=3, windows=4, algorithm=algorithm)
    response = _post(client, body)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    locs = [e["loc"] for e in response.json()["errors"]]
    assert any(loc[-1] == field and "algorithm" in loc for loc in locs), locs


def test_constant_series_are_noted_and_count_as_zero_correlation(client: TestClient) -> None:
    body = make_snapshot(n_nodes=3, windows=6, algorithm={"name": "correlation-global"})
    body["units"][0]["load"] = [3.0] * 6
    body["units"][1]["load"] = [0.0] * 6
    response = _post(client, body)
    assert response.status_code == 200, response.text
    plan = response.json()
    assert check_plan(body, plan) == []
    assert any("2 unit(s) have a constant load series" in note for note in plan["notes"]), plan["notes"]


def test_all_constant_series_still_balance(client: TestClient) -> None:
    body = make_snapshot(
        n_nodes=4, windows=3, algorithm={"name": "correlation-pairwise", "variant": "two-way"}
    )
    for unit in body["units"]:
        unit["load"] = [unit["load"][0]] * 3
    response = _post(client, body)
    assert response.status_code == 200, response.text
    plan = response.json()
    assert check_plan(body, plan) == []
    assert plan["after"]["avg_load_correlation"] == 0.0
    assert plan["after"]["load_distance"] < plan["before"]["load_distance"]


def test_initial_placement_places_every_unit(client: TestClient) -> None:
    body = make_snapshot(n_nodes=4, windows=8, algorithm={"name": "correlation-global"})
    for unit in body["units"]:
        unit["node"] = None
    response = _post(client, body)
    assert response.status_code == 200, response.text
    plan = response.json()
    assert check_plan(body, plan) == []
    assert plan["migrations"] == 0
    assert set(plan["assignment"].values()) <= {"n0", "n1", "n2", "n3"}


def test_algorithms_listing_names_both(client: TestClient) -> None:
    names = {a["name"] for a in client.get("/v1/algorithms").json()["algorithms"]}
    assert {"correlation-global", "correlation-pairwise"} <= names


def test_paper_and_improved_variants_through_the_api(client: TestClient) -> None:
    body = make_snapshot(n_nodes=5, units_per_node=6, windows=10, algorithm={"name": "correlation-global"})
    for algorithm in (
        {"name": "correlation-global", "variant": "paper"},
        {"name": "correlation-global", "variant": "improved", "max_spread": 2.0},
        {"name": "correlation-pairwise", "max_spread": None},
        {"name": "correlation-pairwise", "max_spread": 2.0},
    ):
        response = _post(client, {**body, "algorithm": algorithm})
        assert response.status_code == 200, response.text
        assert check_plan({**body, "algorithm": algorithm}, response.json()) == []


def test_short_series_note_through_the_api(client: TestClient) -> None:
    body = make_snapshot(n_nodes=3, windows=2, algorithm={"name": "correlation-global"})
    plan = _post(client, body).json()
    assert any("unreliable" in note and "+-1" in note for note in plan["notes"]), plan["notes"]


def test_too_many_load_values_is_a_422_naming_the_limit() -> None:
    import numpy as np

    from solvers.correlation import solve_global
    from solvers.correlation.solve import MAX_SERIES_CELLS
    from solvers.errors import UnsolvableRequest
    from solvers.instance import AssignmentInstance

    units, windows = 2_500, MAX_SERIES_CELLS // 2_500 + 1
    inst = AssignmentInstance(
        node_ids=("a", "b"),
        capacity=np.full(2, 100.0),
        draining=np.zeros(2, dtype=bool),
        unit_ids=tuple(f"u{k}" for k in range(units)),
        current=np.zeros(units, dtype=np.int64),
        series=np.zeros((units, windows)),
        state_size=np.ones(units),
        pinned=np.zeros(units, dtype=bool),
    )
    with pytest.raises(UnsolvableRequest) as caught:
        solve_global(inst)
    assert caught.value.loc == ("body", "units", 0, "load")
    assert f"{MAX_SERIES_CELLS}" in caught.value.msg


@pytest.mark.parametrize("algorithm", ["correlation-global", "correlation-pairwise"])
@pytest.mark.parametrize("placed", [False, True])
def test_further_resources_are_honoured_on_receiving_nodes(
    client: TestClient, algorithm: str, placed: bool
) -> None:
    """Found by the fuzz test: the correlation algorithms balance one load dimension and put a receiving node over a
    further resource's capacity (validator 500). Every answer is now a valid plan or a 422 naming a unit."""
    import random

    answered = 0
    for seed in range(20):
        rng = random.Random(seed)
        body = {
            "nodes": [{"id": f"n{i}", "resources": {"mem": 10.0}} for i in range(3)],
            "units": [
                {
                    "id": f"u{k}",
                    "node": f"n{rng.randrange(3)}" if placed else None,
                    "load": [rng.uniform(0, 30) for _ in range(6)],
                    "resources": {"mem": rng.choice([0.0, 4.0, 6.0])},
                }
                for k in range(6)
            ],
            "algorithm": {"name": algorithm},
            "time_limit_s": 1.0,
        }
        response = client.post("/v1/assignment/plan", json=body)
        assert response.status_code in (200, 422), response.text
        if response.status_code == 200:
            answered += 1
            assert check_plan(body, response.json()) == []
        else:
            assert response.json()["errors"][0]["loc"][:2] == ["body", "units"]
    assert answered >= 10


def test_a_tiny_draining_node_is_no_500_in_the_exact_repair(client: TestClient) -> None:
    """Found by the fuzz bench (30 Nov): a draining node of capacity 1e-6 holding a unit makes the validator's
    utilization cap 1.7e22 points; the exact spread repair wrote it into a CP-SAT constraint beyond int64 and CP-SAT
    refused it (TypeError, a 500). A cap above every node's largest mean cannot bind: it is clamped there."""
    body = {
        "nodes": [
            {"id": "n0", "capacity": 1.0},
            {"id": "n1", "capacity": 50.5},
            {"id": "n2", "capacity": 100.0},
            {"id": "n3", "capacity": 1e-06, "draining": True},
            {"id": "n4", "capacity": 1000000.0},
        ],
        "units": [
            {"id": "u0", "load": [27.0, 1e12, 66.00260015364393, 1e-09, 99.999, 1e15], "node": "n3"},
            {"id": "u1", "load": [2.0, 0.0, 0.0, 0.0, 0.0, 1.0], "node": "n4"},
            {
                "id": "u2",
                "load": [0.0, 27.0, 0.0, 4.60051292077588, 1e-09, 1000000.0],
                "node": "n0",
                "pinned": True,
            },
        ],
        "algorithm": {"name": "correlation-pairwise", "variant": "improved-two-way"},
        "time_limit_s": 1.0,
        "budget": {"max_migrations": 0},
    }
    response = _post(client, body)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "unchanged"

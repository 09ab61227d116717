from fastapi.testclient import TestClient

from solvers.plan_check import check_plan
from tests.conftest import make_snapshot


def test_health(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}


def test_default_algorithm_is_milp_and_valid(client: TestClient) -> None:
    body = make_snapshot(budget={"max_migrations": 3})
    response = client.post("/v1/assignment/plan", json=body)
    assert response.status_code == 200, response.text
    plan = response.json()
    assert plan["algorithm"] == "milp"
    assert check_plan(body, plan) == []
    assert plan["after"]["load_distance"] < plan["before"]["load_distance"]

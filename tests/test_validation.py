"""Every bad-input rule of POST /v1/assignment/plan: a problem+json 422 (or 413) naming the field, never a 500.

Requests with NaN/Infinity are sent as raw JSON text: httpx (like the json module in strict mode) refuses to encode them,
but real callers (Java's Jackson with ALLOW_NON_NUMERIC_NUMBERS, Python's json.dumps) do send them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.algorithms import REGISTRY
from service.main import create_app
from service.settings import Settings
from solvers.errors import UnsolvableRequest
from solvers.plan_check import check_plan
from tests.conftest import PLAN, assert_problem, make_snapshot

Body = dict[str, Any]


def _set(path: tuple[str | int, ...], value: Any) -> Callable[[Body], None]:
    def mutate(body: Body) -> None:
        target: Any = body
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _delete(path: tuple[str | int, ...]) -> Callable[[Body], None]:
    def mutate(body: Body) -> None:
        target: Any = body
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


def _series_everywhere(windows: int) -> Callable[[Body], None]:
    def mutate(body: Body) -> None:
        for unit in body["units"]:
            unit["load"] = [1.0] * windows

    return mutate


def _all(*mutations: Callable[[Body], None]) -> Callable[[Body], None]:
    def mutate(body: Body) -> None:
        for m in mutations:
            m(body)

    return mutate


def _pin_all_of_node_0(body: Body) -> None:
    for unit in body["units"]:
        if unit["node"] == "n0":
            unit["pinned"] = True


# (id, mutation of a valid snapshot, the field the 422 must name)
INVALID: list[tuple[str, Callable[[Body], None], tuple[str | int, ...]]] = [
    # references and ids
    ("unknown-node", _set(("units", 3, "node"), "ghost"), ("body", "units", 3, "node")),
    ("duplicate-node-id", _set(("nodes", 2, "id"), "n0"), ("body", "nodes", 2, "id")),
    ("duplicate-unit-id", _set(("units", 5, "id"), "u0-1"), ("body", "units", 5, "id")),
    ("empty-id", _set(("units", 0, "id"), ""), ("body", "units", 0, "id")),
    ("id-with-space", _set(("nodes", 1, "id"), "n 1"), ("body", "nodes", 1, "id")),
    ("id-not-a-string", _set(("units", 0, "id"), 7), ("body", "units", 0, "id")),
    ("id-too-long", _set(("units", 0, "id"), "u" * 201), ("body", "units", 0, "id")),
    (
        "traffic-unknown-src",
        _set(("traffic",), [{"src": "nobody", "dst": "u0-0", "rate": 1.0}]),
        ("body", "traffic", 0, "src"),
    ),
    (
        "traffic-unknown-dst",
        _set(
            ("traffic",),
            [{"src": "u0-0", "dst": "u1-0", "rate": 1.0}, {"src": "u0-0", "dst": "x", "rate": 1}],
        ),
        ("body", "traffic", 1, "dst"),
    ),
    (
        "traffic-negative-rate",
        _set(("traffic",), [{"src": "u0-0", "dst": "u1-0", "rate": -1.0}]),
        ("body", "traffic", 0, "rate"),
    ),
    # numbers: negative, zero, not numbers, coerced, overflowing
    ("negative-load", _set(("units", 4, "load"), -0.5), ("body", "units", 4, "load")),
    ("negative-in-series", _set(("units", 0, "load"), [1.0, -1.0]), ("body", "units", 0, "load")),
    ("negative-capacity", _set(("nodes", 1, "capacity"), -100.0), ("body", "nodes", 1, "capacity")),
    ("zero-capacity", _set(("nodes", 1, "capacity"), 0), ("body", "nodes", 1, "capacity")),
    (
        "zero-resource-capacity",
        _set(("nodes", 0, "resources"), {"mem": 0}),
        ("body", "nodes", 0, "resources"),
    ),
    ("negative-state-size", _set(("units", 2, "state_size"), -1), ("body", "units", 2, "state_size")),
    (
        "negative-resource-usage",
        _set(("units", 2, "resources"), {"mem": -1}),
        ("body", "units", 2, "resources"),
    ),
    ("bool-load", _set(("units", 0, "load"), True), ("body", "units", 0, "load")),
    ("string-load", _set(("units", 0, "load"), "3.5"), ("body", "units", 0, "load")),
    ("string-draining", _set(("nodes", 0, "draining"), "yes"), ("body", "nodes", 0, "draining")),
    ("load-overflowing", _set(("units", 0, "load"), 1e308), ("body", "units", 0, "load")),
    ("capacity-underflowing", _set(("nodes", 0, "capacity"), 1e-300), ("body", "nodes", 0, "capacity")),
    ("state-size-overflowing", _set(("units", 0, "state_size"), 1e300), ("body", "units", 0, "state_size")),
    # budgets and time limits
    (
        "negative-max-migrations",
        _set(("budget",), {"max_migrations": -1}),
        ("body", "budget", "max_migrations"),
    ),
    (
        "fractional-max-migrations",
        _set(("budget",), {"max_migrations": 2.5}),
        ("body", "budget", "max_migrations"),
    ),
    (
        "bool-max-migrations",
        _set(("budget",), {"max_migrations": True}),
        ("body", "budget", "max_migrations"),
    ),
    (
        "negative-max-migration-cost",
        _set(("budget",), {"max_migration_cost": -10}),
        ("body", "budget", "max_migration_cost"),
    ),
    ("time-limit-over-cap", _set(("time_limit_s",), 61.0), ("body", "time_limit_s")),
    ("time-limit-zero", _set(("time_limit_s",), 0), ("body", "time_limit_s")),
    ("time-limit-negative", _set(("time_limit_s",), -1), ("body", "time_limit_s")),
    # series
    (
        "unequal-series",
        _all(_series_everywhere(3), _set(("units", 7, "load"), [1.0, 2.0])),
        ("body", "units", 7, "load"),
    ),
    (
        "series-mixed-with-number",
        _all(_series_everywhere(2), _set(("units", 7, "load"), 1.0)),
        ("body", "units", 7, "load"),
    ),
    ("empty-series", _set(("units", 0, "load"), []), ("body", "units", 0, "load")),
    # draining and pinning
    (
        "every-node-draining",
        lambda b: [n.update(draining=True) for n in b["nodes"]],
        ("body", "nodes"),
    ),
    (
        "pinned-to-draining-node",
        _all(_set(("nodes", 0, "draining"), True), _set(("units", 1, "pinned"), True)),
        ("body", "units", 1, "pinned"),
    ),
    (
        "units-all-pinned-to-draining",
        _all(_set(("nodes", 0, "draining"), True), _pin_all_of_node_0),
        ("body", "units", 0, "pinned"),
    ),
    (
        "pinned-without-node",
        _all(_set(("units", 0, "node"), None), _set(("units", 0, "pinned"), True)),
        ("body", "units", 0, "pinned"),
    ),
    # algorithms and unknown fields
    ("unknown-algorithm", _set(("algorithm",), {"name": "simulated-annealing"}), ("body", "algorithm")),
    ("algorithm-without-name", _set(("algorithm",), {"seed": 1}), ("body", "algorithm")),
    (
        "unknown-algorithm-parameter",
        _set(("algorithm",), {"name": "flux", "lower": 40}),
        ("body", "algorithm"),
    ),
    ("milp-bad-backend", _set(("algorithm",), {"name": "milp", "backend": "gurobi"}), ("body", "algorithm")),
    ("milp-gap-over-one", _set(("algorithm",), {"name": "milp", "relative_gap": 2}), ("body", "algorithm")),
    ("extra-top-level-field", _set(("priority",), "high"), ("body", "priority")),
    ("extra-node-field", _set(("nodes", 0, "rack"), "r1"), ("body", "nodes", 0, "rack")),
    ("extra-unit-field", _set(("units", 0, "weight"), 1), ("body", "units", 0, "weight")),
    ("extra-budget-field", _set(("budget",), {"max_moves": 3}), ("body", "budget", "max_moves")),
    # shape
    ("no-nodes", _set(("nodes",), []), ("body", "nodes")),
    ("no-units", _set(("units",), []), ("body", "units")),
    ("units-missing", _delete(("units",)), ("body", "units")),
    ("unit-load-missing", _delete(("units", 0, "load")), ("body", "units", 0, "load")),
    ("nodes-not-a-list", _set(("nodes",), {"id": "n0"}), ("body", "nodes")),
]


@pytest.mark.parametrize(("mutate", "loc"), [pytest.param(m, loc, id=i) for i, m, loc in INVALID])
def test_invalid_snapshot_is_422_naming_the_field(
    client: TestClient, mutate: Callable[[Body], None], loc: tuple[str | int, ...]
) -> None:
    body = make_snapshot(budget={"max_migrations": 3})
    mutate(body)
    assert_problem(client.post(PLAN, json=body), 422, loc)


RAW = "@@raw@@"


@pytest.mark.parametrize(
    ("path", "raw", "loc"),
    [
        (("units", 0, "load"), "NaN", ("body", "units", 0, "load")),
        (("units", 0, "load"), "Infinity", ("body", "units", 0, "load")),
        (("units", 0, "load"), "-Infinity", ("body", "units", 0, "load")),
        (("units", 0, "load"), "[1.0, NaN]", ("body", "units", 0, "load")),
        (("nodes", 0, "capacity"), "NaN", ("body", "nodes", 0, "capacity")),
        (("nodes", 0, "capacity"), "Infinity", ("body", "nodes", 0, "capacity")),
        (("nodes", 0, "capacity"), "1e400", ("body", "nodes", 0, "capacity")),
        (("units", 3, "state_size"), "NaN", ("body", "units", 3, "state_size")),
        (("budget", "max_migration_cost"), "Infinity", ("body", "budget", "max_migration_cost")),
        (("time_limit_s",), "NaN", ("body", "time_limit_s")),
    ],
)
def test_non_finite_numbers_are_422(
    client: TestClient, path: tuple[str | int, ...], raw: str, loc: tuple[str | int, ...]
) -> None:
    body = make_snapshot(budget={})
    _set(path, RAW)(body)
    text = json.dumps(body).replace(json.dumps(RAW), raw)
    response = client.post(PLAN, content=text, headers={"content-type": "application/json"})
    assert_problem(response, 422, loc)


@pytest.mark.parametrize("raw", [b"{not json", b"", b'{"nodes": [}'])
def test_unparseable_json_is_400_as_the_openapi_document_says(client: TestClient, raw: bytes) -> None:
    """Issue 9: broken JSON answered 422 where the OpenAPI document says 400."""
    response = client.post(PLAN, content=raw, headers={"content-type": "application/json"})
    assert_problem(response, 400, ("body",))


@pytest.mark.parametrize("raw", [b"[]", b"null", b'"nodes"'])
def test_json_of_the_wrong_shape_is_422(client: TestClient, raw: bytes) -> None:
    response = client.post(PLAN, content=raw, headers={"content-type": "application/json"})
    assert_problem(response, 422, ("body",))


@pytest.mark.parametrize("raw", [b"\xff\xfe\x00", b"\xff\xfe\x00{", b"\x80abc"])
def test_body_that_is_not_utf8_is_a_problem_not_a_500(client: TestClient, raw: bytes) -> None:
    response = client.post(PLAN, content=raw, headers={"content-type": "application/json"})
    assert response.status_code in (400, 422), response.text  # FastAPI says 400 or 422 depending on the bytes
    assert_problem(response, response.status_code)


def test_infeasible_pinned_load_is_422_with_the_reason(client: TestClient) -> None:
    """CONTRACT.md: pinned units over capacity on every staying node make the request unsatisfiable."""
    body = make_snapshot(n_nodes=2)
    for node in ("n0", "n1"):
        pinned = [u for u in body["units"] if u["node"] == node][:2]
        pinned[0].update(pinned=True, load=80.0)
        pinned[1].update(pinned=True, load=30.0)  # 110 of pinned load on a 100 node
    problem = assert_problem(client.post(PLAN, json=body), 422, ("body", "nodes"))
    reason = problem["errors"][0]["msg"]
    assert "infeasible" in reason and "pinned" in reason and "'n0'" in reason and "'n1'" in reason, reason


def test_one_node_over_capacity_with_pinned_units_still_gets_a_valid_plan(client: TestClient) -> None:
    """Only 'everywhere' is infeasible: a single overloaded node is relieved by moving its other units."""
    body = make_snapshot(budget={"max_migrations": 4})
    body["units"][0].update(pinned=True, load=80.0)
    body["units"][1].update(pinned=True, load=30.0)  # n0 holds 110 of pinned load on a 100 node
    response = client.post(PLAN, json=body)
    assert response.status_code == 200, response.text
    plan = response.json()
    assert check_plan(body, plan) == []
    assert any(move["from"] == "n0" for move in plan["moves"]), plan["moves"]
    assert plan["after"]["max_utilization"] < plan["before"]["max_utilization"]


def test_more_nodes_or_units_than_the_service_allows_is_422() -> None:
    with TestClient(create_app(Settings(max_nodes=3, max_units=20))) as small:
        assert_problem(
            small.post(PLAN, json=make_snapshot(n_nodes=4, units_per_node=1)), 422, ("body", "nodes")
        )
        assert_problem(
            small.post(PLAN, json=make_snapshot(n_nodes=2, units_per_node=11)), 422, ("body", "units")
        )
        assert small.post(PLAN, json=make_snapshot(n_nodes=3, units_per_node=6)).status_code == 200


def test_time_limit_cap_comes_from_the_settings() -> None:
    with TestClient(create_app(Settings(max_time_limit_s=0.5))) as strict:
        assert_problem(strict.post(PLAN, json=make_snapshot(time_limit_s=0.6)), 422, ("body", "time_limit_s"))
        assert strict.post(PLAN, json=make_snapshot(time_limit_s=0.5)).status_code == 200


def test_every_error_is_listed_not_just_the_first(client: TestClient) -> None:
    body = make_snapshot()
    body["units"][1]["node"] = "ghost"
    body["units"][2]["id"] = "u0-0"
    body["traffic"] = [{"src": "u0-0", "dst": "nobody", "rate": 1.0}]
    problem = assert_problem(client.post(PLAN, json=body), 422)
    locs = {tuple(e["loc"]) for e in problem["errors"]}
    assert {("body", "units", 1, "node"), ("body", "units", 2, "id"), ("body", "traffic", 0, "dst")} <= locs
    assert "(and 2 more)" in problem["detail"]


# ---------------------------------------------------------------------------------------------- body size


@pytest.fixture(scope="module")
def small_body_client() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(max_body_bytes=2048))) as c:
        yield c


def _encoded(body: Body) -> bytes:
    return json.dumps(body).encode()


def test_body_over_limit_with_content_length_is_413(small_body_client: TestClient) -> None:
    data = _encoded(make_snapshot(n_nodes=6, units_per_node=10))
    assert len(data) > 2048
    problem = assert_problem(
        small_body_client.post(PLAN, content=data, headers={"content-type": "application/json"}), 413
    )
    assert "2048" in problem["detail"]


def test_body_over_limit_chunked_is_413(small_body_client: TestClient) -> None:
    data = _encoded(make_snapshot(n_nodes=6, units_per_node=10))

    def chunks() -> Iterator[bytes]:  # an iterator body is sent without Content-Length
        for i in range(0, len(data), 500):
            yield data[i : i + 500]

    response = small_body_client.post(PLAN, content=chunks(), headers={"content-type": "application/json"})
    assert_problem(response, 413)


def test_body_under_limit_chunked_is_served(small_body_client: TestClient) -> None:
    body = make_snapshot(n_nodes=2, units_per_node=4, budget={"max_migrations": 2})
    data = _encoded(body)
    assert len(data) < 2048

    def chunks() -> Iterator[bytes]:
        yield data[:100]
        yield data[100:]

    response = small_body_client.post(PLAN, content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    assert check_plan(body, response.json()) == []


def test_content_length_that_lies_high_is_413(small_body_client: TestClient) -> None:
    response = small_body_client.post(
        PLAN, content=b"{}", headers={"content-type": "application/json", "content-length": "999999"}
    )
    assert_problem(response, 413)


def test_content_length_not_a_number_is_400(small_body_client: TestClient) -> None:
    response = small_body_client.post(
        PLAN, content=b"{}", headers={"content-type": "application/json", "content-length": "lots"}
    )
    assert_problem(response, 400)


# ---------------------------------------------------------------------------------------------- solver refusals


def test_a_solver_refusal_becomes_422_naming_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """Solvers raise UnsolvableRequest(loc, msg) for snapshots they cannot plan; the router answers 422 with it.
    (A fresh app: its solver workers fork after the patch and so see it.)"""

    def refuse(*_: Any) -> Any:
        raise UnsolvableRequest(("body", "units", 2, "load"), "this algorithm needs load series")

    monkeypatch.setitem(REGISTRY, "flux", replace(REGISTRY["flux"], solve=refuse))
    body = make_snapshot(algorithm={"name": "flux"})
    with TestClient(create_app(Settings())) as client:
        problem = assert_problem(client.post(PLAN, json=body), 422, ("body", "units", 2, "load"))
    assert "needs load series" in problem["detail"]


def test_extreme_but_valid_loads_are_never_a_500(client: TestClient) -> None:
    body = make_snapshot(budget={"max_migrations": 3})
    for unit in body["units"][:8]:
        unit["load"] = 1e15
    response = client.post(PLAN, json=body)
    assert response.status_code in (200, 422), response.text
    if response.status_code == 200:
        assert check_plan(body, response.json()) == []


@pytest.mark.parametrize("algorithm", ["milp", "flux", "largest-load-first", "round-robin", "random"])
def test_new_units_that_fit_nowhere_are_422(client: TestClient, algorithm: str) -> None:
    body = {
        "nodes": [{"id": "n0", "capacity": 50}, {"id": "old", "capacity": 100, "draining": True}],
        "units": [{"id": "a", "node": "n0", "load": 40}, {"id": "new", "node": None, "load": 20}],
        "algorithm": {"name": algorithm},
    }
    problem = assert_problem(client.post(PLAN, json=body), 422)
    assert "new" in problem["detail"], problem


@pytest.mark.parametrize(
    ("algorithm", "n_nodes", "units_per_node", "loc"),
    [
        ({"name": "clb"}, 2, 2501, ("body", "units")),  # a 5,002 x 5,002 covariance matrix
        ({"name": "correlation-global"}, 501, 1, ("body", "nodes")),
        ({"name": "correlation-pairwise"}, 2, 2_501, ("body", "units")),
    ],
)
def test_quadratic_algorithms_refuse_sizes_they_cannot_serve(
    client: TestClient, algorithm: dict[str, Any], n_nodes: int, units_per_node: int, loc: tuple[str, ...]
) -> None:
    """CLB's covariance matrix and the correlation greedy grow with units x units or units x nodes: over their caps
    the answer is a 422 naming the field, not an exhausted server."""
    body = make_snapshot(n_nodes=n_nodes, units_per_node=units_per_node, windows=3, algorithm=algorithm)
    assert_problem(client.post(PLAN, json=body), 422, loc)


def test_correlation_improvement_stops_at_the_time_limit() -> None:
    """The improvement loop is quadratic in the nodes; with a tiny time limit it stops and says so."""
    import numpy as np

    from solvers.correlation.solve import TIMED_OUT, solve_global
    from solvers.instance import AssignmentInstance

    rng = np.random.default_rng(0)
    n_nodes, units = 200, 2000
    # Independent noise: the average correlation stays far below theta, so the loop would try every pair.
    instance = AssignmentInstance(
        node_ids=tuple(f"n{i}" for i in range(n_nodes)),
        capacity=np.full(n_nodes, 1000.0),
        draining=np.zeros(n_nodes, dtype=bool),
        unit_ids=tuple(f"u{k}" for k in range(units)),
        current=np.repeat(np.arange(n_nodes), units // n_nodes).astype(np.int64),
        series=rng.uniform(0.5, 1.5, size=(units, 10)),
        state_size=np.ones(units),
        pinned=np.zeros(units, dtype=bool),
    )
    plan = solve_global(instance, theta=0.99, time_limit_s=0.05)
    assert TIMED_OUT in plan.notes

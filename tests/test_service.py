"""The service around the solvers: operations endpoints, OpenAPI, bearer auth, the bounded pool (503), and the
guarantee that a broken plan or a crashing solver never reaches the caller as a plan."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from schemas.export import OPENAPI_PATH
from service.algorithms import REGISTRY
from service.errors import ProblemError
from service.main import create_app
from service.pool import SolverPool
from service.settings import Settings
from solvers.instance import AssignmentInstance, Plan
from solvers.plan_check import check_plan
from tests.conftest import PLAN, assert_problem, make_snapshot


def test_healthz(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_probes_answer_head_as_they_answer_get(client: TestClient) -> None:
    """Seen: HEAD /healthz answered 405, where load balancers' health checks (HAProxy's `option httpchk HEAD`,
    uptime monitors) send HEAD. A HEAD answers what GET answers, without the body (RFC 9110, 9.3.2), and stays out
    of the OpenAPI document (one operation a path)."""
    for path in ("/healthz", "/readyz", "/metrics"):
        get, head = client.get(path), client.head(path)
        assert head.status_code == get.status_code == 200, path
        assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"], path
    operations = client.get("/openapi.json").json()["paths"]
    assert all(list(operations[path]) == ["get"] for path in ("/healthz", "/readyz", "/metrics"))
    # Another method's 405 names the documented GET in Allow (schemathesis' ST205; it said HEAD when the HEAD route
    # came first)
    for path in ("/healthz", "/readyz", "/metrics"):
        refused = client.put(path)
        assert refused.status_code == 405 and refused.headers["allow"] == "GET", path


def test_readyz_when_idle_reports_capacity() -> None:
    with TestClient(create_app(Settings(pool_size=3, queue_size=2))) as c:
        response = c.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "in_flight": 0, "capacity": 5}


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_count_plans_and_solve_time() -> None:
    with TestClient(create_app(Settings())) as c:
        body = make_snapshot(algorithm={"name": "flux"}, budget={"max_migrations": 2})
        status = c.post(PLAN, json=body).json()["status"]
        c.post(PLAN, json=body)
        response = c.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples = _samples(response.text)
    plans = frozenset({"endpoint": "assignment", "algorithm": "flux", "status": status}.items())
    assert samples[("trimtab_plans_total", plans)] == 2
    timed = frozenset({"endpoint": "assignment", "algorithm": "flux"}.items())
    assert samples[("trimtab_solve_seconds_count", timed)] == 2


def test_metrics_count_rejected_requests() -> None:
    with TestClient(create_app(Settings(max_body_bytes=4096))) as c:
        body = make_snapshot()
        body["units"][0]["node"] = "ghost"
        assert c.post(PLAN, json=body).status_code == 422
        assert (
            c.post(PLAN, content=b"x" * 5000, headers={"content-type": "application/json"}).status_code == 413
        )
        samples = _samples(c.get("/metrics").text)
    rejected = {
        dict(labels)["status"]: value
        for (name, labels), value in samples.items()
        if name == "trimtab_rejected_requests_total"
    }
    assert rejected.get("422") == 1 and rejected.get("413") == 1, rejected


def test_algorithms_lists_the_registry_with_parameter_schemas(client: TestClient) -> None:
    response = client.get("/v1/algorithms")
    assert response.status_code == 200
    listed = response.json()["algorithms"]
    assert [a["name"] for a in listed] == list(REGISTRY)
    assert {"milp", "flux", "largest-load-first", "round-robin", "random"} <= set(REGISTRY)
    for algorithm in listed:
        assert algorithm["summary"] and algorithm["paper"] and isinstance(algorithm["needs"], list)
        name_schema = algorithm["parameters"]["properties"]["name"]
        assert name_schema.get("const", name_schema.get("default")) == algorithm["name"]


def test_every_listed_algorithm_is_accepted_by_the_plan_endpoint(client: TestClient) -> None:
    body = make_snapshot(budget={"max_migrations": 2}, time_limit_s=0.5)
    for name in REGISTRY:
        response = client.post(PLAN, json={**body, "algorithm": {"name": name}})
        assert response.status_code in (200, 422), (name, response.text)  # 422 only for data it lacks
        if response.status_code == 200:
            assert response.json()["algorithm"] == name
            assert check_plan(body, response.json()) == []


def test_openapi_is_served_and_matches_the_committed_file(client: TestClient) -> None:
    served = client.get("/openapi.json")
    assert served.status_code == 200
    assert served.json() == json.loads(OPENAPI_PATH.read_text())
    plan = served.json()["paths"]["/v1/assignment/plan"]["post"]
    assert {"200", "413", "422", "503"} <= set(plan["responses"])
    assert "application/problem+json" in plan["responses"]["422"]["content"]
    docs = client.get("/docs")
    assert docs.status_code == 200 and "text/html" in docs.headers["content-type"]


@pytest.mark.parametrize(("method", "path", "status"), [("GET", "/nope", 404), ("DELETE", PLAN, 405)])
def test_routing_errors_are_problems(client: TestClient, method: str, path: str, status: int) -> None:
    assert_problem(client.request(method, path), status)


# ---------------------------------------------------------------------------------------------- bearer auth


@pytest.fixture(scope="module")
def authed() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(auth_token="s3cret-token"))) as c:
        yield c


@pytest.mark.parametrize(
    "header", [None, "Bearer wrong", "s3cret-token", "Bearer s3cret-token ", "Basic czNjcmV0"]
)
def test_auth_on_rejects_missing_or_wrong_tokens(authed: TestClient, header: str | None) -> None:
    headers = {"authorization": header} if header is not None else {}
    for response in (
        authed.get("/v1/algorithms", headers=headers),
        authed.post(PLAN, json=make_snapshot(), headers=headers),
        # a small flux plan is answered before FastAPI's routing (service.inline): still behind the token
        authed.post(PLAN, json=make_snapshot(algorithm={"name": "flux"}), headers=headers),
    ):
        assert_problem(response, 401)
        assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_auth_scheme_is_case_insensitive(authed: TestClient, scheme: str) -> None:
    """RFC 7235: the authentication scheme is case-insensitive (the token is not)."""
    assert (
        authed.get("/v1/algorithms", headers={"authorization": f"{scheme} s3cret-token"}).status_code == 200
    )
    assert_problem(authed.get("/v1/algorithms", headers={"authorization": f"{scheme} S3CRET-TOKEN"}), 401)


def test_auth_on_accepts_the_token(authed: TestClient) -> None:
    headers = {"authorization": "Bearer s3cret-token"}
    assert authed.get("/v1/algorithms", headers=headers).status_code == 200
    body = make_snapshot(budget={"max_migrations": 2})
    response = authed.post(PLAN, json=body, headers=headers)
    assert response.status_code == 200, response.text
    assert check_plan(body, response.json()) == []


def test_auth_on_leaves_only_liveness_open(authed: TestClient) -> None:
    """Issue 9: with a token set, /metrics, /readyz, /openapi.json, /docs and /redoc answered without it."""
    assert authed.get("/healthz").status_code == 200
    assert authed.head("/healthz").status_code == 200
    for path in ("/readyz", "/metrics", "/openapi.json", "/docs", "/redoc", "/docs/oauth2-redirect"):
        assert_problem(authed.get(path), 401)
        assert authed.head(path).status_code == 401
        assert authed.get(path, headers={"authorization": "Bearer s3cret-token"}).status_code == 200


def test_auth_on_can_open_readiness_and_metrics() -> None:
    settings = Settings(auth_token="s3cret-token", open_readyz=True, open_metrics=True)
    with TestClient(create_app(settings)) as c:
        assert c.get("/readyz").status_code == 200 and c.get("/metrics").status_code == 200
        assert_problem(c.get("/openapi.json"), 401)


def test_auth_off_by_default(client: TestClient) -> None:
    assert Settings().auth_token is None
    assert client.get("/v1/algorithms").status_code == 200


# ---------------------------------------------------------------------------------------------- bounded pool


async def _wait_until(condition: Any, timeout_s: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.005)


def test_saturated_pool_answers_503_with_retry_after() -> None:
    """One solver slot and no queue: while a solve holds the slot, a plan request gets 503 + Retry-After at once,
    and /readyz says saturated. The slot is held by a job put straight into the app's pool (no test hook needed)."""
    app = create_app(Settings(pool_size=1, queue_size=0, retry_after_s=7))
    release = threading.Event()
    # milp: a request for the worker pool (a small flux one is planned in the service process, see service.inline)
    body = make_snapshot(algorithm={"name": "milp"}, budget={"max_migrations": 2}, time_limit_s=0.5)

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://trimtab") as c:
            blocker = asyncio.create_task(app.state.pool.run(lambda: release.wait(30)))
            await _wait_until(lambda: app.state.pool.in_flight == 1)
            try:
                busy = await c.post(PLAN, json=body)
                assert_problem(busy, 503)
                assert busy.headers["retry-after"] == "7"
                ready = await c.get("/readyz")
                assert ready.status_code == 503 and ready.json()["status"] == "saturated"
            finally:
                release.set()
            assert await blocker is True
            await _wait_until(lambda: app.state.pool.in_flight == 0)
            served = await c.post(PLAN, json=body)
            assert served.status_code == 200, served.text
            assert (await c.get("/readyz")).status_code == 200

    try:
        asyncio.run(scenario())
    finally:
        release.set()
        app.state.pool.shutdown()


def test_pool_admits_workers_plus_queue_then_refuses() -> None:
    pool = SolverPool(workers=1, queue=2, retry_after_s=3)
    release = threading.Event()

    async def scenario() -> None:
        held = [asyncio.create_task(pool.run(lambda: release.wait(30))) for _ in range(3)]
        await _wait_until(lambda: pool.in_flight == 3)
        try:
            with pytest.raises(ProblemError) as refused:
                await pool.run(lambda: None)
            assert refused.value.status == 503 and refused.value.headers == {"Retry-After": "3"}
        finally:
            release.set()
        assert await asyncio.gather(*held) == [True, True, True]
        assert pool.in_flight == 0
        assert await pool.run(lambda: 42) == 42  # slots come back

    try:
        asyncio.run(scenario())
    finally:
        release.set()
        pool.shutdown()


# ---------------------------------------------------------------------------------------------- plan guard


def _move_pinned_unit(instance: AssignmentInstance, params: Any, time_limit: float) -> Plan:
    assignment = instance.current.copy()
    assignment[0] = (assignment[0] + 1) % instance.n_nodes
    return Plan(assignment=assignment, status="feasible")


def _crash(instance: AssignmentInstance, params: Any, time_limit: float) -> Plan:
    raise RuntimeError("solver exploded")


def test_a_plan_that_breaks_the_validator_is_never_served(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "flux", replace(REGISTRY["flux"], solve=_move_pinned_unit))
    body = make_snapshot(algorithm={"name": "flux"})
    body["units"][0]["pinned"] = True
    with TestClient(create_app(Settings()), raise_server_exceptions=False) as c:
        problem = assert_problem(c.post(PLAN, json=body), 500)
    assert "pinned unit 'u0-0' moved" in problem["detail"]
    assert "assignment" not in problem


def test_a_crashing_solver_is_a_500_problem_without_internals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "flux", replace(REGISTRY["flux"], solve=_crash))
    with TestClient(create_app(Settings()), raise_server_exceptions=False) as c:
        problem = assert_problem(c.post(PLAN, json=make_snapshot(algorithm={"name": "flux"})), 500)
        assert "exploded" not in json.dumps(problem) and "Traceback" not in json.dumps(problem)
        # the slot of the crashed call is released
        assert c.get("/readyz").json()["in_flight"] == 0


def test_the_app_serves_plans_after_its_lifespan_ran_twice() -> None:
    """Found by schemathesis: the ASGI transport runs the lifespan per call, and a shut-down solver pool used to
    answer every later plan with 500 'cannot schedule new futures after shutdown'."""
    app = create_app(Settings())
    body = make_snapshot(budget={"max_migrations": 2})
    for _ in range(2):
        with TestClient(app) as c:
            response = c.post(PLAN, json=body)
            assert response.status_code == 200, response.text

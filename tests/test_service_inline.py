"""Small plan requests planned in the service process (service.inline, issue 9's throughput): the same answer as a
solver worker gives, byte for byte; nothing that is not small by construction ever runs there; bad input still gets
its problem document; a runaway inline plan is stopped by the watchdog and handed to a worker under the hard
deadline. Also the small-size paths of the statistics and the validator against their general paths.

The apps here are driven with asyncio.run in the test's own (main) thread: only there can the SIGALRM watchdog run,
so only there does anything run inline (a TestClient drives the app from another thread: all worker path)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from pydantic import ValidationError

from bench.reliability.servers import serve
from schemas.algorithms import ElbParams
from schemas.assignment import (
    NODE_DEFAULTS,
    UNIT_DEFAULTS,
    AssignmentRequest,
    Node,
    Unit,
    reference_errors,
    request_fields,
)
from schemas.common import MAX_ID_LENGTH, field_values_form
from service import inline, planning
from service.algorithms import REGISTRY
from service.main import create_app
from service.settings import Settings
from solvers import metrics as solver_metrics
from solvers import plan_check
from solvers.instance import AssignmentInstance, Plan
from tests.conftest import PLAN, PROBLEM_JSON, make_snapshot

EXAMPLES = settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.fixture(scope="module")
def apps() -> Iterator[tuple[Any, Any]]:
    """(inline app, worker-only app), one solver worker each."""
    fast = create_app(Settings(pool_size=1, queue_size=4))
    pooled = create_app(Settings(pool_size=1, queue_size=4, inline_small_plans=False))
    yield fast, pooled
    fast.state.pool.shutdown()
    pooled.state.pool.shutdown()


def _post(app: Any, body: bytes) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://trimtab") as c:
            return await c.post(PLAN, content=body, headers={"content-type": "application/json"})

    return asyncio.run(go())


def _inline_count(app: Any) -> float:
    # (through the registry, as a scrape reads it: the waiting observations are folded first)
    return float(app.state.metrics.registry.get_sample_value("trimtab_inline_plans_total") or 0.0)


SOLVE_MS = re.compile(rb'"solve_ms":[-+0-9.eE]+')


def _same_but_timing(body: bytes) -> bytes:
    """The answer without its solve time (the one field that is a measurement, not a function of the request)."""
    return SOLVE_MS.sub(b'"solve_ms":0', body)


loads = st.one_of(
    st.integers(0, 20).map(float),  # integers and ties
    st.floats(0.0, 50.0, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.45, 1e-9, 1e6]),
)


@st.composite
def small_snapshots(draw: st.DrawFn) -> dict[str, Any]:
    n_nodes = draw(st.integers(1, planning.INLINE_MAX_NODES))
    nodes: list[dict[str, Any]] = [
        {"id": f"n{i}", "capacity": draw(st.sampled_from([100.0, 50.0, 7.5]))} for i in range(n_nodes)
    ]
    if n_nodes > 1 and draw(st.booleans()):
        nodes[-1]["draining"] = True
    n_units = draw(st.integers(1, planning.INLINE_MAX_UNITS))
    units = []
    for k in range(n_units):
        node = draw(st.one_of(st.none(), st.integers(0, n_nodes - 1)))
        unit: dict[str, Any] = {
            "id": f"u{k}",
            "node": None if node is None else f"n{node}",
            "load": draw(loads),
            "state_size": draw(st.sampled_from([0.0, 1.0, 3.5, 100.0])),
        }
        if node is not None and not nodes[node].get("draining") and draw(st.integers(0, 9)) == 0:
            unit["pinned"] = True
        units.append(unit)
    body: dict[str, Any] = {
        "nodes": nodes,
        "units": units,
        "algorithm": {"name": draw(st.sampled_from(sorted(planning.INLINE_ALGORITHMS)))},
        "budget": draw(
            st.sampled_from([{}, {"max_migrations": 0}, {"max_migrations": 3}, {"max_migration_cost": 10.0}])
        ),
    }
    return body


@EXAMPLES
@given(snapshot=small_snapshots())
def test_inline_and_worker_answers_are_the_same_bytes(
    apps: tuple[Any, Any], snapshot: dict[str, Any]
) -> None:
    fast, pooled = apps
    body = json.dumps(snapshot).encode()
    before = _inline_count(fast)
    inline_answer, worker_answer = _post(fast, body), _post(pooled, body)
    assert _inline_count(fast) == before + 1  # it did run inline
    assert _inline_count(pooled) == 0
    assert inline_answer.status_code == worker_answer.status_code, (inline_answer.text, worker_answer.text)
    assert inline_answer.headers["content-type"] == worker_answer.headers["content-type"]
    assert _same_but_timing(inline_answer.content) == _same_but_timing(worker_answer.content)
    if inline_answer.status_code == 200:
        assert plan_check.check_plan(snapshot, inline_answer.json()) == []


def _without_the_middleware(app: Any) -> Any:
    """The app with its plan route answering plan requests (the InlinePlans middleware taken out before its
    middleware stack is built, on the first request)."""
    app.user_middleware = [m for m in app.user_middleware if m.cls is not inline.InlinePlans]
    return app


def _answer_bytes(response: httpx.Response) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, headers (but the request id, fresh per request) and body, the solve time (and so the length) and
    phases left out."""
    headers = [
        (k, "" if k == "content-length" else v)
        for k, v in response.headers.items()
        if k not in ("x-request-id", "server-timing")
    ]
    return response.status_code, headers, _same_but_timing(response.content)


def test_the_middleware_answers_as_the_plan_route_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """The InlinePlans middleware answers every plan request before routing (small ones here, the rest through a
    worker): status, headers and body as the plan route's own, for a small plan, a worker's plan, a worker's 422 and
    a 503 problem of the pool (a deterministic algorithm: milp's plan may change with the time it gets)."""
    settings_ = Settings(pool_size=1, queue_size=4)
    middleware, route = create_app(settings_), _without_the_middleware(create_app(settings_))
    try:
        bodies = [
            json.dumps(make_snapshot(algorithm={"name": "flux"})).encode(),
            json.dumps(
                make_snapshot(windows=3, algorithm={"name": "flux"})
            ).encode(),  # not small: a worker's
            json.dumps(
                {**make_snapshot(time_limit_s=0.5), "units": [{"id": "u", "node": "x", "load": 1}]}
            ).encode(),
        ]
        for body in bodies:
            assert _answer_bytes(_post(middleware, body)) == _answer_bytes(_post(route, body))
        assert _inline_count(middleware) == _inline_count(route) == 1

        async def saturated(*args: Any) -> Any:
            raise middleware.state.pool._saturated()

        monkeypatch.setattr(inline, "plan_in_worker", saturated)
        full = _answer_bytes(_post(middleware, bodies[1]))
        assert full[0] == 503 and ("retry-after", "1") in full[1]
        assert full == _answer_bytes(_post(route, bodies[1]))
    finally:
        middleware.state.pool.shutdown()
        route.state.pool.shutdown()


def _not_small_cases() -> dict[str, bytes]:
    flux = {"name": "flux"}
    padded = make_snapshot(n_nodes=8, units_per_node=25, algorithm=flux)  # 200 units: under the unit cap
    for unit in padded["units"]:
        unit["operator"] = "o" * MAX_ID_LENGTH  # a small plan in a body over INLINE_MAX_BODY_BYTES
    assert len(json.dumps(padded)) > planning.INLINE_MAX_BODY_BYTES
    return {
        "milp": json.dumps(make_snapshot(algorithm={"name": "milp"}, time_limit_s=0.5)).encode(),
        "no algorithm (milp by default)": json.dumps(make_snapshot(time_limit_s=0.5)).encode(),
        "correlation": json.dumps(
            make_snapshot(windows=4, algorithm={"name": "correlation-global"})
        ).encode(),
        "units over the cap": json.dumps(
            make_snapshot(n_nodes=2, units_per_node=planning.INLINE_MAX_UNITS // 2 + 1, algorithm=flux)
        ).encode(),
        "nodes over the cap": json.dumps(
            make_snapshot(n_nodes=planning.INLINE_MAX_NODES + 1, units_per_node=1, algorithm=flux)
        ).encode(),
        "load series": json.dumps(make_snapshot(windows=3, algorithm=flux)).encode(),
        "body over the cap": json.dumps(padded).encode(),
    }


def test_only_a_body_that_may_be_small_is_decoded_inline() -> None:
    """The byte-level shortcut before the watchdog: a body naming no inline algorithm, or over the body cap (not even
    scanned), goes to a worker undecoded; a small flux body is tried."""
    cases = _not_small_cases()
    assert planning.may_be_small(json.dumps(make_snapshot(algorithm={"name": "flux"})).encode())
    assert not planning.may_be_small(cases["milp"])
    assert not planning.may_be_small(cases["no algorithm (milp by default)"])
    assert not planning.may_be_small(cases["body over the cap"])
    assert planning.may_be_small(cases["load series"])  # decoded, then found not small


@pytest.mark.parametrize("case", sorted(_not_small_cases()))
def test_a_request_that_is_not_small_never_goes_inline(apps: tuple[Any, Any], case: str) -> None:
    body = _not_small_cases()[case]
    assert planning.plan_if_small(Settings(), planning.PlanJob(body, time.monotonic())) is None
    fast, _ = apps
    before = _inline_count(fast)
    response = _post(fast, body)
    assert response.status_code == 200, response.text
    assert _inline_count(fast) == before  # planned by the worker


@pytest.mark.parametrize(
    ("body", "status", "loc"),
    [
        (b'{"nodes": [', 400, ["body"]),
        (
            json.dumps(
                {**make_snapshot(algorithm={"name": "flux"}), "units": [{"id": "u", "load": -1}]}
            ).encode(),
            422,
            ["body", "units", 0, "load"],
        ),
        (
            json.dumps(
                {
                    "nodes": [{"id": "a"}],
                    "units": [{"id": "u", "node": "b", "load": 1}],
                    "algorithm": {"name": "flux"},
                }
            ).encode(),
            422,
            ["body", "units", 0, "node"],
        ),
    ],
)
def test_bad_input_on_the_inline_path_is_a_problem_naming_the_field(
    apps: tuple[Any, Any], body: bytes, status: int, loc: list[Any]
) -> None:
    fast, pooled = apps
    response = _post(fast, body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM_JSON)
    assert any(e["loc"][: len(loc)] == loc for e in response.json()["errors"]), response.json()
    assert response.content == _post(pooled, body).content


def _spin_forever(instance: AssignmentInstance, params: Any, time_limit: float) -> Plan:
    while True:  # a solver that ignores its budget: only the watchdog, then the worker's deadline, stop it
        pass


def test_a_runaway_inline_plan_is_handed_to_a_worker_and_stopped_at_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(REGISTRY, "flux", replace(REGISTRY["flux"], solve=_spin_forever))
    body = json.dumps(make_snapshot(algorithm={"name": "flux"}, time_limit_s=0.3)).encode()
    assert inline.available()
    started = time.monotonic()
    assert inline.plan_inline(Settings(), planning.PlanJob(body, started)) is None  # the watchdog fired
    assert time.monotonic() - started < inline.INLINE_WATCHDOG_S + 0.5
    app = create_app(Settings(pool_size=1, queue_size=0))
    try:
        started = time.monotonic()
        response = _post(app, body)
        assert response.status_code == 503, response.text
        assert "deadline" in response.json()["detail"].lower()
        assert time.monotonic() - started < 0.3 + 1.0 + 0.5
        assert app.state.pool.recycled == 1
        assert _inline_count(app) == 0
    finally:
        app.state.pool.shutdown()


def _exit_the_worker(instance: AssignmentInstance, params: Any, time_limit: float) -> Plan:
    os._exit(3)  # a worker that dies mid-request (a crash, the OOM killer): its pipe ends


def test_a_worker_that_dies_mid_request_is_a_503_and_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipe's end (EOF on the reader that waits for the answer) is the 503 'Solver worker died' with Retry-After,
    the worker is replaced, and the next request is planned."""
    monkeypatch.setitem(REGISTRY, "milp", replace(REGISTRY["milp"], solve=_exit_the_worker))
    app = create_app(Settings(pool_size=1, queue_size=0))  # workers forked after the patch: they inherit it
    try:
        died = _post(app, json.dumps(make_snapshot(algorithm={"name": "milp"}, time_limit_s=1)).encode())
        assert died.status_code == 503, died.text
        assert died.json()["title"] == "Solver worker died" and died.headers["retry-after"] == "1"
        assert app.state.pool.recycled == 1
        planned = _post(app, json.dumps(make_snapshot(windows=3, algorithm={"name": "flux"})).encode())
        assert planned.status_code == 200, planned.text
    finally:
        app.state.pool.shutdown()


def test_the_watchdog_alarm_is_disarmed_after_an_inline_plan() -> None:
    body = json.dumps(make_snapshot(algorithm={"name": "flux"})).encode()
    answer = inline.plan_inline(Settings(), planning.PlanJob(body, time.monotonic()))
    assert answer is not None and answer.status == 200
    import signal

    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    time.sleep(inline.INLINE_WATCHDOG_S * 2)  # no stray alarm lands after the plan


# ------------------------------------------------------------------- small-size paths against the general paths

unit_loads = st.lists(st.floats(0.0, 1e6, allow_nan=False), min_size=1, max_size=60)


@EXAMPLES
@given(data=st.data(), values=unit_loads, n_nodes=st.integers(1, 8))
def test_validator_single_load_node_sums_match_the_grouped_sums(
    data: st.DataObject, values: list[float], n_nodes: int
) -> None:
    where = np.array(
        data.draw(st.lists(st.integers(-1, n_nodes - 1), min_size=len(values), max_size=len(values)))
    )
    series = np.array(values)[:, None]
    fast = plan_check._node_series(series, where, n_nodes)
    grouped = plan_check._node_series_grouped(series, where, n_nodes)
    assert fast.shape == grouped.shape == (n_nodes, 1)
    np.testing.assert_allclose(fast, grouped, rtol=1e-12, atol=0.0)


@EXAMPLES
@given(
    rows=st.integers(1, 6).flatmap(
        lambda n: st.lists(
            st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=n, max_size=n), min_size=1, max_size=8
        )
    ),
    axis=st.sampled_from([0, 1]),
)
def test_variance_without_numpys_wrapper_is_numpys_variance(rows: list[list[float]], axis: int) -> None:
    array = np.array(rows)
    expected = array.var(axis=axis)
    for variance in (plan_check._variance, solver_metrics._variance):
        np.testing.assert_array_equal(variance(array, axis), expected)


def test_plan_here_only_where_inline_plans_are_on() -> None:
    body = json.dumps(make_snapshot(algorithm={"name": "flux"})).encode()
    job = planning.PlanJob(body, time.monotonic())
    answer = inline.plan_here(Settings(), job)
    assert answer is not None and answer.status == 200
    assert inline.plan_here(Settings(inline_small_plans=False), job) is None


def test_a_real_server_plans_small_requests_inline_and_large_ones_in_workers() -> None:
    """The production path: uvicorn runs the app in its main thread, where the watchdog can run. A small flux
    request is answered inline (the counter moves, no solver worker starts); a milp one by a worker."""
    with serve("trimtab") as (url, server):  # python -m service.server, waited for until healthy

        def inline_plans() -> float:
            for family in text_string_to_metric_families(httpx.get(f"{url}/metrics", timeout=5).text):
                if family.name == "trimtab_inline_plans":
                    return sum(sample.value for sample in family.samples if sample.name.endswith("_total"))
            raise AssertionError("no trimtab_inline_plans metric")

        small = make_snapshot(algorithm={"name": "flux"})
        response = httpx.post(f"{url}{PLAN}", json=small, timeout=10)
        assert response.status_code == 200, response.text
        assert plan_check.check_plan(small, response.json()) == []
        assert inline_plans() == 1
        children = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True).stdout.split()
        assert len(children) == 1  # the workers' zygote (service.pool), and no worker:
        assert subprocess.run(["pgrep", "-P", children[0]], capture_output=True).stdout == b""
        milp = make_snapshot(algorithm={"name": "milp"}, time_limit_s=0.5)
        assert httpx.post(f"{url}{PLAN}", json=milp, timeout=10).status_code == 200
        assert inline_plans() == 1


def _edge_bodies() -> dict[str, bytes]:
    """Bodies where decoding JSON into Python data and validating it, and validating the JSON text straight into
    the models, could part ways (number forms, duplicate keys, escapes, literals, trailing bytes)."""
    good = make_snapshot(algorithm={"name": "flux"})
    text = json.dumps(good)
    unit = json.dumps(good["units"][0])
    cases = {
        "valid": text,
        "integer loads and sizes": json.dumps(
            {**good, "units": [{**u, "load": int(u["load"]) + 1, "state_size": 3} for u in good["units"]]}
        ),
        "a float budget": json.dumps({**good, "budget": {"max_migrations": 10.0}}),
        "a huge budget": json.dumps({**good, "budget": {"max_migrations": 10**30}}),
        "a load beyond float64": text.replace(unit, unit.replace('"load": ', '"load": 1e400, "x": ', 1)),
        "NaN": text.replace(unit, unit.replace('"load": ', '"load": NaN, "x": ', 1)),
        "Infinity": text.replace(unit, unit.replace('"load": ', '"load": Infinity, "x": ', 1)),
        "a duplicate key": text.replace(unit, unit.replace('"load": ', '"load": 2.0, "load": ', 1)),
        "escaped id": text.replace(unit, unit.replace('"id": "', '"id": "\\u0075\\u00e9', 1)),
        "lone surrogate id": text.replace(unit, unit.replace('"id": "', '"id": "\\ud800', 1)),
        "a control character in an id": text.replace(unit, unit.replace('"id": "', '"id": "\\u0001', 1)),
        "a string load": text.replace(unit, unit.replace('"load": ', '"load": "1.0", "x": ', 1)),
        "a string flag": text.replace(unit, unit.replace("{", '{"pinned": "true", ', 1)),
        "an unknown field": text.replace(unit, unit.replace("{", '{"weight": 1, ', 1)),
        "trailing bytes": text + " x",
        "trailing whitespace": text + " \n",
        "a byte order mark": "\ufeff" + text,
        "null": "null",
        "a list": "[]",
        "a number": "1",
        "empty": "",
        "another algorithm's body naming flux": json.dumps(
            {**good, "algorithm": {"name": "milp"}, "note": "flux"}
        ),
    }
    return {name: body.encode() for name, body in cases.items()}


@pytest.mark.parametrize("case", sorted(_edge_bodies()))
def test_edge_bodies_get_the_same_answer_inline_and_in_a_worker(apps: tuple[Any, Any], case: str) -> None:
    """The inline path validates a body's JSON text straight into the models and falls back to the worker's decode
    on any error: every body gets the worker's answer, byte for byte."""
    body = _edge_bodies()[case]
    assert planning.may_be_small(body) or case in ("null", "a list", "a number", "empty")
    fast, pooled = apps
    inline_answer, worker_answer = _post(fast, body), _post(pooled, body)
    assert inline_answer.status_code == worker_answer.status_code, (inline_answer.text, worker_answer.text)
    assert _same_but_timing(inline_answer.content) == _same_but_timing(worker_answer.content)


@EXAMPLES
@given(snapshot=small_snapshots(), data=st.data())
def test_the_validator_reads_the_models_as_it_reads_the_json(
    snapshot: dict[str, Any], data: st.DataObject
) -> None:
    """A small body's fields' values (what the inline path validates into and the validator reads) are the models'
    own field values, and the validator finds the same problems in a plan, valid or broken, from them as from the
    decoded body."""
    body = json.dumps(snapshot).encode()
    request = AssignmentRequest.model_validate_json(body)
    if reference_errors(request):
        return
    answer = planning.plan_if_small(Settings(), planning.PlanJob(body, time.monotonic()))
    assert answer is not None
    if answer.status != 200:
        return
    plan = json.loads(answer.body)
    raw = json.loads(body)
    from_models = planning._FIELDS.validate_json(body)
    assert _with_defaults(from_models) == request_fields(request)
    assert plan_check.check_plan(from_models, plan) == plan_check.check_plan(raw, plan) == []
    broken = json.loads(answer.body)
    unit = data.draw(st.sampled_from(sorted(broken["assignment"])))
    broken["assignment"][unit] = data.draw(
        st.sampled_from([n["id"] for n in snapshot["nodes"]] + ["nowhere"])
    )
    broken["migrations"] += data.draw(st.integers(0, 1))
    broken["after"]["load_distance"] *= data.draw(st.sampled_from([1.0, 1.5]))
    assert plan_check.check_plan(from_models, broken) == plan_check.check_plan(raw, broken)


def _with_defaults(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields' values with each node's and unit's defaults filled in where its JSON left them out (what their
    readers apply: NODE_DEFAULTS, UNIT_DEFAULTS)."""
    return {
        **fields,
        "nodes": [{**NODE_DEFAULTS, **node} for node in fields["nodes"]],
        "units": [{**UNIT_DEFAULTS, **unit} for unit in fields["units"]],
    }


def test_the_fields_form_has_the_models_schema() -> None:
    """The inline path validates a small body into the request's fields' values (plain dicts) instead of the models:
    the same rules, field by field (types, bounds, patterns, defaults, unknown keys refused), as their JSON schemas
    say, names aside. A node's, unit's or traffic edge's field left out stays out of its dict instead of holding its
    default (their readers apply the models' defaults): those forms' schemas name no default, and are otherwise the
    models'."""
    form = json.dumps(planning._FIELDS.json_schema(), sort_keys=True)
    for model in ("Node", "Unit", "Traffic", "Budget", "AssignmentRequest"):
        form = form.replace(f"{model}Fields", model)
    expected = AssignmentRequest.model_json_schema()
    for model in ("Node", "Unit", "Traffic"):
        for prop in expected["$defs"][model]["properties"].values():
            prop.pop("default", None)
    assert json.loads(form) == expected


def test_the_readers_defaults_are_the_models_defaults() -> None:
    """What the readers of a node or unit dict apply to a field left out is the model's default, for every field that
    has one; a body that leaves each out reads as the models read it."""
    assert {
        n: f.get_default(call_default_factory=True)
        for n, f in Node.model_fields.items()
        if not f.is_required()
    } == NODE_DEFAULTS
    assert {
        n: f.get_default(call_default_factory=True)
        for n, f in Unit.model_fields.items()
        if not f.is_required()
    } == UNIT_DEFAULTS
    body = b'{"nodes": [{"id": "a"}, {"id": "b"}], "units": [{"id": "u", "load": 1.0}], "algorithm": {"name": "flux"}}'
    fields = planning._FIELDS.validate_json(body)
    assert fields["units"] == [{"id": "u", "load": 1.0}] and fields["nodes"] == [{"id": "a"}, {"id": "b"}]
    assert _with_defaults(fields) == request_fields(AssignmentRequest.model_validate_json(body))


def test_a_model_with_validators_has_no_fields_form() -> None:
    """Validators (ELB's bounds) would not run on a fields' form: none is made for such a model."""
    with pytest.raises(TypeError, match="ElbParams"):
        field_values_form(ElbParams, {})


def _fields_or_error(body: bytes) -> tuple[bool, Any]:
    try:
        return True, _with_defaults(planning._FIELDS.validate_json(body))
    except ValidationError:
        return False, None


def _model_or_error(body: bytes) -> tuple[bool, Any]:
    try:
        return True, request_fields(AssignmentRequest.model_validate_json(body))
    except ValidationError:
        return False, None


@pytest.mark.parametrize("case", sorted(_edge_bodies()))
def test_edge_bodies_validate_into_the_fields_as_into_the_models(case: str) -> None:
    body = _edge_bodies()[case]
    assert _fields_or_error(body) == _model_or_error(body)


BAD_VALUES = [
    None,
    True,
    -1.0,
    0.0,
    1e16,
    "x",
    "a b",
    "",
    [],
    {},
    [1.0],
    3,
    "1.0",
    {"cpu": 1.0},
    {"cpu": -1.0},
]


@EXAMPLES
@given(snapshot=small_snapshots(), data=st.data())
def test_mutated_bodies_validate_into_the_fields_as_into_the_models(
    snapshot: dict[str, Any], data: st.DataObject
) -> None:
    """A field set to a wrong (or right) value, dropped, or an unknown one added, anywhere in a small snapshot:
    accepted by the fields' form exactly when by the models, with the same values."""
    part = data.draw(st.sampled_from(["nodes", "units", "budget", "algorithm", "top", "traffic"]))
    if part in ("nodes", "units"):
        target = data.draw(st.sampled_from(snapshot[part]))
    elif part == "traffic":
        snapshot["traffic"] = [{"src": snapshot["units"][0]["id"], "dst": "u-other", "rate": 1.0}]
        target = snapshot["traffic"][0]
    elif part == "top":
        target = snapshot
    else:
        target = snapshot[part]
    keys = {
        "nodes": ["id", "capacity", "draining", "resources"],
        "units": ["id", "node", "load", "state_size", "operator", "pinned", "resources"],
        "traffic": ["src", "dst", "rate"],
        "budget": ["max_migrations", "max_migration_cost"],
        "algorithm": ["name", "seed"],
        "top": ["nodes", "units", "time_limit_s", "serialization_cost", "budget", "extra"],
    }[part]
    key = data.draw(st.sampled_from([*keys, "unknown"]))
    if data.draw(st.booleans()):
        target.pop(key, None)
    else:
        target[key] = data.draw(st.sampled_from(BAD_VALUES))
    body = json.dumps(snapshot).encode()
    assert _fields_or_error(body) == _model_or_error(body)

"""Metrics and logs: request ids on every answer, JSON log lines, latency/size/plan-quality/pool metrics, and no
stack trace in any response."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient
from hypothesis import example, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.parser import text_string_to_metric_families

from service.logs import REQUEST_ID_HEADER, JsonFormatter
from service.main import create_app
from service.settings import Settings
from service.telemetry import SECONDS_BUCKETS, DeferredObservations, Metrics
from tests.conftest import PLAN, assert_problem, make_snapshot


def samples(client: Any) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = client.get("/metrics").text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JsonFormatter())
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


@pytest.fixture
def logs() -> Iterator[Collect]:
    handler = Collect()
    logger = logging.getLogger("trimtab")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


@pytest.fixture
def fresh() -> Iterator[TestClient]:
    """An app of its own, so counters start at zero."""
    with TestClient(
        create_app(Settings(max_body_bytes=4096, auth_token="tok")), raise_server_exceptions=False
    ) as c:
        c.headers["Authorization"] = "Bearer tok"
        yield c


def test_request_id_is_echoed_or_made_on_every_answer(fresh: TestClient) -> None:
    assert (
        fresh.get("/healthz", headers={REQUEST_ID_HEADER: "engine-42.a"}).headers[REQUEST_ID_HEADER]
        == "engine-42.a"
    )
    made = {fresh.get("/healthz").headers[REQUEST_ID_HEADER] for _ in range(3)}
    assert len(made) == 3 and all(len(m) == 32 for m in made)
    for unsafe in ("a b", "x" * 129, "id;drop", ""):
        replaced = fresh.get("/healthz", headers={REQUEST_ID_HEADER: unsafe}).headers[REQUEST_ID_HEADER]
        assert re.fullmatch(r"[0-9a-f]{32}", replaced), (unsafe, replaced)
    # problem answers from every layer carry it too: 422 (handler), 413 (middleware), 401 (auth), 404 (routing)
    bad = make_snapshot(n_nodes=2)
    bad["units"][0]["node"] = "n9"
    assert_problem(fresh.post(PLAN, json=bad), 422, ("body", "units", 0, "node"))
    answers = [
        fresh.post(PLAN, json=bad),
        fresh.post(PLAN, content=b"x" * 5000, headers={"content-type": "application/json"}),
        fresh.post(PLAN, json=bad, headers={"Authorization": "Bearer wrong"}),
        fresh.get("/nowhere"),
    ]
    assert [a.status_code for a in answers] == [422, 413, 401, 404]
    assert all(a.headers.get(REQUEST_ID_HEADER) for a in answers)


def test_request_ids_do_not_repeat_when_the_global_random_generator_is_seeded(fresh: TestClient) -> None:
    """Made ids come from a generator of the service's own: seeding the `random` module (as hypothesis does for
    every example, and some libraries do) cannot make them repeat."""
    made = set()
    for _ in range(3):
        random.seed(7)
        made.add(fresh.get("/healthz").headers[REQUEST_ID_HEADER])
    assert len(made) == 3


def test_a_forked_child_makes_other_request_ids_than_its_parent() -> None:
    """Solver workers are forked: the id generator is seeded again in the child, so parent and child do not make
    the same ids."""
    from service import logs as service_logs

    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child: it writes its next id and exits, whatever happens)
        try:
            os.write(write, f"{service_logs._request_ids.getrandbits(128):032x}".encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    from_child = os.read(read, 64).decode()
    os.close(read)
    assert len(from_child) == 32
    assert from_child != f"{service_logs._request_ids.getrandbits(128):032x}"


def test_access_lines_are_json_with_the_request_id(fresh: TestClient, logs: Collect) -> None:
    fresh.post(
        PLAN,
        json=make_snapshot(n_nodes=2, algorithm={"name": "round-robin"}),
        headers={REQUEST_ID_HEADER: "r-1"},
    )
    access = [line for line in logs.lines if line["logger"] == "trimtab.access"]
    assert len(access) == 1, logs.lines
    line = access[0]
    assert line["request_id"] == "r-1" and line["method"] == "POST" and line["path"] == PLAN
    assert line["status"] == 200 and line["duration_ms"] > 0 and line["request_bytes"] > 100
    assert line["level"] == "info" and line["ts"].endswith("Z")


def test_probes_and_scrapes_log_at_debug(fresh: TestClient, logs: Collect) -> None:
    logger = logging.getLogger("trimtab")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        fresh.get("/healthz")
        fresh.get("/metrics")
        fresh.get("/v1/algorithms")
    finally:
        logger.setLevel(level)
    levels = {(line["path"], line["level"]) for line in logs.lines if line["logger"] == "trimtab.access"}
    assert levels == {("/healthz", "debug"), ("/metrics", "debug"), ("/v1/algorithms", "info")}, levels


def test_unhandled_error_is_a_bare_500_problem_and_the_traceback_only_in_the_log(logs: Collect) -> None:
    app = create_app(Settings())

    @app.get("/boom", tags=["test"])
    def boom() -> None:
        raise RuntimeError("secret internals at /srv/app.py line 7")

    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.get("/boom", headers={REQUEST_ID_HEADER: "boom-1"})
    problem = assert_problem(answer, 500)
    assert answer.headers[REQUEST_ID_HEADER] == "boom-1"
    assert (
        "secret" not in answer.text and "Traceback" not in answer.text and "RuntimeError" not in answer.text
    )
    errors = [line for line in logs.lines if line["level"] == "error"]
    assert errors and errors[0]["request_id"] == "boom-1" and "secret internals" in errors[0]["traceback"]
    assert problem["title"] == "Internal error"
    assert (
        value(samples(client), "trimtab_request_seconds_count", endpoint="/boom", method="GET", status="500")
        == 1
    )


def test_latency_size_solve_time_and_plan_quality_metrics(fresh: TestClient) -> None:
    body = make_snapshot(n_nodes=4, budget={"max_migrations": 4}, algorithm={"name": "flux"})
    raw = json.dumps(body).encode()
    plans = [
        fresh.post(PLAN, content=raw, headers={"content-type": "application/json"}).json() for _ in range(2)
    ]
    fresh.post(PLAN, content=b"x" * 5000, headers={"content-type": "application/json"})
    found = samples(fresh)
    ok = {"endpoint": PLAN, "method": "POST"}
    assert value(found, "trimtab_request_seconds_count", **ok, status="200") == 2
    assert value(found, "trimtab_request_seconds_count", **ok, status="413") == 1
    assert value(found, "trimtab_request_seconds_sum", **ok, status="200") > 0
    assert value(found, "trimtab_request_bytes_count", endpoint=PLAN) == 3
    assert value(found, "trimtab_request_bytes_sum", endpoint=PLAN) == pytest.approx(2 * len(raw) + 5000)
    assert (
        value(
            found, "trimtab_plans_total", endpoint="assignment", algorithm="flux", status=plans[0]["status"]
        )
        == 2
    )
    assert value(found, "trimtab_solve_seconds_count", endpoint="assignment", algorithm="flux") == 2
    for phase in ("before", "after"):
        total = sum(p[phase]["load_distance"] for p in plans)
        assert value(found, "trimtab_plan_load_distance_count", algorithm="flux", phase=phase) == 2
        assert value(found, "trimtab_plan_load_distance_sum", algorithm="flux", phase=phase) == pytest.approx(
            total
        )
    assert value(found, "trimtab_plan_migrations_sum", algorithm="flux") == sum(
        p["migrations"] for p in plans
    )
    assert value(found, "trimtab_rejected_requests_total", endpoint=PLAN, status="413") == 1


def test_unknown_paths_share_one_label(fresh: TestClient) -> None:
    for i in range(5):
        fresh.get(f"/random-{i}")
    found = samples(fresh)
    assert value(found, "trimtab_request_seconds_count", endpoint="other", method="GET", status="404") == 5
    assert not [key for key in found if ("endpoint", "/random-0") in key[1]]


def test_pool_saturation_gauge_and_503_counter() -> None:
    """One slot, no queue: while a solver call holds the slot, the gauge reads full and the next call gets 503."""
    app: FastAPI = create_app(Settings(pool_size=1, queue_size=0))
    release = threading.Event()

    @app.post("/hold", tags=["test"])
    async def hold(request: Request) -> dict[str, bool]:
        return {"released": await request.app.state.pool.run(lambda: release.wait(10))}

    async def scenario() -> tuple[int, str, int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            first = asyncio.create_task(http.post("/hold"))
            for _ in range(500):
                if app.state.pool.in_flight == 1:
                    break
                await asyncio.sleep(0.01)
            refused = await http.post("/hold")
            metrics_text = (await http.get("/metrics")).text
            release.set()
            return refused.status_code, metrics_text, (await first).status_code

    refused, text, first = asyncio.run(scenario())
    assert (refused, first) == (503, 200)
    found = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert value(found, "trimtab_pool_in_flight") == 1 and value(found, "trimtab_pool_capacity") == 1
    assert value(found, "trimtab_rejected_requests_total", endpoint="/hold", status="503") == 1
    assert value(found, "trimtab_request_seconds_count", endpoint="/hold", method="POST", status="503") == 1


@pytest.mark.filterwarnings("error::RuntimeWarning")  # the fold warns of nothing the library does not
@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.sampled_from([*SECONDS_BUCKETS, 0.0, -0.0, 1e-300, -1.0]),
            st.integers(-(10**6), 10**6),
        ),
        max_size=30,
    )
)
# a finite sum past the float range: inf, as the library's, without numpy's warning
@example([1.7e308, 1.7e308])
def test_deferred_observations_expose_what_prometheus_clients_observe_does(values: list[float]) -> None:
    """service.telemetry.DeferredObservations folds queued observations into the children (bucket by bisection,
    each child's totals added once): the same samples as the library's observe and inc for any value, bounds
    themselves, NaN, infinities, negatives and integers included, folded at scrape time and in batches."""
    registry = CollectorRegistry()
    deferred = DeferredObservations(fold_at=7)  # (folds on the way too, then the rest at the collection)
    ours = Histogram("lean", "x", ["a"], buckets=SECONDS_BUCKETS, registry=registry).labels("1")
    theirs = Histogram("plain", "x", ["a"], buckets=SECONDS_BUCKETS, registry=registry).labels("1")
    our_count = Counter("ours", "x", ["a"], registry=registry).labels("1")
    their_count = Counter("theirs", "x", ["a"], registry=registry).labels("1")
    for value in values:
        deferred.record((ours, our_count), (value, 1.0))
        deferred.record((our_count, ours), (None, None))  # (nothing observed)
        theirs.observe(value)
        their_count.inc()
    deferred.fold()
    families = {family.name: family for family in registry.collect()}

    def samples(name: str) -> list[tuple[str, dict[str, str], float]]:
        return [
            (sample.name.removeprefix(name), sample.labels, sample.value)
            for sample in families[name].samples
            if not sample.name.endswith("_created")
        ]

    assert samples("ours") == samples("theirs")
    lean, plain = samples("lean"), samples("plain")
    assert [s[:2] for s in lean] == [s[:2] for s in plain]
    assert [s[2] for s in lean] == pytest.approx([s[2] for s in plain], nan_ok=True)


def test_a_scrape_shows_every_observation_made_before_it_and_an_unscraped_service_holds_few() -> None:
    """The metrics' registry folds the waiting observations before it is read (a collector registered first), and
    no more than FOLD_AT requests' observations ever wait."""
    metrics = Metrics()
    metrics.deferred.fold_at = 5
    for k in range(12):
        metrics.record_access("/v1/assignment/plan", "POST", 200, 0.002, 100.0 * k)
        assert metrics.deferred._count < 5  # (requests' rows waiting)
    labels = {"endpoint": "/v1/assignment/plan", "method": "POST", "status": "200"}
    assert metrics.registry.get_sample_value("trimtab_request_seconds_count", labels) == 12
    assert (
        metrics.registry.get_sample_value("trimtab_request_bytes_sum", {"endpoint": labels["endpoint"]})
        == 6600
    )
    assert len(metrics.deferred._waiting) == 0


def test_a_value_that_is_no_float_never_fails_the_fold() -> None:
    """A fold runs inside an unrelated request or a scrape: a value that cannot be a float (an int beyond a float's
    range, a string) is counted as an infinity or left out, and the rest of the batch is folded (found in review:
    one such value raised and dropped the batch)."""
    registry = CollectorRegistry()
    deferred = DeferredObservations()
    histogram = Histogram("h", "x", ["a"], buckets=SECONDS_BUCKETS, registry=registry).labels("1")
    counter = Counter("c", "x", ["a"], registry=registry).labels("1")
    for value in (0.5, 10**400, "x", 2.0):
        deferred.record((histogram, counter), (value, 1.0))
    deferred.fold()
    assert registry.get_sample_value("h_count", {"a": "1"}) == 3  # 0.5, 2.0 and +inf ("x" left out)
    assert registry.get_sample_value("h_sum", {"a": "1"}) == float("inf")
    assert registry.get_sample_value("c_total", {"a": "1"}) == 4


# ---------------------------------------------------------------------------------------------- FastAPI's OpenTelemetry


@pytest.fixture
def span_exporter(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A configured OpenTelemetry tracer provider (the SDK's, spans kept in memory) in place of the API's unset
    stand-in, for apps created inside the test; FastAPI's own checks read the same function."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    monkeypatch.delenv("FASTAPI_OTEL_AUTO_CONFIGURE", raising=False)
    return exporter


def test_fastapi_telemetry_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    from service.telemetry import fastapi_telemetry

    off = {"tracing": False, "metrics": False, "logs": False}
    monkeypatch.delenv("FASTAPI_OTEL_AUTO_CONFIGURE", raising=False)
    assert fastapi_telemetry("off") == off
    assert fastapi_telemetry("on") is None
    assert fastapi_telemetry("auto") == off  # no provider set in this process
    monkeypatch.setenv("FASTAPI_OTEL_AUTO_CONFIGURE", "true")
    assert fastapi_telemetry("auto") is None  # FastAPI sets providers up from the environment at start-up
    assert fastapi_telemetry("off") == off


@pytest.mark.parametrize(("otel", "spans_expected"), [("auto", True), ("on", True), ("off", False)])
def test_fastapi_spans_follow_the_otel_setting(otel: str, spans_expected: bool, span_exporter: Any) -> None:
    """With a provider configured before the app is created, "auto" keeps FastAPI's request spans; "off" drops
    them; every plan is answered either way."""
    with TestClient(create_app(Settings(otel=otel))) as client:
        assert client.post(PLAN, json=make_snapshot()).status_code == 200
    names = [span.name for span in span_exporter.get_finished_spans()]
    assert any(name.startswith("POST") for name in names) is spans_expected, names

"""Issue 9 fuzz: semantically valid and invalid snapshots for every algorithm and for the splitter, beyond
schemathesis's schema-level cases. Over every generated request: zero 5xx, zero hangs (each answer within
time_limit_s + 1 s plus a margin for the test client), every 200 plan independently valid (solvers/plan_check.py),
every problem a problem+json document, and the splitter model a response returns accepted by the next call.

`make test` runs FUZZ_EXAMPLES requests (derandomized: the same cases every run); bench/reliability/fuzz.py runs
10,000 with fresh randomness through `run_fuzz`.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from uvicorn.loops.auto import auto_loop_factory

from service.algorithms import REGISTRY
from service.main import create_app
from service.planning import may_be_small
from service.settings import Settings
from solvers.compiled import warm_up as compile_kernels
from solvers.plan_check import check_plan
from tests.conftest import PLAN

SPLITTER = "/v1/splitter/weights"
FUZZ_EXAMPLES = 1000
TIME_LIMIT_S = 1.0  # deadline 2 s: far above what these small cases need, even on a loaded machine
CLIENT_MARGIN_S = 2.0  # the test client, the machine's load: a hang is far beyond this
Body = dict[str, Any]


# ---------------------------------------------------------------------------------------------- helpers


class PostClient(Protocol):
    def post(
        self, url: str, *, content: bytes | None = ..., json: Any = ..., headers: dict[str, str] | None = ...
    ) -> httpx.Response: ...


class MainThreadClient:
    """Drives an app from the calling thread (an event loop per request through httpx's ASGI transport), as uvicorn
    runs it in its main thread: there small plans are planned in the service process (service.inline), which an app
    behind a TestClient (on a portal thread) never does. A 5xx comes back as a response, to be judged."""

    def __init__(self, app: Any) -> None:
        self.app = app
        compile_kernels()  # as the service's lifespan does, which nothing here runs: flux inline is the compiled one

    def post(
        self,
        url: str,
        *,
        content: bytes | None = None,
        json: Any = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="http://trimtab", timeout=120) as c:
                return await c.post(url, content=content, json=json, headers=headers)

        # On the event loop uvicorn runs the service on (uvloop when installed, as it is with trimtab)
        with asyncio.Runner(loop_factory=auto_loop_factory()) as runner:
            return runner.run(send())

    def close(self) -> None:
        self.app.state.pool.shutdown()


def _algorithm(body: Any) -> str | None:
    if not isinstance(body, dict) or not isinstance(body.get("algorithm"), dict):
        return None
    name = body["algorithm"].get("name")
    return name if isinstance(name, str) else None


# ---------------------------------------------------------------------------------------------- strategies

QUANTITIES = st.one_of(
    st.integers(0, 30).map(float),  # integers: exact ties
    st.sampled_from([0.45, 0.1, 1 / 3, 0.0, 1e-9, 99.999]),
    st.floats(0.0, 100.0, allow_nan=False),
    st.sampled_from([1e6, 1e12, 1e15]),  # the largest allowed
)
CAPACITIES = st.sampled_from([100.0, 100.0, 1.0, 50.5, 1e6, 1e-6])


def _params(draw: st.DrawFn, name: str) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if name == "milp":
        params["backend"] = draw(st.sampled_from(["cp-sat"] * 9 + ["highs"]))
        params["relative_gap"] = draw(st.sampled_from([0.0, 0.001, 0.5]))
    elif name in ("random", "universal-hash"):
        params["seed"] = draw(st.integers(0, 2**31 - 1))
    elif name == "correlation-global":
        params.update(theta=draw(st.floats(-1, 1)), epsilon=draw(st.floats(0, 1)))
    elif name == "correlation-pairwise":
        params["variant"] = draw(
            st.sampled_from(
                [
                    "one-way",
                    "two-way",
                    "selective-exchange",
                    "improved-two-way",
                    "improved-selective-exchange",
                ]
            )
        )
    elif name == "elb":
        if draw(st.booleans()):
            low = draw(st.floats(1.0, 200.0))
            params.update(lower=low, upper=low + draw(st.floats(0.0, 100.0)))
        else:
            params["tolerance"] = draw(st.floats(0.01, 1.0))
    elif name == "clb":
        params["threshold"] = draw(st.floats(0.0, 0.99))
        if draw(st.booleans()):
            params["m"] = draw(st.integers(2, 8))
    return params


ALGORITHMS = list(REGISTRY)  # every algorithm the service offers, new ones included
NEEDS_SERIES = {"correlation-global", "correlation-pairwise", "clb"}


@st.composite
def valid_snapshots(draw: st.DrawFn) -> Body:
    """A snapshot the service must plan (or refuse with 422 when a unit fits nowhere): every algorithm, ties,
    integers, huge and tiny values, pinned and draining, unplaced units, further resources, budgets."""
    name = draw(st.sampled_from(ALGORITHMS))
    n_nodes = draw(st.integers(1, 7))
    nodes: list[Body] = [{"id": f"n{i}", "capacity": draw(CAPACITIES)} for i in range(n_nodes)]
    draining = {i for i in range(1, n_nodes) if draw(st.integers(0, 5)) == 0}
    for i in draining:
        nodes[i]["draining"] = True
    with_resources = draw(st.integers(0, 4)) == 0
    if with_resources:
        for node in nodes:
            node["resources"] = {"mem": draw(st.sampled_from([10.0, 100.0, 1e6]))}
    windows = draw(st.integers(1, 6)) if name in NEEDS_SERIES or draw(st.booleans()) else None
    units: list[Body] = []
    for k in range(draw(st.integers(1, 16))):
        unit: Body = {"id": f"u{k}"}
        load = draw(QUANTITIES)
        unit["load"] = load if windows is None else [draw(QUANTITIES) for _ in range(windows)]
        where = draw(st.integers(-1, n_nodes - 1))
        if where >= 0:
            unit["node"] = f"n{where}"
            if where not in draining and draw(st.integers(0, 6)) == 0:
                unit["pinned"] = True
        if draw(st.booleans()):
            unit["state_size"] = draw(QUANTITIES)
        if with_resources and draw(st.booleans()):
            unit["resources"] = {"mem": draw(st.sampled_from([0.0, 1.0, 5.0]))}
        if draw(st.integers(0, 3)) == 0:
            unit["operator"] = f"op{draw(st.integers(0, 2))}"
        units.append(unit)
    traffic = []
    if len(units) > 1 and draw(st.integers(0, 3)) == 0:
        traffic = [{"src": "u0", "dst": "u1", "rate": draw(QUANTITIES)}]
    budget = draw(
        st.sampled_from(
            [
                {},
                {"max_migrations": 0},
                {"max_migrations": 2},
                {"max_migrations": 2**31 - 1},
                {"max_migration_cost": 5.0},
                {"max_migrations": 3, "max_migration_cost": 1e15},
            ]
        )
    )
    body: Body = {
        "nodes": nodes,
        "units": units,
        "algorithm": _params(draw, name),
        "time_limit_s": TIME_LIMIT_S,
    }
    if budget:
        body["budget"] = budget
    if traffic:
        body["traffic"] = traffic
    return body


def _set_path(body: Body, path: tuple[Any, ...], value: Any) -> None:
    target: Any = body
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


MUTATIONS: list[tuple[str, Callable[[Body], None]]] = [
    ("duplicate node id", lambda b: b["nodes"].append(dict(b["nodes"][0]))),
    ("duplicate unit id", lambda b: b["units"].append(dict(b["units"][0]))),
    ("unknown node", lambda b: _set_path(b, ("units", 0, "node"), "nowhere")),
    ("negative load", lambda b: _set_path(b, ("units", 0, "load"), -1.0)),
    ("string load", lambda b: _set_path(b, ("units", 0, "load"), "3")),
    ("boolean load", lambda b: _set_path(b, ("units", 0, "load"), True)),
    ("empty series", lambda b: _set_path(b, ("units", 0, "load"), [])),
    ("ragged series", lambda b: _set_path(b, ("units", 0, "load"), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])),
    ("zero capacity", lambda b: _set_path(b, ("nodes", 0, "capacity"), 0.0)),
    ("over max quantity", lambda b: _set_path(b, ("units", 0, "load"), 1e16)),
    ("all draining", lambda b: [n.__setitem__("draining", True) for n in b["nodes"]]),
    ("pinned without node", lambda b: b["units"][0].update(node=None, pinned=True)),
    ("extra field", lambda b: b.__setitem__("surprise", 1)),
    ("unknown algorithm", lambda b: b.__setitem__("algorithm", {"name": "magic"})),
    ("huge max_migrations", lambda b: b.__setitem__("budget", {"max_migrations": 10**30})),
    ("negative budget", lambda b: b.__setitem__("budget", {"max_migration_cost": -1.0})),
    ("time limit over max", lambda b: b.__setitem__("time_limit_s", 1e9)),
    ("zero time limit", lambda b: b.__setitem__("time_limit_s", 0.0)),
    ("no units", lambda b: b.__setitem__("units", [])),
    ("no nodes", lambda b: b.__setitem__("nodes", [])),
    ("unknown traffic unit", lambda b: b.__setitem__("traffic", [{"src": "zz", "dst": "u0", "rate": 1.0}])),
    ("id with space", lambda b: _set_path(b, ("nodes", 0, "id"), "a b")),
    (
        "elb lower above upper",
        lambda b: b.__setitem__("algorithm", {"name": "elb", "lower": 5.0, "upper": 1.0}),
    ),
    ("clb m of 1", lambda b: b.__setitem__("algorithm", {"name": "clb", "m": 1})),
]
RAW_MUTATIONS: list[tuple[str, Callable[[str], str]]] = [
    ("NaN load", lambda text: text.replace('"load": ', '"load": NaN, "x": ', 1)),
    ("Infinity capacity", lambda text: text.replace('"capacity": ', '"capacity": Infinity, "y": ', 1)),
    ("1e400", lambda text: text.replace('"capacity": ', '"capacity": 1e400, "y": ', 1)),
    ("truncated", lambda text: text[: len(text) // 2]),
    ("not json", lambda text: "{nodes: " + text),
    ("empty", lambda text: ""),
    ("array", lambda text: "[" + text + "]"),
]


@st.composite
def plan_requests(draw: st.DrawFn) -> tuple[str, bytes, Body | None]:
    """(kind, raw body, the dict when it is one) for POST /v1/assignment/plan: mostly valid, a third invalid."""
    body = draw(valid_snapshots())
    roll = draw(st.integers(0, 8))
    if roll < 6:
        return ("valid", json.dumps(body).encode(), body)
    if roll < 8:
        label, mutate = draw(st.sampled_from(MUTATIONS))
        mutate(body)
        return (label, json.dumps(body).encode(), body)
    label, mutate_text = draw(st.sampled_from(RAW_MUTATIONS))
    return (label, mutate_text(json.dumps(body)).encode(), None)


# (elapsed seconds, blocking counter increments, per connection (tuples sent since, share of them in flight) or None)
SplitterStep = tuple[float, list[float], list[tuple[int, float]] | None]


@st.composite
def splitter_calls(draw: st.DrawFn) -> tuple[Body, list[SplitterStep]]:
    """A first splitter call and the later (elapsed seconds, counter increments, tuple counts) observations: valid
    and extreme values (tiny elapsed, huge counter jumps, resets, max_change near the int64 limit, tuple counts at
    2**53 and reset to zero)."""
    n = draw(st.integers(1, 20))
    resolution = draw(st.sampled_from([2, 10, 1000, 100_000]))
    base, extra = divmod(resolution, n)
    weights = [base + (1 if j < extra else 0) for j in range(n)]
    first: Body = {
        "connections": [
            {"id": f"c{j}", "weight": w, "cumulative_blocking_s": draw(QUANTITIES)}
            for j, w in enumerate(weights)
        ],
        "observed_at": draw(st.sampled_from([0.0, 1731400000.0, -5.0])),
        "resolution": resolution,
        "exploration_decay": draw(st.sampled_from([0.0, 0.1, 0.9])),
        "clustering": draw(st.sampled_from(["auto", "on", "off"])),
    }
    if draw(st.booleans()):
        first["max_change"] = draw(st.sampled_from([1, 5, 1000, 2**31, 2**63]))
    tuples = draw(st.booleans())  # the optional tuple counts (tuples_sent, tuples_in_flight): all or none
    if tuples:
        for connection in first["connections"]:
            connection["tuples_sent"] = draw(st.sampled_from([0, 7, 10**6, 2**53]))
            if draw(st.booleans()):
                connection["tuples_in_flight"] = draw(st.integers(0, connection["tuples_sent"]))
    steps = []
    for _ in range(draw(st.integers(1, 3))):
        elapsed = draw(st.sampled_from([1.0, 10.0, 0.5, 1e-9, 0.0]))
        increments = [draw(st.sampled_from([0.0, 0.1, 0.9, 1e12, -1.0])) for _ in range(n)]
        # tuples sent since the previous call (negative: the counter was reset) and the share still in flight
        sent = [
            (draw(st.sampled_from([0, 1, 1000, 10**12, -(2**53)])), draw(st.sampled_from([0.0, 0.5, 1.0])))
            for _ in range(n)
        ]
        steps.append((elapsed, increments, sent if tuples else None))
    return first, steps


# ---------------------------------------------------------------------------------------------- the run


@dataclass
class FuzzReport:
    requests: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    slowest_over_limit_s: float = -math.inf  # max over requests of (elapsed - time limit)
    small_bodies: int = (
        0  # plan requests the service may plan in its own process (service.planning.may_be_small)
    )

    def fail(self, message: str) -> None:
        self.failures.append(message)


def _time_limit(body: Body | None) -> float:
    value = body.get("time_limit_s") if isinstance(body, dict) else None
    return value if isinstance(value, int | float) and 0 < value <= 60 else 2.0


def check_plan_call(client: PostClient, kind: str, raw: bytes, body: Body | None, report: FuzzReport) -> None:
    started = time.monotonic()
    response = client.post(PLAN, content=raw, headers={"content-type": "application/json"})
    elapsed = time.monotonic() - started
    report.requests += 1
    report.statuses[response.status_code] += 1
    report.kinds[kind] += 1
    report.small_bodies += may_be_small(raw)
    limit = _time_limit(body)
    report.slowest_over_limit_s = max(report.slowest_over_limit_s, elapsed - limit)
    if elapsed > limit + 1.0 + CLIENT_MARGIN_S:
        report.fail(f"{kind}: {elapsed:.2f} s for time_limit_s {limit} ({raw[:300]!r})")
    if response.status_code >= 500:
        report.fail(
            f"{kind} [{_algorithm(body)}]: {response.status_code} {response.text[:300]} for {raw[:3000]!r}"
        )
        return
    if response.status_code == 200:
        # A mutation the service accepts (some are harmless) must produce a valid plan like any other.
        problems = check_plan(json.loads(raw), response.json())
        if problems:
            report.fail(f"{kind} [{_algorithm(body)}]: invalid plan {problems[:3]} for {raw[:3000]!r}")
        return
    if not response.headers.get("content-type", "").startswith("application/problem+json"):
        report.fail(f"{kind}: {response.status_code} is not problem+json")
    if kind == "valid" and response.status_code != 422:
        report.fail(f"valid [{_algorithm(body)}] answered {response.status_code}: {response.text[:300]}")


def check_splitter_chain(
    client: PostClient, first: Body, steps: list[SplitterStep], report: FuzzReport
) -> None:
    body = first
    answer: Body = {}
    for step in [None, *steps]:
        if step is not None:
            elapsed, increments, tuples = step
            body = json.loads(json.dumps(body))
            body["observed_at"] += elapsed
            for j, (connection, inc, weight) in enumerate(
                zip(body["connections"], increments, answer["weights"].values(), strict=True)
            ):
                connection["cumulative_blocking_s"] = min(
                    1e15, max(0.0, connection["cumulative_blocking_s"] + inc)
                )
                connection["weight"] = weight
                if tuples is not None:
                    more, in_flight = tuples[j]
                    connection["tuples_sent"] = min(2**53, max(0, connection["tuples_sent"] + more))
                    connection["tuples_in_flight"] = int(connection["tuples_sent"] * in_flight)
            body["model"] = answer["model"]
        response = client.post(SPLITTER, json=body)
        report.requests += 1
        report.statuses[response.status_code] += 1
        report.kinds["splitter"] += 1
        if response.status_code >= 500:
            report.fail(
                f"splitter: {response.status_code} {response.text[:300]} for {json.dumps(body)[:400]}"
            )
            return
        if response.status_code != 200:
            if step is not None:
                # Every follow-up call sends back exactly the model this service returned: a rejection here is the
                # service poisoning itself.
                report.fail(f"splitter rejected its own model: {response.status_code} {response.text[:300]}")
            elif step is None and response.status_code != 422:
                report.fail(f"splitter first call {response.status_code}: {response.text[:300]}")
            return
        answer = response.json()
        if sum(answer["weights"].values()) != body["resolution"]:
            report.fail(f"splitter weights do not sum to the resolution: {answer['weights']}")
            return


def run_fuzz(client: PostClient, examples: int, derandomize: bool) -> FuzzReport:
    """Drive `examples` generated cases (plan requests and splitter call chains, 4:1) through `client`."""
    report = FuzzReport()

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=derandomize,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        case=st.one_of(plan_requests(), plan_requests(), plan_requests(), plan_requests(), splitter_calls())
    )
    def drive(case: Any) -> None:
        if len(case) == 3:
            check_plan_call(client, *case, report)
        else:
            check_splitter_chain(client, *case, report)

    drive()
    return report


# A float warning (overflow, invalid value) in a solver means a rank or a plan computed on inf or nan: raised, it
# answers 500 and fails the test (the bench's fuzz found an overflow in milp's cheapest-first start so, 30 Nov).
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_fuzz_no_5xx_no_hang_every_plan_valid() -> None:
    # Driven as uvicorn drives the app (its main thread): small plans inline, the rest in solver workers.
    client = MainThreadClient(create_app(Settings()))
    try:
        report = run_fuzz(client, FUZZ_EXAMPLES, derandomize=True)
    finally:
        client.close()
    assert not report.failures, "\n".join(report.failures[:10])
    assert report.requests >= FUZZ_EXAMPLES
    assert report.statuses[200] > FUZZ_EXAMPLES // 3, report.statuses  # most valid cases are planned
    inline_plans = client.app.state.metrics.registry.get_sample_value("trimtab_inline_plans_total")
    # Both paths fuzzed: most bodies small enough to be planned inline were (the others: not small once parsed, or
    # the watchdog on a loaded machine). Counted against the bodies of this run because the derandomized cases are
    # not the same in every process: Hypothesis draws now and then from the constants in the source of the local
    # modules loaded so far (hypothesis.internal.conjecture.providers._get_local_constants), and the whole suite
    # loads more of them than this file alone (alone: 164 inline of 246 small bodies, 1,388 requests).
    assert report.small_bodies > FUZZ_EXAMPLES // 20, report.small_bodies
    assert inline_plans is not None and inline_plans >= report.small_bodies // 4, (
        inline_plans,
        report.small_bodies,
    )


def test_fuzz_through_a_test_client_all_on_the_worker_path() -> None:
    """The same cases, fewer, with every plan in a solver worker (a TestClient's portal thread: nothing inline)."""
    with TestClient(create_app(Settings()), raise_server_exceptions=False) as client:
        report = run_fuzz(client, FUZZ_EXAMPLES // 5, derandomize=True)
    assert not report.failures, "\n".join(report.failures[:10])

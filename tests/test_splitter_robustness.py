"""Issue 9 (splitter part): valid input never answers 500, and the service never poisons itself: any model it
returns is accepted by the next call, whatever valid observations come next (ties, tiny and huge values)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.common import MAX_QUANTITY
from solvers.splitter.model import MAX_CALLS

URL = "/v1/splitter/weights"


def request(weights: dict[str, int], counters: dict[str, float], at: float, **extra: Any) -> dict[str, Any]:
    return {
        "connections": [
            {"id": cid, "weight": w, "cumulative_blocking_s": counters[cid]} for cid, w in weights.items()
        ],
        "observed_at": at,
        **extra,
    }


def test_max_change_beyond_int64_is_free_not_a_500(client: TestClient) -> None:
    answer = client.post(URL, json=request({"a": 500, "b": 500}, {"a": 0.0, "b": 0.0}, 0.0, max_change=2**63))
    assert answer.status_code == 200, answer.text
    model = answer.json()["model"]
    nxt = client.post(
        URL, json=request({"a": 500, "b": 500}, {"a": 0.9, "b": 0.0}, 1.0, model=model, max_change=2**63)
    )
    assert nxt.status_code == 200, nxt.text
    assert nxt.json()["weights"]["a"] < 500


def test_calls_at_the_limit_saturate_and_beyond_is_a_422(client: TestClient) -> None:
    model = client.post(URL, json=request({"a": 500, "b": 500}, {"a": 0.0, "b": 0.0}, 0.0)).json()["model"]
    model["calls"] = MAX_CALLS
    answer = client.post(URL, json=request({"a": 500, "b": 500}, {"a": 0.5, "b": 0.0}, 1.0, model=model))
    assert answer.status_code == 200, answer.text
    assert answer.json()["model"]["calls"] == MAX_CALLS
    again = client.post(
        URL, json=request({"a": 500, "b": 500}, {"a": 0.6, "b": 0.0}, 2.0, model=answer.json()["model"])
    )
    assert again.status_code == 200, again.text
    model["calls"] = 2**63 - 1
    rejected = client.post(URL, json=request({"a": 500, "b": 500}, {"a": 0.5, "b": 0.0}, 1.0, model=model))
    assert rejected.status_code == 422
    assert ["body", "model", "calls"] in [e["loc"][:3] for e in rejected.json()["errors"]]


def test_tiny_interval_and_huge_jump_do_not_poison_the_model(client: TestClient) -> None:
    model = client.post(URL, json=request({"a": 500, "b": 500}, {"a": 0.0, "b": 0.0}, 100.0)).json()["model"]
    tiny = client.post(
        URL, json=request({"a": 500, "b": 500}, {"a": 1.0, "b": 0.0}, 100.0 + 1e-13, model=model)
    )
    assert tiny.status_code == 200, tiny.text
    assert any("shorter than" in note for note in tiny.json()["notes"])
    huge = client.post(
        URL,
        json=request(
            {"a": 500, "b": 500}, {"a": MAX_QUANTITY, "b": 0.0}, 100.002, model=tiny.json()["model"]
        ),
    )
    assert huge.status_code == 200, huge.text
    rates = [r for c in huge.json()["model"]["connections"] for r in c["rate"]]
    assert rates and all(r is not None and 0.0 <= r <= MAX_QUANTITY for r in rates)
    weights = huge.json()["weights"]
    nxt = client.post(
        URL, json=request(weights, {"a": MAX_QUANTITY, "b": 0.0}, 101.0, model=huge.json()["model"])
    )
    assert nxt.status_code == 200, nxt.text


def test_version_1_model_is_migrated(client: TestClient) -> None:
    v1 = {
        "version": 1,
        "resolution": 1000,
        "observed_at": 0.0,
        "calls": 3,
        "connections": [
            {"id": "a", "cumulative_blocking_s": 1.0, "w": [500], "rate": [0.8], "n": [3], "seen": [3]},
            {"id": "b", "cumulative_blocking_s": 0.0, "w": [500], "rate": [0.0], "n": [3], "seen": [3]},
        ],
    }
    answer = client.post(URL, json=request({"a": 500, "b": 500}, {"a": 1.8, "b": 0.0}, 1.0, model=v1))
    assert answer.status_code == 200, answer.text
    assert answer.json()["model"]["version"] == 3
    assert any("migrated" in note for note in answer.json()["notes"])
    assert answer.json()["weights"]["a"] < 500


def test_version_2_model_is_migrated_without_a_hold(client: TestClient) -> None:
    first = client.post(URL, json=request({"a": 500, "b": 500}, {"a": 0.0, "b": 0.0}, 0.0)).json()["model"]
    v2 = dict(first, version=2)
    for connection in v2["connections"]:
        connection.pop("held_until", None)
    answer = client.post(URL, json=request({"a": 500, "b": 500}, {"a": 0.8, "b": 0.0}, 1.0, model=v2))
    assert answer.status_code == 200, answer.text
    assert answer.json()["model"]["version"] == 3
    assert any("migrated" in note for note in answer.json()["notes"])


# Next observations: ties (nothing changes), tiny and huge steps in time and counters, resets.
TIME_STEPS = st.sampled_from([0.0, 5e-324, 1e-300, 1e-9, 1e-3, 0.5, 1.0, 7.0, 3600.0, 1e12, -1.0])
COUNTER_STEPS = st.one_of(
    st.sampled_from([0.0, 0.0, 5e-324, 1e-12, 0.5, 1.0, 1e6, 1e15, -1.0]),
    st.floats(0.0, 10.0, allow_nan=False),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(1, 5),
    resolution=st.sampled_from([2, 3, 10, 1000]),
    max_change=st.sampled_from([None, 1, 3, 2**63]),
    decay=st.sampled_from([0.0, 0.1, 0.5, 0.999]),
    steady=st.booleans(),
    steps=st.lists(
        st.tuples(TIME_STEPS, st.lists(COUNTER_STEPS, min_size=6, max_size=6), st.booleans()),
        min_size=1,
        max_size=5,
    ),
    tuples=st.booleans(),
)
def test_any_returned_model_is_accepted_by_the_next_call(
    client: TestClient,
    n: int,
    resolution: int,
    max_change: int | None,
    decay: float,
    steady: bool,
    steps: list[tuple[float, list[float], bool]],
    tuples: bool,
) -> None:
    ids = [f"c{j}" for j in range(n)]
    sent: dict[str, int] = {}  # tuples sent, when reported: steps from the counters' (resets, 2**53 at most)
    weights = {cid: resolution // n + (1 if j < resolution % n else 0) for j, cid in enumerate(ids)}
    counters = dict.fromkeys(ids, 0.0)
    at, model = 1.7e9, None
    extra = {
        "resolution": resolution,
        "max_change": max_change,
        "exploration_decay": decay,
        "steady_weights": steady,
    }
    for dt, deltas, churn in steps:
        if (
            churn and len(weights) > 1
        ):  # the last connection leaves, its weight goes to the first; a newcomer joins
            gone = list(weights)[-1]
            first = next(iter(weights))
            weights[first] += weights.pop(gone)
            weights[f"new{len(counters)}"] = 0
            counters[f"new{len(counters)}"] = 0.0
        for cid, delta in zip(weights, deltas, strict=False):
            counters[cid] = 0.0 if delta < 0 else min(counters[cid] + delta, MAX_QUANTITY)
            sent[cid] = 0 if delta < 0 else min(sent.get(cid, 0) + int(delta * 1000), MAX_CALLS)
        at += dt
        body = request(weights, counters, at, model=model, **extra)
        if tuples:
            for connection in body["connections"]:
                connection["tuples_sent"] = sent.get(connection["id"], 0)
                connection["tuples_in_flight"] = connection["tuples_sent"] // 3
        answer = client.post(URL, json=body)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert sum(body["weights"].values()) == resolution
        assert all(0 <= w <= resolution for w in body["weights"].values())
        if max_change is not None and max_change < resolution:
            assert all(abs(body["weights"][cid] - w) <= max_change for cid, w in weights.items() if w > 0)
        model, weights = body["model"], body["weights"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"calls": ' + "9" * 5000 + "}", "number out of range"),  # beyond Python's 4,300 digits
        ('{"a":' * 5000 + "1" + "}" * 5000, "recursion limit exceeded"),
    ],
)
@pytest.mark.parametrize("url", [URL, "/v1/assignment/plan"])
def test_json_python_will_not_read_is_an_unparseable_body_naming_where(
    client: TestClient, url: str, body: str, message: str
) -> None:
    """Seen (stop 23): the splitter answered these with a 400 whose errors list was empty (the assignment endpoint
    named the body and the position); both now answer the same problem document."""
    answer = client.post(url, content=body.encode(), headers={"content-type": "application/json"})
    assert answer.status_code == 400
    problem = answer.json()
    assert problem["type"] == "https://trimtab.dev/problems/unparseable-body"
    assert problem["errors"][0]["loc"] == ["body"]
    assert message in problem["errors"][0]["msg"]

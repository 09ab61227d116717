"""POST /v1/splitter/weights through the app: the contract's shape, the model round trip, and every bad input."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.splitter import SplitterModel, _connection_errors, model_errors

URL = "/v1/splitter/weights"


def body(
    weights: tuple[int, ...] = (334, 333, 333), counters: tuple[float, ...] | None = None, **extra: Any
) -> dict[str, Any]:
    counters = counters or tuple(0.0 for _ in weights)
    return {
        "connections": [
            {"id": f"c{j + 1}", "weight": w, "cumulative_blocking_s": c}
            for j, (w, c) in enumerate(zip(weights, counters, strict=True))
        ],
        "observed_at": 1731400000.0,
        "model": None,
        **extra,
    }


def test_contract_shape_and_model_round_trip(client: TestClient) -> None:
    first = client.post(URL, json=body())
    assert first.status_code == 200, first.text
    answer = first.json()
    assert set(answer) >= {"weights", "model", "clusters", "predicted_max_blocking_rate", "notes"}
    assert answer["weights"] == {"c1": 334, "c2": 333, "c3": 333}
    assert answer["model"]["version"] == 3
    assert sorted(cid for members in answer["clusters"] for cid in members) == ["c1", "c2", "c3"]

    second = body(counters=(0.9, 0.0, 0.05), model=answer["model"])
    second["observed_at"] += 1.0
    answer2 = client.post(URL, json=second).json()
    assert sum(answer2["weights"].values()) == 1000
    assert answer2["weights"]["c1"] < 334
    assert answer2["model"]["calls"] == 2


def test_new_connection_starts_empty_and_vanished_is_dropped(client: TestClient) -> None:
    model = client.post(URL, json=body()).json()["model"]
    nxt = body(weights=(500, 500), counters=(0.2, 0.0), model=model)
    nxt["connections"][1]["id"] = "c9"
    nxt["observed_at"] += 1.0
    answer = client.post(URL, json=nxt)
    assert answer.status_code == 200, answer.text
    ids = [c["id"] for c in answer.json()["model"]["connections"]]
    assert ids == ["c1", "c9"]
    notes = " ".join(answer.json()["notes"])
    assert "c9" in notes and "c2" in notes and "c3" in notes


def test_clustering_auto_turns_on_from_16_connections(client: TestClient) -> None:
    weights = tuple([63] * 8 + [62] * 8)
    first = client.post(URL, json=body(weights)).json()
    nxt = body(weights, counters=tuple([0.2] * 4 + [0.0] * 12), model=first["model"])
    nxt["observed_at"] += 1.0
    clusters = client.post(URL, json=nxt).json()["clusters"]
    assert ["c1", "c2", "c3", "c4"] in clusters
    off = dict(nxt, clustering="off")
    assert len(client.post(URL, json=off).json()["clusters"]) == 16


def test_model_with_another_resolution_is_rescaled(client: TestClient) -> None:
    model = client.post(URL, json=body(weights=(50, 50), resolution=100)).json()["model"]
    nxt = body(weights=(500, 500), counters=(0.3, 0.0), model=model)
    nxt["observed_at"] += 1.0
    answer = client.post(URL, json=nxt)
    assert answer.status_code == 200, answer.text
    assert answer.json()["model"]["resolution"] == 1000
    assert any("rescaled" in n for n in answer.json()["notes"])


def test_a_coarser_resolution_that_merges_points_is_not_a_500(client: TestClient) -> None:
    # Red team: three points of one connection that land on two weights at the new resolution (1 and 2 both round
    # to 1 at resolution 10, 999 to 10) made `rescale` weight the variances with the merged counts: 500.
    model = {
        "version": 3,
        "resolution": 1000,
        "observed_at": 9.0,
        "calls": 2,
        "connections": [
            {
                "id": "c1",
                "cumulative_blocking_s": 0.5,
                **{"w": [1, 2, 999], "rate": [0.1, 0.2, 0.3], "n": [1, 2, 1], "seen": [1, 2, 2]},
                "var": [0.0, 0.0, 0.0],
            },
            {"id": "c2", "cumulative_blocking_s": 0.5, "w": [500], "rate": [0.1], "n": [1], "seen": [2]},
        ],
    }
    nxt = body(weights=(5, 5), counters=(1.0, 1.0), model=model, resolution=10)
    nxt["observed_at"] = 10.0
    answer = client.post(URL, json=nxt)
    assert answer.status_code == 200, answer.text
    again = dict(nxt, model=answer.json()["model"], observed_at=11.0)
    assert client.post(URL, json=again).status_code == 200


def learned_model(client: TestClient) -> dict[str, Any]:
    model = client.post(URL, json=body()).json()["model"]
    nxt = body(counters=(0.9, 0.0, 0.05), model=model)
    nxt["observed_at"] += 1.0
    return client.post(URL, json=nxt).json()["model"]


def tampered(model: dict[str, Any], path: list[str | int], value: Any) -> dict[str, Any]:
    model = copy.deepcopy(model)
    target: Any = model
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return model


BAD_REQUESTS: list[tuple[str, Any, list[str | int]]] = [
    ("weights not summing", lambda b: b["connections"][0].update(weight=300), ["body", "connections"]),
    (
        "negative counter",
        lambda b: b["connections"][1].update(cumulative_blocking_s=-1.0),
        ["body", "connections", 1, "cumulative_blocking_s"],
    ),
    (
        "NaN counter",
        lambda b: b["connections"][2].update(cumulative_blocking_s=float("nan")),
        ["body", "connections", 2, "cumulative_blocking_s"],
    ),
    ("duplicate id", lambda b: b["connections"][2].update(id="c1"), ["body", "connections", 2, "id"]),
    ("empty connections", lambda b: b.update(connections=[]), ["body", "connections"]),
    ("resolution too small", lambda b: b.update(resolution=1), ["body", "resolution"]),
    ("resolution too large", lambda b: b.update(resolution=10**7), ["body", "resolution"]),
    (
        "negative weight",
        lambda b: b["connections"][0].update(weight=-1),
        ["body", "connections", 0, "weight"],
    ),
    ("unknown field", lambda b: b.update(speed=3), ["body", "speed"]),
    ("decay out of range", lambda b: b.update(exploration_decay=1.0), ["body", "exploration_decay"]),
    ("bad clustering", lambda b: b.update(clustering="maybe"), ["body", "clustering"]),
]


@pytest.mark.parametrize(("name", "mutate", "loc"), BAD_REQUESTS, ids=[r[0] for r in BAD_REQUESTS])
def test_bad_request_is_a_problem_naming_the_field(
    client: TestClient, name: str, mutate: Any, loc: list[str | int]
) -> None:
    request = body()
    mutate(request)
    # NaN is not JSON: send it the way a careless client would, as a bare token.
    response = client.post(URL, content=json.dumps(request), headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    locs = [e["loc"][: len(loc)] for e in response.json()["errors"]]
    assert loc in locs, (name, response.json()["errors"])


MODEL_CONNECTION = ["body", "model", "connections", 0]
BAD_MODELS: list[tuple[str, list[str | int], Any, list[str | int]]] = [
    ("wrong version", ["version"], 4, ["body", "model", "version"]),
    ("point beyond resolution", ["connections", 0, "w", 0], 5000, [*MODEL_CONNECTION, "w", 0]),
    ("negative rate", ["connections", 0, "rate", 0], -0.5, [*MODEL_CONNECTION, "rate", 0]),
    ("NaN rate", ["connections", 0, "rate", 0], float("nan"), [*MODEL_CONNECTION, "rate", 0]),
    ("duplicate model id", ["connections", 1, "id"], "c1", ["body", "model", "connections", 1, "id"]),
    ("point seen in the future", ["connections", 0, "seen", 0], 99, [*MODEL_CONNECTION, "seen", 0]),
    ("ragged columns", ["connections", 0, "n"], [1, 1], MODEL_CONNECTION),
    (
        "duplicate point",
        ["connections", 0],
        {
            "id": "c1",
            "cumulative_blocking_s": 0.9,
            "w": [5, 5],
            "rate": [0.1, 0.2],
            "n": [1, 1],
            "seen": [1, 2],
        },
        [*MODEL_CONNECTION, "w"],
    ),
    ("extra field", ["hacked"], True, ["body", "model", "hacked"]),
    ("too many points", ["connections", 0, "w"], list(range(1, 501)), [*MODEL_CONNECTION, "w"]),
    ("bad resolution", ["resolution"], 0, ["body", "model", "resolution"]),
]


@pytest.mark.parametrize(("name", "path", "value", "loc"), BAD_MODELS, ids=[m[0] for m in BAD_MODELS])
def test_tampered_model_is_a_problem_naming_the_field(
    client: TestClient, name: str, path: list[str | int], value: Any, loc: list[str | int]
) -> None:
    request = body(model=tampered(learned_model(client), path, value))
    request["observed_at"] += 2.0
    response = client.post(URL, content=json.dumps(request), headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert loc in [e["loc"][: len(loc)] for e in response.json()["errors"]], response.json()["errors"]


def test_observed_at_going_backwards_measures_nothing(client: TestClient) -> None:
    model = learned_model(client)
    request = body(counters=(5.0, 0.0, 0.0), model=model)
    request["observed_at"] -= 10.0
    answer = client.post(URL, json=request)
    assert answer.status_code == 200
    assert any("observed_at" in n for n in answer.json()["notes"])
    c1 = next(c for c in answer.json()["model"]["connections"] if c["id"] == "c1")
    assert c1["rate"] == [0.9]


def test_response_is_what_the_response_model_writes(client: TestClient) -> None:
    """The route writes its JSON from plain data (speed, issue 12): byte for byte what SplitterResponse writes."""
    from schemas.splitter import SplitterResponse

    model = learned_model(client)
    request = body(counters=(1.5, 0.1, 0.05), model=model)
    request["observed_at"] += 2.0
    response = client.post(URL, json=request)
    assert response.status_code == 200, response.text
    assert (
        SplitterResponse.model_validate_json(response.content).model_dump_json().encode() == response.content
    )


UNUSUAL_BODIES: list[tuple[str, bytes, dict[str, str]]] = [
    ("empty", b"", {"content-type": "application/json"}),
    # (no Content-Type, and text/plain: read as JSON, and 415 from the service's middleware, where FastAPI's strict
    # default answers 422 to both: tests/test_media_type.py)
    ("not JSON", b"{", {"content-type": "application/json"}),
    ("JSON null", b"null", {"content-type": "application/json"}),
    ("JSON array", b"[]", {"content-type": "application/json"}),
    ("not UTF-8", b'{"observed_at": "\xff"}', {"content-type": "application/json"}),
    (
        "NaN token",
        json.dumps(body(counters=(float("nan"), 0.0, 0.0))).encode(),
        {"content-type": "application/json"},
    ),
    (
        "overflowing number",
        json.dumps(body()).replace("1731400000.0", "1e400").encode(),
        {"content-type": "application/json"},
    ),
    ("byte order mark", b"\xef\xbb\xbf" + json.dumps(body()).encode(), {"content-type": "application/json"}),
    ("UTF-16", json.dumps(body()).encode("utf-16"), {"content-type": "application/json"}),
    ("vendor +json", json.dumps(body()).encode(), {"content-type": "application/vnd.trimtab+json"}),
    ("invalid field", json.dumps(body(resolution=1)).encode(), {"content-type": "application/json"}),
]


@pytest.mark.parametrize(("name", "content", "headers"), UNUSUAL_BODIES, ids=[b[0] for b in UNUSUAL_BODIES])
def test_body_is_parsed_like_a_declared_body_parameter(
    name: str, content: bytes, headers: dict[str, str]
) -> None:
    """The route parses its own body (pydantic from the bytes, issue 12); every body answers as it did when FastAPI
    parsed a `body: SplitterRequest` parameter: same status, same problem document."""
    from schemas.splitter import SplitterRequest
    from service.main import create_app
    from service.settings import Settings

    app = create_app(Settings())

    async def declared(request_body: Any) -> dict[str, bool]:
        return {"parsed": True}

    # The model itself, not a postponed name (this module has `from __future__ import annotations`).
    declared.__annotations__ = {"request_body": SplitterRequest, "return": dict[str, bool]}
    app.post("/declared")(declared)

    with TestClient(app) as client:
        ours = client.post(URL, content=content, headers=headers)
        reference = client.post("/declared", content=content, headers=headers)
    assert ours.status_code == reference.status_code or (
        ours.status_code == 200 and reference.status_code == 200
    )
    if reference.status_code != 200:
        assert ours.headers["content-type"] == reference.headers["content-type"]
        mine, theirs = ours.json(), reference.json()
        mine.pop("instance", None)
        theirs.pop("instance", None)
        if theirs["title"] == "There was an error parsing the body":
            # Where FastAPI gives up with a bare 400 and no errors (bytes Python will not decode or read), the
            # route says what the assignment endpoint says: the unparseable-body problem with the position.
            assert mine["type"] == "https://trimtab.dev/problems/unparseable-body"
            assert mine["errors"][0]["loc"] == ["body"] and " at line " in mine["errors"][0]["msg"]
        else:
            assert mine == theirs


def test_small_calls_run_on_the_event_loop_and_large_ones_on_a_thread(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to INLINE_GRID_CELLS (connections x (resolution + 1)) the work runs without a thread hop; above it the
    pool's thread runs it, so that a large call never holds the event loop."""
    from service.routers.splitter import INLINE_GRID_CELLS

    pool = client.app.state.pool  # type: ignore[attr-defined]
    threaded: list[int] = []
    original = pool.run

    async def counting_run(fn: Any) -> Any:
        threaded.append(1)
        return await original(fn)

    monkeypatch.setattr(pool, "run", counting_run)
    n = 64
    small = body(weights=tuple(1000 // n + (1 if j < 1000 % n else 0) for j in range(n)))
    assert n * 1001 <= INLINE_GRID_CELLS
    assert client.post(URL, json=small).status_code == 200
    assert threaded == []

    resolution = INLINE_GRID_CELLS // n  # n x (resolution + 1) is just over the cap
    large = body(
        weights=tuple(resolution // n + (1 if j < resolution % n else 0) for j in range(n)),
        resolution=resolution,
    )
    answer = client.post(URL, json=large)
    assert answer.status_code == 200, answer.text
    assert sum(answer.json()["weights"].values()) == resolution
    assert threaded == [1]


@st.composite
def models(draw: st.DrawFn) -> SplitterModel:
    """Valid-per-field models, each connection breaking a cross-field rule now and then (ids, ragged columns,
    weights or points beyond the resolution, duplicate points, taken > sent, points seen after `calls`)."""
    resolution, calls = draw(st.integers(2, 50)), draw(st.integers(0, 20))
    connections = []
    for j in range(draw(st.integers(0, 6))):
        size = draw(st.integers(0, 5))
        w = draw(st.lists(st.integers(1, resolution + 2), min_size=size, max_size=size))
        connections.append(
            {
                "id": draw(st.sampled_from([f"c{j}", "c0"])),
                "cumulative_blocking_s": 0.0,
                "w": w,
                "rate": [0.0] * draw(st.sampled_from([size, size, max(size - 1, 0)])),
                "n": [1] * size,
                "seen": draw(st.lists(st.integers(0, calls + 1), min_size=size, max_size=size)),
                "var": draw(st.sampled_from([None, [0.0] * size])),
                "weight": draw(st.integers(-1, resolution + 1)),
                "previous_weight": draw(st.integers(-1, resolution + 1)),
                "tuples_sent": draw(st.sampled_from([None, 5])),
                "tuples_taken": draw(st.sampled_from([None, 5, 6])),
            }
        )
    return SplitterModel.model_validate(
        {
            "version": 3,
            "resolution": resolution,
            "observed_at": 0.0,
            "calls": calls,
            "connections": connections,
        }
    )


@settings(max_examples=300, deadline=None)
@given(models())
def test_model_checks_screen_misses_no_rule(model: SplitterModel) -> None:
    # model_errors tests every rule of a connection at once and names offenders rule by rule only for the
    # connections that fail: the same errors, in the same order, as the rules one by one on every connection.
    one_by_one: list[Any] = []
    ids: set[str] = set()
    for i, connection in enumerate(model.connections):
        one_by_one.extend(_connection_errors(model, i, ids))
        ids.add(connection.id)
    assert model_errors(model) == one_by_one

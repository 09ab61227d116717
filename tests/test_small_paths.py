"""The small-instance paths (Python lists or compiled kernels instead of numpy, issue 9's throughput) give the same answers as the numpy
paths, bit for bit: flux's plans, the statistics, numpy's summation order; the answer's plain data is the response
model's JSON; the validator finds the same problems on both of its paths, and its shortcuts decide as the checks they
skip."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
from typing import Any

import numpy as np
import pydantic_core
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from schemas.assignment import AssignmentRequest, PlanResponse, reference_errors
from service.adapters import plan_answer, to_instance
from service.planning import _FIELDS
from solvers import baselines, metrics, metrics_kernels, plan_check
from solvers import compiled as compiled_kernels
from solvers.errors import UnsolvableRequest
from solvers.instance import AssignmentInstance
from solvers.milp import bounds
from solvers.plan_check import check_plan

NUMBER = re.compile(r"-?\d+(\.\d+)?(e[-+]?\d+)?")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Loads that make ties, integer sums, and the extremes of float64 rounding.
LOADS = {
    "ties": st.sampled_from([0.45, 0.45, 0.15, 1.0, 0.0]),
    "integers": st.integers(0, 20).map(float),
    "tiny": st.sampled_from([5e-324, 1e-300, 1e-12, 2e-9, 0.0, 1.0]),
    "huge": st.sampled_from([1e15, 3e12, 1e9, 7.0, 0.1]),
    "any": st.floats(0.0, 1e6, allow_nan=False, allow_infinity=False),
}


@st.composite
def small_snapshots(draw: st.DrawFn) -> dict[str, Any]:
    """Every unit placed, no draining node, no resources (what the small paths take): ties, integers, tiny and huge
    loads, heterogeneous capacities, pinned units, count and cost budgets."""
    n_nodes = draw(st.integers(1, 12))
    capacities = draw(
        st.lists(st.sampled_from([100.0, 50.0, 7.5, 1.0, 1e6, 1e-6]), min_size=n_nodes, max_size=n_nodes)
    )
    loads = LOADS[draw(st.sampled_from(sorted(LOADS)))]
    n_units = draw(st.integers(1, 60))
    units = [
        {
            "id": f"u{k}",
            "node": f"n{draw(st.integers(0, n_nodes - 1)) if draw(st.booleans()) else 0}",
            "load": draw(loads),
            "state_size": float(draw(st.integers(0, 9))),
            "pinned": draw(st.integers(0, 9)) == 0,
        }
        for k in range(n_units)
    ]
    if draw(st.integers(0, 4)) == 0:  # a series of one window is a single load (seen: a 500 in the validator)
        for unit in units:
            unit["load"] = [unit["load"]]
    body: dict[str, Any] = {
        "nodes": [{"id": f"n{i}", "capacity": c} for i, c in enumerate(capacities)],
        "units": units,
        "algorithm": {"name": "flux"},
    }
    budget = draw(st.sampled_from(["none", "count", "cost"]))
    if budget == "count":
        body["budget"] = {"max_migrations": draw(st.integers(0, 12))}
    elif budget == "cost":
        body["budget"] = {"max_migration_cost": float(draw(st.integers(0, 40)))}
    return body


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    """The compiled kernels loaded, as the service's lifespan loads them: the small paths are the compiled ones."""
    assert compiled_kernels.warm_up()


def instance_of(body: dict[str, Any]) -> AssignmentInstance:
    return to_instance(AssignmentRequest.model_validate(body))


def _numpy_flux(instance: AssignmentInstance, monkeypatch: Any) -> Any:
    """flux by its numpy code (as before warm_up, or where numba cannot compile)."""
    with monkeypatch.context() as patch:
        patch.setattr(baselines, "_kernels", None)
        return baselines.flux(instance)


@SETTINGS
@given(body=small_snapshots())
def test_compiled_flux_plans_exactly_as_flux_on_arrays(body: dict[str, Any], monkeypatch_module: Any) -> None:
    assert baselines.warm_up()
    assert baselines._plain(instance_of(body))
    compiled = baselines.flux(instance_of(body))
    reference = _numpy_flux(instance_of(body), monkeypatch_module)
    assert compiled.assignment.tolist() == reference.assignment.tolist()
    assert compiled.status == reference.status


@SETTINGS
@given(body=small_snapshots(), cap=st.sampled_from([None, 0.0, 1e-9, 50.0, 100.0, 150.0, 1e4]))
def test_compiled_flux_plans_as_the_numpy_path_under_any_receiver_cap(
    body: dict[str, Any], cap: float | None, monkeypatch_module: Any
) -> None:
    """With a receiver cap below the current peak too (a derived instance's override): the cap test then rules out
    the units that would fit the gap best."""
    assert baselines.warm_up()
    compiled = baselines.flux(dataclasses.replace(instance_of(body), utilization_cap_override=cap))
    reference = _numpy_flux(
        dataclasses.replace(instance_of(body), utilization_cap_override=cap), monkeypatch_module
    )
    assert compiled.assignment.tolist() == reference.assignment.tolist()
    assert compiled.status == reference.status


def _load_at_the_crossing(capacity_hi: float, capacity_lo: float, other: float) -> float | None:
    """A load x whose shift rounds a hair below the gap it closes (x >= gap / per_load / 100 but 100 x per_load <
    gap): with units `other` and x on a node of capacity_hi and an empty receiver, found as the fixed point of
    x = gap(x) / per_load / 100 and its neighbours."""
    per_load = 1.0 / capacity_hi + 1.0 / capacity_lo
    x = other
    for _ in range(60):
        x = 100.0 * ((other + x) / capacity_hi - 0.0 / capacity_lo) / per_load / 100.0
    for step in (0, 1, -1, 2, -2, 3, -3):
        candidate = x
        for _ in range(abs(step)):
            candidate = math.nextafter(candidate, math.inf if step > 0 else -math.inf)
        gap = 100.0 * ((other + candidate) / capacity_hi - 0.0 / capacity_lo)
        if candidate >= gap / per_load / 100.0 and 100.0 * candidate * per_load < gap:
            return candidate
    return None


def test_compiled_flux_plans_as_the_numpy_path_at_a_shift_a_hair_below_the_gap(
    monkeypatch_module: Any,
) -> None:
    """Shifts that round a hair below the gap (which random snapshots almost never make) plan as the numpy path."""
    assert baselines.warm_up()
    rng = np.random.default_rng(9)
    made = 0
    for _ in range(400):
        capacity_hi, capacity_lo = (float(c) for c in rng.choice([100.0, 50.0, 13.0, 7.5, 3.0, 1.5], size=2))
        other = float(rng.uniform(0.1, 50.0))
        x = _load_at_the_crossing(capacity_hi, capacity_lo, other)
        if x is None:
            continue
        made += 1
        body = {
            "nodes": [{"id": "hi", "capacity": capacity_hi}, {"id": "lo", "capacity": capacity_lo}],
            "units": [{"id": "a", "node": "hi", "load": other}, {"id": "x", "node": "hi", "load": x}],
            "algorithm": {"name": "flux"},
        }
        compiled = baselines.flux(instance_of(body))
        reference = _numpy_flux(instance_of(body), monkeypatch_module)
        assert compiled.assignment.tolist() == reference.assignment.tolist()
    assert made >= 10  # (the case is really made, not skipped: about one draw in 15)


@st.composite
def unplaced_and_draining(draw: st.DrawFn) -> dict[str, Any]:
    """small_snapshots with units without a node and draining nodes (what the statistics and the validator see from
    every algorithm); at least one node stays."""
    body = copy.deepcopy(draw(small_snapshots()))
    for unit in body["units"]:
        if draw(st.integers(0, 7)) == 0:
            unit["node"], unit["pinned"] = None, False
    staying = draw(st.integers(0, len(body["nodes"]) - 1))
    for i, node in enumerate(body["nodes"]):
        if i != staying and draw(st.integers(0, 3)) == 0:
            node["draining"] = True
    for unit in body["units"]:  # (a pinned unit on a draining node is a 422)
        if unit["node"] is not None and body["nodes"][int(unit["node"][1:])].get("draining"):
            unit["pinned"] = False
    return body


@SETTINGS
@given(
    body=unplaced_and_draining(),
    moves=st.lists(st.tuples(st.integers(0, 59), st.integers(0, 11)), max_size=8),
    added=st.lists(st.sampled_from([50.0, 1e-6, 3e12]), max_size=2),
    removed=st.sets(st.integers(0, 11), max_size=2),
)
def test_compiled_statistics_equal_the_numpy_statistics_with_draining_and_unplaced(
    body: dict[str, Any],
    moves: list[tuple[int, int]],
    added: list[float],
    removed: set[int],
    monkeypatch_module: Any,
) -> None:
    instance = instance_of(body)
    n_all = instance.n_nodes + len(added)
    assignment = instance.current.copy()
    for unit, node in moves:
        if unit < instance.n_units:
            assignment[unit] = node % n_all
    leaving = np.array(sorted(i for i in removed if i < instance.n_nodes), dtype=np.int64)
    staying = instance.active.copy()
    staying[leaving] = False
    assume(added or staying.any())  # (no staying node: no mean utilization, on either path)
    cases = [(instance.current, None, None), (assignment, np.array(added), leaving)]
    small = [metrics.cluster_stats(instance, a, c, r) for a, c, r in cases]
    with monkeypatch_module.context() as patch:
        patch.setattr(metrics, "SMALL_UNITS", 0)
        fresh = instance_of(body)
        large = [metrics.cluster_stats(fresh, a, c, r) for a, c, r in cases]
    # every field, in the dataclass's order (the answer's JSON lists them so), exactly (floats compared by their
    # bits: nan equals nan, -0.0 differs from 0.0)
    names = [field.name for field in dataclasses.fields(metrics.ClusterStats)]
    assert [list(s.__dict__) for s in small] == [names, names]
    assert [list(map(repr, s.__dict__.values())) for s in small] == [
        list(map(repr, s.__dict__.values())) for s in large
    ]
    # the answer's two states from one call of the kernel: the two objects cluster_stats gives
    paired = metrics.plan_stats(instance, assignment, np.array(added), leaving)
    assert [list(map(repr, s.__dict__.values())) for s in paired] == [
        list(map(repr, s.__dict__.values())) for s in small
    ]


@SETTINGS
@given(body=unplaced_and_draining(), corrupt=st.sampled_from(["none", "stat", "overload"]))
def test_the_validator_finds_the_same_problems_on_both_paths_with_draining_and_unplaced(
    body: dict[str, Any], corrupt: str, monkeypatch_module: Any
) -> None:
    """Units without a node before the plan (summed nowhere) and draining nodes (not staying) on the validator's
    list path, against its array path."""
    instance = instance_of(body)
    try:
        plan = baselines.flux(instance)
    except UnsolvableRequest:
        return  # a unit without a node that fits nowhere: the service answers 422
    answer = plan_answer(instance, plan, "flux", 1.0)
    if corrupt == "stat":
        answer["before"]["load_distance"] = answer["before"]["load_distance"] * 1.5 + 1.0
    elif corrupt == "overload":
        answer["assignment"] = dict.fromkeys(answer["assignment"], body["nodes"][0]["id"])
    small = check_plan(body, copy.deepcopy(answer))
    with monkeypatch_module.context() as patch:
        patch.setattr(plan_check, "SMALL_UNITS", 0)
        large = check_plan(body, copy.deepcopy(answer))
    assert [NUMBER.sub("#", p) for p in small] == [NUMBER.sub("#", p) for p in large]
    assert (corrupt == "none") <= (small == [])


@SETTINGS
@given(body=small_snapshots(), moves=st.lists(st.tuples(st.integers(0, 59), st.integers(0, 11)), max_size=8))
def test_compiled_statistics_equal_the_numpy_statistics_bit_for_bit(
    body: dict[str, Any], moves: list[tuple[int, int]], monkeypatch_module: Any
) -> None:
    instance = instance_of(body)
    assignment = instance.current.copy()
    for unit, node in moves:
        if unit < instance.n_units:
            assignment[unit] = node % instance.n_nodes
    added = np.array([50.0]) if moves else None
    removed = np.array([0], dtype=np.int64) if len(moves) > 2 and instance.n_nodes > 1 else None
    cases = [(instance.current, None, None), (assignment, added, removed)]
    small = [metrics.cluster_stats(instance, a, c, r) for a, c, r in cases]
    with monkeypatch_module.context() as patch:
        patch.setattr(metrics, "SMALL_UNITS", 0)
        fresh = instance_of(body)  # no cached per-instance values from the small path
        large = [metrics.cluster_stats(fresh, a, c, r) for a, c, r in cases]
    assert small == large  # every field, exactly (floats compared with ==)


@pytest.mark.parametrize("n", [*range(0, 40), 127, 128, 129, 255, 256, 257, 500, 1000, 1025])
def test_pairwise_sum_is_numpys_sum(n: int) -> None:
    rng = np.random.default_rng(n)
    for values in (
        rng.random(n) * 10.0 ** rng.integers(-20, 16, n),
        np.full(n, 0.1),
        rng.integers(0, 9, n) / 3,
    ):
        assert metrics.pairwise_sum(values.tolist()) == float(np.add.reduce(values))
        if n <= metrics.PAIRWISE_BLOCK:
            assert metrics_kernels.block_sum(values, 0, n) == float(np.add.reduce(values))


@SETTINGS
@given(body=small_snapshots())
def test_the_answer_data_is_the_response_models_json(body: dict[str, Any]) -> None:
    instance = instance_of(body)
    answer = plan_answer(instance, baselines.flux(instance), "flux", 1.5)
    assert PlanResponse.model_validate(answer).model_dump(mode="json", by_alias=True) == answer


@SETTINGS
@given(body=small_snapshots(), corrupt=st.sampled_from(["none", "stat", "overload", "moves", "bound"]))
def test_the_validator_finds_the_same_problems_on_both_paths(
    body: dict[str, Any], corrupt: str, monkeypatch_module: Any
) -> None:
    instance = instance_of(body)
    answer = plan_answer(instance, baselines.flux(instance), "flux", 1.0)
    if corrupt == "stat":
        answer["after"]["imbalance"] = answer["after"]["imbalance"] * 1.5 + 1.0
    elif corrupt == "overload":  # every unit onto one node, moves left as they were
        answer["assignment"] = dict.fromkeys(answer["assignment"], body["nodes"][-1]["id"])
    elif corrupt == "moves":
        answer["moves"] = answer["moves"][1:] if answer["moves"] else [{"unit": "u0", "from": "x", "to": "y"}]
    elif corrupt == "bound":
        answer["lower_bound"]["load_distance"] = answer["after"]["load_distance"] + 1.0
    small = check_plan(body, copy.deepcopy(answer))
    with monkeypatch_module.context() as patch:
        patch.setattr(plan_check, "SMALL_UNITS", 0)
        large = check_plan(body, copy.deepcopy(answer))
    # the same problems; a recomputed number may differ in its last digits (the list path sums exactly)
    assert [NUMBER.sub("#", p) for p in small] == [NUMBER.sub("#", p) for p in large]
    assert (corrupt == "none") <= (small == [])  # a plan as the solver made it is valid


@pytest.fixture(scope="module")
def monkeypatch_module() -> Any:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@st.composite
def bound_snapshots(draw: st.DrawFn) -> dict[str, Any]:
    """As small_snapshots, with units without a node too, and both budgets at once."""
    body = draw(small_snapshots())
    for unit in body["units"]:
        if draw(st.integers(0, 9)) == 0:
            unit["node"], unit["pinned"] = None, False
    if draw(st.booleans()):
        body["budget"] = {
            "max_migrations": draw(st.integers(0, 8)),
            "max_migration_cost": float(draw(st.integers(0, 30))),
        }
    return body


@SETTINGS
@given(body=bound_snapshots(), points=st.lists(st.floats(0.0, 200.0), min_size=1, max_size=6))
def test_the_milp_bound_on_lists_is_the_numpy_bound(
    body: dict[str, Any], points: list[float], monkeypatch_module: Any
) -> None:
    small = bounds.lower_bound(instance_of(body))
    with monkeypatch_module.context() as patch:
        patch.setattr(bounds, "SMALL_UNITS", 0)
        large = bounds.lower_bound(instance_of(body))
    assert (small.value, small.threshold, small.static) == (large.value, large.threshold, large.static)
    for t in [*points, small.value, small.threshold, 0.5 * (small.value + small.threshold)]:
        assert small.feasible(t) == large.feasible(t)


LIST_FORMS = (
    "load_values",
    "current_values",
    "state_size_values",
    "draining_values",
)


@SETTINGS
@given(
    body=small_snapshots(),
    as_ints=st.booleans(),
    unplaced=st.sets(st.integers(0, 59), max_size=5),
    draining=st.sets(st.integers(0, 11), max_size=2),
)
def test_the_adapters_lists_are_the_arrays_lists_and_plan_the_same(
    body: dict[str, Any], as_ints: bool, unplaced: set[int], draining: set[int]
) -> None:
    """The lists the adapter hands the instance (`with_values`) are its arrays' tolist(), value and type (JSON
    integers become floats, -0.0 stays -0.0), with units without a node and draining nodes too; an instance
    that converts its own arrays gives the same plan and the same answer bytes, from the JSON and from the models."""
    body = copy.deepcopy(body)
    for k in unplaced:
        if k < len(body["units"]):
            body["units"][k]["node"] = None
    for i in draining:
        if i < len(body["nodes"]):
            body["nodes"][i]["draining"] = True
    if as_ints:  # integer loads, capacities and state sizes as the JSON of a careless client writes them
        for unit in body["units"]:
            if not isinstance(unit["load"], list) and float(unit["load"]).is_integer():
                unit["load"] = int(unit["load"])
            unit["state_size"] = int(unit["state_size"])
        for node in body["nodes"]:
            if float(node["capacity"]).is_integer():
                node["capacity"] = int(node["capacity"])
    fields = _FIELDS.validate_json(json.dumps(body))
    assume(
        not reference_errors(fields)
    )  # (every node draining, a unit pinned to one: the service answers 422)
    for instance in (instance_of(body), to_instance(fields)):
        fresh = dataclasses.replace(instance)  # the same arrays, no list handed over
        for name in LIST_FORMS:
            assert name not in fresh.__dict__
            assert list(map(repr, getattr(instance, name))) == list(map(repr, getattr(fresh, name))), name
        assert [_answer_or_refusal(i) for i in (instance, fresh)] == [_answer_or_refusal(fresh)] * 2


def _answer_or_refusal(instance: AssignmentInstance) -> bytes | str:
    """flux's answer bytes, or its refusal (a unit without a node that fits nowhere: a 422)."""
    try:
        return pydantic_core.to_json(plan_answer(instance, baselines.flux(instance), "flux", 1.5))
    except UnsolvableRequest as exc:
        return exc.msg


def test_with_values_takes_only_list_forms() -> None:
    instance = instance_of({"nodes": [{"id": "a"}], "units": [{"id": "u", "node": "a", "load": 1.0}]})
    with pytest.raises(TypeError, match="load is not a list form"):
        instance.with_values(load=[1.0])


# The validator's and the statistics' shortcuts (eleventh pass) decide as the general checks they skip: the node
# count without a set of the units' nodes, the moves compared as whole rows, the absolute tolerance tried before
# `_matches`. Each is pinned against the path it shortcuts, on the same plans and on corrupted ones.

# Loads whose node sums can be 0.0 with units on the node (zeros, -0.0, cancelling pairs), NaN or infinite.
NODE_SUM_LOADS = st.sampled_from(
    [0.0, -0.0, 1.0, -1.0, 5e-324, -5e-324, 0.1, 1e300, -1e300, math.inf, -math.inf]
)


@SETTINGS
@given(
    n_nodes=st.integers(1, 8),
    units=st.lists(st.tuples(st.integers(-1, 7), NODE_SUM_LOADS), max_size=30),
)
def test_the_node_count_from_the_sums_is_the_count_of_the_units_nodes(
    n_nodes: int, units: list[tuple[int, float]]
) -> None:
    where = [node % n_nodes if node >= 0 else -1 for node, _ in units]
    totals = [0.0] * n_nodes
    for node, (_, load) in zip(where, units, strict=True):
        if node >= 0:
            totals[node] += load
    held = len({node for node in where if node >= 0})
    assert plan_check._held_nodes(totals, where) == held


def _always_general(*_: Any) -> Any:
    raise KeyError("the row comparison is off: every moves list goes through the move-by-move checks")


MOVE_CORRUPTIONS = [
    "none",
    "reversed",
    "cost within tolerance",
    "cost beyond tolerance",
    "cost as int",
    "from missing",
    "from wrong",
    "to wrong",
    "twice",
    "dropped",
    "extra",
]


def _corrupt_moves(moves: list[dict[str, Any]], how: str) -> list[dict[str, Any]]:
    moves = copy.deepcopy(moves)
    if how == "reversed":
        moves.reverse()
    elif how == "extra":
        moves.append({"unit": "nobody", "from": "n0", "to": "n0", "cost": 0.0})
    elif moves and how == "cost within tolerance":
        moves[0]["cost"] = moves[0]["cost"] * (1 + 1e-9)
    elif moves and how == "cost beyond tolerance":
        moves[-1]["cost"] = moves[-1]["cost"] + 1.0
    elif moves and how == "cost as int":
        moves[0]["cost"] = int(moves[0]["cost"])
    elif moves and how == "from missing":
        del moves[0]["from"]
    elif moves and how == "from wrong":
        moves[0]["from"] = "elsewhere"
    elif moves and how == "to wrong":
        moves[-1]["to"] = "nowhere"
    elif moves and how == "twice":
        moves.append(copy.deepcopy(moves[0]))
    elif moves and how == "dropped":
        moves.pop()
    return moves


@SETTINGS
@given(body=small_snapshots(), how=st.sampled_from(MOVE_CORRUPTIONS))
def test_the_moves_compared_as_rows_find_what_the_move_by_move_checks_find(
    body: dict[str, Any], how: str, monkeypatch_module: Any
) -> None:
    instance = instance_of(body)
    answer = plan_answer(instance, baselines.flux(instance), "flux", 1.0)
    answer["moves"] = _corrupt_moves(answer["moves"], how)
    fast = check_plan(body, copy.deepcopy(answer))
    with monkeypatch_module.context() as patch:
        patch.setattr(plan_check, "_MOVE_ROW", _always_general)
        general = check_plan(body, copy.deepcopy(answer))
    assert fast == general
    if how in ("none", "reversed", "cost within tolerance", "cost as int"):
        assert fast == []
    elif answer["moves"] and how not in ("from missing",):  # (a move without 'from' reads as from None)
        assert fast


@SETTINGS
@given(
    reported=st.floats(allow_nan=True, allow_infinity=True) | st.integers(-3, 3) | st.none() | st.booleans(),
    computed=st.floats(allow_nan=True, allow_infinity=True),
)
def test_the_absolute_tolerance_accepts_nothing_that_matches_rejects(reported: Any, computed: float) -> None:
    assert plan_check._abs_close(reported, computed) <= plan_check._matches(reported, computed)


@SETTINGS
@given(body=small_snapshots(), offset=st.sampled_from([1e-15, 1e-12, 1e-9, 1e-7, 1e-6, 2e-6, 1e-4, 1.0]))
def test_the_statistics_within_the_tolerance_are_judged_as_by_the_general_comparison(
    body: dict[str, Any], offset: float, monkeypatch_module: Any
) -> None:
    instance = instance_of(body)
    answer = plan_answer(instance, baselines.flux(instance), "flux", 1.0)
    for label in ("before", "after"):
        for key in ("load_distance", "max_utilization", "imbalance", "imbalance_total"):
            value = answer[label][key]
            answer[label][key] = value + offset * max(1.0, abs(value))
    fast = check_plan(body, copy.deepcopy(answer))
    with monkeypatch_module.context() as patch:
        patch.setattr(plan_check, "_abs_close", lambda *_: False)
        general = check_plan(body, copy.deepcopy(answer))
    assert fast == general
    assert (offset <= 1e-7) <= (fast == [])


@SETTINGS
@given(
    body=small_snapshots(),
    order=st.sampled_from(["reversed", "one missing", "one unknown", "one extra", "to an unknown node"]),
    corrupt=st.sampled_from(["none", "overload"]),
)
def test_an_assignment_in_request_order_is_judged_as_one_in_any_order(
    body: dict[str, Any], order: str, corrupt: str
) -> None:
    """The assignment read in request order (no lookup per unit) finds what the lookups by unit id find."""
    instance = instance_of(body)
    answer = plan_answer(instance, baselines.flux(instance), "flux", 1.0)
    if corrupt == "overload":
        answer["assignment"] = dict.fromkeys(answer["assignment"], body["nodes"][0]["id"])
    in_order = check_plan(body, copy.deepcopy(answer))
    items = list(answer["assignment"].items())
    last_unit, last_node = items[-1]
    if order == "reversed":
        items.reverse()
    elif order == "one missing":
        items.pop()
    elif order == "one unknown":
        items[-1] = ("nobody", last_node)
    elif order == "one extra":
        items.append(("nobody", last_node))
    else:
        items[-1] = (last_unit, "nowhere")
    answer["assignment"] = dict(items)
    other = check_plan(body, copy.deepcopy(answer))
    if order == "reversed":
        assert other == in_order
    else:  # the same plan with one entry off, first in order then not: named the same way either way
        answer["assignment"] = dict(reversed(items))
        assert check_plan(body, copy.deepcopy(answer)) == other
        assert other
    assert (corrupt == "none") <= (in_order == [])


def test_the_compiled_statistics_compile_once_whatever_the_plan() -> None:
    """Plans with added and removed nodes, units without a node, draining nodes: the statistics' kernel keeps the one
    signature the warm-up compiled (a compile inside a request would take seconds)."""
    body = {
        "nodes": [{"id": "n0"}, {"id": "n1", "capacity": 50.0}, {"id": "n2", "draining": True}],
        "units": [
            {"id": "a", "node": "n0", "load": 3.0},
            {"id": "b", "node": "n2", "load": 1.5},
            {"id": "c", "node": None, "load": 2.0},
        ],
        "algorithm": {"name": "flux"},
    }
    instance = instance_of(body)
    for assignment, added, removed in (
        (instance.current, None, None),
        (np.array([1, 0, 3]), np.array([25.0]), np.array([2])),
        (np.array([0, 1, 1], dtype=np.int32), None, np.array([0], dtype=np.int64)),
    ):
        stats = metrics.cluster_stats(instance, assignment, added, removed)
        assert stats.parallelism >= 1
        metrics.plan_stats(instance, assignment, added, removed)
    assert len(metrics_kernels.single_load_stats.signatures) == 1
    assert len(metrics_kernels.plan_stats.signatures) == 1

"""POST /v1/assignment/plan: the statistics snapshot in, the allocation plan out (see shared CONTRACT.md)."""

from itertools import repeat
from operator import itemgetter
from typing import Annotated, Any, Literal

from pydantic import Field

from schemas.algorithms import AlgorithmParams, MilpParams
from schemas.common import (
    Capacity,
    Identifier,
    NonNegativeFloat,
    PositiveFloat,
    ResponseModel,
    StrictModel,
    field_defaults,
    field_values_form,
)

# Static caps (also in the OpenAPI schema); the service may set tighter ones in its settings.
MAX_NODES = 10_000
MAX_UNITS = 250_000
MAX_SERIES_LENGTH = 4_096
MAX_SERIES_VALUES = 5_000_000
MAX_TRAFFIC = 1_000_000
MAX_RESOURCES = 16
# A budget beyond the unit count limits nothing; the cap keeps it a machine integer for every solver (10**30 was a 500).
MAX_MIGRATIONS = 2**31 - 1

ResourceName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")]


class Node(StrictModel):
    id: Identifier
    capacity: Capacity = Field(default=100.0, description="In load units; a load is a percent of a 100 node.")
    draining: bool = Field(default=False, description="Marked for removal: units leave it, none arrive.")
    resources: dict[ResourceName, Capacity] = Field(
        default_factory=dict,
        max_length=MAX_RESOURCES,
        description="Capacities of further resources (memory, network...). A unit's usage of such a resource is "
        "capped per node; the main `load` is the one balanced (Madsen et al., multi-dimensional load).",
    )


LoadSeries = Annotated[
    list[NonNegativeFloat],
    Field(
        min_length=1,
        max_length=MAX_SERIES_LENGTH,
        description="One load per statistics window, oldest first.",
    ),
]


class Unit(StrictModel):
    id: Identifier
    node: Identifier | None = Field(default=None, description="Current node; null for an initial placement.")
    load: NonNegativeFloat | LoadSeries = Field(
        description="Mean load, or a series of loads (one per window)."
    )
    state_size: NonNegativeFloat = Field(
        default=0.0, description="What moving the unit costs (bytes or any unit)."
    )
    operator: Identifier | None = None
    pinned: bool = Field(default=False, description="A pinned unit never moves.")
    resources: dict[ResourceName, NonNegativeFloat] = Field(default_factory=dict, max_length=MAX_RESOURCES)


class Traffic(StrictModel):
    src: Identifier
    dst: Identifier
    rate: NonNegativeFloat


class Budget(StrictModel):
    max_migrations: int | None = Field(
        default=None,
        ge=0,
        le=MAX_MIGRATIONS,
        description="At most this many units move (values above the number of units mean no count limit).",
    )
    max_migration_cost: NonNegativeFloat | None = Field(
        default=None, description="Sum of the moved units' state_size stays at or below this."
    )


class AssignmentRequest(StrictModel):
    nodes: list[Node] = Field(min_length=1, max_length=MAX_NODES)
    units: list[Unit] = Field(min_length=1, max_length=MAX_UNITS)
    traffic: list[Traffic] = Field(default_factory=list, max_length=MAX_TRAFFIC)
    budget: Budget = Field(default_factory=Budget)
    algorithm: AlgorithmParams = Field(default_factory=MilpParams)
    time_limit_s: PositiveFloat | None = Field(
        default=None, description="Wall-clock limit for the solver; the service default applies when null."
    )
    serialization_cost: NonNegativeFloat | None = Field(
        default=None,
        description="Load units one unit of traffic rate costs while it crosses nodes (serialization, network): "
        "with it every plan reports the load index.",
    )


# The request as plain data: its fields' values as dicts (lists of dicts for nodes, units and traffic; the algorithm
# stays its parameter model), validated by exactly the models' rules (a test compares the JSON schemas). Validating a
# small body into it costs a fifth less than into the models, no model object per unit (service.planning's inline
# path); `request_fields` gives the same form of a parsed model. A node, unit or traffic dict holds the keys its JSON
# sent: a field left out is left out (its readers apply NODE_DEFAULTS and UNIT_DEFAULTS, the models' defaults), not
# filled in item by item (a sixth of the validation of a 10 x 100 body; see field_values_form).
_FIELD_FORMS: dict[Any, Any] = {}
for _model in (Node, Unit, Traffic):
    _FIELD_FORMS[_model] = field_values_form(_model, _FIELD_FORMS, omit_defaults=True)
_FIELD_FORMS[Budget] = field_values_form(Budget, _FIELD_FORMS)
AssignmentRequestFields = field_values_form(AssignmentRequest, _FIELD_FORMS)
NODE_DEFAULTS = field_defaults(Node)
UNIT_DEFAULTS = field_defaults(Unit)


def request_fields(request: AssignmentRequest | dict[str, Any]) -> dict[str, Any]:
    """The request as its fields' values (see AssignmentRequestFields): that form as is, or a model's own field dicts
    (the values it validated, defaults filled in; no copy: read them only). Read a node's or a unit's field that has a
    default with its default (NODE_DEFAULTS, UNIT_DEFAULTS): the form leaves out what the JSON left out."""
    if isinstance(request, dict):
        return request
    return {
        **vars(request),
        "nodes": list(map(vars, request.nodes)),
        "units": list(map(vars, request.units)),
        "traffic": list(map(vars, request.traffic)),
        "budget": vars(request.budget),
    }


class UnitColumns:
    """One request's per-unit columns (each unit's value of one field, in unit order, its default where the unit
    leaves it out) from its fields' values, each listed once, by a C-level pass over the units' field dicts, and then
    shared by whoever reads it: the cross-field checks and the service's adapter read the same four columns (a pass is
    2.5 us on 100 units). Read only."""

    __slots__ = ("_listed", "_units")

    def __init__(self, units: list[dict[str, Any]]) -> None:
        self._units = units
        self._listed: dict[str, list[Any]] = {}

    def __getitem__(self, key: str) -> list[Any]:
        listed = self._listed.get(key)
        if listed is None:
            if key in UNIT_DEFAULTS:
                listed = list(map(dict.get, self._units, repeat(key), repeat(UNIT_DEFAULTS[key])))
            else:
                listed = list(map(itemgetter(key), self._units))
            self._listed[key] = listed
        return listed


# ---------------------------------------------------------------------------------------------- response


class Move(ResponseModel):
    unit: str
    from_: str | None = Field(alias="from", serialization_alias="from")
    to: str
    cost: float


class Scaling(ResponseModel):
    add_nodes: list[str] = Field(
        default_factory=list, description="New nodes the plan asks for (ELB scale-out)."
    )
    remove_nodes: list[str] = Field(
        default_factory=list, description="Nodes the plan empties; they can be released."
    )
    new_node_capacity: float = Field(
        default=100.0, description="Capacity the plan assumes for each added node."
    )
    drain_nodes: list[str] = Field(
        default_factory=list,
        description="Nodes the plan marks for removal (scale-in): nothing moves onto them; send them as draining "
        "from now on; they are released once empty.",
    )


class PlanStats(ResponseModel):
    """Statistics of one state of the cluster (before or after the plan), recomputed from the assignment."""

    load_distance: float = Field(
        description="max over non-draining nodes of |utilization - mean|, in percentage points; mean = 100 x total "
        "load / total non-draining capacity (the utilization of a perfectly balanced cluster)."
    )
    max_utilization: float
    min_utilization: float
    imbalance: float = Field(description="Variance of node loads in the latest window (Guo & Zhou).")
    imbalance_total: float = Field(description="Variance of node loads summed over all windows.")
    avg_load_correlation: float | None = Field(
        default=None,
        description="Mean pairwise correlation of node load series (Xing et al.); null without series.",
    )
    mean_node_load_variance: float | None = Field(
        default=None,
        description="Mean over nodes of the variance of the node's load series; null without series.",
    )
    parallelism: int = Field(description="Nodes that hold at least one unit.")
    min_mean_node_load_variance: float | None = Field(
        default=None,
        description="Theorem 1 of Xing et al.: var(X) / n^2, X the summed load series of the n non-draining nodes: "
        "no placement of that load has a smaller mean_node_load_variance; null without series.",
    )
    collocation_factor: float | None = Field(
        default=None,
        description="Share of the traffic rate whose two units share a node (Madsen et al.); null without traffic.",
    )
    load_index: float | None = Field(
        default=None,
        description="Estimated system load in percent of the state before the plan: crossing traffic costs "
        "serialization_cost load units per unit of rate; null without serialization_cost.",
    )


class LowerBound(ResponseModel):
    load_distance: float | None = None


class PlanResponse(ResponseModel):
    status: Literal["optimal", "feasible", "unchanged"]
    algorithm: str
    assignment: dict[str, str]
    moves: list[Move]
    scaling: Scaling
    before: PlanStats
    after: PlanStats
    migrations: int
    migration_cost: float
    state_moved_share: float = Field(
        description="migration_cost / total state size (0 when there is no state)."
    )
    load_moved: float = Field(description="Sum of the mean loads of the moved units.")
    lower_bound: LowerBound = Field(default_factory=LowerBound)
    solve_ms: float
    notes: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------------------------------------- cross-field checks

Loc = tuple[str | int, ...]


def reference_errors(
    request: AssignmentRequest | dict[str, Any], columns: UnitColumns | None = None
) -> list[tuple[Loc, str]]:
    """Cross-field rules that a single field's type cannot say. Each error names the offending field.

    Run by the service right after parsing, on the model or its fields' values (`request_fields`), with the
    request's unit columns when the caller lists them for itself too; an empty list means the snapshot is consistent.
    """
    request = request_fields(request)
    nodes, units, traffic = request["nodes"], request["units"], request["traffic"]
    if columns is None:
        columns = UnitColumns(units)
    errors: list[tuple[Loc, str]] = []
    # Each node id's first index: in one C-level pass when the ids are distinct (a dict of them is as long as the
    # list), else by the pass that names each duplicate (a dict of zip keeps the last index, the rules below read the
    # first).
    node_index = dict(zip(map(itemgetter("id"), nodes), range(len(nodes)), strict=True))
    if len(node_index) != len(nodes):
        node_index = {}
        for i, node in enumerate(nodes):
            if node["id"] in node_index:
                errors.append((("body", "nodes", i, "id"), f"duplicate node id {node['id']!r}"))
            node_index.setdefault(node["id"], i)
    draining = list(map(dict.get, nodes, repeat("draining"), repeat(NODE_DEFAULTS["draining"])))
    if all(draining):
        errors.append((("body", "nodes"), "every node is draining: at least one node must stay"))

    unit_ids: set[str] = set()
    series_length: int | None = None
    series_first: int | None = None
    # The common snapshot breaks none of the per-unit rules below: C-level scans of the columns say so first (a Python
    # pass per unit cost 40 us on 100 units, a third of a small plan's validation); only otherwise the pass that names
    # each offending unit.
    ids = columns["id"]
    id_set = set(ids)
    named = set(columns["node"])
    named.discard(None)
    any_pinned = any(columns["pinned"])
    clean = (
        not any_pinned
        and named <= node_index.keys()
        and list not in set(map(type, columns["load"]))
        and len(id_set) == len(ids)
    )
    if clean:
        unit_ids = id_set
    for k, unit in enumerate(() if clean else units):
        unit_id, node_id, load = unit["id"], unit.get("node"), unit["load"]
        pinned = unit.get("pinned", UNIT_DEFAULTS["pinned"])
        if unit_id in unit_ids:
            errors.append((("body", "units", k, "id"), f"duplicate unit id {unit_id!r}"))
        unit_ids.add(unit_id)
        if node_id is not None and node_id not in node_index:
            errors.append((("body", "units", k, "node"), f"unknown node {node_id!r}"))
        if pinned and node_id is None:
            errors.append((("body", "units", k, "pinned"), "a pinned unit needs a node"))
        if pinned and node_id in node_index and draining[node_index[node_id]]:
            errors.append(
                (
                    ("body", "units", k, "pinned"),
                    f"unit is pinned to draining node {node_id!r}: it can never leave",
                )
            )
        length = len(load) if isinstance(load, list) else None
        if k == 0:
            series_length, series_first = length, 0
        elif length != series_length:

            def shape(n: int | None) -> str:
                return "a single number" if n is None else f"a series of {n} windows"

            errors.append(
                (
                    ("body", "units", k, "load"),
                    f"load is {shape(length)} but units[{series_first}].load is {shape(series_length)}: all units "
                    "need series of equal length (or all single numbers)",
                )
            )
    if series_length is not None and series_length * len(units) > MAX_SERIES_VALUES:
        errors.append(
            (("body", "units"), f"more than {MAX_SERIES_VALUES} load values in all series together")
        )

    seen_edges: dict[tuple[str, str], int] = {}
    for t, edge in enumerate(traffic):
        for end in ("src", "dst"):
            if edge[end] not in unit_ids:
                errors.append((("body", "traffic", t, end), f"unknown unit {edge[end]!r}"))
        if edge["src"] == edge["dst"]:
            errors.append(
                (("body", "traffic", t, "dst"), f"a unit does not send to itself ({edge['src']!r})")
            )
        first = seen_edges.setdefault((edge["src"], edge["dst"]), t)
        if first != t:
            errors.append(
                (
                    ("body", "traffic", t),
                    f"duplicate edge {edge['src']!r} -> {edge['dst']!r} (also traffic[{first}])",
                )
            )

    # Pinned load alone over capacity on every staying node: no plan can bring the cluster within capacity
    # (CONTRACT.md). A single such node still gets a plan: moving its other units off is what helps it most.
    # (Without a pinned unit no node carries pinned load, and every capacity is positive: nothing to sum or test.)
    if not any_pinned:
        return errors
    pinned_load: dict[str, float] = {}
    for unit, node_id, pinned in zip(units, columns["node"], columns["pinned"], strict=True):
        if pinned and node_id is not None:
            load = unit["load"]
            mean = sum(load) / len(load) if isinstance(load, list) else load
            pinned_load[node_id] = pinned_load.get(node_id, 0.0) + mean
    capacity = NODE_DEFAULTS["capacity"]
    staying = [node for node, drains in zip(nodes, draining, strict=True) if not drains]
    if staying and all(pinned_load.get(node["id"], 0.0) > node.get("capacity", capacity) for node in staying):
        worst = ", ".join(
            f"{n['id']!r} {pinned_load[n['id']]:g} of {n.get('capacity', capacity):g}" for n in staying[:5]
        )
        errors.append(
            (
                ("body", "nodes"),
                f"infeasible: pinned units exceed the capacity of every staying node ({worst}"
                f"{', ...' if len(staying) > 5 else ''}): add capacity or unpin units",
            )
        )
    return errors

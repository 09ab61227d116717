"""POST /v1/splitter/weights: one ordered data-parallel region's blocking counters in, splitter weights out.

The service is stateless, so what the model learns (per-connection blocking-rate data points, Schneider et al.
Section 5.1) travels in `model`: the response carries it, the caller sends it back on the next call. The model is
untrusted input: it is versioned, every list in it is size-bounded here, and `model_errors` checks the rest.
"""

from typing import Annotated, Literal

from pydantic import Field

from schemas.common import Identifier, NonNegativeFloat, ResponseModel, StrictModel
from solvers.splitter.model import MAX_CALLS, MAX_TUPLE_RATE, MIN_DECAY_SCALE
from solvers.splitter.model import MAX_POINTS as MAX_POINTS_PER_CONNECTION

# Tuple counts are exact integers in JSON and in float64 up to 2**53.
TupleCount = Annotated[int, Field(ge=0, le=MAX_CALLS)]

# Version 2 adds each connection's weight state (returned weight, the one before, when it changed, the predicted
# rate, the exploration back-off). A version-1 model is migrated: its points are kept, the weight state starts empty.
# Version 3 adds the hold after a re-exploration from 0 that blocked again (`held_until`); a version-2 model is
# migrated (no hold).
MODEL_VERSION = 3
MIGRATED_VERSIONS = (1, 2)
MAX_CONNECTIONS = 4_096
MIN_RESOLUTION = 2
MAX_RESOLUTION = 100_000
# The solver holds one value per connection and weight step; this caps that grid (4M floats = 32 MB).
MAX_GRID_CELLS = 4_194_304


class SplitterConnection(StrictModel):
    id: Identifier
    weight: int = Field(
        ge=0, description="Current share in units of 1/resolution (the weight in force since the last call)."
    )
    cumulative_blocking_s: NonNegativeFloat = Field(
        description="Seconds the splitter has blocked sending on this connection since the transport started "
        "counting; a decrease means the counter was reset."
    )
    tuples_sent: TupleCount | None = Field(
        default=None,
        description="Optional: tuples the splitter has sent on this connection (cumulative). Report it for every "
        "connection or for none. With it, a zero blocking rate read while the worker took almost nothing (the "
        "splitter stalled on another connection) is not taken as evidence that the weight is safe.",
    )
    tuples_in_flight: TupleCount | None = Field(
        default=None,
        description="Optional, with tuples_sent: of those, tuples not yet taken into service by the worker at "
        "observed_at (in the send buffer, the network or its input queue); absent: 0. With it, tuples a buffer "
        "absorbed do not count as kept up with, and a probe whose worker falls behind fails before it blocks.",
    )


class ModelConnection(StrictModel):
    """A connection's raw data points of its blocking-rate function (Section 5.1), column by column: point k is
    (w[k], rate[k], n[k], seen[k], var[k]). Columns keep the model small and fast to parse. Then the state of its
    weight (version 2)."""

    id: Identifier
    cumulative_blocking_s: NonNegativeFloat = Field(description="Counter value at the previous call.")
    w: list[Annotated[int, Field(ge=1, le=MAX_RESOLUTION)]] = Field(
        default_factory=list, max_length=MAX_POINTS_PER_CONNECTION, description="Weight of each point."
    )
    rate: list[NonNegativeFloat] = Field(
        default_factory=list,
        max_length=MAX_POINTS_PER_CONNECTION,
        description="Smoothed blocking rate observed there (seconds blocked per second).",
    )
    n: list[Annotated[int, Field(ge=1, le=1_000_000)]] = Field(
        default_factory=list, max_length=MAX_POINTS_PER_CONNECTION, description="Observations smoothed in."
    )
    seen: list[Annotated[int, Field(ge=0, le=MAX_CALLS)]] = Field(
        default_factory=list,
        max_length=MAX_POINTS_PER_CONNECTION,
        description="Call number of each point's latest observation (the oldest is evicted first).",
    )
    var: list[NonNegativeFloat] | None = Field(
        default=None,
        max_length=MAX_POINTS_PER_CONNECTION,
        description="Smoothed variance of the observations at each point (version 2; absent: 0).",
    )
    weight: int = Field(
        default=-1, ge=-1, le=MAX_RESOLUTION, description="Weight returned at the previous call."
    )
    previous_weight: int = Field(
        default=-1, ge=-1, le=MAX_RESOLUTION, description="The weight in force before that one (-1: none)."
    )
    changed_at: float | None = Field(
        default=None, allow_inf_nan=False, description="observed_at of the call that changed the weight."
    )
    expected_rate: NonNegativeFloat = Field(default=0.0, description="Blocking rate predicted at `weight`.")
    decay_scale: float = Field(
        default=1.0,
        ge=MIN_DECAY_SCALE,
        le=1.0,
        allow_inf_nan=False,
        description="This connection's share of exploration_decay (halved after a re-exploration that blocked again).",
    )
    held_until: float | None = Field(
        default=None,
        allow_inf_nan=False,
        description="observed_at before which the weight stays 0: a re-exploration from 0 that blocked again (version 3).",
    )
    tuples_sent: TupleCount | None = Field(
        default=None, description="tuples_sent at the previous call (null: not reported)."
    )
    tuples_taken: TupleCount | None = Field(
        default=None,
        description="tuples_sent minus tuples_in_flight at the previous call (null: not reported).",
    )


class SplitterModel(StrictModel):
    """What the splitter model learned so far; send it back unchanged on the next call."""

    version: int = Field(
        description=f"Model format version; this service writes {MODEL_VERSION} and migrates {MIGRATED_VERSIONS}."
    )
    resolution: int = Field(ge=MIN_RESOLUTION, le=MAX_RESOLUTION)
    observed_at: float = Field(allow_inf_nan=False, description="observed_at of the previous call.")
    calls: int = Field(ge=0, le=MAX_CALLS, description="Calls that built this model (saturates at 2**53).")
    connections: list[ModelConnection] = Field(max_length=MAX_CONNECTIONS)
    reference_rate: float = Field(
        default=0.0,
        ge=0.0,
        le=MAX_TUPLE_RATE,
        allow_inf_nan=False,
        description="Tuples per second the region's workers took at best recently (from tuples_sent; 0: none).",
    )


class SplitterRequest(StrictModel):
    connections: list[SplitterConnection] = Field(min_length=1, max_length=MAX_CONNECTIONS)
    observed_at: float = Field(
        allow_inf_nan=False, description="When the counters were read (seconds, e.g. Unix time)."
    )
    model: SplitterModel | None = Field(
        default=None, description="The `model` of the previous response; null on the first call."
    )
    resolution: int = Field(
        default=1000,
        ge=MIN_RESOLUTION,
        le=MAX_RESOLUTION,
        description="Weights are in units of 1/resolution (1000 = 0.1% steps).",
    )
    max_change: int | None = Field(
        default=None,
        ge=1,
        description="Each weight moves at most this much per call (bounds m_j, M_j of Section 5.2; values above "
        "resolution mean free). null: evidence-limited steps (a weight rises by at most an eighth of itself or a "
        "probe share per call; it falls freely; a newcomer at weight 0 starts at a probe share).",
    )
    exploration_decay: float = Field(
        default=0.1,
        ge=0.0,
        lt=1.0,
        allow_inf_nan=False,
        description="Data points above a connection's current weight shrink by this fraction per second of "
        "elapsed time (Section 5.4: per 1 s statistics interval), scaled by each connection's back-off; 0 disables "
        "exploration (LB-static).",
    )
    steady_weights: bool = Field(
        default=True,
        description="Change weights only when the predicted gain exceeds the measurement noise, and count the "
        "transition after a weight change less; false: the paper's variant (re-optimise every call).",
    )
    clustering: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Pool similar connections into clusters (Section 5.3); auto: on from 16 connections.",
    )


class SplitterResponse(ResponseModel):
    weights: dict[str, int] = Field(description="New weight per connection id; they sum to resolution.")
    model: SplitterModel
    clusters: list[list[str]] = Field(
        description="Connection ids grouped by cluster (singletons when clustering is off)."
    )
    predicted_max_blocking_rate: float = Field(
        description="max over connections (clusters) of the predicted blocking rate at the new weights."
    )
    solve_ms: float
    notes: list[str] = Field(default_factory=list)


Loc = tuple[str | int, ...]


def request_errors(request: SplitterRequest) -> list[tuple[Loc, str]]:
    """Cross-field rules a single field's type cannot say, each naming the offending field."""
    errors: list[tuple[Loc, str]] = []
    seen: set[str] = set()
    for i, connection in enumerate(request.connections):
        if connection.id in seen:
            errors.append((("body", "connections", i, "id"), f"duplicate connection id {connection.id!r}"))
        seen.add(connection.id)
        if connection.weight > request.resolution:
            errors.append(
                (("body", "connections", i, "weight"), f"weight exceeds resolution {request.resolution}")
            )
    reported = [c.tuples_sent is not None for c in request.connections]
    if any(reported) and not all(reported):
        missing = reported.index(False)
        errors.append(
            (
                ("body", "connections", missing, "tuples_sent"),
                "report tuples_sent for every connection or for none",
            )
        )
    for i, connection in enumerate(request.connections):
        if connection.tuples_in_flight is not None and (
            connection.tuples_sent is None or connection.tuples_in_flight > connection.tuples_sent
        ):
            errors.append(
                (
                    ("body", "connections", i, "tuples_in_flight"),
                    "tuples_in_flight needs tuples_sent and cannot exceed it",
                )
            )
    total = sum(c.weight for c in request.connections)
    if total != request.resolution:
        errors.append(
            (
                ("body", "connections"),
                f"weights sum to {total}, they must sum to resolution {request.resolution}",
            )
        )
    if len(request.connections) * (request.resolution + 1) > MAX_GRID_CELLS:
        errors.append(
            (
                ("body", "resolution"),
                f"connections x (resolution + 1) must be at most {MAX_GRID_CELLS}; use a smaller resolution",
            )
        )
    if request.model is not None:
        errors.extend(model_errors(request.model))
    return errors


def model_errors(model: SplitterModel) -> list[tuple[Loc, str]]:
    """A model the caller sent back is untrusted: check what pydantic's field types cannot."""
    errors: list[tuple[Loc, str]] = []
    if model.version != MODEL_VERSION and model.version not in MIGRATED_VERSIONS:
        errors.append(
            (
                ("body", "model", "version"),
                f"model version {model.version} is neither {MODEL_VERSION} nor migratable "
                f"{MIGRATED_VERSIONS}: start over with null",
            )
        )
        return errors
    ids: set[str] = set()
    resolution, calls = model.resolution, model.calls
    for i, connection in enumerate(model.connections):
        w, seen = connection.w, connection.seen
        size = len(w)
        # One test of every rule first (the valid case, ~1 us a connection); the rules one by one, each naming its
        # offender, only for a connection that breaks one.
        if (
            connection.id in ids
            or not (
                len(connection.rate) == len(connection.n) == len(seen) == size
                and (connection.var is None or len(connection.var) == size)
            )
            or connection.weight > resolution
            or connection.previous_weight > resolution
            or (size and max(w) > resolution)
            or len(set(w)) < size
            or (
                connection.tuples_taken is not None
                and connection.tuples_sent is not None
                and connection.tuples_taken > connection.tuples_sent
            )
            or (seen and max(seen) > calls)
        ):
            errors.extend(_connection_errors(model, i, ids))
        ids.add(connection.id)
    return errors


def _connection_errors(model: SplitterModel, i: int, ids: set[str]) -> list[tuple[Loc, str]]:
    """`model_errors` of the model's connection i (`ids`: the ids before it)."""
    errors: list[tuple[Loc, str]] = []
    connection = model.connections[i]
    if connection.id in ids:
        errors.append(
            (("body", "model", "connections", i, "id"), f"duplicate connection id {connection.id!r}")
        )
    loc: Loc = ("body", "model", "connections", i)
    size = len(connection.w)
    if not (
        len(connection.rate) == len(connection.n) == len(connection.seen) == size
        and (connection.var is None or len(connection.var) == size)
    ):
        errors.append((loc, "columns w, rate, n, seen (and var) must have equal length"))
        return errors
    if connection.weight > model.resolution or connection.previous_weight > model.resolution:
        errors.append(((*loc, "weight"), f"weights exceed the model's resolution {model.resolution}"))
    for k, w in enumerate(connection.w):
        if w > model.resolution:
            errors.append(((*loc, "w", k), f"weight {w} exceeds the model's resolution {model.resolution}"))
    if len(set(connection.w)) < len(connection.w):
        errors.append(((*loc, "w"), "duplicate point weights"))
    if (
        connection.tuples_taken is not None
        and connection.tuples_sent is not None
        and connection.tuples_taken > connection.tuples_sent
    ):
        errors.append(((*loc, "tuples_taken"), "tuples_taken cannot exceed tuples_sent"))
    for k, seen in enumerate(connection.seen):
        if seen > model.calls:
            errors.append(((*loc, "seen", k), f"seen {seen} is after the model's calls {model.calls}"))
    return errors

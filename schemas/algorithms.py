"""Parameters of each algorithm of POST /v1/assignment/plan, one model per algorithm, told apart by `name`.

To add an algorithm: define its parameter model here (with `name: Literal[...]`), add it to `AlgorithmParams`, and
register its solver adapter in `service/algorithms.py`.
"""

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from schemas.common import MAX_QUANTITY, MIN_CAPACITY, StrictModel


class MilpParams(StrictModel):
    """Madsen et al. Section 4.3.1: minimize the load distance under a migration budget (CP-SAT or HiGHS)."""

    name: Literal["milp"] = "milp"
    backend: Literal["cp-sat", "highs"] = Field(
        default="cp-sat", description="cp-sat (OR-Tools, default) or highs (PuLP + HiGHS) on the same model."
    )
    relative_gap: float = Field(
        default=0.001, ge=0.0, le=1.0, description="Stop once the plan is proven within this relative gap."
    )
    seed: int = Field(default=0, ge=0, le=2**31 - 1)


class FluxParams(StrictModel):
    """Flux (Shah et al., as described by Madsen et al.): pair the i-th most with the i-th least loaded node and move
    the best-fitting partition, repeat within the budget."""

    name: Literal["flux"] = "flux"


class LargestLoadFirstParams(StrictModel):
    """Largest-load-first: the most loaded node gives its largest unit that lowers the peak to the least loaded."""

    name: Literal["largest-load-first"] = "largest-load-first"


class RoundRobinParams(StrictModel):
    """Round-robin: units spread by count over the non-draining nodes, ignoring load (a baseline)."""

    name: Literal["round-robin"] = "round-robin"


class RandomParams(StrictModel):
    """Random: random movable units to random non-draining nodes within the budget (a baseline)."""

    name: Literal["random"] = "random"
    seed: int = Field(default=0, ge=0, le=2**31 - 1)


class CorrelationGlobalParams(StrictModel):
    """Xing, Zdonik & Hwang, Section 3.4: greedy placement by correlation score onto the least loaded node, one round
    of one-way balancing, then pair-wise correlation improvement (tabu list of node pairs). Needs load series."""

    name: Literal["correlation-global"] = "correlation-global"
    theta: float = Field(
        default=0.8,
        ge=-1.0,
        le=1.0,
        description="Correlation improvement threshold: improve until the average node-pair load correlation "
        "exceeds it (Table 2: 0.8).",
    )
    epsilon: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="Load balancing threshold, a fraction of node capacity: pairs further apart get balanced "
        "(Table 2: 0.1).",
    )
    variant: Literal["paper", "improved"] = Field(
        default="improved",
        description="paper: Section 3.4 alone (node means may stay up to epsilon apart, correlated peaks may push "
        "nodes above 100 %). improved: then moves and swaps (ties broken by the correlation score) until node "
        "mean utilizations lie within max_spread points and no node exceeds 100 % in any window, where reachable; "
        "with fewer than 5 windows it places by load (correlations that short are unreliable).",
    )
    max_spread: float = Field(
        default=5.0,
        ge=0.0,
        le=100.0,
        allow_inf_nan=False,
        description="improved variant: largest allowed gap, in utilization points, between the most and the least "
        "utilized staying node (mean over the windows).",
    )


class CorrelationPairwiseParams(StrictModel):
    """Xing, Zdonik & Hwang, Section 3.3: one load distribution period of a pair-wise algorithm (nodes paired most
    with least loaded). Needs load series."""

    name: Literal["correlation-pairwise"] = "correlation-pairwise"
    variant: Literal[
        "one-way", "two-way", "selective-exchange", "improved-two-way", "improved-selective-exchange"
    ] = Field(
        default="improved-selective-exchange",
        description="one-way (3.3.1), two-way redistribution (3.3.2), selective-exchange (3.3.3), and their "
        "improved forms with the correlation improvement step (3.3.4).",
    )
    epsilon: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="Load balancing threshold, a fraction of node capacity (0.1).",
    )
    delta: float = Field(
        default=0.2,
        gt=0.0,
        le=1.0,
        description="Score threshold for an operator exchange (selective exchange; Table 2: 0.2). Scores lie in "
        "[-1, 1]; the paper requires delta > 0.",
    )
    theta: float = Field(
        default=0.8,
        ge=-1.0,
        le=1.0,
        description="Correlation improvement threshold for the improved variants (Table 2: 0.8).",
    )
    max_spread: float | None = Field(
        default=5.0,
        ge=0.0,
        le=100.0,
        allow_inf_nan=False,
        description="After the pair-wise step, moves and swaps within the budget until node mean utilizations lie "
        "within max_spread points and no node exceeds 100 % in any window, where reachable (null: the paper's "
        "algorithm alone).",
    )


class ElbParams(StrictModel):
    """Guo & Zhou Algorithm 1 (ELB): bring every instance's latest-window load into [lower, upper] by moving
    substreams from overloaded to underloaded instances, largest first; may add or remove instances
    (parallelism ceil(2w / (upper + lower)))."""

    name: Literal["elb"] = "elb"
    lower: float | None = Field(
        default=None,
        gt=0.0,
        allow_inf_nan=False,
        description="v: lowest acceptable instance load, in load units.",
    )
    upper: float | None = Field(
        default=None,
        gt=0.0,
        allow_inf_nan=False,
        description="u: highest acceptable instance load, in load units.",
    )
    tolerance: float | None = Field(
        default=None,
        gt=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="Instead of lower/upper: [v, u] = mean x (1 -/+ tolerance), the mean being the latest-window "
        "load per non-draining node (keeps the parallelism). Default 0.1 when neither is given.",
    )
    new_node_capacity: float | None = Field(
        default=None,
        ge=MIN_CAPACITY,
        le=MAX_QUANTITY,
        allow_inf_nan=False,
        description="Capacity of instances ELB adds (within a node's capacity bounds); default the mean capacity of "
        "the non-draining nodes.",
    )
    variant: Literal["paper", "improved"] = Field(
        default="improved",
        description="improved (default): [lower, upper] is the range of a node of the mean capacity, scaled by "
        "capacity for the others; acts only when an instance is outside its range; repairs the greedy's plan to end "
        "inside the range with the least state moved it can, and says in notes why when the range is unreachable. "
        "paper: Algorithm 1 as published (load units, always runs), for reproductions.",
    )

    @field_validator("upper")
    @classmethod
    def _upper_not_below_lower(cls, upper: float | None, info: ValidationInfo) -> float | None:
        lower = info.data.get("lower")
        if upper is not None and lower is not None and lower > upper:
            raise ValueError(f"upper ({upper:g}) must be at least lower ({lower:g})")
        return upper

    @model_validator(mode="after")
    def _one_way_to_give_the_range(self) -> "ElbParams":
        if (self.lower is None) != (self.upper is None):
            raise ValueError("give both lower and upper, or neither (then tolerance applies)")
        if self.lower is not None and self.tolerance is not None:
            raise ValueError("give lower/upper or tolerance, not both")
        if self.lower is None and self.tolerance is None:
            self.tolerance = 0.1
        return self


class ClbParams(StrictModel):
    """Guo & Zhou Algorithm 2 (CLB): split the substreams into one subset per non-draining node so that the cross
    covariance of their load series is large, then place the subsets where the least state moves."""

    name: Literal["clb"] = "clb"
    m: int | None = Field(
        default=None,
        ge=2,
        le=4096,
        description="Period: CLB uses the latest m windows of the series (default: all). The paper's m > 1.",
    )
    threshold: float = Field(
        default=0.0,
        ge=0.0,
        lt=1.0,
        description="theta: substreams whose load correlation with the split substream is at least theta are "
        "separated from it.",
    )
    variant: Literal["paper", "improved"] = Field(
        default="improved",
        description="improved (default): minimize the paper's objective sum_t var(L_t) over the m windows (loads "
        "scaled to the mean capacity) with the state moved second, by local search from the current placement and "
        "from the paper's plan; never worse than the current placement (else `unchanged`). paper: Algorithm 2 as "
        "published, for reproductions.",
    )


class UniversalHashParams(StrictModel):
    """UHLB baseline: substream -> node by a seeded 2-universal hash ((a x + b) mod P) mod n."""

    name: Literal["universal-hash"] = "universal-hash"
    seed: int = Field(default=0, ge=0, le=2**31 - 1, description="Draws the hash function from the family.")


class AlbicParams(StrictModel):
    """Madsen et al. Section 4.3.2 (Algorithm 2): collocate key groups that talk a lot, on top of the MILP. Needs
    `traffic` (and each unit's `operator`); without traffic it is the plain MILP. With `target_utilization` or
    `target_nodes` it runs one period of the adaptation framework (Section 4.1, Algorithm 1): plan, scaling decision,
    re-plan on the scaled cluster (new nodes added, or nodes marked for removal drained under the budget)."""

    name: Literal["albic"] = "albic"
    max_load_distance: float = Field(
        default=10.0,
        gt=0.0,
        le=1e6,
        description="maxLD: while the plan is above it, partitions get smaller (10).",
    )
    max_partition_load: float = Field(
        default=25.0,
        ge=0.0,
        le=1e6,
        description="maxPL: largest partition load, in percent of the mean staying node capacity (25); 0 = the plain "
        "MILP.",
    )
    step_partition_load: float = Field(
        default=5.0,
        gt=0.0,
        le=1e6,
        description="stepPL: maxPL falls by this while the plan is above maxLD (5).",
    )
    score_factor: float = Field(
        default=1.5,
        ge=0.0,
        le=1e6,
        description="sF: a pair qualifies when it sends more than sF x the average per downstream key group (1.5).",
    )
    pairs: Literal["one", "budget"] = Field(
        default="one",
        description="one: the paper's one new pair per period; budget: as many merges as the migration budget (less "
        "balance_reserve) and maxLD allow, most collocation per migration first, toward target sets that stay the "
        "same from one period to the next.",
    )
    balance_reserve: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="pairs=budget: share of the budget kept for the MILP's balancing when a node is already further "
        "than maxLD / 2 from the mean utilization.",
    )
    backend: Literal["cp-sat", "highs"] = "cp-sat"
    seed: int = Field(default=0, ge=0, le=2**31 - 1, description="Breaks ties between equally good pairs.")
    target_utilization: list[float] | None = Field(
        default=None,
        min_length=2,
        max_length=2,
        description="Scaling decision: [lower, upper] mean utilization (%) of the staying nodes; outside it the "
        "cluster is scaled to the node count nearest the middle.",
    )
    target_nodes: int | None = Field(
        default=None, ge=1, le=10_000, description="Scaling decision: this many staying nodes."
    )
    new_node_capacity: float | None = Field(
        default=None,
        ge=MIN_CAPACITY,
        le=MAX_QUANTITY,
        allow_inf_nan=False,
        description="Capacity of nodes a scale-out adds (within a node's capacity bounds); default the mean staying "
        "capacity.",
    )

    @field_validator("target_utilization")
    @classmethod
    def _range(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and not (0.0 < value[0] <= value[1] <= 1e6):
            raise ValueError("needs 0 < lower <= upper (percent)")
        return value

    @model_validator(mode="after")
    def _one_scaling_decision(self) -> "AlbicParams":
        if self.target_utilization is not None and self.target_nodes is not None:
            raise ValueError("give target_utilization or target_nodes, not both")
        return self


class ColaParams(StrictModel):
    """COLA (Khandekar et al.) as Madsen et al. compare with it: partition the whole communication graph from scratch
    into balanced parts (METIS), ignoring the current placement; parts are split further until maxLD holds. It ignores
    the budget: with one, the plan is cut down to it (least collocation gain reverted first)."""

    name: Literal["cola"] = "cola"
    max_load_distance: float = Field(default=10.0, gt=0.0, le=1e6, description="maxLD (10).")


AlgorithmParams = Annotated[
    MilpParams
    | FluxParams
    | LargestLoadFirstParams
    | RoundRobinParams
    | RandomParams
    | CorrelationGlobalParams
    | CorrelationPairwiseParams
    | ElbParams
    | ClbParams
    | UniversalHashParams
    | AlbicParams
    | ColaParams,
    Field(discriminator="name"),
]
